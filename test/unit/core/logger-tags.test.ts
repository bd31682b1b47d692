/**
 * Every logger is tagged with the path of the file that creates it (src/core/logger.ts),
 * so a tag in a log line leads to our own file, not to one of Triton's C++ files.
 */
import { describe, it, expect } from "vitest";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, sep } from "node:path";

const ROOT = join(import.meta.dirname, "..", "..", "..");
const CALL = "getLogger" + "(";

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return /\.(ts|mts|js)$/.test(e.name) ? [path] : [];
  });
}

interface Call {
  file: string;
  line: number;
  argument: string;
}

/** getLogger calls outside comments and the function's own declaration. */
function loggerCalls(): Call[] {
  const calls: Call[] = [];
  for (const path of ["src", "ffi", "scripts"].flatMap((d) => sources(join(ROOT, d)))) {
    const file = relative(ROOT, path).split(sep).join("/");
    readFileSync(path, "utf8")
      .split("\n")
      .forEach((text, i) => {
        const trimmed = text.trim();
        if (trimmed.startsWith("*") || trimmed.startsWith("//") || trimmed.startsWith("/*")) return;
        let at = text.indexOf(CALL);
        while (at >= 0) {
          if (!/function\s+$/.test(text.slice(0, at))) {
            const close = text.indexOf(")", at);
            calls.push({ file, line: i + 1, argument: text.slice(at + CALL.length, close < 0 ? undefined : close).trim() });
          }
          at = text.indexOf(CALL, at + CALL.length);
        }
      });
  }
  return calls;
}

describe("logger tags", () => {
  const calls = loggerCalls();

  it("finds the loggers (the scan itself works)", () => {
    expect(calls.map((c) => c.file)).toEqual(expect.arrayContaining(["src/main.ts", "src/frontends/http/routes.ts", "ffi/tensorrt/logger.ts"]));
  });

  it("tags each logger with a string literal naming its own file from the repository root", () => {
    const wrong = calls
      .filter((c) => c.argument !== JSON.stringify(c.file))
      .map((c) => `${c.file}:${c.line}: ${CALL}${c.argument}) should be ${CALL}${JSON.stringify(c.file)})`);
    expect(wrong).toEqual([]);
  });
});
