// Schedulers calling BackendInstance.executeRequests (issue #15, the typescript backend):
// the requests of a batch reach the instance unmerged, each gets its own outcome, and
// statistics count one execution of the summed batch size.
import { describe, expect, it } from "vitest";
import { DynamicBatchScheduler } from "../../../src/scheduler/dynamic-batch-scheduler.ts";
import { DefaultScheduler } from "../../../src/scheduler/default-scheduler.ts";
import { ModelStats } from "../../../src/core/stats.ts";
import { ServerError } from "../../../src/core/errors.ts";
import { ManualClock, floats, testModel, request, settle } from "../../helpers/scheduler-fakes.ts";
import type { BackendInstance, RequestsResult } from "../../../src/backends/backend.ts";
import type { PreparedRequest } from "../../../src/core/request-validate.ts";

/** Answers each request with its own input, except a request whose first value is negative. */
function perRequestInstance(calls: PreparedRequest[][]): BackendInstance {
  return {
    name: "ts_0",
    execute: () => Promise.reject(new Error("execute must not be called when executeRequests exists")),
    async executeRequests(requests: readonly PreparedRequest[]): Promise<RequestsResult> {
      calls.push([...requests]);
      return {
        outcomes: requests.map((r) =>
          floats(r.inputs[0]!)[0]! < 0 ? { error: new ServerError("INVALID_ARG", "negative") } : { outputs: [{ ...r.inputs[0]!, name: "OUT" }] },
        ),
        computeInputNs: 1,
        computeInferNs: 10,
        computeOutputNs: 2,
      };
    },
    close() {},
  };
}

describe("per-request execution", () => {
  it("dynamic batching: one executeRequests call with the requests unmerged; an error fails only its request", async () => {
    const { sig, config } = testModel({ dynamic_batching: { preferred_batch_size: [4], max_queue_delay_microseconds: 1000 } });
    const calls: PreparedRequest[][] = [];
    const stats = new ModelStats();
    const scheduler = new DynamicBatchScheduler({
      modelName: "m",
      instances: [perRequestInstance(calls)],
      signature: sig,
      config: config.dynamic_batching!,
      stats,
      clock: new ManualClock(),
    });
    const outcomes = [1, -2, 3].map((v) =>
      scheduler.enqueue(request(sig, 1, v)).then(
        (r) => floats(r.outputs[0]!),
        (e: ServerError) => e.message,
      ),
    );
    outcomes.push(scheduler.enqueue(request(sig, 1, 4)).then((r) => floats(r.outputs[0]!)));
    await settle();
    expect(calls.length).toBe(1);
    expect(calls[0]!.map((r) => r.inputs[0]!.shape)).toEqual([
      [1, 2],
      [1, 2],
      [1, 2],
      [1, 2],
    ]);
    expect(await Promise.all(outcomes)).toEqual([[1, 1], "negative", [3, 3], [4, 4]]);
    expect(stats.executionCount).toBe(1);
    expect([...stats.batch.keys()]).toEqual([4]);
    expect(stats.batch.get(4)!.compute_infer).toEqual({ count: 1, ns: 10 });
  });

  it("default scheduler: one request per call, its error rejects it", async () => {
    const { sig } = testModel();
    const calls: PreparedRequest[][] = [];
    const stats = new ModelStats();
    const scheduler = new DefaultScheduler("m", [perRequestInstance(calls)], stats);
    expect(floats((await scheduler.enqueue(request(sig, 2, 5))).outputs[0]!)).toEqual([5, 5, 5, 5]);
    await expect(scheduler.enqueue(request(sig, 1, -1))).rejects.toThrow("negative");
    expect(calls.map((c) => c.length)).toEqual([1, 1]);
    expect(stats.executionCount).toBe(2);
  });
});
