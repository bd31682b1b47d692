/**
 * M-04: the nv_inference_*_duration_us counters and the cache duration counters are what
 * Triton's InferenceStatsAggregator makes them: each request's duration in whole
 * microseconds (ns / 1000, truncated), summed, so the exposition shows integers; the
 * statistics extension keeps the exact nanoseconds.
 */
import { describe, expect, it } from "vitest";
import { ModelStats, wholeUs } from "../../../src/core/stats.ts";
import { createMetricsRegistry } from "../../../src/metrics/model-metrics.ts";
import type { ModelVersion } from "../../../src/repository/model-version.ts";

function versionWith(stats: ModelStats): ModelVersion {
  return {
    name: "m",
    version: 1,
    config: { name: "m" },
    stats,
    loadDurationSecs: 0.5,
    ready: true,
    scheduler: { pendingCount: () => 0 },
  } as unknown as ModelVersion;
}

const sample = (text: string, name: string) => Number(new RegExp(`^${name}\\{model="m",version="1"\\} (\\S+)$`, "m").exec(text)?.[1]);

describe("duration counters (M-04)", () => {
  it("sum each request's whole microseconds, as Triton does", async () => {
    const stats = new ModelStats();
    // Two requests of 1.999 ms end to end, 999 ns queued, 1.5 µs + 2.5 µs + 0.5 µs of compute.
    stats.recordSuccess(1_999_999, 999, 1_500, 2_500, 500);
    stats.recordSuccess(1_999_999, 999, 1_500, 2_500, 500);
    // A cache hit of 3.0009 µs, 1.9 µs of it the lookup; a miss of 2.2 µs.
    stats.recordCacheHit(3_000.9, 0, 1_900);
    stats.recordCacheMiss(2_200);
    const v = versionWith(stats);
    const { metrics, close } = createMetricsRegistry({ versions: () => [v] } as never, { cpu: false, intervalMs: 1000, cacheEnabled: () => true });
    const text = await metrics();
    close();
    expect(sample(text, "nv_inference_request_duration_us")).toBe(1999 + 1999 + 3);
    expect(sample(text, "nv_inference_queue_duration_us")).toBe(0);
    expect(sample(text, "nv_inference_compute_input_duration_us")).toBe(2);
    expect(sample(text, "nv_inference_compute_infer_duration_us")).toBe(4);
    expect(sample(text, "nv_inference_compute_output_duration_us")).toBe(0);
    expect(sample(text, "nv_cache_hit_duration_per_model")).toBe(1);
    expect(sample(text, "nv_cache_miss_duration_per_model")).toBe(2);
    // The statistics extension keeps nanoseconds.
    expect([stats.queue.ns, stats.computeInput.ns, stats.success.ns]).toEqual([999 * 2, 3_000, 1_999_999 * 2 + 3_001]);
  });

  it("wholeUs truncates, and a negative clock step counts 0", () => {
    expect([wholeUs(0), wholeUs(999), wholeUs(1000), wholeUs(1999.9), wholeUs(-5)]).toEqual([0, 0, 1, 1, 0]);
  });
});
