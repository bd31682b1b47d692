/**
 * README.md is a front page (#33): at most 20 KB, opening with the two commands CI and the
 * hook look for (set up and serve, set up and test); prose in the docs is wrapped.
 */
import { describe, expect, it } from "vitest";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { docFiles, proseLines, ROOT } from "../../helpers/markdown.ts";

describe("README.md", () => {
  it("is at most 20 KB", () => {
    expect(statSync(join(ROOT, "README.md")).size).toBeLessThanOrEqual(20_000);
  });

  it("begins with the command that serves model_repository/ and the one that runs the tests", () => {
    const lines = readFileSync(join(ROOT, "README.md"), "utf8").split("\n");
    expect(lines.slice(0, 3)).toEqual(["# Nereid", "", "```sh"]);
    expect(lines[3]).toMatch(/^npm ci && npm start\s+#/);
    expect(lines[4]).toMatch(/^npm ci && npm test\s+#/);
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> };
    expect(pkg.scripts["start"]).toContain("--model-repository=model_repository");
  });
});

describe("the docs' prose", () => {
  it("has no line over 160 characters outside tables and code blocks", () => {
    const long = docFiles().flatMap((f) =>
      proseLines(readFileSync(join(ROOT, f), "utf8"))
        .filter(({ line }) => !line.trimStart().startsWith("|") && [...line].length > 160)
        .map(({ n }) => `${f}:${n}`),
    );
    expect(long).toEqual([]);
  });
});
