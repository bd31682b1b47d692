/** The onnxruntime backend's "auto" run mode policy, on given run times (no clock). */
import { describe, it, expect } from "vitest";
import { AutoRunMode, MAX_PROBE_EVERY, PROBE_LIMIT_US, SYNC_THRESHOLD_US } from "../../../src/backends/onnxruntime/run-mode.ts";

/** The `sync` decision before each run, recording the given run times in turn (each in the mode decided). */
function decisions(runsUs: number[], m = new AutoRunMode()): boolean[] {
  return runsUs.map((us) => {
    const sync = m.sync;
    m.record(us, sync);
    return sync;
  });
}

describe("AutoRunMode", () => {
  it("starts on the worker, and stays there while no run there came back under the probe limit", () => {
    expect([SYNC_THRESHOLD_US, PROBE_LIMIT_US, MAX_PROBE_EVERY]).toEqual([200, 10_000, 1024]);
    expect(decisions([90_000, 10_000, 25_000, 10_001, 50_000])).toEqual([false, false, false, false, false]);
  });

  it("moves to the calling thread after the first run on the worker under the threshold (Node's hop)", () => {
    expect(decisions([300_000, 199, 40, 40])).toEqual([false, false, true, true]);
  });

  it("probes inline after a run on the worker under the probe limit, and stays inline when the probe is under the threshold", () => {
    // Bun's hop: no run on the worker comes back under 200 µs, but the model runs in 12.
    expect(decisions([1131, 12, 15, 11])).toEqual([false, true, true, true]);
  });

  it("a probe over the threshold doubles the runs on the worker before the next one, up to MAX_PROBE_EVERY", () => {
    const m = new AutoRunMode();
    // A 900 µs model: its worker runs come back in 1200.
    const flags = decisions(
      Array.from({ length: 40 }, (_, i) => (i === 0 ? 1200 : 900)),
      m,
    );
    const probes = flags.flatMap((s, i) => (s ? [i] : []));
    // Run 0 on the worker, then probes after 1, 2, 4, 8, 16 runs there.
    expect(probes).toEqual([1, 4, 9, 18, 35]);
    // The gap stops growing at MAX_PROBE_EVERY runs.
    const later = decisions(Array(5000).fill(900), m).flatMap((s, i) => (s ? [i] : []));
    const gaps = later.slice(1).map((p, i) => p - later[i]! - 1);
    expect(Math.max(...gaps)).toBe(MAX_PROBE_EVERY);
    expect(gaps.slice(-2)).toEqual([MAX_PROBE_EVERY, MAX_PROBE_EVERY]);
  });

  it("a probe that comes in under the threshold (a loaded machine's late probe) moves it inline and resets the gap", () => {
    expect(decisions([1500, 400, 1500, 1500, 150, 20])).toEqual([false, true, false, false, true, true]);
  });

  it("goes back to the worker only after two calling-thread runs in a row over 10× the threshold", () => {
    // 2001 µs is over 10×; one slow run followed by a normal one resets the count.
    expect(decisions([50, 2001, 100, 2001, 2001, 60_000, 60_000])).toEqual([false, true, true, true, true, false, false]);
  });

  it("back on the worker it forgets its fastest run there: one fast run or a fast probe is needed again", () => {
    // Two slow inline runs send it back; its next worker run (3000 µs, under the probe limit) earns a probe, which is fast.
    expect(decisions([50, 3000, 3000, 3000, 10])).toEqual([false, true, true, false, true]);
    // A model that became really slow: no worker run under the probe limit, no probe.
    expect(decisions([50, 30_000, 30_000, 30_000, 30_000, 30_000])).toEqual([false, true, true, false, false, false]);
  });
});
