/**
 * @module Triton's `local` response cache: one byte-bounded LRU shared by every model
 * that enables `response_cache`. Entries own copies of their output bytes, so the
 * bound is what the cache really holds. The key (cache-key.ts) is computed by the
 * caller; an entry larger than the whole cache is not stored.
 */
import type { Tensor } from "../core/tensor.ts";

/** Bytes charged per entry and per tensor on top of the data, for keys, names and shapes. */
const ENTRY_OVERHEAD = 64;
const TENSOR_OVERHEAD = 64;

interface Entry {
  outputs: Tensor[];
  bytes: number;
}

export interface CacheCounters {
  entries: number;
  bytes: number;
  lookups: number;
  hits: number;
  misses: number;
  evictions: number;
}

export class LocalResponseCache {
  readonly capacity: number;
  /** Map iteration order is insertion order: the first key is the least recently used. */
  readonly #entries = new Map<string, Entry>();
  #bytes = 0;
  #lookups = 0;
  #hits = 0;
  #misses = 0;
  #evictions = 0;

  constructor(capacityBytes: number) {
    this.capacity = capacityBytes;
  }

  lookup(key: string): Tensor[] | undefined {
    this.#lookups++;
    const e = this.#entries.get(key);
    if (!e) {
      this.#misses++;
      return undefined;
    }
    this.#hits++;
    this.#entries.delete(key);
    this.#entries.set(key, e);
    return e.outputs;
  }

  /** Stores copies of `outputs` under `key`, evicting least recently used entries; false if it cannot fit. */
  insert(key: string, outputs: readonly Tensor[]): boolean {
    if (this.#entries.has(key)) return true;
    let bytes = ENTRY_OVERHEAD + key.length;
    for (const t of outputs) bytes += TENSOR_OVERHEAD + t.name.length + t.data.byteLength;
    if (bytes > this.capacity) return false;
    while (this.#bytes + bytes > this.capacity) {
      const [oldest, e] = this.#entries.entries().next().value as [string, Entry];
      this.#entries.delete(oldest);
      this.#bytes -= e.bytes;
      this.#evictions++;
    }
    const copies = outputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: [...t.shape], data: t.data.slice() }));
    this.#entries.set(key, { outputs: copies, bytes });
    this.#bytes += bytes;
    return true;
  }

  counters(): CacheCounters {
    return {
      entries: this.#entries.size,
      bytes: this.#bytes,
      lookups: this.#lookups,
      hits: this.#hits,
      misses: this.#misses,
      evictions: this.#evictions,
    };
  }
}
