/**
 * #29 item 6, in the style of #14's fuzzers: generated and mutated redis cache values
 * (test/fuzz/store-gen.ts) through decodeEntry with a fixed seed. It never throws, an
 * invalid value always says why, and what it accepts is a valid response (checked by
 * test/fuzz/store-run.ts without the codec's own code) that re-encodes to itself.
 */
import { describe, it, expect } from "vitest";
import { fuzzCacheEntry, outputsProblem } from "../../fuzz/store-run.ts";
import { summary } from "../../fuzz/run.ts";

describe("fuzzed redis cache entries (#29 item 6)", () => {
  it("8000 generated and mutated values: a miss or a valid response, never a throw", () => {
    const s = fuzzCacheEntry({ seed: 20261127, count: 8_000 });
    console.log(summary(s));
    expect(s.findings.map((f) => `case ${f.index}: ${f.problem}`).join("\n")).toBe("");
    // Both sides are reached: many mutated values still decode, most are refused.
    expect(s.outcomes.get("valid") ?? 0).toBeGreaterThan(800);
    expect(s.outcomes.get("invalid") ?? 0).toBeGreaterThan(2000);
  });

  it("its oracle refuses what the old decoder let through (a string dim, a size mismatch, a missing output)", () => {
    const t = (shape: unknown[], bytes: number) => ({ name: "O", datatype: "INT32" as const, shape: shape as number[], data: new Uint8Array(bytes) });
    expect(outputsProblem([t(['1],"x":[2'], 4)], [])).toBe('bad shape ["1],\\"x\\":[2"]');
    expect(outputsProblem([t([1, 4], 8)], [])).toBe('output "O": 8 bytes for INT32 [1,4]');
    expect(outputsProblem([], ["O"])).toBe('wanted output "O" missing');
    expect(outputsProblem([t([1, 2], 8)], ["O"])).toBeUndefined();
  });
});
