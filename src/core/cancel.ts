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

/**
 * A request's cancellation on a thread where only the schedulers listen to it (the
 * scheduling thread, #30): the part of AbortSignal they use (`aborted`, "abort"
 * listeners) without AbortController's native EventTarget, whose making, listening and
 * forgetting cost ~3 µs per request there. `signal` is what a request carries.
 */
export class LocalAbort {
  aborted = false;
  #listeners: (() => void)[] | undefined;

  addEventListener(_type: "abort", listener: () => void): void {
    (this.#listeners ??= []).push(listener);
  }

  removeEventListener(_type: "abort", listener: () => void): void {
    const i = this.#listeners?.indexOf(listener) ?? -1;
    if (i >= 0) this.#listeners!.splice(i, 1);
  }

  /** Aborts once: each listener is called once, in the order added; one that throws stops none of the others. */
  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const listeners = this.#listeners ?? [];
    this.#listeners = undefined;
    let failure: { err: unknown } | undefined;
    for (const listener of listeners) {
      try {
        listener();
      } catch (err) {
        failure ??= { err };
      }
    }
    if (failure) throw failure.err;
  }

  /** This, as a request's `signal` (the schedulers read no more of AbortSignal than the above). */
  get signal(): AbortSignal {
    return this as unknown as AbortSignal;
  }
}
