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

const LIVE = 0;
const READY = 1;
const EXITING = 2;

/** The three flags as Int32s in one SharedArrayBuffer: written by the main thread, read anywhere. */
export class SharedHealth {
  readonly buffer: SharedArrayBuffer;
  readonly #flags: Int32Array;

  /** Over `buffer` (another thread's SharedHealth), or new: live, not ready, not exiting. */
  constructor(buffer?: SharedArrayBuffer) {
    this.buffer = buffer ?? new SharedArrayBuffer(3 * Int32Array.BYTES_PER_ELEMENT);
    this.#flags = new Int32Array(this.buffer);
    if (!buffer) Atomics.store(this.#flags, LIVE, 1);
  }

  write(h: Health): void {
    Atomics.store(this.#flags, LIVE, h.live ? 1 : 0);
    Atomics.store(this.#flags, READY, h.ready ? 1 : 0);
    Atomics.store(this.#flags, EXITING, h.exiting ? 1 : 0);
  }

  read(): Health {
    return {
      live: Atomics.load(this.#flags, LIVE) === 1,
      ready: Atomics.load(this.#flags, READY) === 1,
      exiting: Atomics.load(this.#flags, EXITING) === 1,
    };
  }
}
