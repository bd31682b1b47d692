/**
 * #29 finding 12: a client's string in a log message (a sequence id, a model name) cannot
 * forge a log entry or send terminal escape codes: the logger escapes control characters
 * in every message.
 */
import { afterEach, describe, expect, it } from "vitest";
import { configureLog, escapeLogText, getLogger } from "../../../src/core/logger.ts";

const lines: string[] = [];
afterEach(() => {
  lines.length = 0;
  configureLog({ info: true, verbose: 0 }, (line) => process.stderr.write(line + "\n"));
});

describe("log escaping (#29)", () => {
  it("escapes C0 and C1 controls, DEL and the Unicode line separators; leaves other text alone", () => {
    expect(escapeLogText("plain text, ünïcode ✓ and \\n as typed")).toBe("plain text, ünïcode ✓ and \\n as typed");
    expect(escapeLogText("a\nb\rc\td")).toBe("a\\nb\\rc\\td");
    expect(escapeLogText("\u001b[2J\u0000\u007f\u0085\u009b")).toBe("\\x1b[2J\\x00\\x7f\\x85\\x9b");
    expect(escapeLogText("x\u2028y\u2029z")).toBe("x\\u2028y\\u2029z");
  });

  it("writes one line per message whatever the message holds, at every level", () => {
    configureLog({ info: true, warning: true, error: true, verbose: 1 }, (line) => lines.push(line));
    const log = getLogger("test/unit/core/logger-escape.test.ts");
    const forged = "seq\nE1122 11:22:33.123456 1 src/main.ts] forged entry\u001b[31m";
    log.info(forged);
    log.warn(forged);
    log.error(forged);
    log.verbose(1, forged);
    expect(lines).toHaveLength(4);
    for (const line of lines) {
      expect(line).not.toMatch(/[\n\r\u001b]/);
      expect(line.endsWith("] seq\\nE1122 11:22:33.123456 1 src/main.ts] forged entry\\x1b[31m")).toBe(true);
    }
  });

  it("keeps the lines of a multi-line entry (the model table) and escapes inside each", () => {
    configureLog({ info: true }, (line) => lines.push(line));
    getLogger("test/unit/core/logger-escape.test.ts").infoLines(["", "+---+", "| a\u001b |", ""]);
    expect(lines).toHaveLength(1);
    expect(lines[0]!.endsWith("] \n+---+\n| a\\x1b |\n")).toBe(true);
  });
});
