/**
 * The local response cache's LRU behaviour (S-17), shared by its two forms: the main
 * thread's own (response-cache.ts) and the one in shared memory (shared-cache.ts). `entry`:
 * what one entry of a 1-character key and one 100-byte tensor "o" costs in that form.
 */
import { expect, it } from "vitest";
import type { Tensor } from "../../../src/core/tensor.ts";
import type { CacheCounters } from "../../../src/cache/response-cache.ts";

export const tensor = (name: string, bytes: number, fill = 1): Tensor => ({
  name,
  datatype: "UINT8",
  shape: [bytes],
  data: new Uint8Array(bytes).fill(fill),
});

interface Lru {
  lookup(key: string): Tensor[] | undefined;
  insert(key: string, outputs: readonly Tensor[]): boolean;
  counters(): CacheCounters;
}

export function lruCases(make: (capacity: number) => Lru, entry: number): void {
  it("evicts the least recently used entries to stay within its size", () => {
    const cache = make(3 * entry);
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
    expect(c.bytes).toBe(3 * entry);
    expect(c.evictions).toBe(2);
  });

  it("refuses an entry larger than the whole cache without evicting anything", () => {
    const cache = make(2 * entry);
    cache.insert("a", [tensor("o", 100)]);
    expect(cache.insert("big", [tensor("o", 2 * entry)])).toBe(false);
    expect(cache.lookup("a")).toBeDefined();
    expect(cache.counters().evictions).toBe(0);
  });

  it("keeps the first answer when a key is inserted twice", () => {
    const cache = make(10_000);
    cache.insert("a", [tensor("o", 100, 1)]);
    cache.insert("a", [tensor("o", 100, 2)]);
    expect(cache.lookup("a")![0]!.data[0]).toBe(1);
    expect(cache.counters().bytes).toBe(entry);
  });
}
