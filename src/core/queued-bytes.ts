/**
 * @module The bytes held by client requests not yet answered, bounded by
 * `--max-queued-bytes` (#14 item 9): one count in shared memory, so the main thread and
 * the frontend worker threads that answer requests themselves (#30) hold one bound.
 */
import { ServerError } from "./errors.ts";
import { logPrefix, type InferenceRequest } from "./request.ts";

/** A request refused for the bound: as a full queue is refused (503 / UNAVAILABLE), counted REJECTED. */
export const queueFull = (requestId?: string) => new ServerError("UNAVAILABLE", `${logPrefix(requestId)}Exceeds maximum queue size`, { reason: "REJECTED" });

/** The count's shared memory and bound, as posted to a worker (structured-clonable; the memory is shared, not copied). */
export interface SharedQueuedBytes {
  buffer: SharedArrayBuffer;
  limit: number;
}

export class QueuedBytes {
  /** The bound (0: none). */
  readonly limit: number;
  /** The count in shared memory, once another thread holds it too (share(), of()). */
  #cell: BigInt64Array | undefined;
  /** The count while this thread alone holds it: a plain number, no BigInt per request. */
  #local = 0;

  /** A new count bounded by `limit`, or, given `shared`, a view of another thread's. */
  constructor(limit: number, shared?: SharedArrayBuffer) {
    this.limit = limit;
    if (shared) this.#cell = new BigInt64Array(shared);
  }

  static of(shared: SharedQueuedBytes): QueuedBytes {
    return new QueuedBytes(shared.limit, shared.buffer);
  }

  /** What a worker needs to hold the same count; from here on this thread counts in shared memory too. */
  share(): SharedQueuedBytes {
    if (!this.#cell) {
      this.#cell = new BigInt64Array(new SharedArrayBuffer(8));
      this.#cell[0] = BigInt(this.#local);
    }
    return { buffer: this.#cell.buffer as SharedArrayBuffer, limit: this.limit };
  }

  /** Bytes held now, by every thread. */
  get held(): number {
    return this.#cell ? Number(Atomics.load(this.#cell, 0)) : this.#local;
  }

  /**
   * Whether `bytes` more would pass the bound. Something larger than the whole bound still
   * fits when nothing else is held.
   */
  wouldPass(bytes: number): boolean {
    const held = this.held;
    return this.limit > 0 && held > 0 && held + bytes > this.limit;
  }

  /** Counts `bytes` unless that would pass the bound (decided and counted at once, whatever the other threads do); returns whether it counted them. */
  admit(bytes: number): boolean {
    const cell = this.#cell;
    if (!cell) {
      if (this.wouldPass(bytes)) return false;
      this.#local += bytes;
      return true;
    }
    const n = BigInt(bytes);
    for (;;) {
      const held = Atomics.load(cell, 0);
      if (this.limit > 0 && held > 0n && held + n > BigInt(this.limit)) return false;
      if (Atomics.compareExchange(cell, 0, held, held + n) === held) return true;
    }
  }

  /**
   * Counts a client request's input bytes, or refuses it past the bound (queueFull), so that
   * memory held by requests not yet answered stays bounded. Returns the bytes to give back.
   */
  admitRequest(request: Pick<InferenceRequest, "id" | "inputs">): number {
    let bytes = 0;
    for (const input of request.inputs) bytes += input.data.byteLength;
    if (!this.admit(bytes)) throw queueFull(request.id);
    return bytes;
  }

  /** Counts `bytes` whatever the bound (a negative count gives bytes back). */
  add(bytes: number): void {
    if (bytes === 0) return;
    if (this.#cell) Atomics.add(this.#cell, 0, BigInt(bytes));
    else this.#local += bytes;
  }
}
