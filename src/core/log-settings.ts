/**
 * @module Triton's logging extension (`GET|POST /v2/logging`, gRPC LogSettings): the
 * server log's settings under Triton's names, read and changed at run time. The log
 * file cannot be changed over the network, as in Triton.
 */
import { configureLog, getLogger, logFile, logSettings } from "./logger.ts";
import { invalidArg, ServerError } from "./errors.ts";

export interface TritonLogSettings {
  log_file: string;
  log_info: boolean;
  log_warning: boolean;
  log_error: boolean;
  log_verbose_level: number;
  log_format: "default" | "ISO8601";
}

export function currentLogSettings(): TritonLogSettings {
  const s = logSettings();
  return { log_file: logFile(), log_info: s.info, log_warning: s.warning, log_error: s.error, log_verbose_level: s.verbose, log_format: s.format };
}

/** Applies the given settings (all checked before any is applied) and returns the result. */
export function updateLogSettings(update: Record<string, unknown>): TritonLogSettings {
  const next: Parameters<typeof configureLog>[0] = {};
  for (const [key, value] of Object.entries(update)) {
    const bool = () => {
      if (typeof value !== "boolean") throw invalidArg(`expect boolean for '${key}' parameter`);
      return value;
    };
    switch (key) {
      case "log_file":
        if (value !== null && value !== undefined) throw new ServerError("UNSUPPORTED", "log file location can not be updated through network protocol");
        break;
      case "log_info":
        next.info = bool();
        break;
      case "log_warning":
        next.warning = bool();
        break;
      case "log_error":
        next.error = bool();
        break;
      case "log_verbose_level": {
        const n = typeof value === "bigint" ? Number(value) : value;
        if (typeof n !== "number" || !Number.isInteger(n) || n < 0) throw invalidArg("expect unsigned integer for 'log_verbose_level' parameter");
        next.verbose = n;
        break;
      }
      case "log_format":
        if (value !== "default" && value !== "ISO8601") {
          throw invalidArg(`invalid argument for log_format, got '${String(value)}'. Choose from 'default' or 'ISO8601'`);
        }
        next.format = value;
        break;
      default:
        throw invalidArg(`unknown logging setting '${key}'`);
    }
  }
  configureLog(next);
  const now = currentLogSettings();
  getLogger("src/core/log-settings.ts").info(`log settings updated: ${JSON.stringify(now)}`);
  return now;
}
