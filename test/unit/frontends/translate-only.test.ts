/**
 * Frontends only translate between the wire and the server (issue #20): every policy and
 * lookup is a server method, so no frontend reaches through the server into the repository
 * or the shared-memory manager.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../../..");

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [],
  );
}

/** Lines of src/frontends matching `pattern`, as `path:line: text`. */
function linesMatching(pattern: RegExp): string[] {
  return files(join(ROOT, "src/frontends")).flatMap((f) =>
    readFileSync(f, "utf8")
      .split("\n")
      .flatMap((line, i) => (pattern.test(line) ? [`${relative(ROOT, f)}:${i + 1}: ${line.trim()}`] : [])),
  );
}

describe("src/frontends", () => {
  it("never reaches into the repository (`.repository.`): they call server methods", () => {
    expect(linesMatching(/\.repository\./)).toEqual([]);
  });

  it("never reaches into the shared-memory manager (`server.sharedMemory`): status, register and unregister are server methods", () => {
    expect(linesMatching(/\bserver\.sharedMemory\b/)).toEqual([]);
  });
});
