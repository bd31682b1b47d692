/**
 * @module CLI entry: read options, start the server (src/startup/), handle signals and
 * shut down on them (Triton's main.cc).
 */
import { parseArgs, usage, UsageError, VERSION, TRITON_PROTOCOL_VERSION } from "./options.ts";
import { configureLog, getLogger, setLogFile } from "./core/logger.ts";
import { installStrayErrorHandlers } from "./backends/typescript/stray-errors.ts";
import type { RunningServer } from "./startup/start.ts";
import { startFrontendWorkersEarly } from "./startup/early-workers.ts";
import { preloadOnnxRuntimeForStart } from "./startup/onnx-preload.ts";
import { sdNotify } from "../ffi/libc/notify.ts";

const log = getLogger("src/main.ts");

export async function main(argv: readonly string[]): Promise<number> {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs(argv);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`error: ${err.message}\n\n${usage()}\n`);
      return 1;
    }
    throw err;
  }
  if (parsed.kind === "help") {
    process.stdout.write(usage() + "\n");
    return 0;
  }
  // The subcommands run at the normal JIT policy from the start (`nereid perf` is a load generator).
  if (parsed.kind !== "run") serveAtFullJit();
  // The subcommands and the server are imported for what was asked only; the frontends'
  // worker threads start before the server's modules are evaluated (#30).
  if (parsed.kind === "devices") return (await import("./devices.ts")).runDevices(parsed);
  // Imported for the subcommand only: its gRPC client is not evaluated when the server starts (#30).
  if (parsed.kind === "perf") return (await import("./perf/perf.ts")).runPerf(parsed.argv);
  if (parsed.kind === "health") return (await import("./health-check.ts")).runHealthCheck(parsed.url);
  if (parsed.kind === "version") {
    process.stdout.write(`nereid ${VERSION} (Triton protocol ${TRITON_PROTOCOL_VERSION})\n`);
    return 0;
  }
  const o = parsed.options;
  for (const w of o.warnings) process.stderr.write(`${w}\n`);
  configureLog({ info: o.logInfo, warning: o.logWarning, error: o.logError, verbose: o.logVerbose, format: o.logFormat });
  if (o.logFile) {
    try {
      setLogFile(o.logFile);
    } catch (err) {
      process.stderr.write(`error: failed to open log file '${o.logFile}': ${(err as Error).message}\n`);
      return 1;
    }
  }
  for (const f of o.inertFlags) log.info(`--${f.flag}=${f.value} accepted; it has no effect here: ${f.meaning}`);
  // Signals are handled from the start: one that arrives while models load stops the
  // server as soon as it is up, instead of killing the process mid-load.
  let running: RunningServer | undefined;
  let stopRequested: ((code: number) => void) | undefined;
  let pendingSignal: string | undefined;
  const stopped = new Promise<number>((resolve) => (stopRequested = resolve));
  const onSignal = (sig: string) => {
    log.info(`received ${sig}`);
    if (!running) {
      pendingSignal = sig;
      return;
    }
    notifyServiceManager("STOPPING=1\nSTATUS=draining in-flight requests");
    void running.shutdown().then(stopRequested);
  };
  // A model's stray error (a rejection nobody handles, a throw from a timer) is logged, not fatal.
  installStrayErrorHandlers();
  process.once("SIGINT", () => onSignal("SIGINT"));
  process.once("SIGTERM", () => onSignal("SIGTERM"));
  const early = startFrontendWorkersEarly(o);
  preloadOnnxRuntimeForStart(o);
  try {
    const { startServer } = await import("./startup/start.ts");
    running = await startServer(o, early);
  } catch (err) {
    early.terminate();
    log.error((err as Error).message);
    return 1;
  }
  notifyServiceManager(`READY=1\nSTATUS=serving ${running.server.repositoryIndex(true).length} model version(s)`);
  serveAtFullJit();
  if (pendingSignal) onSignal(pendingSignal);
  return stopped;
}

/**
 * The compiled binary starts with JavaScriptCore's tier-up thresholds scaled up
 * (scripts/build.ts, --compile-jit-policy), so that code run once while starting stays in
 * the interpreter instead of costing the JIT's compiles (#30, start → ready); serving
 * gets the normal thresholds back. A no-op elsewhere (Node, Deno, Bun run from source).
 */
function serveAtFullJit(): void {
  (globalThis as { Bun?: { unsafe?: { setJITPolicy?(scale: number): void } } }).Bun?.unsafe?.setJITPolicy?.(1);
}

/** systemd Type=notify: tells the service manager when serving starts and stops (no-op outside systemd). */
function notifyServiceManager(state: string): void {
  if (!process.env.NOTIFY_SOCKET) return;
  try {
    sdNotify(state);
  } catch (err) {
    log.warn(`cannot notify the service manager: ${(err as Error).message}`);
  }
}

/** Runs main() and exits with its code; used by `bun src/main.ts` and the compiled entry. */
export function runCli(): void {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err) => {
      log.error(`fatal: ${(err as Error).stack ?? err}`);
      process.exit(1);
    },
  );
}

if (import.meta.main) runCli();
