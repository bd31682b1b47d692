/**
 * @module The time source of the schedulers: the monotonic clock and one-shot timers.
 * Tests pass a manual clock so that batching and timeout decisions are deterministic.
 */
import { nowNs } from "../core/clock.ts";

export interface SchedulerClock {
  now(): number;
  /** Calls `fn` once, about `ns` from now; returns a cancel function. */
  after(ns: number, fn: () => void): () => void;
}

export const systemClock: SchedulerClock = {
  now: nowNs,
  after(ns, fn) {
    const t = setTimeout(fn, Math.max(0, ns / 1e6));
    return () => clearTimeout(t);
  },
};

/**
 * A scheduler's single wake-up: `set(at)` (absolute ns, 0 for none) replaces whatever
 * was armed unless it is the same instant; `fn` runs once when it fires.
 */
export class WakeTimer {
  readonly #clock: SchedulerClock;
  readonly #fn: () => void;
  #at = 0;
  #cancel: (() => void) | undefined;

  constructor(clock: SchedulerClock, fn: () => void) {
    this.#clock = clock;
    this.#fn = fn;
  }

  set(at: number, now: number): void {
    if (at === this.#at) return;
    this.cancel();
    this.#at = at;
    if (at === 0) return;
    this.#cancel = this.#clock.after(Math.max(0, at - now), () => {
      this.#cancel = undefined;
      this.#at = 0;
      this.#fn();
    });
  }

  cancel(): void {
    this.#cancel?.();
    this.#cancel = undefined;
    this.#at = 0;
  }
}
