/** The statistics clock reads whole nanoseconds (#17 wire bug 1: "ns":16806709.000001907 on the wire). */
import { describe, expect, it } from "vitest";
import { nowNs } from "../../../src/core/clock.ts";
import { ModelStats } from "../../../src/core/stats.ts";

describe("nowNs", () => {
  it("is a whole number of nanoseconds at every reading, so differences are too", () => {
    const readings = Array.from({ length: 10_000 }, () => nowNs());
    expect(readings.filter((r) => !Number.isInteger(r))).toEqual([]);
    expect(readings.every((r, i) => i === 0 || r >= readings[i - 1]!)).toBe(true);
  });
});

describe("ModelStats", () => {
  it("adds a fractional share of a batch's time as whole nanoseconds", () => {
    const stats = new ModelStats();
    stats.recordSuccess(1000.4, 10.6, 3.3, 1e6 / 3, 0.5);
    stats.recordExecution(3, 3.3, 1e6 / 3, 0.5);
    const json = JSON.stringify(stats.toJSON("m", "1"));
    expect([...json.matchAll(/"ns":([^,}]+)/g)].map((m) => m[1]).filter((v) => !/^\d+$/.test(v!))).toEqual([]);
    expect(stats.success.ns).toBe(1000);
    expect(stats.computeInfer.ns).toBe(333333);
  });
});
