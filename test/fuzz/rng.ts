/**
 * A seeded PRNG (sfc32) for the fuzzers: the same seed gives the same cases on every
 * machine, and `Rng.forCase(seed, target, i)` gives case i its own stream, so a finding
 * is reproduced from (seed, target, case) without replaying the cases before it.
 */
export class Rng {
  #a: number;
  #b: number;
  #c: number;
  #d: number;

  constructor(seed: number) {
    this.#a = 0x9e3779b9;
    this.#b = 0x243f6a88;
    this.#c = 0xb7e15162;
    this.#d = seed >>> 0;
    for (let i = 0; i < 15; i++) this.u32();
  }

  /** The stream of case `index` of `target` in a run with `seed`. */
  static forCase(seed: number, target: string, index: number): Rng {
    let h = 2166136261 ^ (seed >>> 0);
    for (const ch of `${target}#${index}`) h = Math.imul(h ^ ch.charCodeAt(0), 16777619);
    const r = new Rng(h);
    r.#c ^= seed;
    return r;
  }

  u32(): number {
    const t = (((this.#a + this.#b) | 0) + this.#d) | 0;
    this.#d = (this.#d + 1) | 0;
    this.#a = this.#b ^ (this.#b >>> 9);
    this.#b = (this.#c + (this.#c << 3)) | 0;
    this.#c = (this.#c << 21) | (this.#c >>> 11);
    this.#c = (this.#c + t) | 0;
    return t >>> 0;
  }

  /** [0, 1) */
  next(): number {
    return this.u32() / 2 ** 32;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** An integer in [lo, hi]. */
  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }

  /** Picks by weight: `[[3, a], [1, b]]` gives a three times as often as b. */
  weighted<T>(choices: readonly (readonly [number, T])[]): T {
    let total = 0;
    for (const [w] of choices) total += w;
    let x = this.next() * total;
    for (const [w, v] of choices) if ((x -= w) < 0) return v;
    return choices[choices.length - 1]![1];
  }

  /** A small count, mostly 0..3, sometimes up to `max`. */
  count(max = 8): number {
    return this.chance(0.85) ? this.int(4) : this.int(max + 1);
  }

  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = this.u32() & 0xff;
    return out;
  }
}
