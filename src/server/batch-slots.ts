/**
 * @module The shared memory between a thread that submits requests to the scheduling
 * thread (a frontend worker, or the main thread) and the scheduling thread itself (#30
 * item 2; batch-thread.ts): one SharedArrayBuffer per submitting thread, holding a fixed
 * number of slots and two single-producer single-consumer rings of slot numbers.
 *
 * A slot belongs to the submitter while free; it writes a request into it (tensors
 * written once, no structured clone), puts the slot's number on the submission ring and
 * notifies. The scheduling thread reads the request in place, and once it is answered
 * writes the result into the same slot, puts the number on the completion ring and
 * notifies; the submitter reads the result and frees the slot. A request or a result
 * that does not fit its slot goes as a message instead (the channel's MessagePort).
 *
 * Layout: Int32 [subTail, subHead, doneTail, doneHead, closed, slots, failed, busy, pad...] then the two rings
 * (SLOTS Int32 each), then SLOTS slots of SLOT_BYTES, each 64-byte aligned. Counters only
 * grow (wrapping as Int32); a ring index is counter & (SLOTS - 1). A ring never holds
 * more than SLOTS numbers, since a slot is in at most one of them at a time.
 */
import { DATA_TYPES, type DataType, type Tensor } from "../core/tensor.ts";
import { ERROR_CODES, ServerError, type ErrorCode } from "../core/errors.ts";
import { FAILURE_REASONS, type FailureReason } from "../core/stats.ts";
import type { CorrelationId } from "../core/request.ts";
import { waitAsync } from "../core/threads/wait-async.ts";

/** Int32 indices of the header. */
export const SUB_TAIL = 0;
export const SUB_HEAD = 1;
export const DONE_TAIL = 2;
export const DONE_HEAD = 3;
/**
 * Set to 1 when the channel is closed: the scheduling thread stops waiting on it; to
 * CLOSED_ABANDONED (a value, not an index) when its worker ended: its requests still there
 * are cancelled too, as no one waits for them.
 */
export const CLOSED = 4;
export const CLOSED_ABANDONED = 2;
/** Set to 1 (by the main thread) when the scheduling thread has failed: the submitter stops waiting on it. */
export const FAILED = 6;
/**
 * Set to 1 (by the scheduling thread) while every instance it runs is running: what is
 * submitted then cannot start before a run ends, and the thread takes every ring when one
 * does, so a submitter rings once for all it submits in one turn of its event loop
 * (setImmediate) instead of once each (#30: each ring wakes the scheduling thread, an
 * event-loop turn and a waitAsync there, and costs the submitter a cross-thread notify).
 */
export const BUSY = 7;
const HEADER_INTS = 16;

/** Slots of a frontend worker's channel: as many as its runs in flight (direct-runner.ts MAX_DIRECT_IN_FLIGHT). */
export const WORKER_SLOTS = 32;
/** Slots of the main thread's channel (more: it may hold every client's requests). */
export const MAIN_SLOTS = 64;
/** Bytes of one slot: a request (or its result) larger than this goes as a message. */
export const SLOT_BYTES = 64 * 1024;

/** A request as the scheduling thread takes it (in a slot, or as a message). */
export interface WireRequest {
  /** The submitter's number for the request, unique on its channel (a cancel or a result names it). */
  ref: number;
  /** The scheduling thread's id of the model version (BatchThread.register). */
  entry: number;
  batchSize: number;
  priority: number;
  timeoutUs: number;
  /** The request's id ("" for none), for the scheduler's messages. */
  id: string;
  inputs: Tensor[];
  outputNames: string[];
  /** A sequence-batched version's control parameters (sequence_id, sequence_start, sequence_end), when the request set any. */
  sequence?: WireSequence;
}

/** A request's sequence parameters as the sequence batcher reads them (RequestControl). */
export interface WireSequence {
  id: CorrelationId | undefined;
  start: boolean;
  end: boolean;
}

/** A request's outcome as the submitter gets it. */
export type WireResult =
  | { t: "ok"; outputs: Tensor[]; queueNs: number; computeInputNs: number; computeInferNs: number; computeOutputNs: number }
  | { t: "error"; code: ErrorCode; message: string; reason?: FailureReason }
  /** The scheduling thread does not (or no longer) serve the version: nothing ran; the submitter hands the request on. */
  | { t: "retired" };

const OK = 1;
const ERROR = 2;
const RETIRED = 3;

/** A channel's shared memory, as either side sees it. */
export class SlotChannel {
  readonly buffer: SharedArrayBuffer;
  readonly slots: number;
  readonly ctrl: Int32Array;
  readonly #bytes: Uint8Array;
  readonly #view: DataView;
  readonly #slot0: number;

  constructor(bufferOrSlots: SharedArrayBuffer | number) {
    const slots = typeof bufferOrSlots === "number" ? bufferOrSlots : slotsOf(bufferOrSlots);
    if (slots <= 0 || (slots & (slots - 1)) !== 0) throw new Error("a slot channel has a power of two of slots");
    this.#slot0 = align((HEADER_INTS + 2 * slots) * 4, 64);
    this.buffer = typeof bufferOrSlots === "number" ? new SharedArrayBuffer(this.#slot0 + slots * SLOT_BYTES) : bufferOrSlots;
    this.slots = slots;
    this.ctrl = new Int32Array(this.buffer, 0, HEADER_INTS + 2 * slots);
    if (typeof bufferOrSlots === "number") this.ctrl[5] = slots;
    this.#bytes = new Uint8Array(this.buffer);
    this.#view = new DataView(this.buffer);
  }

  /**
   * Puts `slot` on the submission ring (the submitter) and wakes the scheduling thread:
   * at once, or, while it is BUSY, at the end of this turn of the event loop, once for
   * every slot submitted in the turn.
   */
  submit(slot: number): void {
    // Pushed before BUSY is read (the scheduling thread clears BUSY before it drains): either
    // this reads 0 and rings now, or the drain after the run that cleared it takes the slot.
    this.#push(SUB_TAIL, HEADER_INTS, slot, false);
    const now = Atomics.load(this.ctrl, BUSY) === 0;
    if (now) Atomics.notify(this.ctrl, SUB_TAIL);
    else if (!this.#ringSoon) {
      this.#ringSoon = true;
      setImmediate(this.#ring);
    }
  }

  #ringSoon = false;
  readonly #ring = (): void => {
    this.#ringSoon = false;
    Atomics.notify(this.ctrl, SUB_TAIL);
  };

  /**
   * Puts `slot` on the completion ring (the scheduling thread) and wakes the submitter;
   * with `wake` false it only puts it there, and wakeSubmitter() wakes the submitter once
   * for all the slots completed so (the results of one execution: one wake-up, not one each).
   */
  complete(slot: number, wake = true): void {
    this.#push(DONE_TAIL, HEADER_INTS + this.slots, slot, wake);
  }

  /** Wakes the submitter for the slots completed so far. */
  wakeSubmitter(): void {
    Atomics.notify(this.ctrl, DONE_TAIL);
  }

  /** The slots submitted since the last call (the scheduling thread). */
  takeSubmitted(): number[] {
    return this.#take(SUB_TAIL, SUB_HEAD, HEADER_INTS);
  }

  /** The slots completed since the last call (the submitter). */
  takeCompleted(): number[] {
    return this.#take(DONE_TAIL, DONE_HEAD, HEADER_INTS + this.slots);
  }

  #push(tailAt: number, ring: number, slot: number, wake = true): void {
    const tail = Atomics.load(this.ctrl, tailAt);
    Atomics.store(this.ctrl, ring + (tail & (this.slots - 1)), slot);
    Atomics.store(this.ctrl, tailAt, (tail + 1) | 0);
    if (wake) Atomics.notify(this.ctrl, tailAt);
  }

  #take(tailAt: number, headAt: number, ring: number): number[] {
    const tail = Atomics.load(this.ctrl, tailAt);
    let head = Atomics.load(this.ctrl, headAt);
    const out: number[] = [];
    while (head !== tail) {
      out.push(Atomics.load(this.ctrl, ring + (head & (this.slots - 1))));
      head = (head + 1) | 0;
    }
    Atomics.store(this.ctrl, headAt, head);
    return out;
  }

  /** Writes `r` into `slot`; false (nothing usable written) when it does not fit. */
  writeRequest(slot: number, r: WireRequest): boolean {
    const w = new SlotWriter(this.#bytes, this.#view, this.#slot0 + slot * SLOT_BYTES);
    w.u32(r.ref);
    w.u32(r.entry);
    w.u32(r.batchSize);
    w.f64(r.priority);
    w.f64(r.timeoutUs);
    w.str(r.id);
    w.u32(r.outputNames.length);
    for (const n of r.outputNames) w.str(n);
    w.tensors(r.inputs);
    writeSequence(w, r.sequence);
    return w.ok;
  }

  /** The request in `slot`; its tensors view the slot (valid until the slot's result is written). */
  readRequest(slot: number): WireRequest {
    const r = new SlotReader(this.#bytes, this.#view, this.#slot0 + slot * SLOT_BYTES, false);
    const ref = r.u32();
    const entry = r.u32();
    const batchSize = r.u32();
    const priority = r.f64();
    const timeoutUs = r.f64();
    const id = r.str();
    const outputNames: string[] = [];
    for (let i = r.u32(); i > 0; i--) outputNames.push(r.str());
    const inputs = r.tensors();
    const sequence = readSequence(r);
    const request: WireRequest = { ref, entry, batchSize, priority, timeoutUs, id, outputNames, inputs };
    if (sequence) request.sequence = sequence;
    return request;
  }

  /** Writes `res` into `slot`; false when it does not fit (it goes as a message then). */
  writeResult(slot: number, res: WireResult): boolean {
    const w = new SlotWriter(this.#bytes, this.#view, this.#slot0 + slot * SLOT_BYTES);
    if (res.t === "ok") {
      w.u32(OK);
      w.f64(res.queueNs);
      w.f64(res.computeInputNs);
      w.f64(res.computeInferNs);
      w.f64(res.computeOutputNs);
      w.tensors(res.outputs);
    } else if (res.t === "error") {
      w.u32(ERROR);
      w.u32(ERROR_CODES.indexOf(res.code));
      w.u32(res.reason ? FAILURE_REASONS.indexOf(res.reason) + 1 : 0);
      w.str(res.message);
    } else w.u32(RETIRED);
    return w.ok;
  }

  /** The result in `slot`, its tensors copied out (the slot is free again after). */
  readResult(slot: number): WireResult {
    const r = new SlotReader(this.#bytes, this.#view, this.#slot0 + slot * SLOT_BYTES, true);
    const kind = r.u32();
    if (kind === OK) {
      const queueNs = r.f64();
      const computeInputNs = r.f64();
      const computeInferNs = r.f64();
      const computeOutputNs = r.f64();
      return { t: "ok", queueNs, computeInputNs, computeInferNs, computeOutputNs, outputs: r.tensors() };
    }
    if (kind === ERROR) {
      const code = ERROR_CODES[r.u32()] ?? "INTERNAL";
      const reason = r.u32();
      const message = r.str();
      return reason > 0 ? { t: "error", code, message, reason: FAILURE_REASONS[reason - 1]! } : { t: "error", code, message };
    }
    return { t: "retired" };
  }
}

/** The ServerError an error result stands for. */
export function errorOf(r: Extract<WireResult, { t: "error" }>): ServerError {
  return new ServerError(r.code, r.message, r.reason ? { reason: r.reason } : undefined);
}

/** The end of a channel's MessagePort, as both runtimes' types agree on it. */
export interface ChannelPort {
  postMessage(message: unknown, transfer?: unknown[]): void;
  onmessage: ((e: MessageEvent) => void) | null;
  close(): void;
}

/**
 * Runs `step` now and again each time ctrl[tailAt] moves past ctrl[headAt] (the other
 * side rang), sleeping with Atomics.waitAsync in between (the event loop stays free);
 * stops once `step` returns false. `rangOtherwise` tells of a ring by another word (a
 * flag stored, then ctrl[tailAt] notified): it is read again once the wait is set, so a
 * notify that came before the wait is not lost.
 */
export function whileRung(ctrl: Int32Array, tailAt: number, headAt: number, step: () => boolean, rangOtherwise?: () => boolean): void {
  const loop = (): void => {
    for (;;) {
      if (!step()) return;
      const w = waitAsync(ctrl, tailAt, Atomics.load(ctrl, headAt));
      if (w.async) {
        if (rangOtherwise?.()) continue;
        void w.value.then(loop);
        return;
      }
    }
  };
  loop();
}

/** Sequence kinds in a slot: none, with no ID, with a string ID, with an integer ID (64 bits). */
const NO_SEQUENCE = 0;
const SEQUENCE_NO_ID = 1;
const SEQUENCE_STRING = 2;
const SEQUENCE_UINT64 = 3;

/** A request's sequence parameters, after its tensors: kind, flags (1 START, 2 END), then the ID. */
function writeSequence(w: SlotWriter, s: WireSequence | undefined): void {
  if (!s) return w.u32(NO_SEQUENCE);
  const id = s.id;
  w.u32(id === undefined ? SEQUENCE_NO_ID : typeof id === "string" ? SEQUENCE_STRING : SEQUENCE_UINT64);
  w.u32((s.start ? 1 : 0) | (s.end ? 2 : 0));
  if (typeof id === "string") w.str(id);
  else if (id !== undefined) w.u64(BigInt(id));
}

function readSequence(r: SlotReader): WireSequence | undefined {
  const kind = r.u32();
  if (kind === NO_SEQUENCE) return undefined;
  const flags = r.u32();
  let id: CorrelationId | undefined;
  if (kind === SEQUENCE_STRING) id = r.str();
  else if (kind === SEQUENCE_UINT64) {
    const v = r.u64();
    // An ID within 2^53 as a number, as the frontends decode it; past that exact, as a bigint.
    id = v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  }
  return { id, start: (flags & 1) !== 0, end: (flags & 2) !== 0 };
}

/** The slot count a channel's buffer was made with (kept in the header). */
function slotsOf(buffer: SharedArrayBuffer): number {
  return new Int32Array(buffer, 0, HEADER_INTS)[5]!;
}

const align = (n: number, to: number) => Math.ceil(n / to) * to;
const encoder = new TextEncoder();
/** Strings up to this long are tried as ASCII, byte by byte. */
const SHORT = 64;
const decoder = new TextDecoder();

/** Writes fields into one slot; `ok` turns false (and stays) once something would pass its end. */
class SlotWriter {
  ok = true;
  #at: number;
  readonly #end: number;
  readonly #start: number;
  constructor(
    readonly bytes: Uint8Array,
    readonly view: DataView,
    start: number,
  ) {
    this.#start = start;
    this.#at = start;
    this.#end = start + SLOT_BYTES;
  }
  #room(n: number): boolean {
    if (this.ok && this.#at + n > this.#end) this.ok = false;
    return this.ok;
  }
  u32(v: number): void {
    if (this.#room(4)) this.view.setUint32(this.#at, v, true);
    this.#at += 4;
  }
  f64(v: number): void {
    this.#at = this.#start + align(this.#at - this.#start, 8);
    if (this.#room(8)) this.view.setFloat64(this.#at, v, true);
    this.#at += 8;
  }
  u64(v: bigint): void {
    this.#at = this.#start + align(this.#at - this.#start, 8);
    if (this.#room(8)) this.view.setBigUint64(this.#at, v, true);
    this.#at += 8;
  }
  str(s: string): void {
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    if (!this.#room(4 + s.length * 3)) return;
    const at = this.#at + 4;
    let n = 0;
    // Names are short and ASCII: written byte by byte, without an encoder call.
    if (s.length <= SHORT) {
      while (n < s.length && s.charCodeAt(n) < 0x80) {
        this.bytes[at + n] = s.charCodeAt(n);
        n++;
      }
    }
    if (n < s.length) n = encoder.encodeInto(s, this.bytes.subarray(at, at + s.length * 3)).written;
    this.view.setUint32(this.#at, n, true);
    this.#at = at + n;
  }
  tensors(ts: readonly Tensor[]): void {
    this.u32(ts.length);
    for (const t of ts) {
      this.str(t.name);
      this.u32(DATA_TYPES.indexOf(t.datatype));
      this.u32(t.shape.length);
      for (const d of t.shape) this.f64(d);
      this.u32(t.data.byteLength);
      // Tensor data 16-byte aligned within the slot (slots are 64-byte aligned).
      this.#at = this.#start + align(this.#at - this.#start, 16);
      if (this.#room(t.data.byteLength)) this.bytes.set(t.data, this.#at);
      this.#at += t.data.byteLength;
    }
  }
}

/** Reads what a SlotWriter wrote; tensors copied out (`copy`) or viewing the slot. */
class SlotReader {
  #at: number;
  readonly #start: number;
  constructor(
    readonly bytes: Uint8Array,
    readonly view: DataView,
    start: number,
    readonly copy: boolean,
  ) {
    this.#start = start;
    this.#at = start;
  }
  u32(): number {
    const v = this.view.getUint32(this.#at, true);
    this.#at += 4;
    return v;
  }
  f64(): number {
    this.#at = this.#start + align(this.#at - this.#start, 8);
    const v = this.view.getFloat64(this.#at, true);
    this.#at += 8;
    return v;
  }
  u64(): bigint {
    this.#at = this.#start + align(this.#at - this.#start, 8);
    const v = this.view.getBigUint64(this.#at, true);
    this.#at += 8;
    return v;
  }
  str(): string {
    const n = this.u32();
    const at = this.#at;
    this.#at += n;
    if (n <= SHORT) {
      let s = "";
      for (let i = at; i < at + n; i++) {
        const b = this.bytes[i]!;
        if (b >= 0x80) return decoder.decode(this.bytes.slice(at, at + n));
        s += String.fromCharCode(b);
      }
      return s;
    }
    // TextDecoder does not read shared memory: the bytes are copied first.
    return decoder.decode(this.bytes.slice(at, at + n));
  }
  tensors(): Tensor[] {
    const out: Tensor[] = [];
    for (let i = this.u32(); i > 0; i--) {
      const name = this.str();
      const datatype: DataType = DATA_TYPES[this.u32()]!;
      const shape: number[] = [];
      for (let r = this.u32(); r > 0; r--) shape.push(this.f64());
      const n = this.u32();
      this.#at = this.#start + align(this.#at - this.#start, 16);
      const data = this.copy ? this.bytes.slice(this.#at, this.#at + n) : this.bytes.subarray(this.#at, this.#at + n);
      this.#at += n;
      out.push({ name, datatype, shape, data });
    }
    return out;
  }
}
