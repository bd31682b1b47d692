/**
 * The shared memory between a submitting thread and the scheduling thread (#30 item 2,
 * src/server/batch-slots.ts): requests and results written into slots and read back
 * exactly, what does not fit refused, the rings in order across wrap-around, and the
 * wait on a ring woken by the other side's ring.
 */
import { describe, expect, it, vi } from "vitest";
import {
  BUSY,
  DONE_HEAD,
  DONE_TAIL,
  SLOT_BYTES,
  SUB_HEAD,
  SUB_TAIL,
  SlotChannel,
  errorOf,
  whileRung,
  type WireRequest,
} from "../../../src/server/batch-slots.ts";
import { ServerError } from "../../../src/core/errors.ts";

const bytes = (...v: number[]) => new Uint8Array(v);
const request = (over: Partial<WireRequest> = {}): WireRequest => ({
  ref: 7,
  entry: 3,
  batchSize: 2,
  priority: 1,
  timeoutUs: 250_000,
  id: "req-ü-1",
  inputs: [
    { name: "INPUT0", datatype: "INT32", shape: [2, 2], data: new Uint8Array(Int32Array.from([1, -2, 3, 4]).buffer) },
    { name: "TEXT", datatype: "BYTES", shape: [2, 1], data: bytes(1, 0, 0, 0, 65, 0, 0, 0, 0) },
  ],
  outputNames: ["OUTPUT0", "OUTPUT1"],
  ...over,
});
const plain = (r: WireRequest) => ({ ...r, inputs: r.inputs.map((t) => ({ ...t, data: Array.from(t.data) })) });

describe("SlotChannel", () => {
  it("a request comes back field for field from the other side's view of the same buffer, its tensors in shared memory", () => {
    const mine = new SlotChannel(4);
    const theirs = new SlotChannel(mine.buffer);
    expect(theirs.slots).toBe(4);
    expect(mine.writeRequest(2, request())).toBe(true);
    const read = theirs.readRequest(2);
    expect(plain(read)).toEqual(plain(request()));
    expect(read.inputs[0]!.data.buffer).toBe(theirs.buffer);
    expect(read.inputs[0]!.data.byteOffset % 16).toBe(0);
    // Strings short and long, ASCII and not, take different paths.
    for (const id of ["", "a", "x".repeat(64), "y".repeat(65), `${"z".repeat(80)}é`, "日本語", "\u{1F600}"]) {
      mine.writeRequest(1, request({ id }));
      expect(theirs.readRequest(1).id).toBe(id);
    }
  });

  it("a request's sequence parameters come back exactly: string and uint64 IDs (past 2^53 as bigint), flags, none (#30 item 2)", () => {
    const mine = new SlotChannel(2);
    const theirs = new SlotChannel(mine.buffer);
    const cases: WireRequest["sequence"][] = [
      { id: 42, start: true, end: false },
      { id: 2n ** 64n - 1n, start: false, end: true },
      { id: 2 ** 53 - 1, start: true, end: true },
      { id: "seq-ü-\u{1F600}", start: false, end: false },
      { id: undefined, start: true, end: false },
    ];
    for (const sequence of cases) {
      expect(mine.writeRequest(0, request({ sequence }))).toBe(true);
      const read = theirs.readRequest(0);
      expect(read.sequence).toEqual(sequence);
      expect(plain(read)).toEqual(plain(request({ sequence })));
    }
    // 2^53 + 1 and beyond stay exact, as a bigint; a smaller ID given as a bigint reads as the number the frontends give.
    mine.writeRequest(1, request({ sequence: { id: 2n ** 53n + 1n, start: true, end: false } }));
    expect(theirs.readRequest(1).sequence?.id).toBe(2n ** 53n + 1n);
    mine.writeRequest(1, request({ sequence: { id: 5n, start: true, end: false } }));
    expect(theirs.readRequest(1).sequence?.id).toBe(5);
    mine.writeRequest(1, request());
    expect("sequence" in theirs.readRequest(1)).toBe(false);
    // A sequence whose ID does not fit after the tensors is refused, as any request that does not fit.
    const fill = { name: "INPUT0", datatype: "UINT8" as const, shape: [1], data: new Uint8Array(SLOT_BYTES - 96) };
    expect(mine.writeRequest(1, request({ inputs: [fill], outputNames: [], id: "", sequence: { id: 1, start: true, end: false } }))).toBe(true);
    expect(mine.writeRequest(1, request({ inputs: [fill], outputNames: [], id: "", sequence: { id: "x".repeat(64), start: true, end: false } }))).toBe(false);
  });

  it("a result is copied out of its slot: writing the slot again leaves it as read", () => {
    const c = new SlotChannel(2);
    const outputs = [{ name: "OUTPUT0", datatype: "FP32" as const, shape: [1, 3], data: new Uint8Array(Float32Array.from([1.5, -2, 3]).buffer) }];
    expect(c.writeResult(1, { t: "ok", outputs, queueNs: 1234, computeInputNs: 5, computeInferNs: 6789, computeOutputNs: 10 })).toBe(true);
    const r = c.readResult(1);
    expect(c.writeResult(1, { t: "retired" })).toBe(true);
    expect(r.t === "ok" && { ...r, outputs: r.outputs.map((t) => ({ ...t, data: Array.from(new Float32Array(t.data.buffer)) })) }).toEqual({
      t: "ok",
      queueNs: 1234,
      computeInputNs: 5,
      computeInferNs: 6789,
      computeOutputNs: 10,
      outputs: [{ name: "OUTPUT0", datatype: "FP32", shape: [1, 3], data: [1.5, -2, 3] }],
    });
    expect(c.readResult(1)).toEqual({ t: "retired" });
  });

  it("an error keeps its code, message and failure reason, and becomes the same ServerError", () => {
    const c = new SlotChannel(2);
    c.writeResult(0, { t: "error", code: "UNAVAILABLE", message: "Exceeds maximum queue size", reason: "REJECTED" });
    const r = c.readResult(0);
    expect(r).toEqual({ t: "error", code: "UNAVAILABLE", message: "Exceeds maximum queue size", reason: "REJECTED" });
    const e = errorOf(r as Extract<typeof r, { t: "error" }>);
    expect(e).toBeInstanceOf(ServerError);
    expect([e.code, e.message, e.reason]).toEqual(["UNAVAILABLE", "Exceeds maximum queue size", "REJECTED"]);
    c.writeResult(1, { t: "error", code: "INVALID_ARG", message: "bad" });
    expect(c.readResult(1)).toEqual({ t: "error", code: "INVALID_ARG", message: "bad" });
  });

  it("what does not fit a slot is refused, and the slot after it is untouched", () => {
    const c = new SlotChannel(2);
    expect(c.writeRequest(1, request())).toBe(true);
    const big = { name: "X", datatype: "UINT8" as const, shape: [1, SLOT_BYTES], data: new Uint8Array(SLOT_BYTES) };
    expect(c.writeRequest(0, request({ inputs: [big] }))).toBe(false);
    expect(c.writeResult(0, { t: "ok", outputs: [big], queueNs: 0, computeInputNs: 0, computeInferNs: 0, computeOutputNs: 0 })).toBe(false);
    expect(c.writeRequest(0, request({ id: "x".repeat(SLOT_BYTES) }))).toBe(false);
    expect(plain(c.readRequest(1))).toEqual(plain(request()));
  });

  it("the rings hand slot numbers over in order, around the ring and past the counters' Int32 overflow", () => {
    const a = new SlotChannel(4);
    const b = new SlotChannel(a.buffer);
    // Counters a few pushes short of 2^31: they wrap to negative numbers on the way.
    for (const i of [SUB_TAIL, SUB_HEAD, DONE_TAIL, DONE_HEAD]) a.ctrl[i] = 2 ** 31 - 5;
    const seen: number[] = [];
    const done: number[] = [];
    for (let round = 0; round < 10; round++) {
      for (const s of [3, 0, 2]) a.submit(s);
      seen.push(...b.takeSubmitted());
      for (const s of [2, 3]) b.complete(s);
      done.push(...a.takeCompleted());
    }
    expect(seen).toEqual(Array.from({ length: 10 }, () => [3, 0, 2]).flat());
    expect(done).toEqual(Array.from({ length: 10 }, () => [2, 3]).flat());
    expect(b.takeSubmitted()).toEqual([]);
  });

  it("a channel has a power of two of slots", () => {
    expect(() => new SlotChannel(3)).toThrow(/power of two/);
  });
});

/**
 * One side of a 4-slot channel watching a ring with whileRung until `n` slots came: the
 * submitter (`a`) its completion ring, or the scheduling side (`b`) its submission ring;
 * `got` is each step's take.
 */
function watchRing(ring: "completed" | "submitted", n: number) {
  const a = new SlotChannel(4);
  const b = new SlotChannel(a.buffer);
  const got: number[][] = [];
  let ended!: () => void;
  const end = new Promise<void>((resolve) => (ended = resolve));
  const [watcher, tail, head] = ring === "completed" ? [a, DONE_TAIL, DONE_HEAD] : [b, SUB_TAIL, SUB_HEAD];
  whileRung(watcher.ctrl, tail, head, () => {
    got.push(ring === "completed" ? a.takeCompleted() : b.takeSubmitted());
    if (got.flat().length < n) return true;
    ended();
    return false;
  });
  return { a, b, got, end };
}

describe("whileRung", () => {
  it("runs its step at once and again each time the other side rings, until the step says stop", async () => {
    const { b, got, end } = watchRing("completed", 3);
    expect(got).toEqual([[]]);
    b.complete(1);
    await new Promise((r) => setTimeout(r, 10));
    b.complete(2);
    b.complete(0);
    await end;
    expect(got.flat()).toEqual([1, 2, 0]);
  });

  it("slots completed without a wake-up are taken together at the one wakeSubmitter() after them (#30: one wake-up per execution)", async () => {
    const { b, got, end } = watchRing("completed", 3);
    for (const s of [2, 0, 3]) b.complete(s, false);
    // Nothing woke the submitter: its step ran only once, at the start.
    await new Promise((r) => setTimeout(r, 20));
    expect(got).toEqual([[]]);
    b.wakeSubmitter();
    await end;
    expect(got).toEqual([[], [2, 0, 3]]);
  });
  it("while the scheduling side is BUSY, the slots submitted in one turn ring it once, after the turn; otherwise each rings at once (#30)", async () => {
    const { a, b, got, end } = watchRing("submitted", 5);
    const notify = vi.spyOn(Atomics, "notify");
    try {
      Atomics.store(b.ctrl, BUSY, 1);
      for (const s of [2, 0, 3]) a.submit(s);
      // On the ring at once, rung for none of them yet.
      expect(notify).not.toHaveBeenCalled();
      await new Promise((r) => setImmediate(r));
      expect(notify).toHaveBeenCalledTimes(1);
      await new Promise((r) => setTimeout(r, 10));
      expect(got).toEqual([[], [2, 0, 3]]);
      Atomics.store(b.ctrl, BUSY, 0);
      a.submit(1);
      expect(notify).toHaveBeenCalledTimes(2);
      a.submit(3);
      expect(notify).toHaveBeenCalledTimes(3);
      await end;
      expect(got.flat()).toEqual([2, 0, 3, 1, 3]);
    } finally {
      notify.mockRestore();
    }
  });
});
