/**
 * Every relative link in README.md, ARCHITECTURE.md, SECURITY.md and docs/**\/*.md (#33)
 * leads somewhere: the file or folder exists, and a `#anchor` is a heading of the target as
 * GitHub slugs it.
 */
import { describe, expect, it } from "vitest";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { anchors, docFiles, links, ROOT, slug } from "../../helpers/markdown.ts";

describe("GitHub's heading anchors", () => {
  it("are lower case, without punctuation or code marks, with spaces as hyphens", () => {
    expect(slug("Instances, batching, priorities and the response cache")).toBe("instances-batching-priorities-and-the-response-cache");
    expect(slug("The example `ocr_stream`")).toBe("the-example-ocr_stream");
    expect(slug("Running from source: Bun, Node and Deno")).toBe("running-from-source-bun-node-and-deno");
    expect(slug("[Triton](https://x) compatibility")).toBe("triton-compatibility");
    expect([...anchors("# A\n\n## A\n\n```\n# not a heading\n```\n## A\n")]).toEqual(["a", "a-1", "a-2"]);
  });
});

describe("relative links in the docs", () => {
  const files = docFiles();

  it("finds the docs and their links", () => {
    expect(files).toContain("docs/quickstart.md");
    expect(files.flatMap((f) => links(readFileSync(join(ROOT, f), "utf8"))).length).toBeGreaterThan(50);
  });

  for (const file of files) {
    it(`${file}: every relative link's file and anchor exist`, () => {
      const broken: string[] = [];
      for (const { target, n } of links(readFileSync(join(ROOT, file), "utf8"))) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
        const [path, anchor] = target.split("#", 2) as [string, string | undefined];
        const dest = path === "" ? join(ROOT, file) : join(ROOT, dirname(file), decodeURIComponent(path));
        const where = `${file}:${n}: ${target}`;
        if (relative(ROOT, dest).startsWith("..")) broken.push(`${where} (outside the repository)`);
        else if (!existsSync(dest)) broken.push(`${where} (no such file)`);
        else if (anchor !== undefined) {
          if (statSync(dest).isDirectory() || !dest.endsWith(".md")) broken.push(`${where} (an anchor into a file that is not Markdown)`);
          else if (!anchors(readFileSync(dest, "utf8")).has(anchor)) broken.push(`${where} (no heading with that anchor)`);
        }
      }
      expect(broken).toEqual([]);
    });
  }
});
