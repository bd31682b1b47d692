// DynamicBatchScheduler against a manual clock and a manual backend (S-03..S-08).
import { describe, expect, it } from "vitest";
import { DynamicBatchScheduler } from "../../../src/scheduler/dynamic-batch-scheduler.ts";
import { ModelStats } from "../../../src/core/stats.ts";
import { ServerError } from "../../../src/core/errors.ts";
import { ManualBackend, ManualClock, floats, testModel, request, settle } from "../../helpers/scheduler-fakes.ts";
import type { ModelConfig, ModelDynamicBatching } from "../../../src/core/model-config-types.ts";
import type { ScheduledResult } from "../../../src/scheduler/scheduler.ts";

const US = 1000;

function setup(dynamic: ModelDynamicBatching, opts: { instances?: number; extra?: Partial<ModelConfig>; dims?: number[] } = {}) {
  const { sig, config: model } = testModel({ dynamic_batching: dynamic, ...opts.extra }, opts.dims);
  const clock = new ManualClock();
  const backend = new ManualBackend();
  const stats = new ModelStats();
  const instances = Array.from({ length: opts.instances ?? 1 }, (_, i) => backend.instance(`i${i}`));
  const config = model.dynamic_batching!;
  const scheduler = new DynamicBatchScheduler({ modelName: "m", instances, signature: sig, config, stats, clock });
  return { sig, clock, backend, stats, scheduler };
}

/** Tracks a promise's outcome without awaiting it. */
function track(p: Promise<ScheduledResult>) {
  const t: { value?: ScheduledResult; error?: ServerError; done: boolean } = { done: false };
  p.then(
    (v) => Object.assign(t, { value: v, done: true }),
    (e) => Object.assign(t, { error: e, done: true }),
  );
  return t;
}

describe("DynamicBatchScheduler: batch formation (S-03)", () => {
  it("sends as soon as a preferred batch size is reached, with inputs concatenated and outputs split back", async () => {
    const { sig, backend, scheduler, stats } = setup({ preferred_batch_size: [4], max_queue_delay_microseconds: 1000 });
    const results = [1, 2, 3].map((v) => track(scheduler.enqueue(request(sig, 1, v))));
    expect(backend.count).toBe(0);
    expect(scheduler.pendingCount()).toBe(3);
    results.push(track(scheduler.enqueue(request(sig, 1, 4))));
    expect(backend.count).toBe(1);
    const exec = backend.executions[0]!;
    expect(exec.inputs[0]!.shape).toEqual([4, 2]);
    expect(floats(exec.inputs[0]!)).toEqual([1, 1, 2, 2, 3, 3, 4, 4]);
    expect(scheduler.pendingCount()).toBe(0);
    exec.finish();
    await settle();
    results.forEach((r, i) => {
      expect(r.value!.outputs[0]!.shape).toEqual([1, 2]);
      expect(floats(r.value!.outputs[0]!)).toEqual([i + 1, i + 1]);
    });
    expect(stats.executionCount).toBe(1);
    expect(stats.inferenceCount).toBe(4);
    expect([...stats.batch.keys()]).toEqual([4]);
    expect(stats.batch.get(4)!.compute_infer).toEqual({ count: 1, ns: 100 });
  });

  it("waits max_queue_delay_microseconds from the oldest request, not less", async () => {
    const { sig, backend, scheduler, clock } = setup({ preferred_batch_size: [4], max_queue_delay_microseconds: 1000 });
    scheduler.enqueue(request(sig, 1, 1));
    clock.advance(400 * US);
    scheduler.enqueue(request(sig, 1, 2));
    clock.advance(600 * US - 1);
    expect(backend.count).toBe(0);
    clock.advance(1);
    expect(backend.count).toBe(1);
    expect(backend.executions[0]!.inputs[0]!.shape).toEqual([2, 2]);
  });

  it("records queue time per request from enqueue to dispatch", async () => {
    const { sig, backend, scheduler, clock } = setup({ preferred_batch_size: [4], max_queue_delay_microseconds: 1000 });
    const a = track(scheduler.enqueue(request(sig, 1, 1)));
    clock.advance(300 * US);
    const b = track(scheduler.enqueue(request(sig, 1, 2)));
    clock.advance(700 * US);
    backend.executions[0]!.finish();
    await settle();
    expect(a.value!.queueNs).toBe(1000 * US);
    expect(b.value!.queueNs).toBe(700 * US);
  });

  it("with max_queue_delay 0 sends whatever is queued when an instance frees", async () => {
    const { sig, backend, scheduler } = setup({ preferred_batch_size: [8] });
    scheduler.enqueue(request(sig, 1, 1));
    expect(backend.count).toBe(1); // sent alone, at once
    for (const v of [2, 3, 4]) scheduler.enqueue(request(sig, 1, v));
    expect(backend.count).toBe(1);
    backend.executions[0]!.finish();
    await settle();
    expect(backend.count).toBe(2);
    expect(floats(backend.executions[1]!.inputs[0]!)).toEqual([2, 2, 3, 3, 4, 4]);
  });

  it("never exceeds max_batch_size; a request carrying batch n counts as n", async () => {
    const { sig, backend, scheduler, stats } = setup({ preferred_batch_size: [8] });
    scheduler.enqueue(request(sig, 1, 0)); // occupies the instance
    const rs = [1, 2, 3, 4, 5].map((v) => track(scheduler.enqueue(request(sig, 3, v))));
    backend.executions[0]!.finish();
    await settle();
    // 3 + 3 = 6; a third request would make 9 > 8.
    expect(backend.executions[1]!.inputs[0]!.shape).toEqual([6, 2]);
    backend.executions[1]!.finish();
    await settle();
    expect(backend.executions[2]!.inputs[0]!.shape).toEqual([6, 2]);
    backend.executions[2]!.finish();
    await settle();
    expect(backend.executions[3]!.inputs[0]!.shape).toEqual([3, 2]);
    backend.executions[3]!.finish();
    await settle();
    rs.forEach((r, i) => expect(floats(r.value!.outputs[0]!)).toEqual(new Array(6).fill(i + 1)));
    expect(stats.inferenceCount).toBe(16);
    expect(stats.executionCount).toBe(4);
    expect([...stats.batch.keys()].sort()).toEqual([1, 3, 6]);
    expect(stats.batch.get(6)!.compute_infer.count).toBe(2);
  });

  it("sends the largest preferred prefix before the delay, everything after it", async () => {
    const { sig, backend, scheduler } = setup({ preferred_batch_size: [2, 4], max_queue_delay_microseconds: 1000 }, { instances: 1 });
    scheduler.enqueue(request(sig, 1, 0));
    for (const v of [1, 2, 3]) scheduler.enqueue(request(sig, 1, v));
    backend.executions[0]!.finish();
    await settle();
    // 3 queued, preferred sizes 2 and 4: 2 is reached, so that batch goes now.
    expect(backend.executions[1]!.inputs[0]!.shape).toEqual([2, 2]);
  });
});

describe("DynamicBatchScheduler: shapes (S-04)", () => {
  it("does not merge requests whose variable dims differ", async () => {
    const { sig, backend, scheduler } = setup({ preferred_batch_size: [8] }, { dims: [-1] });
    scheduler.enqueue(request(sig, 1, 0, { row: 2 }));
    const rs = [
      track(scheduler.enqueue(request(sig, 1, 1, { row: 2 }))),
      track(scheduler.enqueue(request(sig, 1, 2, { row: 3 }))),
      track(scheduler.enqueue(request(sig, 1, 3, { row: 2 }))),
    ];
    for (let i = 0; i < 4; i++) {
      backend.executions[i]!.finish();
      await settle();
    }
    expect(backend.executions.map((e) => e.inputs[0]!.shape)).toEqual([
      [1, 2],
      [1, 2],
      [1, 3],
      [1, 2],
    ]);
    expect(rs.map((r) => floats(r.value!.outputs[0]!))).toEqual([
      [1, 1],
      [2, 2, 2],
      [3, 3],
    ]);
  });

  it("merges requests with equal variable dims", async () => {
    const { sig, backend, scheduler } = setup({ preferred_batch_size: [8] }, { dims: [-1] });
    scheduler.enqueue(request(sig, 1, 0, { row: 2 }));
    scheduler.enqueue(request(sig, 1, 1, { row: 3 }));
    scheduler.enqueue(request(sig, 2, 2, { row: 3 }));
    backend.executions[0]!.finish();
    await settle();
    expect(backend.executions[1]!.inputs[0]!.shape).toEqual([3, 3]);
  });

  it("fails every request of a batch whose output lacks the batch dimension", async () => {
    const { sig, backend, scheduler } = setup({ preferred_batch_size: [2] });
    const first = track(scheduler.enqueue(request(sig, 1, 1)));
    const bad = { name: "OUT", datatype: "FP32" as const, shape: [3, 2], data: new Uint8Array(24) };
    const rs2 = [track(scheduler.enqueue(request(sig, 1, 3))), track(scheduler.enqueue(request(sig, 1, 4)))];
    backend.executions[0]!.finish();
    await settle();
    expect(first.value).toBeDefined();
    const two = backend.executions[1]!;
    expect(two.inputs[0]!.shape).toEqual([2, 2]);
    two.finish([bad]);
    await settle();
    for (const r of rs2) {
      expect(r.error!.code).toBe("INTERNAL");
      expect(r.error!.message).toBe("model 'm' returned output 'OUT' with shape [3,2] for a batch of 2; the first dimension must be the batch size");
    }
    expect(scheduler.inflightCount()).toBe(0);
  });
});

describe("DynamicBatchScheduler: priorities and queue policy (S-06..S-08)", () => {
  const one = { preferred_batch_size: [1] };

  it("serves priority level 1 before level 2; 0 and out-of-range priorities use the default level", async () => {
    const { sig, backend, scheduler } = setup({ ...one, priority_levels: 2, default_priority_level: 2 }, { extra: { max_batch_size: 1 } });
    scheduler.enqueue(request(sig, 1, 0));
    scheduler.enqueue(request(sig, 1, 1, { parameters: { priority: 2 } }));
    scheduler.enqueue(request(sig, 1, 2, { parameters: { priority: 0 } }));
    scheduler.enqueue(request(sig, 1, 3, { parameters: { priority: 9 } }));
    scheduler.enqueue(request(sig, 1, 4, { parameters: { priority: 1 } }));
    scheduler.enqueue(request(sig, 1, 5, { parameters: { priority: 1n } }));
    for (let i = 0; i < 6; i++) {
      backend.executions[i]!.finish();
      await settle();
    }
    expect(backend.executions.map((e) => floats(e.inputs[0]!)[0])).toEqual([0, 4, 5, 1, 2, 3]);
  });

  it("rejects beyond max_queue_size with Triton's message; the level's queue only counts waiting requests", async () => {
    const { sig, backend, scheduler, stats } = setup({ ...one, default_queue_policy: { max_queue_size: 2 } }, { extra: { max_batch_size: 1 } });
    scheduler.enqueue(request(sig, 1, 0)); // executing, not queued
    scheduler.enqueue(request(sig, 1, 1));
    scheduler.enqueue(request(sig, 1, 2));
    const err = await scheduler.enqueue(request(sig, 1, 3)).catch((e: ServerError) => e);
    expect(err).toBeInstanceOf(ServerError);
    expect((err as ServerError).code).toBe("UNAVAILABLE");
    expect((err as ServerError).message).toBe("Exceeds maximum queue size");
    expect((err as ServerError).reason).toBe("REJECTED");
    const withId = await scheduler.enqueue(request(sig, 1, 3, { id: "r7" })).catch((e: ServerError) => e);
    expect((withId as ServerError).message).toBe("[request id: r7] Exceeds maximum queue size");
    expect(scheduler.inflightCount()).toBe(3);
    backend.executions[0]!.finish();
    await settle();
    expect(scheduler.pendingCount()).toBe(1);
    expect(stats.executionCount).toBe(1);
  });

  it("per-level policies: a full level 2 does not block level 1", async () => {
    const { sig, scheduler } = setup(
      { ...one, priority_levels: 2, default_priority_level: 2, priority_queue_policy: { "2": { max_queue_size: 1 } } },
      { extra: { max_batch_size: 1 } },
    );
    scheduler.enqueue(request(sig, 1, 0));
    scheduler.enqueue(request(sig, 1, 1));
    await expect(scheduler.enqueue(request(sig, 1, 2))).rejects.toThrow("Exceeds maximum queue size");
    scheduler.enqueue(request(sig, 1, 3, { parameters: { priority: 1 } }));
    scheduler.enqueue(request(sig, 1, 4, { parameters: { priority: 1 } }));
    expect(scheduler.pendingCount()).toBe(3);
  });

  it("REJECT: an expired request fails with 'Request timeout expired' at its deadline, even while instances are busy", async () => {
    const { sig, backend, scheduler, clock, stats } = setup(
      { ...one, default_queue_policy: { default_timeout_microseconds: 1000 } },
      { extra: { max_batch_size: 1 } },
    );
    scheduler.enqueue(request(sig, 1, 0));
    const late = track(scheduler.enqueue(request(sig, 1, 1)));
    clock.advance(1000 * US);
    await settle();
    expect(late.done).toBe(false);
    clock.advance(1);
    await settle();
    expect(late.error!.code).toBe("UNAVAILABLE");
    expect(late.error!.message).toBe("Request timeout expired");
    expect(late.error!.reason).toBe("REJECTED");
    expect(scheduler.pendingCount()).toBe(0);
    backend.executions[0]!.finish();
    await settle();
    expect(backend.count).toBe(1);
    expect(stats.executionCount).toBe(1);
    expect(scheduler.inflightCount()).toBe(0);
  });

  it("allow_timeout_override only shortens the default timeout; with no default a request timeout is ignored", async () => {
    const policy = { default_timeout_microseconds: 1000, allow_timeout_override: true };
    const { sig, scheduler, clock } = setup({ ...one, default_queue_policy: policy }, { extra: { max_batch_size: 1 } });
    scheduler.enqueue(request(sig, 1, 0));
    const short = track(scheduler.enqueue(request(sig, 1, 1, { parameters: { timeout: 500 } })));
    const long = track(scheduler.enqueue(request(sig, 1, 2, { parameters: { timeout: 5000 } })));
    clock.advance(500 * US + 1);
    await settle();
    expect(short.error!.message).toBe("Request timeout expired");
    expect(long.done).toBe(false);
    clock.advance(500 * US);
    await settle();
    expect(long.error!.message).toBe("Request timeout expired");

    const none = setup({ ...one, default_queue_policy: { allow_timeout_override: true } }, { extra: { max_batch_size: 1 } });
    none.scheduler.enqueue(request(none.sig, 1, 0));
    const kept = track(none.scheduler.enqueue(request(none.sig, 1, 1, { parameters: { timeout: 10 } })));
    none.clock.advance(1_000_000 * US);
    await settle();
    expect(kept.done).toBe(false);
    expect(none.clock.pendingTimers).toBe(0);
  });

  it("without allow_timeout_override a request's timeout is ignored", async () => {
    const { sig, scheduler, clock } = setup({ ...one, default_queue_policy: { default_timeout_microseconds: 1000 } }, { extra: { max_batch_size: 1 } });
    scheduler.enqueue(request(sig, 1, 0));
    const r = track(scheduler.enqueue(request(sig, 1, 1, { parameters: { timeout: 10 } })));
    clock.advance(999 * US);
    await settle();
    expect(r.done).toBe(false);
  });

  it("DELAY: an expired request moves behind the unexpired ones of its level and still runs", async () => {
    const policy = { default_timeout_microseconds: 100, timeout_action: "DELAY" as const };
    const { sig, backend, scheduler, clock } = setup({ ...one, default_queue_policy: policy }, { extra: { max_batch_size: 1 } });
    scheduler.enqueue(request(sig, 1, 0));
    const a = track(scheduler.enqueue(request(sig, 1, 1)));
    clock.advance(200 * US);
    scheduler.enqueue(request(sig, 1, 2));
    for (let i = 0; i < 3; i++) {
      backend.executions[i]!.finish();
      await settle();
    }
    expect(backend.executions.map((e) => floats(e.inputs[0]!)[0])).toEqual([0, 2, 1]);
    expect(floats(a.value!.outputs[0]!)).toEqual([1, 1]);
  });

  it("S-20: a cancelled request leaves its priority level or the delayed queue at once; its place in max_queue_size is free again", async () => {
    const policy = { default_timeout_microseconds: 100, timeout_action: "DELAY" as const, max_queue_size: 2 };
    const { sig, backend, scheduler, clock } = setup(
      { ...one, priority_levels: 2, default_priority_level: 2, priority_queue_policy: { "2": policy } },
      { extra: { max_batch_size: 1 } },
    );
    const cancellable = (v: number, priority: number) => {
      const r = request(sig, 1, v, { parameters: { priority } });
      const c = new AbortController();
      r.request.signal = c.signal;
      return { c, t: track(scheduler.enqueue(r)) };
    };
    scheduler.enqueue(request(sig, 1, 0)); // running
    const delayed = cancellable(1, 2);
    clock.advance(200 * US); // 1 expires and moves to level 2's delayed queue
    const level2 = cancellable(2, 2);
    const level1 = cancellable(3, 1);
    expect(scheduler.pendingCount()).toBe(3);
    expect(await scheduler.enqueue(request(sig, 1, 9, { parameters: { priority: 2 } })).catch((e: ServerError) => e.message)).toBe(
      "Exceeds maximum queue size",
    );
    delayed.c.abort();
    level1.c.abort();
    await settle();
    expect(delayed.t.error?.code).toBe("CANCELLED");
    expect(level1.t.error?.code).toBe("CANCELLED");
    expect(scheduler.pendingCount()).toBe(1);
    const late = track(scheduler.enqueue(request(sig, 1, 4, { parameters: { priority: 2 } }))); // room again
    for (let i = 0; i < 3; i++) {
      backend.executions[i]!.finish();
      await settle();
    }
    expect(backend.executions.map((e) => floats(e.inputs[0]!)[0])).toEqual([0, 2, 4]);
    expect(level2.t.value && late.value).toBeTruthy();
    expect(scheduler.pendingCount()).toBe(0);
    expect(scheduler.inflightCount()).toBe(0);
  });
});

describe("DynamicBatchScheduler: ordering and shutdown (S-05)", () => {
  it("preserve_ordering releases responses in dispatch order", async () => {
    const { sig, backend, scheduler } = setup({ preferred_batch_size: [1], preserve_ordering: true }, { instances: 2 });
    const a = track(scheduler.enqueue(request(sig, 1, 1)));
    const b = track(scheduler.enqueue(request(sig, 1, 2)));
    expect(backend.count).toBe(2);
    backend.executions[1]!.finish();
    await settle();
    expect(b.done).toBe(false);
    backend.executions[0]!.finish();
    await settle();
    expect(a.done && b.done).toBe(true);
  });

  it("without preserve_ordering a later batch answers first", async () => {
    const { sig, backend, scheduler } = setup({ preferred_batch_size: [1] }, { instances: 2 });
    const a = track(scheduler.enqueue(request(sig, 1, 1)));
    const b = track(scheduler.enqueue(request(sig, 1, 2)));
    backend.executions[1]!.finish();
    await settle();
    expect(b.done).toBe(true);
    expect(a.done).toBe(false);
  });

  it("a failed execution fails each request of its batch; the next batch still runs", async () => {
    const { sig, backend, scheduler, stats } = setup({ preferred_batch_size: [8] });
    scheduler.enqueue(request(sig, 1, 0));
    const rs = [track(scheduler.enqueue(request(sig, 1, 1))), track(scheduler.enqueue(request(sig, 1, 2)))];
    backend.executions[0]!.finish();
    await settle();
    backend.executions[1]!.fail(new Error("boom"));
    await settle();
    expect(rs.map((r) => r.error?.message ?? (r.error as unknown as Error)?.message)).toEqual(["boom", "boom"]);
    const next = track(scheduler.enqueue(request(sig, 1, 3)));
    backend.executions[2]!.finish();
    await settle();
    expect(next.value).toBeDefined();
    expect(stats.executionCount).toBe(2);
  });

  it("stop() refuses new requests and resolves once queued and running work has answered", async () => {
    const { sig, backend, scheduler } = setup({ preferred_batch_size: [1] }, { extra: { max_batch_size: 1 } });
    const first = track(scheduler.enqueue(request(sig, 1, 0)));
    const queued = track(scheduler.enqueue(request(sig, 1, 1)));
    let stopped = false;
    void scheduler.stop().then(() => (stopped = true));
    await expect(scheduler.enqueue(request(sig, 1, 2, { id: "x" }))).rejects.toThrow(
      "[request id: x] Server is stopping, scheduler for model has stopped accepting new inference requests",
    );
    backend.executions[0]!.finish();
    await settle();
    expect(stopped).toBe(false);
    backend.executions[1]!.finish();
    await settle();
    expect(first.done && queued.done && stopped).toBe(true);
  });
});
