/**
 * @module perf_analyzer's sequence manager, for models with sequence_batching: each
 * slot (a concurrent worker, or one of --num-of-sequences in request-rate mode) runs one
 * sequence at a time of --sequence-length requests (varied by ±--sequence-length-variation
 * percent, at least 1). The first request of a sequence has sequence_start, the last
 * sequence_end; ids come from --sequence-id-range in turn, skipping an id another slot
 * still uses (the slot then keeps its previous id). When a setting ends, each sequence
 * left open gets one more request with sequence_end, so that none holds a slot in the
 * server's sequence batcher.
 */
import type { SequenceFlags } from "./client.ts";

export interface SequenceOptions {
  length: number;
  /** Percent. */
  variation: number;
  idStart: number;
  /** How many ids from idStart (ids wrap around within them). */
  idRange: number;
}

interface Slot {
  id: number;
  remaining: number;
}

export class Sequencer {
  readonly #o: SequenceOptions;
  readonly #random: () => number;
  #slots: Slot[] = [];
  #counter = 0;

  constructor(o: SequenceOptions, random: () => number = Math.random) {
    this.#o = o;
    this.#random = random;
  }

  /** Starts a setting with `n` slots, none of them in a sequence. */
  reset(n: number): void {
    this.#slots = Array.from({ length: n }, () => ({ id: 0, remaining: 0 }));
  }

  /** The flags of slot `i`'s next request. */
  next(i: number): SequenceFlags {
    const s = this.#slots[i]!;
    const start = s.remaining === 0;
    if (start) {
      s.id = this.#nextId(s.id);
      s.remaining = this.#length();
    }
    const end = s.remaining === 1;
    s.remaining--;
    return { id: s.id, start, end };
  }

  /** The closing request of slot `i`'s open sequence, or undefined when it has none. */
  finish(i: number): SequenceFlags | undefined {
    const s = this.#slots[i]!;
    if (s.remaining === 0) return undefined;
    s.remaining = 0;
    return { id: s.id, start: false, end: true };
  }

  #nextId(old: number): number {
    const id = (this.#counter++ % this.#o.idRange) + this.#o.idStart;
    return this.#slots.some((s) => s.id === id) ? old || id : id;
  }

  #length(): number {
    const offset = Math.trunc((2 * this.#random() - 1) * (this.#o.variation / 100) * this.#o.length);
    return Math.max(1, this.#o.length + offset);
  }
}
