/**
 * @module The order the scheduling thread takes a channel's requests in (#30 item 2):
 * the order their submitter made them. A submitter numbers its requests 1, 2, 3, ...
 * (their refs, batch-client.ts); most come on the ring, in that order, but one too
 * large for a slot comes as a message and may arrive after a later one on the ring.
 * A sequence's requests must reach its batcher in the order they were sent, as on one
 * thread (a START sent as a message before its next request on the ring), so a request
 * that arrives early is held back until those before it have arrived.
 */
export class InOrder<T> {
  #next: number;
  readonly #early = new Map<number, T>();
  readonly #take: (item: T) => void;

  /** `take` gets each item in ref order, from `first` (a submitter's first ref is 1). */
  constructor(take: (item: T) => void, first = 1) {
    this.#take = take;
    this.#next = first >>> 0;
  }

  /** Request `ref` arrived: taken now, with those held back behind it, when it is the next; held back otherwise. */
  arrive(ref: number, item: T): void {
    if (ref !== this.#next) {
      this.#early.set(ref, item);
      return;
    }
    // Each is counted taken before `take` runs, and one that throws stops none behind it:
    // the first error is thrown once every item that can go has gone.
    let failure: { err: unknown } | undefined;
    let next: T | undefined = item;
    while (next !== undefined) {
      this.#next = (this.#next + 1) >>> 0;
      try {
        this.#take(next);
      } catch (err) {
        failure ??= { err };
      }
      next = this.#early.get(this.#next);
      if (next !== undefined) this.#early.delete(this.#next);
    }
    if (failure) throw failure.err;
  }

  /** Whether request `ref` arrived and is held back. */
  held(ref: number): boolean {
    return this.#early.has(ref);
  }
}
