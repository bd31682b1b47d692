/**
 * @module The requests a frontend worker thread has sent to an instance that another
 * thread or process runs (#30: typescript/direct.ts, python/direct.ts) and not had
 * answered yet: each counted in the instance's shared BUSY slot while held, failed as the
 * main thread fails its own when the instance's thread or process ends, and the
 * borrower's close waiting for the last of them.
 */
import { nowNs } from "../core/clock.ts";
import type { ServerError } from "../core/errors.ts";
import type { PreparedRun } from "./backend.ts";

export interface Held {
  resolve(r: PreparedRun | undefined): void;
  /** When the request was taken, and when it was sent. */
  t0: number;
  t1: number;
  /** Stops listening for the request's cancellation. */
  forget(): void;
}

export class HeldRequests<W extends Held> {
  readonly #held = new Map<number, W>();
  readonly #state: Int32Array;
  readonly #busy: number;
  readonly #drop: () => void;
  #closed = false;
  /** Told once a closed borrower holds nothing more (closing). */
  #done: (() => void) | undefined;

  /** `state[busy]` counts the held requests with every other thread's; `drop` lets the channel go once the borrower is closed and holds none. */
  constructor(state: Int32Array, busy: number, drop: () => void) {
    this.#state = state;
    this.#busy = busy;
    this.#drop = drop;
  }

  get size(): number {
    return this.#held.size;
  }

  get closed(): boolean {
    return this.#closed;
  }

  has(id: number): boolean {
    return this.#held.has(id);
  }

  /** The ids of the requests held now. */
  ids(): number[] {
    return [...this.#held.keys()];
  }

  /** Holds `w` as request `id`, counted busy. */
  hold(id: number, w: W): void {
    Atomics.add(this.#state, this.#busy, 1);
    this.#held.set(id, w);
  }

  /** Request `id`, no longer held (its answer came, or it goes back); undefined when it is not held. */
  take(id: number): W | undefined {
    const w = this.#held.get(id);
    if (!w) return undefined;
    this.#held.delete(id);
    w.forget();
    Atomics.sub(this.#state, this.#busy, 1);
    return w;
  }

  /** The requests `ids` (every one held, by default) fail with `error`, as the main thread fails them: an outcome, its execution counted. */
  fail(error: ServerError, ids: readonly number[] = this.ids()): void {
    for (const id of ids) {
      const w = this.take(id);
      if (!w) continue;
      w.resolve({ outcome: { error }, queueNs: 0, computeInputNs: w.t1 - w.t0, computeInferNs: nowNs() - w.t1, computeOutputNs: 0 });
    }
  }

  /** The version left the table: the channel goes once what is held is answered. */
  close(): void {
    this.#closed = true;
    this.closeIfDone();
  }

  /** After close(): whether requests are still held; `done` is told once none is (DirectRunner keeps the borrower for the owner's word until then). */
  closing(done: () => void): boolean {
    if (this.#held.size === 0) return false;
    this.#done = done;
    return true;
  }

  /** Lets the channel go once the borrower is closed and holds nothing. */
  closeIfDone(): void {
    if (!this.#closed || this.#held.size > 0) return;
    this.#drop();
    const done = this.#done;
    this.#done = undefined;
    done?.();
  }
}
