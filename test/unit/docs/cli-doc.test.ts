/** docs/cli.md is scripts/gen-cli-doc.ts's rendering of the flag table in src/options.ts (#33). */
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { CLI_DOC, FLAG_PAGES, NEREID_OWN_FLAGS, renderCliDoc } from "../../../scripts/gen-cli-doc.ts";
import { flagTable } from "../../../src/options.ts";

describe("docs/cli.md", () => {
  it("is what scripts/gen-cli-doc.ts renders from src/options.ts", () => {
    const expected = renderCliDoc();
    expect(readFileSync(CLI_DOC, "utf8") === expected, "docs/cli.md is stale: run `npx bun scripts/gen-cli-doc.ts`").toBe(true);
  });

  it("has one row per flag the parser takes, in its order", () => {
    const rows = renderCliDoc()
      .split("\n")
      .map((l) => /^\| `--([a-z0-9-]+)` \|/.exec(l)?.[1])
      .filter((x): x is string => x !== undefined);
    expect(rows).toEqual(flagTable().map((f) => f.name));
  });

  it("names only flags that exist", () => {
    const names = new Set(flagTable().map((f) => f.name));
    expect([...NEREID_OWN_FLAGS, ...Object.keys(FLAG_PAGES)].filter((f) => !names.has(f))).toEqual([]);
  });

  it("says which flags are Nereid's own and which are accepted with no effect", () => {
    const text = renderCliDoc();
    expect(text).toContain("| `--max-queued-bytes` | `<int>` | Nereid's own. Input bytes");
    expect(text).toMatch(/\| `--pinned-memory-pool-byte-size` \| `<int>` \| .*Accepted; no effect: Nereid manages no CUDA memory/);
    expect(text).toContain("| `--disable-auto-complete-config` |  | Do not complete configs");
  });
});
