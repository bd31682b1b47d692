/** repository layout and version policy. */
import { describe, it, expect, afterEach } from "vitest";
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { scanRepositories, listVersions, configPath } from "../../../src/repository/layout.ts";
import { selectVersions, missingSpecificVersions } from "../../../src/repository/version-policy.ts";

const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), "nereid-layout-"));
  dirs.push(d);
  return d;
};
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

describe("layout", () => {
  it("lists numeric version folders, ignoring leading zeros, files and other names", () => {
    const m = tmp();
    for (const v of ["1", "3", "10", "02", "0", "abc", "2x"]) mkdirSync(join(m, v));
    writeFileSync(join(m, "4"), "a file, not a folder");
    expect(listVersions(m)).toEqual([1, 3, 10]);
  });

  it("finds models across repositories and flags duplicates", () => {
    const a = tmp();
    const b = tmp();
    mkdirSync(join(a, "m1"));
    mkdirSync(join(a, "dup"));
    mkdirSync(join(b, "dup"));
    mkdirSync(join(b, "m2"));
    mkdirSync(join(b, ".hidden"));
    writeFileSync(join(b, "README"), "");
    const scan = scanRepositories([a, b]);
    expect([...scan.models.keys()]).toEqual(["dup", "m1", "m2"]);
    expect(scan.duplicates.get("dup")).toEqual([a, b]);
  });

  it("names an object-storage repository by its URL, not its local copy's folder (#21 item 4)", () => {
    const copy = tmp();
    const local = tmp();
    mkdirSync(join(copy, "dup"));
    mkdirSync(join(local, "dup"));
    const scan = scanRepositories([copy, local], false, ["s3://bucket/models", local]);
    expect(scan.duplicates.get("dup")).toEqual(["s3://bucket/models", local]);
    const spaced = scanRepositories([copy, local], true, ["s3://bucket/models", local]);
    expect(spaced.models.get(`s3://bucket/models\0dup`)).toEqual({
      name: "dup",
      repository: "s3://bucket/models",
      dir: join(copy, "dup"),
      namespace: "s3://bucket/models",
    });
    expect(() => scanRepositories([join(copy, "missing")], false, ["gs://b/p"])).toThrow("failed to read model repository 'gs://b/p'");
  });

  it("prefers configs/<name>.pbtxt when --model-config-name is given", () => {
    const m = tmp();
    expect(configPath(m, "")).toBeUndefined();
    writeFileSync(join(m, "config.pbtxt"), "");
    expect(configPath(m, "fast")).toBe(join(m, "config.pbtxt"));
    mkdirSync(join(m, "configs"));
    writeFileSync(join(m, "configs", "fast.pbtxt"), "");
    expect(configPath(m, "fast")).toBe(join(m, "configs", "fast.pbtxt"));
  });
});

describe("version policy", () => {
  it("latest N, all and specific", () => {
    expect(selectVersions([1, 2, 3], undefined)).toEqual([3]);
    expect(selectVersions([3, 1, 2], { latest: { num_versions: 2 } })).toEqual([2, 3]);
    expect(selectVersions([1, 2, 3], { all: {} })).toEqual([1, 2, 3]);
    expect(selectVersions([1, 2, 3], { specific: { versions: [1, 3, 5] } })).toEqual([1, 3]);
    expect(missingSpecificVersions([1, 2, 3], { specific: { versions: [1, 3, 5] } })).toEqual([5]);
  });
});
