/**
 * A TypeScript worker-thread instance as a frontend worker reaches it (#30 item 1,
 * src/backends/typescript/direct.ts), against a fake instance worker on the other end of
 * a MessageChannel: a port is asked for once; the large input goes by transfer; the
 * answer is checked as the main thread checks it, with the time it waited as queue time;
 * a retired instance gives the request back whole; a port that closes fails what it held
 * (INTERNAL, or UNAVAILABLE once the instance was retired); the shared busy count follows.
 */
import { afterEach, describe, expect, it } from "vitest";
import { borrowTsInstance, BUSY, COMPLETED, RETIRED, STATE_BYTES, type SharedTsInstance, type TsBorrowed } from "../../../../src/backends/typescript/direct.ts";
import type { FromInstancePort, ToInstancePort } from "../../../../src/backends/typescript/worker-protocol.ts";
import type { PreparedRequest } from "../../../../src/core/request-validate.ts";
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

const connected = (s: ReturnType<typeof setup>): TsBorrowed => {
  expect(s.borrowed.load()).toBeUndefined();
  expect(s.borrowed.load()).toBeUndefined();
  expect(s.connects).toEqual(["typescript:7"]);
  s.borrowed.attach(s.port1);
  expect(s.borrowed.load()).toBe(0);
  return s.borrowed;
};

describe("TsBorrowed: a worker-thread TypeScript instance reached over a port", () => {
  it("asks for a port once, transfers the large input, and checks the answer as the main thread does", async () => {
    const s = setup();
    const b = connected(s);
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
    const b = connected(s);
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
    const b = connected(s);
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
    const b = connected(s);
    s.onExecute((m, reply) => reply({ t: "retired", id: m.id, buffers: m.buffers }, m.buffers));
    const { p, request } = prepared();
    expect(await b.runPrepared(p)).toBeUndefined();
    expect(new Float32Array(request.inputs[0]!.data.slice().buffer)).toEqual(values);
    expect(Atomics.load(s.state, BUSY)).toBe(0);
  });

  it("sends nothing to a retired instance: the main thread runs the request", async () => {
    const s = setup();
    const b = connected(s);
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

  it("a port that closes fails what it held: INTERNAL, or UNAVAILABLE once the instance was retired; the next request asks for a port again", async () => {
    for (const retired of [false, true]) {
      const s = setup();
      const b = connected(s);
      s.onExecute(() => {
        if (retired) Atomics.store(s.state, RETIRED, 1);
        s.port2.close();
      });
      const r = (await b.runPrepared(prepared().p))!;
      const e = r.outcome.error!;
      expect([e.code, e.message]).toEqual(
        retired ? ["UNAVAILABLE", "model 'm' instance m_0 is unloaded"] : ["INTERNAL", "model 'm' instance m_0: the worker ended"],
      );
      expect(Atomics.load(s.state, BUSY)).toBe(0);
      expect(b.load()).toBeUndefined();
      expect(s.connects).toEqual(["typescript:7", "typescript:7"]);
    }
  });
});
