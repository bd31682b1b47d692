// S-17 (#30): the local response cache in one SharedArrayBuffer, which every thread of the server looks up and fills.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { SharedResponseCache, entryBytes } from "../../../src/cache/shared-cache.ts";
import type { Tensor } from "../../../src/core/tensor.ts";
import { lruCases, tensor } from "./lru-cases.ts";

const ROOT = join(import.meta.dirname, "..", "..", "..");
// An entry of a 1-character key and one tensor "o" of 100 bytes: 64 (entry) + 8 (key, UTF-16, padded)
// + 32 (tensor) + 8 (one dim) + 8 (name) + 104 (data, padded) = 224 bytes.
const ENTRY = 224;
const make = (capacity: number) => SharedResponseCache.create(capacity)!;

describe("SharedResponseCache", () => {
  it("charges each entry the bytes it takes in the buffer", () => {
    expect(entryBytes("a", [tensor("o", 100)])).toBe(ENTRY);
    expect(entryBytes("abcde", [tensor("o", 8), { name: "xyz", datatype: "FP32", shape: [2, 1], data: new Uint8Array(8) }])).toBe(
      64 + 16 + (32 + 8 + 8 + 8) + (32 + 16 + 8 + 8),
    );
  });

  it("returns what was stored, as copies independent of the caller's buffers and of the cache", () => {
    const cache = make(10_000);
    const out = tensor("o", 100, 7);
    expect(cache.insert("a", [out])).toBe(true);
    out.data.fill(0);
    const hit = cache.lookup("a")!;
    expect(hit[0]!.data).toEqual(new Uint8Array(100).fill(7));
    expect(hit[0]!.data.buffer).not.toBeInstanceOf(SharedArrayBuffer);
    expect(hit[0]!.shape).toEqual([100]);
    hit[0]!.data.fill(9);
    expect(cache.lookup("a")![0]!.data[0]).toBe(7);
    expect(cache.lookup("b")).toBeUndefined();
    expect(cache.counters()).toEqual({ entries: 1, bytes: ENTRY, lookups: 3, hits: 2, misses: 1, evictions: 0 });
  });

  it("keeps every output's name, datatype, shape and bytes: several outputs, a scalar, an empty tensor, BYTES, names and keys beyond latin1", () => {
    const cache = make(100_000);
    const bytes = new Uint8Array([3, 0, 0, 0, 97, 98, 99]);
    const outputs: Tensor[] = [
      { name: "scalar", datatype: "FP64", shape: [], data: new Uint8Array(new Float64Array([2.5]).buffer) },
      { name: "empty", datatype: "INT32", shape: [2, 0], data: new Uint8Array(0) },
      { name: "text", datatype: "BYTES", shape: [1], data: bytes },
      { name: "größe_☃", datatype: "BF16", shape: [1, 3], data: new Uint8Array([1, 2, 3, 4, 5, 6]) },
    ];
    const key = `=m\u00001\u0000ünïcode ☃\u0000${String.fromCharCode(0, 255, 0xd800)}`;
    cache.insert(key, outputs);
    expect(cache.lookup(key)).toEqual(outputs.map((t) => ({ ...t, data: new Uint8Array(t.data) })));
    // A key that differs in its last code unit, or is a prefix, is another key.
    expect(cache.lookup(key.slice(0, -1))).toBeUndefined();
    expect(cache.lookup(`${key.slice(0, -1)}\u0000`)).toBeUndefined();
  });

  lruCases(make, ENTRY);

  it("moves live entries over the holes when the arena's top reaches its end, keeping their bytes, their keys and their order of use", () => {
    // 64 KiB of arena past the size: entries of ~4 KiB reach its end after ~40 inserts beyond the size.
    const size = 16 * 4_200;
    const cache = make(size);
    const entry = (k: number): Tensor[] => [tensor(`o${k}`, 4_000, k % 251)];
    const live: number[] = [];
    const each = entryBytes("key 000", entry(0));
    for (let k = 0; k < 400; k++) {
      cache.insert(`key ${k}`, entry(k));
      live.push(k);
      while (live.length * each > size) live.shift();
      // Every third insert touches the oldest but one: it becomes the newest.
      if (k % 3 === 0 && live.length > 2) {
        const touched = live.splice(1, 1)[0]!;
        expect(cache.lookup(`key ${touched}`)![0]!.data[0]).toBe(touched % 251);
        live.push(touched);
      }
    }
    const c = cache.counters();
    expect(c.entries).toBeLessThanOrEqual(16);
    // Exactly the entries an LRU of this size keeps, each with its own bytes.
    const kept = live.filter((k) => cache.lookup(`key ${k}`) !== undefined);
    expect(kept).toEqual(live);
    expect(c.entries).toBe(16);
    for (const k of kept) expect(cache.lookup(`key ${k}`)).toEqual(entry(k));
  });

  it("is one cache for every view of its buffer (what another thread makes of it)", () => {
    const a = make(10_000);
    const b = new SharedResponseCache(a.buffer);
    expect(b.capacity).toBe(10_000);
    a.insert("x", [tensor("o", 100, 5)]);
    expect(b.lookup("x")![0]!.data[0]).toBe(5);
    b.insert("y", [tensor("o", 100, 6)]);
    expect(a.lookup("y")![0]!.data[0]).toBe(6);
    expect(a.counters()).toEqual(b.counters());
    expect(a.counters()).toMatchObject({ entries: 2, lookups: 2, hits: 2 });
  });

  it("takes a lock held past its wait for a holder that is gone: from then on every thread answers a miss and stores nothing", () => {
    const a = SharedResponseCache.create(10_000, 20)!;
    a.insert("x", [tensor("o", 10)]);
    const lock = new Int32Array(a.buffer, 0, 1);
    Atomics.store(lock, 0, 1); // a holder that never lets go
    const t = performance.now();
    expect(a.lookup("x")).toBeUndefined();
    expect(performance.now() - t).toBeGreaterThanOrEqual(19);
    expect(a.broken).toBe(true);
    const b = new SharedResponseCache(a.buffer);
    expect(b.broken).toBe(true);
    expect(b.insert("y", [tensor("o", 10)])).toBe(false);
    expect(b.lookup("x")).toBeUndefined();
  });

  it("leaves nothing behind when an entry cannot be written, however often", () => {
    const cache = make(3 * ENTRY);
    // A shape that is not numbers: the write throws part way (the arena has 64 KiB past the size; this is 400 × 224 bytes).
    const bad = (): Tensor[] => [{ ...tensor("o", 100), shape: [100n as unknown as number] }];
    for (let k = 0; k < 400; k++) expect(() => cache.insert(`bad ${k}`, bad())).toThrow(TypeError);
    expect(cache.counters()).toMatchObject({ entries: 0, bytes: 0 });
    for (let k = 0; k < 100; k++) expect(cache.insert(`k${k}`, [tensor("o", 100, k)])).toBe(true);
    expect([97, 98, 99].map((k) => cache.lookup(`k${k}`)![0]!.data[0])).toEqual([97, 98, 99]);
    expect(cache.counters()).toMatchObject({ entries: 3, bytes: 3 * ENTRY });
  });

  it("hands back no cache for a size one shared buffer cannot hold with a quarter more", () => {
    expect(SharedResponseCache.create(2 ** 32)).toBeUndefined();
    expect(SharedResponseCache.create(3.5 * 2 ** 30)).toBeUndefined();
    expect(make(1).capacity).toBe(1);
  });
});

describe("SharedResponseCache across threads", () => {
  it("three worker threads hitting, missing and evicting in one small cache never read another key's bytes or a half-written entry (Bun)", async () => {
    const { stdout } = await promisify(execFile)(join(ROOT, "node_modules", ".bin", "bun"), [join(ROOT, "test/unit/cache/shared-cache-race.ts")], {
      timeout: 60_000,
    });
    const r = JSON.parse(stdout.trim().split("\n").at(-1)!);
    expect(r.wrong).toBe(0);
    expect(r.hits).toBeGreaterThan(1_000);
    expect(r.inserts).toBeGreaterThan(1_000);
    expect(r.counters.evictions).toBeGreaterThan(1_000);
    expect(r.counters.lookups).toBe(r.lookups);
    expect(r.counters.hits).toBe(r.hits);
    expect(r.counters.bytes).toBeLessThanOrEqual(r.size);
  });
});
