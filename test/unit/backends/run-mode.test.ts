/** The onnxruntime backend's "auto" run mode policy, on given run times (no clock). */
import { describe, it, expect } from "vitest";
import { AutoRunMode, INLINE_FLOOR_BYTES, MAX_PROBE_EVERY, PROBE_LIMIT_US, SYNC_THRESHOLD_US } from "../../../src/backends/onnxruntime/run-mode.ts";

/** A run: its time in µs, and its input bytes (64 unless given). */
type Run = number | [us: number, bytes: number];

/**
 * The decision before each run (true: on the calling thread), recording the given runs in
 * turn, each in the mode decided; a run on the worker takes `hopUs` more (0: the times given
 * are what the worker's runs took, as under Node; Bun's hop is about 300).
 */
function decisions(runs: Run[], m = new AutoRunMode(), hopUs = 0): boolean[] {
  return runs.map((r) => {
    const [us, bytes] = typeof r === "number" ? [r, 64] : r;
    const sync = m.syncFor(bytes);
    m.record(sync ? us : us + hopUs, sync, bytes);
    return sync;
  });
}
const BUN_HOP = 300;
/** The indices of the runs made on the calling thread. */
const inline = (flags: boolean[]) => flags.flatMap((s, i) => (s ? [i] : []));

describe("AutoRunMode", () => {
  it("starts on the worker, and stays there while no run there came back under the probe limit", () => {
    expect([SYNC_THRESHOLD_US, PROBE_LIMIT_US, MAX_PROBE_EVERY, INLINE_FLOOR_BYTES]).toEqual([200, 10_000, 1024, 1024]);
    expect(decisions([90_000, 10_000, 25_000, 10_001, 50_000])).toEqual([false, false, false, false, false]);
  });

  it("moves to the calling thread after the first run on the worker under the threshold (Node's hop)", () => {
    expect(decisions([300_000, 199, 40, 40])).toEqual([false, false, true, true]);
  });

  it("probes inline after a run on the worker under the probe limit, and stays inline when the probe is under the threshold", () => {
    // Bun's hop: no run on the worker comes back under 200 µs, but the model runs in 12.
    expect(decisions([831, 12, 15, 11], new AutoRunMode(), BUN_HOP)).toEqual([false, true, true, true]);
  });

  it("probes only a request no larger than the worker runs that came back within 1.5× the fastest", () => {
    // 4 KiB requests come back in 5 ms, far slower than the 64-byte one: only a 64-byte request is probed.
    expect(
      decisions([
        [1200, 64],
        [5000, 4096],
        [5000, 4096],
        [15, 64],
      ]),
    ).toEqual([false, false, false, true]);
    // A 4 KiB run back as fast as the fastest (1500 ≤ 1.5 × 1200) lets a 4 KiB request be probed.
    expect(
      decisions([
        [1200, 64],
        [1500, 4096],
        [15, 4096],
      ]),
    ).toEqual([false, false, true]);
  });

  it("inline, a request more than twice the size of those proven fast inline (and over the floor) goes to the worker", () => {
    const flags = decisions(
      [
        [831, 64],
        [12, 64],
        [20, 4096],
        [20, 1024],
        [20, 2048],
        [20, 4096],
        [20, 9000],
      ],
      new AutoRunMode(),
      BUN_HOP,
    );
    // Probed at 64 bytes; 4 KiB is over the 1 KiB floor; 1 KiB, then 2 and 4 KiB prove fast in turn; 9000 > 2 × 4096.
    expect(flags).toEqual([false, true, false, true, true, true, false]);
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

  it("a probe under the threshold after failed ones moves it inline; a move back doubles the gap again", () => {
    const m = new AutoRunMode();
    // Probe at run 1 fails (gap 2), the one at run 4 succeeds.
    expect(decisions([1500, 400, 1500, 1500, 150, 20], m)).toEqual([false, true, false, false, true, true]);
    // Sent back by two slow inline runs: the gap doubles (4), so the next probe comes after 4 worker runs.
    expect(decisions([3000, 3000, 1500, 1500, 1500, 1500, 20, 20], m)).toEqual([true, true, false, false, false, false, true, true]);
  });

  it("goes back to the worker when slow inline runs (over 10× the threshold) outweigh the fast ones, 1 against 1/8 each", () => {
    // 2001 µs is slow: 1, 0.875, 1.875, 2.875 → back.
    expect(decisions([50, 2001, 100, 2001, 2001, 60_000, 60_000])).toEqual([false, true, true, true, true, false, false]);
    // Slow and fast runs in turn (9 ms and 100 µs) send it back too: 1, 0.875, 1.875, 1.75, 2.75.
    expect(decisions([50, 9000, 100, 9000, 100, 9000, 100])).toEqual([false, true, true, true, true, true, false]);
    // One spike, then eight fast runs: it has weighed nothing by the next spike, and stays inline.
    expect(decisions([50, 12_000, ...Array(8).fill(20), 12_000, 20])).toEqual([false, ...Array(11).fill(true)]);
  });

  it("back on the worker it forgets its fastest run there: one fast run or a fast probe is needed again", () => {
    // Two slow inline runs send it back (gap 2); its worker runs (3000 µs, under the probe limit) earn a probe after 2, which is fast.
    expect(decisions([50, 3000, 3000, 3000, 3000, 10])).toEqual([false, true, true, false, false, true]);
    // A model that became really slow: no worker run under the probe limit, no probe.
    expect(decisions([50, 30_000, 30_000, 30_000, 30_000, 30_000])).toEqual([false, true, true, false, false, false]);
  });

  it("MAX_PROBE_EVERY clean inline runs in a row halve the gap a move back had doubled", () => {
    const m = new AutoRunMode();
    // A 12 µs model sent back by two spikes, then run again: the index of its probe (worker runs before it: the gap).
    const probeAfterBack = () => inline(decisions([12_000, 12_000, ...Array(8).fill(12)], m, BUN_HOP))[2];
    decisions([12, 12], m, BUN_HOP); // a worker run, then a fast probe: inline, gap 1
    expect(probeAfterBack()).toBe(4); // gap 2
    decisions(Array(2 * MAX_PROBE_EVERY).fill(12), m, BUN_HOP);
    // Halved twice (to 1, its least): this move back doubles it to 2 again, not to 4.
    expect(probeAfterBack()).toBe(4);
    // Without clean runs in between it doubles on.
    expect(probeAfterBack()).toBe(6);
  });

  it("a model whose runs swing between fast and slow spends ever fewer runs inline", () => {
    // 100 µs runs, with a 5 ms one every third run and every seventh.
    const runs = Array.from({ length: 20_000 }, (_, i) => (i % 3 === 2 || i % 7 === 0 ? 5000 : 100));
    const flags = decisions(runs, new AutoRunMode(), BUN_HOP);
    const first = flags.slice(0, 2000).filter(Boolean).length;
    const last = flags.slice(-2000).filter(Boolean).length;
    expect(last).toBeLessThan(first / 4);
  });
});
