/** The onnxruntime backend's "auto" run mode policy, on given run times (no clock). */
import { describe, it, expect } from "vitest";
import { AutoRunMode, SYNC_THRESHOLD_US } from "../../../src/backends/onnxruntime/run-mode.ts";

/** The `sync` decision before each run, recording the given run times in turn. */
function decisions(runsUs: number[]): boolean[] {
  const m = new AutoRunMode();
  return runsUs.map((us) => {
    const before = m.sync;
    m.record(us);
    return before;
  });
}

describe("AutoRunMode", () => {
  it("starts on the worker and stays there while no run is under the threshold", () => {
    expect(SYNC_THRESHOLD_US).toBe(200);
    expect(decisions([900, 250, 200, 5000])).toEqual([false, false, false, false]);
  });

  it("moves to the calling thread after the first run under the threshold", () => {
    expect(decisions([300, 199, 40, 40])).toEqual([false, false, true, true]);
  });

  it("goes back to the worker only after two calling-thread runs in a row over 10× the threshold", () => {
    // 2001 µs is over 10×; one slow run followed by a normal one resets the count.
    expect(decisions([50, 2001, 100, 2001, 2001, 60, 60])).toEqual([false, true, true, true, true, false, true]);
  });

  it("forgets the fastest worker run when it goes back, so one fast run is needed again", () => {
    expect(decisions([50, 3000, 3000, 400, 400, 150, 10])).toEqual([false, true, true, false, false, false, true]);
  });
});
