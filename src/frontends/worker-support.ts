/**
 * @module Whether the frontends can run on worker threads here: a module of its own, small,
 * for the CLI's start (startup/early-workers.ts) as well as the frontends.
 */
declare const Bun: unknown;

/** Whether this runtime can run a frontend on worker threads (Bun: Web Workers, and sockets bound with SO_REUSEPORT). */
export function frontendWorkersSupported(): boolean {
  return typeof Bun !== "undefined" && typeof Worker === "function";
}
