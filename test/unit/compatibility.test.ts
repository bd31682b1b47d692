/**
 * docs/compatibility.md stays honest: one row per ID of the conformance checklist
 * (shared/reference/triton-features.md, beside the clone), in its order; every ID the
 * code and tests cite is a row; every file the table names exists.
 *
 * The checklist lives outside the repository: a fresh clone elsewhere has none, so the
 * comparison with it is skipped there. `.ci/run` sets NEREID_REQUIRE_CHECKLIST=1, which
 * makes a missing checklist a failure instead.
 */
import { describe, it, expect } from "vitest";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative, sep } from "node:path";

const ROOT = join(import.meta.dirname, "..", "..");
const TABLE = join(ROOT, "docs", "compatibility.md");
const CHECKLIST = join(ROOT, "..", "shared", "reference", "triton-features.md");
/** A checklist ID, or a range of them written `A-01..A-05`. */
const CITED = /\b([PGCRSML])-(\d+)\b(?:\.\.\1-(\d+)\b)?/g;

const id = (area: string, n: number) => `${area}-${String(n).padStart(2, "0")}`;

const REQUIRE_CHECKLIST = process.env["NEREID_REQUIRE_CHECKLIST"] === "1";
const HAVE_CHECKLIST = existsSync(CHECKLIST);

function checklistIds(): string[] {
  if (!HAVE_CHECKLIST) {
    throw new Error(
      `the conformance checklist is missing: expected ${CHECKLIST} (shared/ beside the repository clone, as CI has it); ` +
        "docs/compatibility.md cannot be checked without it",
    );
  }
  return readFileSync(CHECKLIST, "utf8")
    .split("\n")
    .map((l) => /^([PGCRSML]-\d+)\s*\|/.exec(l)?.[1])
    .filter((x): x is string => x !== undefined);
}

interface Row {
  id: string;
  cells: string[];
}

function tableRows(): Row[] {
  return readFileSync(TABLE, "utf8")
    .split("\n")
    .filter((l) => /^\|\s*[PGCRSML]-\d+\s*\|/.test(l))
    .map((l) => {
      const cells = l
        .split("|")
        .slice(1, -1)
        .map((c) => c.trim());
      return { id: cells[0]!, cells };
    });
}

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return files(path);
    return e.isFile() ? [path] : [];
  });
}

/** Every ID cited in src/, test/, ffi/ and scripts/, ranges expanded, with one place citing it. */
function citedIds(): Map<string, string> {
  const cited = new Map<string, string>();
  for (const path of ["src", "test", "ffi", "scripts"].flatMap((d) => files(join(ROOT, d)))) {
    const buf = readFileSync(path);
    if (buf.includes(0)) continue; // binary
    const where = relative(ROOT, path).split(sep).join("/");
    buf
      .toString("utf8")
      .split("\n")
      .forEach((line, i) => {
        for (const m of line.matchAll(CITED)) {
          const from = Number(m[2]);
          const to = m[3] === undefined ? from : Number(m[3]);
          for (let n = from; n <= Math.max(from, to); n++) if (!cited.has(id(m[1]!, n))) cited.set(id(m[1]!, n), `${where}:${i + 1}`);
        }
      });
  }
  return cited;
}

describe("docs/compatibility.md", () => {
  const rows = tableRows();

  it.skipIf(!HAVE_CHECKLIST && !REQUIRE_CHECKLIST)("has one row per checklist ID, in the checklist's order, and no other", () => {
    const checklist = checklistIds();
    expect(checklist.length).toBeGreaterThan(0);
    expect(rows.map((r) => r.id)).toEqual(checklist);
  });

  it("has a row for every ID cited in src/, test/, ffi/ and scripts/", () => {
    const inTable = new Set(rows.map((r) => r.id));
    const missing = [...citedIds()].filter(([x]) => !inTable.has(x)).map(([x, where]) => `${x} (cited at ${where})`);
    expect(missing).toEqual([]);
  });

  it("gives every row a feature, a status and its tests (or 'none')", () => {
    const bad = rows.filter((r) => {
      if (r.cells.length !== 4 || !r.cells[1] || !r.cells[2]) return true;
      const status = r.cells[2]!;
      if (!/^(supported|partial|not yet|deliberately different)\b/.test(status)) return true;
      const covered = r.cells[3]!;
      return !/^none\b/.test(covered) && !/`test\/[^`]+`/.test(covered);
    });
    expect(bad.map((r) => r.id)).toEqual([]);
  });

  it("names only files that exist", () => {
    const text = readFileSync(TABLE, "utf8");
    const paths = [...text.matchAll(/`((?:src|test|ffi|scripts|docs)\/[^`\s]+\.[A-Za-z]+)`/g)].map((m) => m[1]!);
    expect(paths.length).toBeGreaterThan(0);
    expect(paths.filter((p) => !existsSync(join(ROOT, p)))).toEqual([]);
  });
});
