/**
 * @module The trace extension's sampling counters as every thread shares them (#30): the
 * main thread's TraceManager keeps one counter per owner of settings (the global ones, or
 * a model with settings of its own) in a SharedArrayBuffer of its own; a frontend worker
 * that runs a traced model's request counts it in the same counter, and leaves the ones the
 * rate chooses to the main thread, which traces them (InferenceRequest.traceSampled). New
 * settings get a new counter, as Triton makes a new TraceSetting: a worker whose table
 * still names the old one counts there, and a request it chooses is traced as chosen under
 * the settings it was counted by (Triton's in-flight traces keep their setting too).
 */

/** Int32 indices of a counter: requests counted since the last chosen one, and traces left (trace_count; -1: no limit). */
const SEEN = 0;
const LEFT = 1;
/** 16 Int32s: 64 bytes of its own for each counter, so that counting one model contends little with another's. */
const COUNTER_INTS = 16;

/** Where a worker counts a traced model's requests, and the rate of the settings that counter belongs to. */
export interface TraceSampling {
  counter: SharedArrayBuffer;
  rate: number;
}

/** A fresh counter: nothing counted, `count` traces left (-1: no limit). */
export function newCounter(count: number): Int32Array {
  const c = new Int32Array(new SharedArrayBuffer(COUNTER_INTS * 4));
  c[LEFT] = count;
  return c;
}

/** The traces `c` has left (-1: no limit). */
export const tracesLeft = (c: Int32Array): number => Atomics.load(c, LEFT);

/**
 * Counts one request in `c` and says whether it is traced, as Triton's
 * TraceSetting::SampleTrace decides under its lock: nothing is counted once trace_count has
 * run out; every `rate`-th request counted is chosen, and takes one of the traces left.
 */
export function chooseSample(c: Int32Array, rate: number): boolean {
  if (Atomics.load(c, LEFT) === 0) return false;
  // Counted modulo the rate (up to 2^32 - 1, as unsigned in the Int32): chosen when the count comes round to 0.
  let seen = Atomics.load(c, SEEN) >>> 0;
  for (;;) {
    const next = seen + 1 >= rate ? 0 : seen + 1;
    const was = Atomics.compareExchange(c, SEEN, seen | 0, next | 0) >>> 0;
    if (was === seen) {
      if (next !== 0) return false;
      break;
    }
    seen = was;
  }
  for (;;) {
    const left = Atomics.load(c, LEFT);
    if (left < 0) return true;
    if (left === 0) return false;
    if (Atomics.compareExchange(c, LEFT, left, left - 1) === left) return true;
  }
}
