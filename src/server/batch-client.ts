/**
 * @module A thread's side of its channel to the scheduling thread (#30 item 2): a
 * frontend worker's, or the main thread's. submit() writes a prepared request into a
 * free slot and rings (batch-slots.ts); the results come back through the completion
 * ring, read as Atomics.waitAsync wakes this thread. A request with no free slot, or
 * too large for one, goes over the channel's ChannelPort instead, and so does a result
 * too large for its slot.
 */
import { DONE_HEAD, DONE_TAIL, FAILED, SlotChannel, whileRung, type ChannelPort, type WireRequest, type WireResult } from "./batch-slots.ts";
import type { FromBatchPort, ToBatchPort } from "./batch-protocol.ts";
import type { PreparedRequest } from "../core/request-validate.ts";
import type { WireSequence } from "./batch-slots.ts";

interface Pending {
  resolve(r: WireResult): void;
  /** Stops listening for the request's cancellation. */
  forget(): void;
}

export class BatchClient {
  readonly #channel: SlotChannel;
  readonly #port: ChannelPort;
  readonly #free: number[] = [];
  /** The ref of the request in each slot. */
  readonly #slotRef: number[] = [];
  /** Requests submitted and not yet answered, by ref. */
  readonly #pending = new Map<number, Pending>();
  #waiting = false;
  #nextRef = 0;

  constructor(buffer: SharedArrayBuffer, port: ChannelPort) {
    this.#channel = new SlotChannel(buffer);
    for (let i = this.#channel.slots - 1; i >= 0; i--) this.#free.push(i);
    this.#port = port;
    port.onmessage = (e: MessageEvent) => {
      const m = e.data as FromBatchPort;
      if (m.slot >= 0) this.#release(m.slot);
      this.#settle(m.ref, m.result);
    };
    (port as ChannelPort & { unref?: () => void }).unref?.();
  }

  /** Sends `prepared` to the scheduling thread for version `entry`; resolves with its outcome. */
  submit(entry: number, prepared: PreparedRequest): Promise<WireResult> {
    // The scheduling thread is gone: the request is handed on (the main thread refuses it).
    if (this.#failed()) return Promise.resolve({ t: "retired" });
    // The next ref is taken only once the request is on its way: one that fails to go
    // leaves no gap, which would hold back every later request of this channel (batch-order.ts).
    const ref = (this.#nextRef + 1) >>> 0;
    const request: WireRequest = {
      ref,
      entry,
      batchSize: prepared.batchSize,
      priority: prepared.control.priority,
      timeoutUs: prepared.control.timeoutUs,
      id: prepared.request.id ?? "",
      inputs: prepared.inputs,
      outputNames: prepared.outputNames,
    };
    const sequence = sequenceOf(prepared);
    if (sequence) request.sequence = sequence;
    return new Promise<WireResult>((resolve) => {
      const signal = prepared.request.signal;
      const onAbort = () => this.#post({ t: "cancel", ref });
      signal?.addEventListener("abort", onAbort, { once: true });
      const forget = () => signal?.removeEventListener("abort", onAbort);
      this.#pending.set(ref, { resolve, forget });
      const slot = this.#free.pop();
      try {
        if (slot !== undefined && this.#channel.writeRequest(slot, request)) {
          this.#nextRef = ref;
          this.#slotRef[slot] = ref;
          this.#channel.submit(slot);
          this.#wait();
          return;
        }
        if (slot !== undefined) this.#free.push(slot);
        // Too large for a slot (or none free): a message, its tensors copied into buffers of their own and moved.
        const inputs = request.inputs.map((t) => ({ ...t, data: t.data.slice() }));
        this.#port.postMessage(
          { t: "submit", request: { ...request, inputs } } satisfies ToBatchPort,
          inputs.map((t) => t.data.buffer as ArrayBuffer),
        );
        this.#nextRef = ref;
      } catch (err) {
        // Not sent: nothing ran; the request fails here and the channel's order goes on without it.
        if (slot !== undefined && !this.#free.includes(slot)) this.#free.push(slot);
        this.#pending.delete(ref);
        forget();
        resolve({ t: "error", code: "INTERNAL", message: `the request could not be sent to the scheduling thread: ${(err as Error).message}` });
        return;
      }
      // Its answer comes as a message, but the ring is what says the thread failed.
      this.#wait();
    });
  }

  /** The scheduling thread is gone: every request waiting on it fails with `message`. */
  abandon(message: string): void {
    for (const ref of [...this.#pending.keys()]) this.#settle(ref, { t: "error", code: "INTERNAL", message });
  }

  #post(m: ToBatchPort): void {
    this.#port.postMessage(m);
  }

  /** Reads the completion ring until no request waits (in a slot or as a message), sleeping on it in between; a failed thread fails them all. */
  #wait(): void {
    if (this.#waiting) return;
    this.#waiting = true;
    whileRung(this.#channel.ctrl, DONE_TAIL, DONE_HEAD, () => {
      if (this.#failed()) {
        this.abandon("the scheduling thread failed");
        this.#waiting = false;
        return false;
      }
      for (const slot of this.#channel.takeCompleted()) {
        const result = this.#channel.readResult(slot);
        const ref = this.#slotRef[slot]!;
        this.#release(slot);
        this.#settle(ref, result);
      }
      if (this.#pending.size > 0) return true;
      this.#waiting = false;
      return false;
    });
  }

  #failed(): boolean {
    return Atomics.load(this.#channel.ctrl, FAILED) !== 0;
  }

  #release(slot: number): void {
    this.#free.push(slot);
  }

  #settle(ref: number, result: WireResult): void {
    const p = this.#pending.get(ref);
    if (!p) return;
    this.#pending.delete(ref);
    p.forget();
    p.resolve(result);
  }
}

/** The request's sequence parameters, for a sequence-batched version on the scheduling thread; undefined when it set none. */
function sequenceOf(prepared: PreparedRequest): WireSequence | undefined {
  const { sequenceId: id, sequenceStart: start, sequenceEnd: end } = prepared.control;
  return id === undefined && !start && !end ? undefined : { id, start, end };
}
