/**
 * @module Answers ready in one turn of a gRPC worker's event loop (#30 item 5): the first
 * goes out at once, the others when the turn ends (setImmediate), so that the worker reads
 * every request that is ready before it writes their answers, and sleeps in the kernel less
 * often. Measured on 2 cores with h2load on the same cores (`simple`, 2 gRPC workers, c=64;
 * scripts/results/every-core.md, 2026-11-28): 9.0k / 11.7k against 8.1k / 8.7k req/s. Not
 * for HTTP/1.1: Bun closes a connection that pipelines a request while the answer before
 * it is pending, so held HTTP answers lost pipelined requests (the HTTP figures in that
 * record were measured with it, and are not what the server does).
 */
let answeredThisTurn = 0;
/** Resolves when this turn ends: one for every answer held in it. */
let held: Promise<void> | undefined;
const newTurn = () => {
  answeredThisTurn = 0;
  held = undefined;
};

/** Undefined for the turn's first answer (send it now); else a promise that resolves when the turn ends. */
export function turnEnd(): Promise<void> | undefined {
  if (answeredThisTurn++ === 0) {
    setImmediate(newTurn);
    return undefined;
  }
  held ??= new Promise((resolve) => setImmediate(resolve));
  return held;
}
