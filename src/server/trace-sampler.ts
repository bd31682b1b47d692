/**
 * @module The trace extension's sampling counters as every thread shares them (#30): the
 * main thread's TraceManager owns one Int32 counter per owner of settings in a
 * SharedArrayBuffer; a frontend worker that runs a traced model's request counts it in
 * the same counter, and leaves the ones the rate chooses to the main thread, which traces
 * them (InferenceRequest.traceSampled).
 */

/** Counters in the shared memory (owners past this keep theirs on the main thread, with their models). */
export const SAMPLER_SLOTS = 4096;

/** Where a worker counts a traced model's requests, and the rate in force when the table was made. */
export interface TraceSampling {
  slot: number;
  rate: number;
}

/** Counts one request in `slot` and says whether the rate chooses it: Triton's `++sample % rate == 0` (the Nth, 2Nth, ...). */
export function countSample(counters: Int32Array, slot: number, rate: number): boolean {
  return ((Atomics.add(counters, slot, 1) + 1) >>> 0) % rate === 0;
}
