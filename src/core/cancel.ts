/**
 * @module How a scheduler hears that a queued request was cancelled (S-20): a listener on
 * the request's AbortSignal, removed once the request leaves the queue, so a request that
 * has started (or settled) holds nothing of the scheduler's.
 */

const NOTHING = () => {};

/**
 * Calls `cancel` once when `signal` aborts. Returns the function that stops listening;
 * call it when the request leaves the queue for any other reason.
 */
export function whenCancelled(signal: AbortSignal | undefined, cancel: () => void): () => void {
  if (!signal) return NOTHING;
  signal.addEventListener("abort", cancel, { once: true });
  return () => signal.removeEventListener("abort", cancel);
}
