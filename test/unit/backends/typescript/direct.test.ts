/**
 * A TypeScript worker-thread instance as a frontend worker reaches it (#30 item 1,
 * src/backends/typescript/direct.ts), against a fake instance worker on the other end of
 * a MessageChannel: a port is asked for once; the large input goes by transfer; the
 * answer is checked as the main thread checks it, with the time it waited as queue time;
 * a retired instance gives the request back whole; a worker that ended fails what the port
 * held with the main thread's error (its own fatal report, handing back what never started,
 * or the main thread's word, which a bare close waits for: INTERNAL with the reason, the
 * abort's UNAVAILABLE, UNAVAILABLE after finalize), and gets no more while ENDED is set;
 * the shared busy count follows.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  borrowTsInstance,
  BUSY,
  COMPLETED,
  ENDED,
  RETIRED,
  STATE_BYTES,
  type SharedTsInstance,
  type TsBorrowed,
} from "../../../../src/backends/typescript/direct.ts";
import { endedSlot, type FromInstancePort, type ToInstancePort } from "../../../../src/backends/typescript/worker-protocol.ts";
import type { PreparedRequest } from "../../../../src/core/request-validate.ts";
import { internal, unavailable } from "../../../../src/core/errors.ts";
import type { InferenceRequest } from "../../../../src/core/request.ts";

const N = 20_000; // 80,000 bytes of FP32: over the 64 KiB transfer threshold
const values = Float32Array.from({ length: N }, (_, i) => i / 4);

function setup() {
  const state = new Int32Array(new SharedArrayBuffer(STATE_BYTES));
  const spec: SharedTsInstance = {
    key: "typescript:7",
    model: "m",
    instance: "m_0",
    config: { name: "m", max_batch_size: 0, output: [{ name: "Y", data_type: "TYPE_FP32", dims: [-1] }] },
    state,
  };
  const connects: string[] = [];
  const borrowed = borrowTsInstance({ backend: "typescript", spec }, (key) => connects.push(key));
  const { port1, port2 } = new MessageChannel();
  const received: ToInstancePort[] = [];
  let answer: (m: Extract<ToInstancePort, { t: "execute" }>, reply: (r: FromInstancePort, transfer?: ArrayBuffer[]) => void) => void = () => {};
  (port2 as unknown as { onmessage: (e: MessageEvent) => void }).onmessage = (e) => {
    for (const m of e.data as ToInstancePort[]) {
      received.push(m);
      if (m.t === "execute") answer(m, (r, transfer) => port2.postMessage([r], transfer ?? []));
    }
  };
  ports.push(port1, port2);
  return { state, borrowed, connects, port1, port2, received, onExecute: (f: typeof answer) => (answer = f) };
}
const ports: MessagePort[] = [];
afterEach(() => {
  for (const p of ports.splice(0)) p.close();
});

function prepared(): { p: PreparedRequest; request: InferenceRequest } {
  const data = new Uint8Array(values.slice().buffer);
  const request: InferenceRequest = { modelName: "m", parameters: {}, id: "r1", inputs: [{ name: "X", datatype: "FP32", shape: [N], data }] };
  const p: PreparedRequest = {
    request,
    control: { sequenceStart: false, sequenceEnd: false, priority: 0, timeoutUs: 0 },
    batchSize: 1,
    inputs: request.inputs,
    outputNames: ["Y"],
    classification: new Map(),
  };
  return { p, request };
}

const connected = async (s: ReturnType<typeof setup>): Promise<TsBorrowed> => {
  expect(s.borrowed.load()).toBeUndefined();
  expect(s.borrowed.load()).toBeUndefined();
  expect(s.connects).toEqual(["typescript:7"]);
  s.borrowed.attach(s.port1);
  // Nothing goes to the port before the worker says it serves it.
  expect(s.borrowed.load()).toBeUndefined();
  s.port2.postMessage([{ t: "serving" }]);
  await expect.poll(() => s.borrowed.load()).toBe(0);
  return s.borrowed;
};

describe("TsBorrowed: a worker-thread TypeScript instance reached over a port", () => {
  it("asks for a port once, transfers the large input, and checks the answer as the main thread does", async () => {
    const s = setup();
    const b = await connected(s);
    s.onExecute((m, reply) => {
      expect(Atomics.load(s.state, BUSY)).toBe(1);
      const x = m.requests[0]!.inputs[0]!;
      expect(m.requests[0]).toMatchObject({ id: "r1", requestedOutputNames: [], cancelled: false });
      reply({
        t: "done",
        id: m.id,
        waitNs: 1000,
        responses: [{ outputs: [{ name: "Y", datatype: "FP32", shape: [N], data: x.data }], parameters: { k: "v" } }],
      });
    });
    const { p, request } = prepared();
    const r = (await b.runPrepared(p))!;
    // Transferred: the frontend worker's copy of the input is gone.
    expect(request.inputs[0]!.data.byteLength).toBe(0);
    expect(r.outcome.error).toBeUndefined();
    expect(r.outcome.parameters).toEqual({ k: "v" });
    expect(r.outcome.outputs![0]!.name).toBe("Y");
    expect(new Float32Array(r.outcome.outputs![0]!.data.slice().buffer)).toEqual(values);
    expect(r.queueNs).toBe(1000);
    expect(Atomics.load(s.state, BUSY)).toBe(0);
    // Counted completed, so that the owner restarts a crashed worker as after a completed execute of its own.
    expect(Atomics.load(s.state, COMPLETED)).toBe(1);
  });

  it("a model's error and a wrong answer fail the request in the main thread's words", async () => {
    const s = setup();
    const b = await connected(s);
    s.onExecute((m, reply) =>
      reply(
        m.id === 0
          ? { t: "done", id: m.id, waitNs: 0, thrown: { message: "bad X", code: "INVALID_ARG" } }
          : { t: "done", id: m.id, waitNs: 0, responses: [{ outputs: [{ name: "Z", datatype: "FP32", shape: [1], data: new Float32Array(1) }] }] },
      ),
    );
    const first = (await b.runPrepared(prepared().p))!.outcome.error!;
    expect([first.code, first.message]).toEqual(["INVALID_ARG", "bad X"]);
    const second = (await b.runPrepared(prepared().p))!.outcome.error!;
    expect([second.code, second.message]).toEqual(["INTERNAL", "model 'm' returned output 'Z', which is not an output in its config"]);
  });

  it("a client's cancellation is relayed; one that came while the request waited ends it unrun, CANCELLED", async () => {
    const s = setup();
    const b = await connected(s);
    const controller = new AbortController();
    const { p } = prepared();
    p.request.signal = controller.signal;
    s.onExecute(() => controller.abort());
    const run = b.runPrepared(p);
    await expect.poll(() => s.received.map((m) => m.t)).toEqual(["execute", "cancel"]);
    expect(s.received[1]).toEqual({ t: "cancel", id: 0, index: 0 });
    s.port2.postMessage([{ t: "cancelled", id: 0 }]);
    await expect(run).rejects.toMatchObject({ code: "CANCELLED", message: "[request id: r1] Request was cancelled" });
    expect(Atomics.load(s.state, BUSY)).toBe(0);
  });

  it("a request the finalizing instance hands back comes back whole, for the main thread", async () => {
    const s = setup();
    const b = await connected(s);
    s.onExecute((m, reply) => reply({ t: "retired", id: m.id, buffers: m.buffers }, m.buffers));
    const { p, request } = prepared();
    expect(await b.runPrepared(p)).toBeUndefined();
    expect(new Float32Array(request.inputs[0]!.data.slice().buffer)).toEqual(values);
    expect(Atomics.load(s.state, BUSY)).toBe(0);
  });

  it("sends nothing to a retired instance: the main thread runs the request", async () => {
    const s = setup();
    const b = await connected(s);
    Atomics.store(s.state, RETIRED, 1);
    const { p, request } = prepared();
    expect(await b.runPrepared(p)).toBeUndefined();
    expect(request.inputs[0]!.data.byteLength).toBe(N * 4);
    // A request after it is the first message the instance gets (a port keeps its order).
    Atomics.store(s.state, RETIRED, 0);
    s.onExecute((m, reply) => reply({ t: "done", id: m.id, waitNs: 0, responses: [{ outputs: [] }] }));
    await b.runPrepared(prepared().p);
    expect(s.received.map((m) => [m.t, m.id])).toEqual([["execute", 0]]);
  });

  it("a port closed as its retired instance's worker is stopped: what it held fails with the owner's word (the abort's error, or UNAVAILABLE after finalize)", async () => {
    const aborted = unavailable("model 'm' version 1 was unloaded while this request ran (aborted after 1 s)");
    for (const word of [aborted, undefined]) {
      const s = setup();
      const b = await connected(s);
      s.onExecute(() => {
        Atomics.store(s.state, RETIRED, 1);
        s.port2.close();
      });
      const run = b.runPrepared(prepared().p);
      // The close drops the port (a fresh one is asked for) and fails nothing until the owner's word.
      await expect.poll(() => b.load()).toBeUndefined();
      expect(s.connects).toEqual(["typescript:7", "typescript:7"]);
      expect(Atomics.load(s.state, BUSY)).toBe(1);
      b.ended(word);
      const e = (await run)!.outcome.error!;
      expect([e.code, e.message]).toEqual(["UNAVAILABLE", word ? word.message : "model 'm' instance m_0 is unloaded"]);
      expect(Atomics.load(s.state, BUSY)).toBe(0);
    }
  });

  it("a worker that reports a fault fails the request it ran at once, INTERNAL with the main thread's words, and hands back whole the one that never started", async () => {
    const s = setup();
    const b = await connected(s);
    const executes: Extract<ToInstancePort, { t: "execute" }>[] = [];
    s.onExecute((m) => {
      executes.push(m);
      if (executes.length < 2) return;
      // As worker-entry's fatal(): ENDED first, then the report (the second never started), then the worker ends.
      Atomics.store(s.state, ENDED, 1);
      s.port2.postMessage([{ t: "fatal", reason: "the model called process.exit(3)", back: [{ id: m.id, buffers: m.buffers }] }], m.buffers);
      s.port2.close();
    });
    const second = prepared();
    const [ran, waited] = await Promise.all([b.runPrepared(prepared().p), b.runPrepared(second.p)]);
    const e = ran!.outcome.error!;
    expect([e.code, e.message]).toEqual(["INTERNAL", "model 'm' instance m_0: the worker ended: the model called process.exit(3)"]);
    // Back for the main thread to run, its input whole again.
    expect(waited).toBeUndefined();
    expect(new Float32Array(second.request.inputs[0]!.data.slice().buffer)).toEqual(values);
    expect(Atomics.load(s.state, BUSY)).toBe(0);
    // The main thread's word that follows finds nothing more to fail.
    b.ended(internal("model 'm' instance m_0: the worker ended: the model called process.exit(3)"));
    expect(b.load()).toBeUndefined();
    expect(s.connects).toEqual(["typescript:7", "typescript:7"]);
  });

  it("a port that closes with no report waits for the main thread's reason: each request fails once, with it", async () => {
    const message = "model 'm' instance m_0: the worker sent a message the server cannot handle (not a batch of messages)";
    const s = setup();
    const b = await connected(s);
    let ran = 0;
    s.onExecute(() => {
      if (++ran === 2) s.port2.close();
    });
    const results: string[] = [];
    const runs = [b.runPrepared(prepared().p), b.runPrepared(prepared().p)].map((r) => r.then((x) => results.push(x!.outcome.error!.message)));
    // The close is seen (the port is dropped: a fresh one is asked for) but fails nothing yet.
    await expect.poll(() => b.load()).toBeUndefined();
    expect(s.connects).toEqual(["typescript:7", "typescript:7"]);
    expect(Atomics.load(s.state, BUSY)).toBe(2);
    b.ended(internal(message));
    await Promise.all(runs);
    expect(results).toEqual([message, message]);
    expect(Atomics.load(s.state, BUSY)).toBe(0);
    // Told with no reason (the owner stopped it) and not retired: the bare words.
    const t = setup();
    const c = await connected(t);
    const run = c.runPrepared(prepared().p);
    await expect.poll(() => t.received.length).toBe(1);
    c.ended(undefined);
    const e = (await run)!.outcome.error!;
    expect([e.code, e.message]).toEqual(["INTERNAL", "model 'm' instance m_0: the worker ended"]);
  });

  it("sends nothing to a port whose worker has ended (ENDED) and asks for no other until told", async () => {
    const s = setup();
    const b = await connected(s);
    Atomics.store(s.state, ENDED, 1);
    expect(b.load()).toBeUndefined();
    expect(s.connects).toEqual(["typescript:7"]);
    Atomics.store(s.state, ENDED, 0);
    expect(b.load()).toBe(0);
  });

  it("a worker the main thread already ended that reports its fault after its successor is ready leaves ENDED clear (its generation)", async () => {
    const s = setup();
    const b = await connected(s);
    // The old worker was connected under the slot's value then; the main thread ends it (a message it cannot handle).
    const old = Atomics.load(s.state, ENDED);
    endedSlot.end(s.state, ENDED);
    expect(b.load()).toBeUndefined();
    // Its successor is ready; then the old one, not yet terminated, reaches its fatal().
    endedSlot.started(s.state, ENDED);
    endedSlot.endIf(s.state, ENDED, old);
    expect(endedSlot.isEnded(s.state, ENDED)).toBe(false);
    // The port reaches the old worker: dropped, and one to the successor asked for.
    expect(b.load()).toBeUndefined();
    expect(s.connects).toEqual(["typescript:7", "typescript:7"]);
    const live = Atomics.load(s.state, ENDED);
    expect(live).not.toBe(old);
    const fresh = new MessageChannel();
    ports.push(fresh.port1, fresh.port2);
    b.attach(fresh.port1, live);
    fresh.port2.postMessage([{ t: "serving" }]);
    await expect.poll(() => b.load()).toBe(0);
    // The successor's own fault marks it.
    endedSlot.endIf(s.state, ENDED, live);
    expect(b.load()).toBeUndefined();
    endedSlot.started(s.state, ENDED);
    expect(b.load()).toBeUndefined();
    expect(s.connects).toEqual(["typescript:7", "typescript:7", "typescript:7"]);
  });

  it("a port made for a worker that has ended since goes unused once its successor is ready, though its fault report has not come: the request is the main thread's", async () => {
    const s = setup();
    const b = await connected(s);
    // The worker faults and its successor is ready before this thread reads the report on the port.
    endedSlot.endIf(s.state, ENDED, 0);
    endedSlot.started(s.state, ENDED);
    const { p, request } = prepared();
    expect(await b.runPrepared(p)).toBeUndefined();
    expect(request.inputs[0]!.data.byteLength).toBe(N * 4);
    expect(b.load()).toBeUndefined();
    expect(s.connects).toEqual(["typescript:7", "typescript:7"]);
    expect(s.received).toEqual([]);
    expect(Atomics.load(s.state, BUSY)).toBe(0);
  });

  it("a request given to the port in the turn its worker faults is not posted to it: it goes back whole, for the main thread", async () => {
    const s = setup();
    const b = await connected(s);
    const { p, request } = prepared();
    const run = b.runPrepared(p);
    // The worker faults before this turn's batch is posted (its fatal() marks the slot first).
    endedSlot.endIf(s.state, ENDED, 0);
    expect(await run).toBeUndefined();
    expect(new Float32Array(request.inputs[0]!.data.slice().buffer)).toEqual(values);
    expect(Atomics.load(s.state, BUSY)).toBe(0);
    await new Promise((r) => setTimeout(r, 20));
    expect(s.received).toEqual([]);
  });

  it("requests waiting for this turn's batch when the worker's fault is reported go back whole; the one it ran fails", async () => {
    const s = setup();
    const b = await connected(s);
    const first = b.runPrepared(prepared().p);
    await expect.poll(() => s.received.length).toBe(1);
    const second = prepared();
    const waiting = b.runPrepared(second.p);
    // The report is read in the same turn, before the batch with the second request is posted.
    b.ended(internal("model 'm' instance m_0: the worker ended: the model called process.exit(3)"));
    expect((await first)!.outcome.error!.message).toBe("model 'm' instance m_0: the worker ended: the model called process.exit(3)");
    expect(await waiting).toBeUndefined();
    expect(new Float32Array(second.request.inputs[0]!.data.slice().buffer)).toEqual(values);
    expect(Atomics.load(s.state, BUSY)).toBe(0);
  });

  it("a batch that cannot be posted goes back whole to the main thread instead of being left unanswered", async () => {
    const s = setup();
    const b = await connected(s);
    // A parameter structured clone refuses (a function): postMessage throws, nothing is transferred.
    const one = prepared();
    const two = prepared();
    two.request.parameters = { f: (() => 1) as unknown as string };
    const runs = [b.runPrepared(one.p), b.runPrepared(two.p)];
    expect(await Promise.all(runs)).toEqual([undefined, undefined]);
    expect(new Float32Array(one.request.inputs[0]!.data.slice().buffer)).toEqual(values);
    expect(new Float32Array(two.request.inputs[0]!.data.slice().buffer)).toEqual(values);
    expect(Atomics.load(s.state, BUSY)).toBe(0);
    // The port still serves the next turn's request.
    s.onExecute((m, reply) =>
      reply({ t: "done", id: m.id, waitNs: 0, responses: [{ outputs: [{ name: "Y", datatype: "FP32", shape: [N], data: m.requests[0]!.inputs[0]!.data }] }] }),
    );
    expect((await b.runPrepared(prepared().p))!.outcome.error).toBeUndefined();
  });

  it("a port whose worker has ended, holding a request, waits for the word that fails it before one to the successor is asked for", async () => {
    const s = setup();
    const b = await connected(s);
    const run = b.runPrepared(prepared().p);
    await expect.poll(() => s.received.length).toBe(1);
    endedSlot.end(s.state, ENDED);
    endedSlot.started(s.state, ENDED);
    expect(b.load()).toBeUndefined();
    expect(s.connects).toEqual(["typescript:7"]);
    b.ended(internal("model 'm' instance m_0: the worker ended: uncaught exception: Error: boom"));
    expect((await run)!.outcome.error!.message).toBe("model 'm' instance m_0: the worker ended: uncaught exception: Error: boom");
    expect(b.load()).toBeUndefined();
    expect(s.connects).toEqual(["typescript:7", "typescript:7"]);
  });

  it("once closed, is kept for the owner's word only while it holds a request: done is told when that is answered, or failed by the word", async () => {
    const idle = setup();
    (await connected(idle)).close();
    expect(idle.borrowed.closing(() => expect.unreachable())).toBe(false);
    const unattached = setup();
    expect(unattached.borrowed.load()).toBeUndefined();
    unattached.borrowed.close();
    expect(unattached.borrowed.closing(() => expect.unreachable())).toBe(false);
    for (const how of ["answered", "ended"] as const) {
      const s = setup();
      const b = await connected(s);
      let reply = () => {};
      s.onExecute(
        (m, r) =>
          (reply = () =>
            r({ t: "done", id: m.id, waitNs: 0, responses: [{ outputs: [{ name: "Y", datatype: "FP32", shape: [1], data: new Uint8Array(4) }] }] })),
      );
      const run = b.runPrepared(prepared().p);
      await expect.poll(() => s.received.length).toBe(1);
      b.close();
      const done: string[] = [];
      expect(b.closing(() => done.push(how))).toBe(true);
      expect(done).toEqual([]);
      if (how === "answered") reply();
      else b.ended(internal("model 'm' instance m_0: the worker ended: the model called process.exit(3)"));
      const r = (await run)!;
      expect(r.outcome.error?.code).toBe(how === "answered" ? undefined : "INTERNAL");
      expect(done).toEqual([how]);
    }
  });
});
