/** The onnxruntime backend's "auto" run mode policy, on given run times (no clock). */
import { describe, it, expect } from "vitest";
import { AutoRunMode, MAX_PROBE_EVERY, PROBE_LIMIT_US, SYNC_THRESHOLD_US } from "../../../src/backends/onnxruntime/run-mode.ts";

/** A run: its time in µs, and its input bytes (64 unless given). */
type Run = number | [us: number, bytes: number];

/**
 * The decision before each run (true: on the calling thread), recording the given runs in
 * turn, each in the mode decided; a run on the worker takes `hopUs` more (0: the times given
 * are what the worker's runs took).
 */
function decisions(runs: Run[], m = new AutoRunMode(), hopUs = 0): boolean[] {
  return runs.map((r) => {
    const [us, bytes] = typeof r === "number" ? [r, 64] : r;
    const sync = m.syncFor(bytes);
    m.record(sync ? us : us + hopUs, sync, bytes);
    return sync;
  });
}
/** The indices of the runs made on the calling thread. */
const inline = (flags: boolean[]) => flags.flatMap((s, i) => (s ? [i] : []));

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

  it("probes only a request with no more input bytes than the fastest run on the worker had", () => {
    // The fastest worker run had 64 bytes; a 4 KiB request is not probed (it might take far longer), the next 64-byte one is.
    expect(
      decisions([
        [1200, 64],
        [1500, 4096],
        [1500, 4096],
        [15, 64],
        [20, 4096],
      ]),
    ).toEqual([false, false, false, true, true]);
    // A faster run with more bytes raises the bound.
    expect(
      decisions([
        [3000, 64],
        [1200, 4096],
        [15, 4096],
      ]),
    ).toEqual([false, false, true]);
  });

  it("a probe over the threshold doubles the runs on the worker before the next one, up to MAX_PROBE_EVERY", () => {
    const m = new AutoRunMode();
    // A 900 µs model: its worker runs come back in 1200.
    const probes = inline(
      decisions(
        Array.from({ length: 40 }, (_, i) => (i === 0 ? 1200 : 900)),
        m,
      ),
    );
    // Run 0 on the worker, then probes after 1, 2, 4, 8, 16 runs there.
    expect(probes).toEqual([1, 4, 9, 18, 35]);
    // The gap stops growing at MAX_PROBE_EVERY runs.
    const later = inline(decisions(Array(5000).fill(900), m));
    const gaps = later.slice(1).map((p, i) => p - later[i]! - 1);
    expect(Math.max(...gaps)).toBe(MAX_PROBE_EVERY);
    expect(gaps.slice(-2)).toEqual([MAX_PROBE_EVERY, MAX_PROBE_EVERY]);
  });

  it("a probe under the threshold after failed ones moves it inline; the gap is not reset", () => {
    const m = new AutoRunMode();
    // Probe at run 1 fails (gap 2), the one at run 4 succeeds.
    expect(decisions([1500, 400, 1500, 1500, 150, 20], m)).toEqual([false, true, false, false, true, true]);
    // Sent back by two slow inline runs: the gap doubles again (4), so the next probe comes after 4 worker runs.
    expect(decisions([3000, 3000, 1500, 1500, 1500, 1500, 20, 20], m)).toEqual([true, true, false, false, false, false, true, true]);
  });

  it("goes back to the worker after two calling-thread runs in a row over 10× the threshold, or one over the probe limit", () => {
    // 2001 µs is over 10×; one slow run followed by a normal one resets the count.
    expect(decisions([50, 2001, 100, 2001, 2001, 60_000, 60_000])).toEqual([false, true, true, true, true, false, false]);
    // One inline run over 10 ms sends it back at once.
    expect(decisions([50, 20, 10_001, 20_000])).toEqual([false, true, true, false]);
  });

  it("back on the worker it forgets its fastest run there: one fast run or a fast probe is needed again", () => {
    // Two slow inline runs send it back (gap 2); its next worker runs (3000 µs, under the probe limit) earn a probe, which is fast.
    expect(decisions([50, 3000, 3000, 3000, 3000, 10])).toEqual([false, true, true, false, false, true]);
    // A model that became really slow: no worker run under the probe limit, no probe.
    expect(decisions([50, 30_000, 30_000, 30_000, 30_000, 30_000])).toEqual([false, true, false, false, false, false]);
  });

  it("a model whose runs swing between fast and slow spends ever fewer runs inline", () => {
    // 100 µs runs, with a 5 ms one every third run (two in a row now and then); Bun's hop of 300 µs on the worker.
    const runs = Array.from({ length: 20_000 }, (_, i) => (i % 3 === 2 || i % 7 === 0 ? 5000 : 100));
    const flags = decisions(runs, new AutoRunMode(), 300);
    const first = flags.slice(0, 2000).filter(Boolean).length;
    const last = flags.slice(-2000).filter(Boolean).length;
    expect(last).toBeLessThan(first / 4);
  });
});
