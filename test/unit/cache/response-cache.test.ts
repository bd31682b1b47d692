// S-17: the local response cache (byte-bounded LRU) and its key.
import { describe, expect, it } from "vitest";
import { LocalResponseCache } from "../../../src/cache/response-cache.ts";
import { cacheKey } from "../../../src/cache/cache-key.ts";
import type { Tensor } from "../../../src/core/tensor.ts";

const tensor = (name: string, bytes: number, fill = 1): Tensor => ({ name, datatype: "UINT8", shape: [bytes], data: new Uint8Array(bytes).fill(fill) });
// Each entry below costs 64 (entry) + 1 (key) + 64 (tensor) + 1 (name) + 100 (data) = 230 bytes.
const ENTRY = 230;

describe("LocalResponseCache", () => {
  it("returns what was stored, as copies independent of the caller's buffers", () => {
    const cache = new LocalResponseCache(10_000);
    const out = tensor("o", 100, 7);
    expect(cache.insert("a", [out])).toBe(true);
    out.data.fill(0);
    const hit = cache.lookup("a")!;
    expect(hit[0]!.data).toEqual(new Uint8Array(100).fill(7));
    expect(hit[0]!.shape).toEqual([100]);
    expect(cache.lookup("b")).toBeUndefined();
    expect(cache.counters()).toEqual({ entries: 1, bytes: ENTRY, lookups: 2, hits: 1, misses: 1, evictions: 0 });
  });

  it("evicts the least recently used entries to stay within its size", () => {
    const cache = new LocalResponseCache(3 * ENTRY);
    for (const k of ["a", "b", "c"]) cache.insert(k, [tensor("o", 100)]);
    cache.lookup("a"); // b is now the least recently used
    cache.insert("d", [tensor("o", 100)]);
    expect(cache.lookup("b")).toBeUndefined();
    expect(cache.lookup("a")).toBeDefined();
    expect(cache.lookup("c")).toBeDefined();
    expect(cache.lookup("d")).toBeDefined();
    cache.insert("e", [tensor("o", 100)]); // a is now the oldest
    expect(cache.lookup("a")).toBeUndefined();
    const c = cache.counters();
    expect(c.entries).toBe(3);
    expect(c.bytes).toBe(3 * ENTRY);
    expect(c.evictions).toBe(2);
  });

  it("refuses an entry larger than the whole cache without evicting anything", () => {
    const cache = new LocalResponseCache(2 * ENTRY);
    cache.insert("a", [tensor("o", 100)]);
    expect(cache.insert("big", [tensor("o", 2 * ENTRY)])).toBe(false);
    expect(cache.lookup("a")).toBeDefined();
    expect(cache.counters().evictions).toBe(0);
  });

  it("keeps the first answer when a key is inserted twice", () => {
    const cache = new LocalResponseCache(10_000);
    cache.insert("a", [tensor("o", 100, 1)]);
    cache.insert("a", [tensor("o", 100, 2)]);
    expect(cache.lookup("a")![0]!.data[0]).toBe(1);
    expect(cache.counters().bytes).toBe(ENTRY);
  });
});

describe("cacheKey", () => {
  const t = (name: string, shape: number[], datatype: Tensor["datatype"] = "INT32"): Tensor => ({ name, datatype, shape, data: new Uint8Array(16).fill(3) });
  const base = cacheKey("m", 1, [t("A", [4]), t("B", [4])], ["OUT"]);

  it("is the same for the same inputs in any order", () => {
    expect(cacheKey("m", 1, [t("B", [4]), t("A", [4])], ["OUT"])).toBe(base);
  });

  it("differs with model, version, shape, datatype, bytes and requested outputs (Triton's key ignores shape, datatype and outputs)", () => {
    const other = { ...t("A", [4]), data: new Uint8Array(16).fill(4) };
    const keys = [
      cacheKey("n", 1, [t("A", [4]), t("B", [4])], ["OUT"]),
      cacheKey("m", 2, [t("A", [4]), t("B", [4])], ["OUT"]),
      cacheKey("m", 1, [t("A", [2, 2]), t("B", [4])], ["OUT"]),
      cacheKey("m", 1, [t("A", [4], "FP32"), t("B", [4])], ["OUT"]),
      cacheKey("m", 1, [other, t("B", [4])], ["OUT"]),
      cacheKey("m", 1, [t("A", [4]), t("B", [4])], ["OUT", "OUT2"]),
    ];
    expect(new Set([base, ...keys]).size).toBe(keys.length + 1);
  });
});
