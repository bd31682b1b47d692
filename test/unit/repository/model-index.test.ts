/**
 * ModelIndex (#31 item 2): the models tried, the lookups by name and version with
 * Triton's messages and codes, namespacing's resolution, and the repository index's
 * entries (folders not yet tried, failures, versions still loading).
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ModelIndex, keysOf, keysOfOr, nameOf } from "../../../src/repository/model-index.ts";
import { modelKey } from "../../../src/repository/layout.ts";
import { ModelVersion, onModelStateChange } from "../../../src/repository/model-version.ts";
import type { ServerError } from "../../../src/core/errors.ts";

const config = { name: "m", platform: "onnxruntime_onnx", max_batch_size: 0, input: [], output: [] } as never;
const roots: string[] = [];

/** A repository folder holding empty model folders `names`. */
function repo(...names: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), "nereid-index-"));
  roots.push(dir);
  for (const n of names) mkdirSync(join(dir, n, "1"), { recursive: true });
  return dir;
}

afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

/** A version in `state` (through the transitions the lifecycle makes). */
function version(name: string, v: number, state: "READY" | "LOADING" | "UNAVAILABLE" | "unloaded", reason = ""): ModelVersion {
  const mv = new ModelVersion(name, v, `/nowhere/${name}`, config);
  if (state === "UNAVAILABLE") {
    mv.transition("UNAVAILABLE", reason);
    return mv;
  }
  mv.transition("LOADING");
  if (state === "LOADING") return mv;
  mv.transition("READY");
  if (state === "unloaded") {
    mv.transition("UNLOADING");
    mv.transition("UNAVAILABLE", "unloaded");
  }
  return mv;
}

function entry(...versions: ModelVersion[]) {
  return { location: { name: versions[0]?.name ?? "", repository: "r", dir: "/nowhere" }, versions: new Map(versions.map((v) => [v.version, v])) };
}

/** The error `fn` throws, as code and message. */
function thrown(fn: () => unknown): { code: string; message: string } {
  try {
    fn();
  } catch (err) {
    return { code: (err as ServerError).code, message: (err as Error).message };
  }
  throw new Error("nothing thrown");
}

describe("keys", () => {
  it("reads a key's name and finds a name's keys, namespaced or not", () => {
    const keys = [modelKey("/a", "m"), modelKey("/b", "m"), "m", modelKey("/a", "n")];
    expect(nameOf(modelKey("/a", "m"))).toBe("m");
    expect(nameOf("plain")).toBe("plain");
    expect(keysOf("m", keys)).toEqual(["/a\0m", "/b\0m", "m"]);
    expect(keysOfOr("x", keys)).toEqual(["x"]);
    expect(keysOfOr("n", keys)).toEqual(["/a\0n"]);
  });
});

describe("ModelIndex lookups", () => {
  const index = new ModelIndex({ repositories: [] });
  index.set("m", entry(version("m", 1, "READY"), version("m", 2, "READY"), version("m", 3, "UNAVAILABLE", "bad weights")));
  index.set("f", { ...entry(), failure: "no config" });
  index.set("u", entry(version("u", 1, "unloaded")));

  it("serves the highest READY version, or the one named", () => {
    expect(index.getModel("m").version).toBe(2);
    expect(index.getModel("m", "1").version).toBe(1);
    expect(index.readyVersions("m").map((v) => v.version)).toEqual([1, 2]);
    expect(index.readyVersions("nope")).toEqual([]);
  });

  it("answers unknown models and versions with Triton's codes and messages", () => {
    expect(thrown(() => index.getModel("nope"))).toEqual({ code: "NOT_FOUND", message: "Request for unknown model: 'nope' is not found" });
    expect(thrown(() => index.getModel("m", "7"))).toEqual({ code: "NOT_FOUND", message: "Request for unknown model: 'm' version 7 is not found" });
    expect(thrown(() => index.getModel("m", "x1"))).toEqual({
      code: "INVALID_ARG",
      message: "Request for unknown model: 'm' version 'x1' is not a valid version",
    });
    expect(thrown(() => index.getModel("m", "3"))).toEqual({
      code: "UNAVAILABLE",
      message: "Request for unknown model: 'm' version 3 is not at ready state: bad weights",
    });
    expect(thrown(() => index.getModel("f"))).toEqual({ code: "UNAVAILABLE", message: "Request for unknown model: 'f' has no available versions: no config" });
    expect(thrown(() => index.getModel("f", "1"))).toEqual({ code: "UNAVAILABLE", message: "Request for unknown model: 'f' is not available: no config" });
    expect(thrown(() => index.getModel("u"))).toEqual({ code: "UNAVAILABLE", message: "Request for unknown model: 'u' has no available versions: unloaded" });
  });

  it("counts failures against readiness, explicitly unloaded versions not", () => {
    expect(index.allReady()).toBe(false);
    expect(index.failures()).toEqual(["m version 3: bad weights", "f: no config"]);
    const clean = new ModelIndex({ repositories: [] });
    clean.set("m", entry(version("m", 1, "READY")));
    clean.set("u", entry(version("u", 1, "unloaded")));
    expect(clean.allReady()).toBe(true);
    expect(clean.failures()).toEqual([]);
    expect(clean.allVersions().map((v) => `${v.name}:${v.state}`)).toEqual(["m:READY", "u:UNAVAILABLE"]);
  });
});

describe("ModelIndex under namespacing", () => {
  const a = repo("m", "only_a");
  const b = repo("m");
  const index = new ModelIndex({ repositories: [a, b], namespacing: true });
  index.set(modelKey(a, "m"), entry(version("m", 1, "READY")));
  index.set(modelKey(b, "m"), entry(version("m", 2, "READY")));

  it("refuses a name two namespaces serve, with Triton's message, unless the caller's namespace has it", () => {
    expect(thrown(() => index.getModel("m"))).toEqual({
      code: "INVALID_ARG",
      message: "There are 2 identifiers of model 'm' in global map, model namespace must be provided to resolve ambiguity.",
    });
    expect(index.getModel("m", undefined, b).version).toBe(2);
    expect(index.resolve("m", a)).toBe(modelKey(a, "m"));
  });

  it("points an ensemble step at its own namespace's model, else the only one of that name", () => {
    const scan = index.scan();
    expect([...scan.models.keys()].sort()).toEqual([modelKey(a, "m"), modelKey(a, "only_a"), modelKey(b, "m")].sort());
    expect(index.stepKey(b, "m", scan)).toBe(modelKey(b, "m"));
    expect(index.stepKey(b, "only_a", scan)).toBe(modelKey(a, "only_a"));
    expect(index.stepKey(b, "missing", scan)).toBe(modelKey(b, "missing"));
  });

  it("knows a name from the last scan remembered or from the models tried", () => {
    expect(index.knows("only_a")).toBe(false);
    index.remember(index.scan());
    expect(index.knows("only_a")).toBe(true);
    expect(index.knows("m")).toBe(true);
    expect(index.knows("missing")).toBe(false);
  });
});

describe("ModelIndex.index", () => {
  it("lists folders not yet tried, failures, served versions and versions loading, by name", () => {
    const dir = repo("a_untried", "c_served", "d_failed");
    const index = new ModelIndex({ repositories: [dir] });
    index.set("d_failed", { ...entry(), failure: "bad config" });
    const served = version("c_served", 1, "READY");
    index.set("c_served", entry(served, version("c_served", 2, "UNAVAILABLE", "no file")));
    index.loading("b_loading", [version("b_loading", 1, "LOADING")]);
    expect(index.index()).toEqual([
      { name: "a_untried" },
      { name: "b_loading", version: "1", state: "LOADING" },
      { name: "c_served", version: "1", state: "READY" },
      { name: "c_served", version: "2", state: "UNAVAILABLE", reason: "no file" },
      { name: "d_failed", state: "UNAVAILABLE", reason: "bad config" },
    ]);
    expect(index.index(true)).toEqual([{ name: "c_served", version: "1", state: "READY" }]);
  });

  it("shows a version reloading as LOADING over its failed one, and the READY one it keeps serving as READY", () => {
    const index = new ModelIndex({ repositories: [] });
    index.set("m", entry(version("m", 1, "READY"), version("m", 2, "UNAVAILABLE", "old failure")));
    index.loading("m", [version("m", 1, "LOADING"), version("m", 2, "LOADING")]);
    expect(index.index()).toEqual([
      { name: "m", version: "1", state: "READY" },
      { name: "m", version: "2", state: "LOADING" },
    ]);
    index.loaded("m");
    expect(index.index().map((e) => e.state)).toEqual(["READY", "UNAVAILABLE"]);
  });

  it("falls back to the last scan remembered when a repository cannot be read", () => {
    const dir = repo("kept");
    const index = new ModelIndex({ repositories: [dir] });
    index.remember(index.scan());
    rmSync(dir, { recursive: true, force: true });
    expect(() => index.scan()).toThrow(/failed to read model repository/);
    expect(index.index()).toEqual([{ name: "kept" }]);
  });
});

describe("ModelIndex changes", () => {
  it("tells the state listeners when it serves other versions: a READY version is listed only after its state change (#30)", () => {
    const index = new ModelIndex({ repositories: [] });
    const mv = version("m", 1, "READY");
    const seen: string[] = [];
    const stop = onModelStateChange((v) => seen.push(`${v ? v.name : "index"}: ${index.readyVersions("m").length}`));
    try {
      index.set("m", entry(mv));
      index.delete("m");
    } finally {
      stop();
    }
    expect(seen).toEqual(["index: 1", "index: 0"]);
  });
});
