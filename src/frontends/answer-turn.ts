/**
 * @module Answers ready in one turn of this thread's event loop (#30 item 5), over HTTP and
 * from a gRPC worker's own runs: the first goes
 * out at once, the others when the turn ends (setImmediate), so that a thread with many
 * connections reads every request that is ready before it writes their answers, and sleeps
 * in the kernel less often. Measured on 2 cores with wrk on the same cores (JSON `simple`;
 * scripts/results/every-core.md and compare.md, 2026-11-28): through 2 worker threads at c=64,
 * 18.3k against 12-13k req/s and 91 against 124-137 µs of CPU per request; on one thread
 * pinned beside wrk at c=16, 96 against 109 µs per request. At c=1, where a turn has one
 * answer, nothing waits.
 */
let answeredThisTurn = 0;
const newTurn = () => {
  answeredThisTurn = 0;
};

/** Undefined for the turn's first answer (send it now); else a promise that resolves when the turn ends. */
export function turnEnd(): Promise<void> | undefined {
  if (answeredThisTurn++ === 0) {
    setImmediate(newTurn);
    return undefined;
  }
  return new Promise((resolve) => setImmediate(resolve));
}
