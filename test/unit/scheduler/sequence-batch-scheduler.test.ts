// SequenceBatchScheduler on a manual clock and a scripted backend (S-09..S-14).
import { describe, expect, it } from "vitest";
import { SequenceBatchScheduler } from "../../../src/scheduler/sequence-batch-scheduler.ts";
import { sequenceSettings } from "../../../src/scheduler/sequence/config.ts";
import { ModelStats } from "../../../src/core/stats.ts";
import type { ServerError } from "../../../src/core/errors.ts";
import { ManualBackend, ManualClock, floats, testModel, request, settle, type Execution } from "../../helpers/scheduler-fakes.ts";
import type { Tensor } from "../../../src/core/tensor.ts";
import type { ScheduledResult } from "../../../src/scheduler/scheduler.ts";

const CONTROLS = [
  { name: "START", control: [{ kind: "CONTROL_SEQUENCE_START", int32_false_true: [0, 1] }] },
  { name: "END", control: [{ kind: "CONTROL_SEQUENCE_END", fp32_false_true: [0, 1] }] },
  { name: "READY", control: [{ kind: "CONTROL_SEQUENCE_READY", bool_false_true: [false, true] }] },
  { name: "CORRID", control: [{ kind: "CONTROL_SEQUENCE_CORRID", data_type: "TYPE_UINT64" }] },
];
const STATE = [{ input_name: "STATE_IN", output_name: "STATE_OUT", data_type: "TYPE_FP32", dims: [2] }];

function setup(strategy: object, opts: { instances?: number; maxBatch?: number; idleUs?: number } = {}) {
  const { sig, config } = testModel({
    max_batch_size: opts.maxBatch ?? 4,
    sequence_batching: { ...strategy, control_input: CONTROLS, state: STATE, ...(opts.idleUs ? { max_sequence_idle_microseconds: opts.idleUs } : {}) },
  });
  const clock = new ManualClock();
  const backend = new ManualBackend();
  const stats = new ModelStats();
  const instances = Array.from({ length: opts.instances ?? 1 }, (_, i) => backend.instance(`i${i}`));
  const scheduler = new SequenceBatchScheduler({
    modelName: "m",
    modelDir: "/nonexistent",
    instances,
    signature: sig,
    settings: sequenceSettings(config),
    stats,
    clock,
  });
  return { sig, clock, backend, stats, scheduler };
}

const input = (e: Execution, name: string) => e.inputs.find((t) => t.name === name)!;
const int32s = (t: Tensor) => Array.from(new Int32Array(t.data.slice().buffer));
const bigs = (t: Tensor) => Array.from(new BigUint64Array(t.data.slice().buffer));

/** The accumulator: OUT = IN + STATE_IN, STATE_OUT = OUT. */
function accumulate(e: Execution): void {
  const a = new Float32Array(input(e, "IN").data.slice().buffer);
  const s = new Float32Array(input(e, "STATE_IN").data.slice().buffer);
  const out = new Uint8Array(a.map((v, i) => v + s[i]!).buffer);
  const shape = input(e, "IN").shape;
  e.finish([
    { name: "OUT", datatype: "FP32", shape, data: out },
    { name: "STATE_OUT", datatype: "FP32", shape, data: out.slice() },
  ]);
}

/** Finishes executions with the accumulator until every promise has settled. */
async function drive(backend: ManualBackend, promises: Promise<unknown>[]): Promise<void> {
  let done = false;
  void Promise.allSettled(promises).then(() => (done = true));
  let finished = 0;
  for (let guard = 0; !done && guard < 10_000; guard++) {
    await settle();
    while (finished < backend.executions.length) accumulate(backend.executions[finished++]!);
  }
}

const seqParams = (id: number | string, start = false, end = false) => ({ sequence_id: id, sequence_start: start, sequence_end: end });

/** Each sequence sends START, middles and END with values v, v+1, ...; returns the running sums it should see. */
function plan(id: number, length: number) {
  return Array.from({ length }, (_, k) => ({ id, value: id * 10 + k, start: k === 0, end: k === length - 1 }));
}
const runningSums = (values: number[]) => values.map((_, k) => values.slice(0, k + 1).reduce((a, b) => a + b, 0));

async function interleaved(s: ReturnType<typeof setup>, sequences: number, length: number) {
  const plans = Array.from({ length: sequences }, (_, i) => plan(i + 1, length));
  const results = new Map<number, Promise<ScheduledResult>[]>();
  for (let k = 0; k < length; k++) {
    for (const p of plans) {
      const step = p[k]!;
      const r = s.scheduler.enqueue(request(s.sig, 1, step.value, { parameters: seqParams(step.id, step.start, step.end) }));
      results.set(step.id, [...(results.get(step.id) ?? []), r]);
    }
  }
  await drive(s.backend, [...results.values()].flat());
  for (const p of plans) {
    const got = await Promise.all(results.get(p[0]!.id)!);
    expect(got.map((g) => floats(g.outputs.find((o) => o.name === "OUT")!)[0])).toEqual(runningSums(p.map((x) => x.value)));
  }
}

describe("SequenceBatchScheduler: direct (S-09)", () => {
  it("8 interleaved sequences through 4 slots: each gets exactly its own running sum, the backlog drains", async () => {
    const s = setup({ direct: {} }, { maxBatch: 4 });
    await interleaved(s, 8, 4);
    expect(s.scheduler.sequenceCount()).toBe(0);
    expect(s.scheduler.backlogCount()).toBe(0);
    expect(s.stats.inferenceCount).toBe(32);
  });

  it("with one slot, sequences run one after another and all complete", async () => {
    const s = setup({ direct: {} }, { maxBatch: 1 });
    await interleaved(s, 3, 3);
    expect(s.stats.executionCount).toBe(9);
  });

  it("rows are slot indices; control tensors carry START, END, READY and CORRID; empty slots are READY=false", async () => {
    const s = setup({ direct: {} }, { maxBatch: 4 });
    s.scheduler.enqueue(request(s.sig, 1, 1, { parameters: seqParams(11, true) })); // slot 0, runs alone
    const e0 = s.backend.executions[0]!;
    expect(int32s(input(e0, "START"))).toEqual([1]);
    expect(input(e0, "START").shape).toEqual([1, 1]);
    s.scheduler.enqueue(request(s.sig, 1, 2, { parameters: seqParams(22, true) })); // slot 1
    s.scheduler.enqueue(request(s.sig, 1, 3, { parameters: seqParams(11, false, true) })); // slot 0, END
    accumulate(e0);
    await settle();
    const e1 = s.backend.executions[1]!;
    expect(input(e1, "IN").shape).toEqual([2, 2]);
    expect(floats(input(e1, "IN"))).toEqual([3, 3, 2, 2]);
    expect(int32s(input(e1, "START"))).toEqual([0, 1]);
    expect(Array.from(new Float32Array(input(e1, "END").data.slice().buffer))).toEqual([1, 0]);
    expect(Array.from(input(e1, "READY").data)).toEqual([1, 1]);
    expect(bigs(input(e1, "CORRID"))).toEqual([11n, 22n]);
    expect(floats(input(e1, "STATE_IN"))).toEqual([1, 1, 0, 0]); // 11's state, 22's initial zeros
    accumulate(e1);
    await settle();
    // Slot 0 is free again; 22 is alone in slot 1, so row 0 is padding.
    s.scheduler.enqueue(request(s.sig, 1, 5, { parameters: seqParams(22) }));
    const e2 = s.backend.executions[2]!;
    expect(input(e2, "IN").shape).toEqual([2, 2]);
    expect(Array.from(input(e2, "READY").data)).toEqual([0, 1]);
    expect(bigs(input(e2, "CORRID"))).toEqual([0n, 22n]);
    expect(floats(input(e2, "STATE_IN")).slice(2)).toEqual([2, 2]);
  });
});

describe("SequenceBatchScheduler: oldest (S-10)", () => {
  it("batches several sequences together (executions < requests) with identical per-sequence results", async () => {
    const s = setup({ oldest: { max_candidate_sequences: 8, preferred_batch_size: [8], max_queue_delay_microseconds: 1000 } }, { maxBatch: 8 });
    await interleaved(s, 8, 4);
    expect(s.stats.inferenceCount).toBe(32);
    expect(s.stats.executionCount).toBeLessThan(32);
  });

  it("never puts two requests of one sequence in a batch", async () => {
    const s = setup({ oldest: { max_candidate_sequences: 4 } }, { maxBatch: 4 });
    s.scheduler.enqueue(request(s.sig, 1, 0, { parameters: seqParams(9, true) })); // occupies the instance
    for (let k = 1; k <= 3; k++) s.scheduler.enqueue(request(s.sig, 1, k, { parameters: seqParams(1, k === 1) }));
    s.scheduler.enqueue(request(s.sig, 1, 7, { parameters: seqParams(2, true) }));
    accumulate(s.backend.executions[0]!);
    await settle();
    const e1 = s.backend.executions[1]!;
    expect(bigs(input(e1, "CORRID"))).toEqual([1n, 2n]);
    expect(Array.from(input(e1, "READY").data)).toEqual([1, 1]);
  });
});

describe("SequenceBatchScheduler: errors and lifetime (S-11..S-14)", () => {
  const reject = async (p: Promise<unknown>) =>
    (
      (await p.then(
        () => undefined,
        (e: ServerError) => e,
      )) as ServerError
    ).message;

  it("answers Triton's errors: no START, batch > 1, no correlation ID, a request after END, a string ID for a numeric CORRID", async () => {
    const { sig, scheduler } = setup({ direct: {} });
    expect(await reject(scheduler.enqueue(request(sig, 1, 0, { parameters: seqParams(5) })))).toBe(
      "inference request for sequence 5 to model 'm' must specify the START flag on the first request of the sequence",
    );
    expect(await reject(scheduler.enqueue(request(sig, 2, 0, { parameters: seqParams(5, true), id: "r1" })))).toBe(
      "[request id: r1] inference request to model 'm' must specify batch-size 1 due to requirements of sequence batcher",
    );
    expect(await reject(scheduler.enqueue(request(sig, 1, 0)))).toBe("inference request to model 'm' must specify a non-zero or non-empty correlation ID");
    scheduler.enqueue(request(sig, 1, 0, { parameters: seqParams(6, true, true) }));
    expect(await reject(scheduler.enqueue(request(sig, 1, 0, { parameters: seqParams(6) })))).toBe(
      "inference request for sequence 6 to model 'm' must specify the START flag on the first request of the sequence",
    );
    expect(await reject(scheduler.enqueue(request(sig, 1, 0, { parameters: seqParams("abc", true) })))).toBe(
      "sequence batcher of model 'm' requires a numeric correlation ID for its CORRID control of type UINT64, got string 'abc'",
    );
  });

  it("reaps a sequence idle longer than max_sequence_idle_microseconds: its slot goes to the backlog, its ID needs START again", async () => {
    const s = setup({ direct: {} }, { maxBatch: 1, idleUs: 1000 });
    const a = s.scheduler.enqueue(request(s.sig, 1, 1, { parameters: seqParams(1, true) }));
    accumulate(s.backend.executions[0]!);
    await a;
    const b = s.scheduler.enqueue(request(s.sig, 1, 2, { parameters: seqParams(2, true) }));
    expect(s.scheduler.backlogCount()).toBe(1);
    expect(s.backend.count).toBe(1);
    s.clock.advance(1000 * 1000 - 1);
    expect(s.scheduler.backlogCount()).toBe(1);
    s.clock.advance(1);
    expect(s.scheduler.backlogCount()).toBe(0);
    expect(s.backend.count).toBe(2);
    accumulate(s.backend.executions[1]!);
    expect(floats((await b).outputs[0]!)).toEqual([2, 2]);
    expect(await reject(s.scheduler.enqueue(request(s.sig, 1, 3, { parameters: seqParams(1) })))).toBe(
      "inference request for sequence 1 to model 'm' must specify the START flag on the first request of the sequence",
    );
  });

  it("a second START restarts the sequence with the initial state", async () => {
    const s = setup({ direct: {} }, { maxBatch: 1 });
    const r = [5, 6, 7].map((v, k) => s.scheduler.enqueue(request(s.sig, 1, v, { parameters: seqParams(3, k !== 1) })));
    await drive(s.backend, r);
    expect((await Promise.all(r)).map((x) => floats(x.outputs[0]!)[0])).toEqual([5, 11, 7]);
  });

  it("string correlation IDs work when there is no numeric CORRID control", async () => {
    const { sig, config } = testModel({ max_batch_size: 2, sequence_batching: { direct: {}, state: STATE } });
    const backend = new ManualBackend();
    const scheduler = new SequenceBatchScheduler({
      modelName: "m",
      modelDir: "/nonexistent",
      instances: [backend.instance("i0")],
      signature: sig,
      settings: sequenceSettings(config),
      stats: new ModelStats(),
      clock: new ManualClock(),
    });
    const r = [1, 2].map((v, k) => scheduler.enqueue(request(sig, 1, v, { parameters: seqParams("user-7", k === 0, k === 1) })));
    await drive(backend, r);
    expect((await Promise.all(r)).map((x) => floats(x.outputs[0]!)[0])).toEqual([1, 3]);
  });

  it("while stopping, refuses new sequences but serves requests of open ones", async () => {
    const s = setup({ direct: {} }, { maxBatch: 2 });
    const first = s.scheduler.enqueue(request(s.sig, 1, 1, { parameters: seqParams(1, true) }));
    accumulate(s.backend.executions[0]!);
    await first;
    let stopped = false;
    void s.scheduler.stop().then(() => (stopped = true));
    expect(await reject(s.scheduler.enqueue(request(s.sig, 1, 0, { parameters: seqParams(2, true) })))).toBe(
      "Server is stopping, scheduler for model has stopped accepting new inference requests",
    );
    const cont = s.scheduler.enqueue(request(s.sig, 1, 2, { parameters: seqParams(1, false, true) }));
    accumulate(s.backend.executions[1]!);
    expect(floats((await cont).outputs[0]!)).toEqual([3, 3]);
    await settle();
    expect(stopped).toBe(true);
  });
});

describe("cancellation (S-20), as Triton's sequence batcher has it", () => {
  /** A request of sequence `id` whose signal the test aborts. */
  function cancellable(sig: ReturnType<typeof setup>["sig"], value: number, params: ReturnType<typeof seqParams>) {
    const prepared = request(sig, 1, value, { parameters: params });
    const controller = new AbortController();
    prepared.request.signal = controller.signal;
    return { prepared, controller };
  }
  const outcome = (p: Promise<ScheduledResult>) =>
    p.then(
      () => "ok",
      (e: ServerError) => e.code,
    );

  for (const [name, strategy] of [
    ["direct", { direct: {} }],
    ["oldest", { oldest: { max_candidate_sequences: 1 } }],
  ] as const) {
    it(`${name}: cancelling a queued request cancels it and the sequence's requests behind it; the slot and state are freed`, async () => {
      const s = setup(strategy, { maxBatch: 1 });
      const first = s.scheduler.enqueue(request(s.sig, 1, 1, { parameters: seqParams(9, true) }));
      await settle();
      expect(s.backend.count).toBe(1); // running
      const second = cancellable(s.sig, 2, seqParams(9));
      const third = cancellable(s.sig, 3, seqParams(9));
      const p2 = outcome(s.scheduler.enqueue(second.prepared));
      const p3 = outcome(s.scheduler.enqueue(third.prepared));
      // Another sequence waits in the backlog for the only slot.
      const other = s.scheduler.enqueue(request(s.sig, 1, 10, { parameters: seqParams(4, true, true) }));
      await settle();
      expect(s.scheduler.pendingCount()).toBe(3);
      expect(s.scheduler.backlogCount()).toBe(1);

      second.controller.abort();
      await settle();
      expect(await p2).toBe("CANCELLED");
      expect(await p3).toBe("CANCELLED");
      expect(s.scheduler.pendingCount()).toBe(1);
      expect(s.scheduler.inflightCount()).toBe(2);

      // The running request finishes; then the cancelled sequence ends and its slot goes to the backlog.
      accumulate(s.backend.executions[0]!);
      expect(floats((await first).outputs[0]!)).toEqual([1, 1]);
      await settle();
      expect(s.backend.count).toBe(2);
      expect(Array.from(input(s.backend.executions[1]!, "IN").data.slice(0, 4))).toEqual(Array.from(new Uint8Array(new Float32Array([10]).buffer)));
      accumulate(s.backend.executions[1]!);
      expect(floats((await other).outputs[0]!)).toEqual([10, 10]); // fresh state, not sequence 9's
      await settle();
      expect(s.scheduler.sequenceCount()).toBe(0);
      expect(s.scheduler.pendingCount()).toBe(0);
      expect(s.scheduler.inflightCount()).toBe(0);
      await expect(s.scheduler.enqueue(request(s.sig, 1, 5, { parameters: seqParams(9) }))).rejects.toThrow(
        "inference request for sequence 9 to model 'm' must specify the START flag on the first request of the sequence",
      );
      expect(s.backend.count).toBe(2); // 2 and 3 never ran
    });
  }

  it("a backlogged sequence with one cancelled request has all of its requests cancelled and leaves the backlog", async () => {
    const s = setup({ direct: {} }, { maxBatch: 1 });
    const holder = s.scheduler.enqueue(request(s.sig, 1, 1, { parameters: seqParams(1, true, true) }));
    await settle();
    const a = cancellable(s.sig, 2, seqParams(2, true));
    const b = cancellable(s.sig, 3, seqParams(2));
    const pa = outcome(s.scheduler.enqueue(a.prepared));
    const pb = outcome(s.scheduler.enqueue(b.prepared));
    await settle();
    expect(s.scheduler.backlogCount()).toBe(1);
    expect(s.scheduler.pendingCount()).toBe(2);
    b.controller.abort(); // the later one: the whole backlogged sequence goes
    await settle();
    expect(await pa).toBe("CANCELLED");
    expect(await pb).toBe("CANCELLED");
    expect(s.scheduler.backlogCount()).toBe(0);
    expect(s.scheduler.pendingCount()).toBe(0);
    expect(s.scheduler.sequenceCount()).toBe(1);
    accumulate(s.backend.executions[0]!);
    await holder;
    await settle();
    expect(s.backend.count).toBe(1);
    expect(s.scheduler.sequenceCount()).toBe(0);
    expect(s.scheduler.inflightCount()).toBe(0);
  });

  it("a new START for a cancelled sequence restarts it in the same slot", async () => {
    const s = setup({ direct: {} }, { maxBatch: 1 });
    const first = s.scheduler.enqueue(request(s.sig, 1, 1, { parameters: seqParams(3, true) }));
    await settle();
    const c = cancellable(s.sig, 2, seqParams(3));
    const pc = outcome(s.scheduler.enqueue(c.prepared));
    c.controller.abort();
    expect(await pc).toBe("CANCELLED");
    const restart = s.scheduler.enqueue(request(s.sig, 1, 5, { parameters: seqParams(3, true, true) }));
    await drive(s.backend, [first, restart]);
    expect(floats((await restart).outputs[0]!)).toEqual([5, 5]);
    await settle();
    expect(s.scheduler.sequenceCount()).toBe(0);
    expect(s.scheduler.inflightCount()).toBe(0);
  });
});
