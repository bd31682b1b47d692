// S-17: the local response cache (byte-bounded LRU) and its key.
import { describe, expect, it } from "vitest";
import { LocalResponseCache } from "../../../src/cache/response-cache.ts";
import { cacheKey, EXACT_KEY_MAX } from "../../../src/cache/cache-key.ts";
import type { Tensor } from "../../../src/core/tensor.ts";
import { lruCases, tensor } from "./lru-cases.ts";

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

  lruCases((capacity) => new LocalResponseCache(capacity), ENTRY);
});

describe("cacheKey", () => {
  const t = (name: string, shape: number[], datatype: Tensor["datatype"] = "INT32"): Tensor => ({ name, datatype, shape, data: new Uint8Array(16).fill(3) });
  const base = cacheKey("m", 1, [t("A", [4]), t("B", [4])], ["OUT"]);

  it("keys small inputs by their bytes and large ones by a digest; either way equal requests share a key and others do not", () => {
    const big = (fill: number, name = "A"): Tensor => ({
      name,
      datatype: "UINT8",
      shape: [EXACT_KEY_MAX + 1],
      data: new Uint8Array(EXACT_KEY_MAX + 1).fill(fill),
    });
    const small = (fill: number): Tensor => ({ name: "A", datatype: "UINT8", shape: [EXACT_KEY_MAX], data: new Uint8Array(EXACT_KEY_MAX).fill(fill) });
    expect(cacheKey("m", 1, [small(1)], ["OUT"])).toBe(cacheKey("m", 1, [small(1)], ["OUT"]));
    expect(cacheKey("m", 1, [small(1)], ["OUT"])).not.toBe(cacheKey("m", 1, [small(2)], ["OUT"]));
    expect(cacheKey("m", 1, [small(1)], ["OUT"]).startsWith("=")).toBe(true);
    expect(cacheKey("m", 1, [big(1)], ["OUT"])).toBe(cacheKey("m", 1, [big(1)], ["OUT"]));
    expect(cacheKey("m", 1, [big(1)], ["OUT"])).not.toBe(cacheKey("m", 1, [big(2)], ["OUT"]));
    expect(cacheKey("m", 1, [big(1)], ["OUT"])).toMatch(/^#[A-Za-z0-9+/]{43}=$/);
    // Bytes 0x80-0xff and a view at an offset key by exactly the view's bytes.
    const all = Uint8Array.from({ length: 256 }, (_, i) => i);
    const backing = new Uint8Array(300);
    backing.set(all, 7);
    const at = (data: Uint8Array): Tensor => ({ name: "A", datatype: "UINT8", shape: [256], data });
    expect(cacheKey("m", 1, [at(backing.subarray(7, 263))], ["OUT"])).toBe(cacheKey("m", 1, [at(all)], ["OUT"]));
    const flipped = all.slice();
    flipped[200] = 0;
    expect(cacheKey("m", 1, [at(flipped)], ["OUT"])).not.toBe(cacheKey("m", 1, [at(all)], ["OUT"]));
    // The same bytes split differently between two inputs are different requests.
    const two = (a: number, b: number): Tensor[] => [
      { name: "A", datatype: "UINT8", shape: [a], data: new Uint8Array(a).fill(5) },
      { name: "B", datatype: "UINT8", shape: [b], data: new Uint8Array(b).fill(5) },
    ];
    expect(cacheKey("m", 1, two(3, 5), ["OUT"])).not.toBe(cacheKey("m", 1, two(5, 3), ["OUT"]));
  });

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
