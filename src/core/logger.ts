/**
 * @module Server log in Triton's default line format:
 * `I1122 11:22:33.123456 1234 src/repository/manager.ts] message` (levels I, W, E;
 * verbose lines are I).
 *
 * Where Triton prints its C++ file and line, a line here carries its logger's tag, and
 * the tag is the path, from the repository root, of the file that creates the logger:
 * `getLogger("src/frontends/http/routes.ts")` in src/frontends/http/routes.ts,
 * `getLogger("ffi/tensorrt/logger.ts")` for what TensorRT itself logs. Every tag is a
 * string literal naming its own file; test/unit/core/logger-tags.test.ts checks them.
 */

import { closeSync, openSync, writeSync } from "node:fs";

export type LogLevel = "I" | "W" | "E";

export interface LogSettings {
  info: boolean;
  warning: boolean;
  error: boolean;
  verbose: number;
  format: "default" | "ISO8601";
}

const settings: LogSettings = { info: true, warning: true, error: true, verbose: 0, format: "default" };
let sink: (line: string) => void = (line) => process.stderr.write(line + "\n");

export function configureLog(s: Partial<LogSettings>, out?: (line: string) => void): void {
  Object.assign(settings, s);
  if (out) sink = out;
}

export function logSettings(): Readonly<LogSettings> {
  return settings;
}

let filePath = "";
let fileFd: number | undefined;

/**
 * `--log-file`: from now on every line is appended to `path` (opened for appending, as
 * Triton does) instead of standard error; "" goes back to standard error. Throws when the
 * file cannot be opened.
 */
export function setLogFile(path: string): void {
  const fd = path ? openSync(path, "a") : undefined;
  if (fileFd !== undefined) closeSync(fileFd);
  fileFd = fd;
  filePath = path;
  sink = fd === undefined ? (line) => process.stderr.write(line + "\n") : (line) => void writeSync(fd, line + "\n");
}

/** The log file given by `--log-file`, or "" for standard error. */
export function logFile(): string {
  return filePath;
}

const pad = (n: number, w = 2) => String(n).padStart(w, "0");

function stamp(level: LogLevel): string {
  const d = new Date();
  if (settings.format === "ISO8601") {
    return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}Z ${level}`;
  }
  const micros = pad(d.getMilliseconds(), 3) + "000";
  return `${level}${pad(d.getMonth() + 1)}${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${micros}`;
}

function write(level: LogLevel, where: string, msg: string): void {
  sink(`${stamp(level)} ${process.pid} ${where}] ${msg}`);
}

/** A logger tagged with the path of the file that creates it (see the module comment). */
export function getLogger(where: string) {
  return {
    info: (msg: string) => settings.info && write("I", where, msg),
    warn: (msg: string) => settings.warning && write("W", where, msg),
    error: (msg: string) => settings.error && write("E", where, msg),
    verbose: (level: number, msg: string) => settings.verbose >= level && write("I", where, msg),
  };
}

export type Logger = ReturnType<typeof getLogger>;
