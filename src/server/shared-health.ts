/**
 * @module The server's health (live, ready, exiting) in shared memory, so that a frontend
 * worker thread answers a health probe itself, as Triton's HTTP and gRPC threads ask the
 * core directly (#30). The main thread writes it whenever it may change (the server's
 * state, and, while some thread reads it, every model version's state and the repository's
 * served versions); a probe is then answered while the main thread is busy, and the first
 * ready probe after the load does not wait behind the listeners' start.
 */

export interface Health {
  live: boolean;
  ready: boolean;
  /** Shutdown began: probes answer "Server exiting" (503 over HTTP). */
  exiting: boolean;
}

const LIVE = 1;
const READY = 2;
const EXITING = 4;

/**
 * The three flags as bits of one Int32 in a SharedArrayBuffer: written by the main thread
 * in one store, so that a reader never sees half of a change; read anywhere.
 */
export class SharedHealth {
  readonly buffer: SharedArrayBuffer;
  readonly #flags: Int32Array;

  /** Over `buffer` (another thread's SharedHealth), or new: live, not ready, not exiting. */
  constructor(buffer?: SharedArrayBuffer) {
    this.buffer = buffer ?? new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT);
    this.#flags = new Int32Array(this.buffer);
    if (!buffer) Atomics.store(this.#flags, 0, LIVE);
  }

  write(h: Health): void {
    Atomics.store(this.#flags, 0, (h.live ? LIVE : 0) | (h.ready ? READY : 0) | (h.exiting ? EXITING : 0));
  }

  read(): Health {
    const f = Atomics.load(this.#flags, 0);
    return { live: (f & LIVE) !== 0, ready: (f & READY) !== 0, exiting: (f & EXITING) !== 0 };
  }
}
