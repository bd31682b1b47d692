/**
 * @module Atomics.waitAsync, typed as both runtimes have it (TypeScript's lib for this
 * project's target does not declare it): waits without blocking the event loop until
 * `a[index]` is notified, or at once when it no longer holds `value`.
 */
export type WaitAsyncResult = { async: false; value: "not-equal" | "timed-out" } | { async: true; value: Promise<"ok" | "timed-out"> };

export const waitAsync = (Atomics as unknown as { waitAsync: (a: Int32Array, index: number, value: number) => WaitAsyncResult }).waitAsync;
