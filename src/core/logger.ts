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
  if (sharedVerbose) Atomics.store(sharedVerbose, 0, settings.verbose);
}

/** This thread's verbose level as other threads read it (sharedLogLevel), kept current by configureLog. */
let sharedVerbose: Int32Array | undefined;

/**
 * The verbose level in shared memory, for a thread that forwards its entries here
 * (forwardLog): it drops the verbose entries this thread would not log, rather than
 * posting each one.
 */
export function sharedLogLevel(): SharedArrayBuffer {
  sharedVerbose ??= new Int32Array(new SharedArrayBuffer(4));
  Atomics.store(sharedVerbose, 0, settings.verbose);
  return sharedVerbose.buffer as SharedArrayBuffer;
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

/** C0 and C1 control characters, DEL, and Unicode's line and paragraph separators. */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;
const NAMED: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };
const hex = (c: string, width: number) => c.charCodeAt(0).toString(16).padStart(width, "0");

/**
 * `text` with every control character written as an escape (`\n`, `\r`, `\t`, `\x1b`,
 * `\u2028`), so that a string from a client (a sequence id, a model name, an error
 * message) can neither start a forged log line nor send terminal escape codes. Every log
 * message goes through it.
 */
export function escapeLogText(text: string): string {
  CONTROL.lastIndex = 0;
  if (!CONTROL.test(text)) return text;
  return text.replace(CONTROL, (c) => NAMED[c] ?? (c.charCodeAt(0) < 0x100 ? `\\x${hex(c, 2)}` : `\\u${hex(c, 4)}`));
}

function write(level: LogLevel, where: string, msg: string): void {
  sink(`${stamp(level)} ${process.pid} ${where}] ${escapeLogText(msg)}`);
}

/** A log entry as a thread without a log of its own hands it to the main thread: its kind (a verbose one: its level), its logger's tag, its message. */
export interface LogEntry {
  kind: "info" | "warn" | "error" | number;
  where: string;
  msg: string;
}

let forward: ((e: LogEntry) => void) | undefined;
/** The receiving thread's verbose level (sharedLogLevel), when forwardLog was given it. */
let forwardVerbose: Int32Array | undefined;

/**
 * From now on this thread's loggers hand every entry to `to`: the main thread logs it
 * under its own settings as they are then (logEntry). With `verbose`, the main thread's
 * sharedLogLevel(), verbose entries above its level are dropped here instead.
 */
export function forwardLog(to: ((e: LogEntry) => void) | undefined, verbose?: SharedArrayBuffer): void {
  forward = to;
  forwardVerbose = verbose && new Int32Array(verbose);
}

function forwardVerboseEntry(level: number, where: string, msg: string): void {
  if (!forwardVerbose || Atomics.load(forwardVerbose, 0) >= level) forward!({ kind: level, where, msg });
}

/** Logs another thread's entry here, as this thread's logger `e.where` would. */
export function logEntry(e: LogEntry): void {
  const k = e.kind;
  if (typeof k === "number") {
    if (settings.verbose >= k) write("I", e.where, e.msg);
  } else if (k === "info" ? settings.info : k === "warn" ? settings.warning : settings.error) {
    write(k === "info" ? "I" : k === "warn" ? "W" : "E", e.where, e.msg);
  }
}

/** A logger tagged with the path of the file that creates it (see the module comment). */
export function getLogger(where: string) {
  return {
    info: (msg: string) => (forward ? forward({ kind: "info", where, msg }) : settings.info && write("I", where, msg)),
    warn: (msg: string) => (forward ? forward({ kind: "warn", where, msg }) : settings.warning && write("W", where, msg)),
    error: (msg: string) => (forward ? forward({ kind: "error", where, msg }) : settings.error && write("E", where, msg)),
    verbose: (level: number, msg: string) => (forward ? forwardVerboseEntry(level, where, msg) : settings.verbose >= level && write("I", where, msg)),
    /**
     * An info entry over several lines, as Triton logs its model table: `lines` are the
     * server's own layout, each one escaped (so a client's string in one cannot break it).
     */
    infoLines: (lines: readonly string[]) => settings.info && sink(`${stamp("I")} ${process.pid} ${where}] ${lines.map(escapeLogText).join("\n")}`),
  };
}

export type Logger = ReturnType<typeof getLogger>;

/**
 * A request's failure as the frontends log it: an INTERNAL one as an error (the server's
 * fault), any other only at verbose level 1 (the client's, answered in Triton's shape).
 */
export function logFailure(log: Logger, where: string, code: string, message: string): void {
  if (code === "INTERNAL") log.error(`${where}: ${message}`);
  else log.verbose(1, `${where}: ${code}: ${message}`);
}
