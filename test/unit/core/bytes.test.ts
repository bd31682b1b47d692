/** allocBytes / copyBytes: small tensors share slabs without sharing bytes. */
import { describe, it, expect } from "vitest";
import { allocBytes, copyBytes, SMALL_BYTES_MAX } from "../../../src/core/bytes.ts";
import { valuesToBytes } from "../../../src/core/tensor-values.ts";

describe("allocBytes", () => {
  it("gives zeroed, 8-byte aligned views that do not overlap, across slab boundaries", () => {
    const sizes = [1, 3, 8, 13, 64, 1000, SMALL_BYTES_MAX, 7, 0, 500];
    const all: Uint8Array[] = [];
    for (let round = 0; round < 40; round++) for (const n of sizes) all.push(allocBytes(n));
    for (const b of all) {
      expect(b.byteOffset % 8).toBe(0);
      expect(b.every((x) => x === 0)).toBe(true);
    }
    // Fill each with its own index, then check that no later write reached an earlier view.
    all.forEach((b, i) => b.fill(i % 251));
    all.forEach((b, i) => expect(b.every((x) => x === i % 251)).toBe(true));
    const byBuffer = new Map<ArrayBufferLike, [number, number][]>();
    for (const b of all) {
      const spans = byBuffer.get(b.buffer) ?? [];
      spans.push([b.byteOffset, b.byteOffset + b.byteLength]);
      byBuffer.set(b.buffer, spans);
    }
    expect(byBuffer.size).toBeGreaterThan(1); // the slabs rolled over
    for (const spans of byBuffer.values()) {
      spans.sort((a, b) => a[0] - b[0]);
      for (let i = 1; i < spans.length; i++) expect(spans[i]![0]).toBeGreaterThanOrEqual(spans[i - 1]![1]);
    }
  });

  it("gives a tensor over SMALL_BYTES_MAX a buffer of its own", () => {
    const big = allocBytes(SMALL_BYTES_MAX + 1);
    expect(big.byteOffset).toBe(0);
    expect(big.buffer.byteLength).toBe(SMALL_BYTES_MAX + 1);
  });

  it("copyBytes copies: later changes to the source do not show", () => {
    const src = Uint8Array.from([1, 2, 3, 4, 5]);
    const copy = copyBytes(src);
    src.fill(9);
    expect([...copy]).toEqual([1, 2, 3, 4, 5]);
  });

  it("tensors decoded from JSON values read back through views that honour the offset", () => {
    const a = valuesToBytes("INT32", [1, -2, 3], "a");
    const b = valuesToBytes("FP64", [0.5, -1.25], "b");
    const c = valuesToBytes("INT64", [2n ** 40n, -1], "c");
    const d = valuesToBytes("FP16", [1, -2], "d");
    expect([...new Int32Array(a.buffer, a.byteOffset, 3)]).toEqual([1, -2, 3]);
    expect([...new Float64Array(b.buffer, b.byteOffset, 2)]).toEqual([0.5, -1.25]);
    expect([...new BigInt64Array(c.buffer, c.byteOffset, 2)]).toEqual([2n ** 40n, -1n]);
    expect([...new Uint16Array(d.buffer, d.byteOffset, 2)]).toEqual([0x3c00, 0xc000]);
    expect([a.byteLength, b.byteLength, c.byteLength, d.byteLength]).toEqual([12, 16, 16, 4]);
  });
});
