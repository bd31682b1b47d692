/**
 * @module Triton's `local` response cache: one byte-bounded LRU shared by every model
 * that enables `response_cache`. Entries own copies of their output bytes, so the
 * bound is what the cache really holds. The key (cache-key.ts) is computed by the
 * caller; an entry larger than the whole cache is not stored.
 *
 * Recency is an intrusive doubly linked list, not Map re-insertion: Bun's Map pays
 * ~50 µs for a delete+set on a map of tens of thousands of keys, which a hit must not.
 */
import type { Tensor } from "../core/tensor.ts";
import type { ResponseCache } from "./cache.ts";

/** Bytes charged per entry and per tensor on top of the data, for keys, names and shapes. */
const ENTRY_OVERHEAD = 64;
const TENSOR_OVERHEAD = 64;

interface Entry {
  key: string;
  outputs: Tensor[];
  bytes: number;
  /** Toward the least recently used end. */
  older: Entry | undefined;
  /** Toward the most recently used end. */
  newer: Entry | undefined;
}

export interface CacheCounters {
  entries: number;
  bytes: number;
  lookups: number;
  hits: number;
  misses: number;
  evictions: number;
}

export class LocalResponseCache implements ResponseCache {
  readonly capacity: number;
  readonly #entries = new Map<string, Entry>();
  #oldest: Entry | undefined;
  #newest: Entry | undefined;
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
    if (e !== this.#newest) {
      this.#unlink(e);
      this.#append(e);
    }
    return e.outputs;
  }

  /** Stores copies of `outputs` under `key`, evicting least recently used entries; false if it cannot fit. */
  insert(key: string, outputs: readonly Tensor[]): boolean {
    if (this.#entries.has(key)) return true;
    let bytes = ENTRY_OVERHEAD + key.length;
    for (const t of outputs) bytes += TENSOR_OVERHEAD + t.name.length + t.data.byteLength;
    if (bytes > this.capacity) return false;
    while (this.#bytes + bytes > this.capacity) {
      const victim = this.#oldest!;
      this.#unlink(victim);
      this.#entries.delete(victim.key);
      this.#bytes -= victim.bytes;
      this.#evictions++;
    }
    const copies = outputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: [...t.shape], data: t.data.slice() }));
    const entry: Entry = { key, outputs: copies, bytes, older: undefined, newer: undefined };
    this.#entries.set(key, entry);
    this.#append(entry);
    this.#bytes += bytes;
    return true;
  }

  #unlink(e: Entry): void {
    if (e.older) e.older.newer = e.newer;
    else this.#oldest = e.newer;
    if (e.newer) e.newer.older = e.older;
    else this.#newest = e.older;
    e.older = e.newer = undefined;
  }

  #append(e: Entry): void {
    e.older = this.#newest;
    if (this.#newest) this.#newest.newer = e;
    else this.#oldest = e;
    this.#newest = e;
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
