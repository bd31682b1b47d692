/**
 * A thread without a log of its own (the scheduling thread, #30 item 2) forwards what its
 * loggers log; the main thread writes each entry under its own settings as they are when
 * the entry arrives, with its format and escaping, as its own logger would.
 */
import { afterEach, describe, expect, it } from "vitest";
import { configureLog, forwardLog, getLogger, logEntry, sharedLogLevel, type LogEntry } from "../../../src/core/logger.ts";

const lines: string[] = [];
afterEach(() => {
  forwardLog(undefined);
  lines.length = 0;
  configureLog({ info: true, warning: true, error: true, verbose: 0 }, (line) => process.stderr.write(line + "\n"));
});

const TAG = "test/unit/core/logger-forward.test.ts";

describe("forwarded log entries", () => {
  it("a forwarding thread's loggers hand over every entry, whatever its own settings", () => {
    const entries: LogEntry[] = [];
    configureLog({ info: false, warning: false, error: false, verbose: 0 }, (line) => lines.push(line));
    forwardLog((e) => entries.push(e));
    const log = getLogger(TAG);
    log.info("i");
    log.warn("w");
    log.error("e");
    log.verbose(2, "v");
    expect(entries).toEqual([
      { kind: "info", where: TAG, msg: "i" },
      { kind: "warn", where: TAG, msg: "w" },
      { kind: "error", where: TAG, msg: "e" },
      { kind: 2, where: TAG, msg: "v" },
    ]);
    expect(lines).toEqual([]);
  });

  it("the main thread writes an entry as its own logger would, under its settings at the time", () => {
    configureLog({ info: true, warning: false, error: true, verbose: 1 }, (line) => lines.push(line));
    const entries: LogEntry[] = [
      { kind: "info", where: "src/scheduler/sequence-batch-scheduler.ts", msg: "released\nE forged" },
      { kind: "warn", where: "src/scheduler/sequence-batch-scheduler.ts", msg: "dropped: warnings are off" },
      { kind: "error", where: "src/x.ts", msg: "e" },
      { kind: 1, where: "src/x.ts", msg: "v1" },
      { kind: 2, where: "src/x.ts", msg: "dropped: verbose 2" },
    ];
    for (const e of entries) logEntry(e);
    const tail = lines.map((l) => l.replace(/^[IWE]\d{4} [\d:.]+ \d+ /, (m) => m[0]!));
    expect(tail).toEqual(["Isrc/scheduler/sequence-batch-scheduler.ts] released\\nE forged", "Esrc/x.ts] e", "Isrc/x.ts] v1"]);
    configureLog({ info: false, verbose: 0 });
    logEntry(entries[0]!);
    logEntry(entries[3]!);
    expect(lines).toHaveLength(3);
  });

  it("with the main thread's shared verbose level, a forwarding thread drops the verbose entries above it, following configureLog (#30)", () => {
    configureLog({ verbose: 1 }, (line) => lines.push(line));
    const level = sharedLogLevel();
    const entries: LogEntry[] = [];
    forwardLog((e) => entries.push(e), level);
    const log = getLogger(TAG);
    log.verbose(1, "v1");
    log.verbose(2, "v2: dropped at 1");
    log.warn("w");
    configureLog({ verbose: 2 });
    log.verbose(2, "v2");
    configureLog({ verbose: 0 });
    log.verbose(1, "v1: dropped at 0");
    log.info("i");
    expect(entries.map((e) => e.msg)).toEqual(["v1", "w", "v2", "i"]);
  });
});
