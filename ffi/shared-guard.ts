/**
 * @module A native handle's guard across the threads of the process (#30): the owner
 * shares it (its buffer goes with the handle's address), a borrower enters it before each
 * use of the handle and leaves it after, and the owner's retire() lets no borrower in from
 * then on and says when the last one inside has left, so that the owner frees the handle
 * only then. The uses are short (one run each), so the wait is polled. ONNX Runtime's
 * sessions and OpenVINO's compiled models are shared this way.
 */

/** Int32 slots: borrowers' uses in flight, and 1 once the owner has retired the handle. */
const IN_FLIGHT = 0;
const RETIRED = 1;
/** How often retire() looks again while borrowers are inside. */
const POLL_MS = 1;

export class SharedGuard {
  readonly #slots: Int32Array;
  #waiting = false;

  /** A new guard (the owner's), or another thread's, from the buffer it shared. */
  constructor(buffer?: SharedArrayBuffer) {
    this.#slots = new Int32Array(buffer ?? new SharedArrayBuffer(8));
  }

  /** What another thread makes its SharedGuard from. */
  get buffer(): SharedArrayBuffer {
    return this.#slots.buffer as SharedArrayBuffer;
  }

  /** A use begins: false (nothing entered) once the owner has retired the handle. */
  enter(): boolean {
    Atomics.add(this.#slots, IN_FLIGHT, 1);
    if (Atomics.load(this.#slots, RETIRED) === 0) return true;
    Atomics.sub(this.#slots, IN_FLIGHT, 1);
    return false;
  }

  /** A use that entered has ended. */
  leave(): void {
    Atomics.sub(this.#slots, IN_FLIGHT, 1);
  }

  /**
   * The owner's: no borrower enters from now on, and `idle` is called once none is inside
   * (at once when none is). While an earlier call still waits, a later one adds nothing:
   * the earlier one's `idle` follows.
   */
  retire(idle: () => void): void {
    Atomics.store(this.#slots, RETIRED, 1);
    if (this.#waiting) return;
    if (Atomics.load(this.#slots, IN_FLIGHT) === 0) {
      idle();
      return;
    }
    this.#waiting = true;
    const poll = () => {
      if (Atomics.load(this.#slots, IN_FLIGHT) > 0) {
        setTimeout(poll, POLL_MS);
        return;
      }
      this.#waiting = false;
      idle();
    };
    setTimeout(poll, POLL_MS);
  }
}
