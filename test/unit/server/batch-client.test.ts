/**
 * A submitting thread's side of its channel to the scheduling thread (#30 item 2,
 * src/server/batch-client.ts), against a scheduling side played by the test on the same
 * buffer and port: a request through a slot and its result back, one too large for a
 * slot over the port both ways, a cancel naming the request, and a failed scheduling
 * thread releasing what waits and handing new requests on.
 */
import { afterEach, describe, expect, it } from "vitest";
import { BatchClient } from "../../../src/server/batch-client.ts";
import { DONE_TAIL, FAILED, SLOT_BYTES, SlotChannel, type ChannelPort } from "../../../src/server/batch-slots.ts";
import type { FromBatchPort, ToBatchPort } from "../../../src/server/batch-protocol.ts";
import type { PreparedRequest } from "../../../src/core/request-validate.ts";
import type { Tensor } from "../../../src/core/tensor.ts";

const ports: MessagePort[] = [];
afterEach(() => {
  for (const p of ports.splice(0)) p.close();
});

function setup() {
  const channel = new SlotChannel(4);
  const { port1, port2 } = new MessageChannel();
  ports.push(port1, port2);
  const client = new BatchClient(channel.buffer, port1 as unknown as ChannelPort);
  const theirs = port2 as unknown as ChannelPort;
  const messages: ToBatchPort[] = [];
  let onMessage: (() => void) | undefined;
  theirs.onmessage = (e: MessageEvent) => {
    messages.push(e.data as ToBatchPort);
    onMessage?.();
  };
  const nextMessage = () => new Promise<void>((resolve) => (onMessage = resolve));
  return { channel: new SlotChannel(channel.buffer), client, port: theirs, messages, nextMessage };
}

const tensor = (name: string, values: number[]): Tensor => ({
  name,
  datatype: "INT32",
  shape: [1, values.length],
  data: new Uint8Array(Int32Array.from(values).buffer),
});
const prepared = (inputs: Tensor[], signal?: AbortSignal): PreparedRequest => ({
  request: { id: "r1", modelName: "m", inputs: [], ...(signal ? { signal } : {}) } as unknown as PreparedRequest["request"],
  control: { priority: 2, timeoutUs: 500, sequenceStart: false, sequenceEnd: false },
  batchSize: 1,
  inputs,
  outputNames: ["OUT"],
  classification: new Map(),
});
const values = (t: Tensor) => Array.from(new Int32Array(new Uint8Array(t.data).buffer));

describe("BatchClient", () => {
  it("a request's sequence parameters go into its slot with it; a request without them carries none (#30 item 2)", () => {
    const { channel, client } = setup();
    const withSequence = (sequenceId: PreparedRequest["control"]["sequenceId"], sequenceStart: boolean, sequenceEnd: boolean): PreparedRequest => {
      const p = prepared([tensor("IN", [1])]);
      return { ...p, control: { ...p.control, sequenceId, sequenceStart, sequenceEnd } };
    };
    void client.submit(1, withSequence(18446744073709551615n, true, false));
    void client.submit(1, withSequence("s-1", false, true));
    void client.submit(1, withSequence(undefined, true, false));
    void client.submit(1, prepared([tensor("IN", [1])]));
    const read = channel.takeSubmitted().map((slot) => channel.readRequest(slot).sequence);
    expect(read).toEqual([
      { id: 18446744073709551615n, start: true, end: false },
      { id: "s-1", start: false, end: true },
      { id: undefined, start: true, end: false },
      undefined,
    ]);
  });

  it("writes a request into a slot and rings; the result written back into the slot settles it", async () => {
    const { channel, client } = setup();
    const answer = client.submit(9, prepared([tensor("IN", [1, 2, 3])]));
    const [slot] = channel.takeSubmitted();
    const r = channel.readRequest(slot!);
    expect({ ...r, inputs: r.inputs.map((t) => [t.name, values(t)]) }).toEqual({
      ref: r.ref,
      entry: 9,
      batchSize: 1,
      priority: 2,
      timeoutUs: 500,
      id: "r1",
      outputNames: ["OUT"],
      inputs: [["IN", [1, 2, 3]]],
    });
    channel.writeResult(slot!, { t: "ok", outputs: [tensor("OUT", [2, 4, 6])], queueNs: 10, computeInputNs: 1, computeInferNs: 2, computeOutputNs: 3 });
    channel.complete(slot!);
    const result = await answer;
    expect(result.t === "ok" && [values(result.outputs[0]!), result.queueNs, result.computeInferNs]).toEqual([[2, 4, 6], 10, 2]);
  });

  it("a request too large for a slot goes over the port, and so may its result", async () => {
    const { channel, client, port, messages, nextMessage } = setup();
    const big = Array.from({ length: SLOT_BYTES / 4 }, (_, i) => i);
    const came = nextMessage();
    const answer = client.submit(1, prepared([tensor("IN", big)]));
    await came;
    expect(channel.takeSubmitted()).toEqual([]);
    const m = messages[0]!;
    expect(m.t === "submit" && values(m.request.inputs[0]!).length).toBe(big.length);
    const ref = m.t === "submit" ? m.request.ref : -1;
    port.postMessage({
      t: "result",
      ref,
      slot: -1,
      result: { t: "error", code: "UNAVAILABLE", message: "Exceeds maximum queue size", reason: "REJECTED" },
    } satisfies FromBatchPort);
    expect(await answer).toEqual({ t: "error", code: "UNAVAILABLE", message: "Exceeds maximum queue size", reason: "REJECTED" });
  });

  it("a request that cannot be sent fails at once and takes no ref: the next one gets it, so the channel's order has no gap", async () => {
    const { channel, client } = setup();
    // The client posts on port1 of setup()'s channel.
    const sent = ports[0]!;
    const post = sent.postMessage.bind(sent);
    sent.postMessage = () => {
      throw new Error("DataCloneError");
    };
    const big = Array.from({ length: SLOT_BYTES / 4 }, (_, i) => i);
    expect(await client.submit(1, prepared([tensor("IN", big)]))).toEqual({
      t: "error",
      code: "INTERNAL",
      message: "the request could not be sent to the scheduling thread: DataCloneError",
    });
    sent.postMessage = post;
    void client.submit(1, prepared([tensor("IN", [1])]));
    expect(channel.readRequest(channel.takeSubmitted()[0]!).ref).toBe(1);
  });

  it("a cancelled request sends a cancel naming it", async () => {
    const { channel, client, messages, nextMessage } = setup();
    const controller = new AbortController();
    void client.submit(1, prepared([tensor("IN", [1])], controller.signal));
    const ref = channel.readRequest(channel.takeSubmitted()[0]!).ref;
    const came = nextMessage();
    controller.abort();
    await came;
    expect(messages).toEqual([{ t: "cancel", ref }]);
  });

  it("once the scheduling thread has failed, what waits fails and new requests are handed on", async () => {
    const { channel, client } = setup();
    const answer = client.submit(1, prepared([tensor("IN", [1])]));
    Atomics.store(channel.ctrl, FAILED, 1);
    Atomics.notify(channel.ctrl, DONE_TAIL);
    expect(await answer).toEqual({ t: "error", code: "INTERNAL", message: "the scheduling thread failed" });
    expect(await client.submit(1, prepared([tensor("IN", [1])]))).toEqual({ t: "retired" });
  });

  it("a request that went over the port fails too when the thread fails, with no request in a slot", async () => {
    const { channel, client, nextMessage } = setup();
    const came = nextMessage();
    const answer = client.submit(
      1,
      prepared([
        tensor(
          "IN",
          Array.from({ length: SLOT_BYTES / 4 }, (_, i) => i),
        ),
      ]),
    );
    await came;
    expect(channel.takeSubmitted()).toEqual([]);
    Atomics.store(channel.ctrl, FAILED, 1);
    Atomics.notify(channel.ctrl, DONE_TAIL);
    expect(await answer).toEqual({ t: "error", code: "INTERNAL", message: "the scheduling thread failed" });
  });
});
