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
