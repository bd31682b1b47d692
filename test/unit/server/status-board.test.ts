/**
 * The status page's data (#18): rates and mean latencies per interval from the
 * statistics, history kept per version and restarted by a reload, load errors.
 */
import { describe, expect, it } from "vitest";
import { StatusBoard } from "../../../src/server/status-board.ts";
import { ModelVersion } from "../../../src/repository/model-version.ts";
import type { InferenceServer } from "../../../src/server/server.ts";
import type { IndexEntry } from "../../../src/repository/manager.ts";

const config = { name: "m", platform: "onnxruntime_onnx", max_batch_size: 0, input: [], output: [] };

/** The parts of InferenceServer the board reads, over a list of versions. */
function fakeServer(versions: ModelVersion[], index: IndexEntry[] = [], foldStatistics = () => {}): InferenceServer {
  return {
    info: { id: "triton", version: "2.73.0", extensions: [], strictReadiness: true },
    state: "READY",
    repository: { allVersions: () => versions },
    repositoryIndex: () => index,
    cacheEnabled: () => false,
    isLive: () => true,
    isReady: () => true,
    foldStatistics,
  } as unknown as InferenceServer;
}

describe("StatusBoard", () => {
  it("turns two samples into a rate and mean durations per request", () => {
    const mv = new ModelVersion("m", 1, "/nowhere/m", config as never);
    const board = new StatusBoard(fakeServer([mv]), 1000, 300);
    board.sample(10_000);
    for (let i = 0; i < 5; i++) mv.stats.recordSuccess(2_000_000, 500_000, 100_000, 1_200_000, 200_000);
    mv.stats.recordFailure(1_000, "BACKEND");
    board.sample(12_000);
    const [m] = board.snapshot().models;
    expect(m!.history).toEqual([
      { t: 12_000, rate: 2.5, failure_rate: 0.5, request_us: 2000, queue_us: 500, compute_input_us: 100, compute_infer_us: 1200, compute_output_us: 200 },
    ]);
    expect(m!.success).toBe(5);
    expect(m!.failure).toEqual({ REJECTED: 0, CANCELED: 0, BACKEND: 1, OTHER: 0 });
    expect(m!.state).toBe("UNKNOWN");
    expect(m!.pending).toBe(0);
  });

  it("folds what other threads counted in shared memory before each sample and each snapshot (#30)", () => {
    const mv = new ModelVersion("m", 1, "/nowhere/m", config as never);
    // A frontend worker's success, which the server's fold brings into the version's statistics.
    const board = new StatusBoard(
      fakeServer([mv], [], () => mv.stats.recordSuccess(1_000, 0, 0, 0, 0)),
      1000,
      300,
    );
    board.sample(1000);
    expect(board.snapshot().models[0]!.success).toBe(2);
  });

  it("keeps the last historySecs of points", () => {
    const mv = new ModelVersion("m", 1, "/nowhere/m", config as never);
    const board = new StatusBoard(fakeServer([mv]), 1000, 3);
    for (let t = 0; t <= 10_000; t += 1000) board.sample(t);
    expect(board.snapshot().models[0]!.history.map((p) => p.t)).toEqual([8000, 9000, 10_000]);
  });

  it("starts a version's history over when a reload replaces it", () => {
    const versions = [new ModelVersion("m", 1, "/nowhere/m", config as never)];
    const board = new StatusBoard(fakeServer(versions), 1000, 300);
    board.sample(0);
    board.sample(1000);
    expect(board.snapshot().models[0]!.history).toHaveLength(1);
    versions[0] = new ModelVersion("m", 1, "/nowhere/m", config as never);
    board.sample(2000);
    expect(board.snapshot().models[0]!.history).toEqual([]);
  });

  it("lists load failures with their reasons, not unloaded versions", () => {
    const board = new StatusBoard(
      fakeServer(
        [],
        [
          { name: "a", version: "1", state: "READY" },
          { name: "b", version: "1", state: "UNAVAILABLE", reason: "unloaded" },
          { name: "c", version: "2", state: "UNAVAILABLE", reason: "bad model" },
          { name: "d", state: "UNAVAILABLE", reason: "bad config" },
        ],
      ),
    );
    expect(board.snapshot().load_errors).toEqual([
      { name: "c", version: "2", reason: "bad model" },
      { name: "d", version: "-", reason: "bad config" },
    ]);
  });
});
