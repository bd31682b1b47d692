/**
 * @module Triton's `local` response cache in one SharedArrayBuffer (#30): every thread
 * that answers requests (the main thread, each frontend worker) looks up and inserts in
 * the same byte-bounded LRU, so a model with `response_cache` runs in the frontend
 * workers as one cache, with one set of hits, misses and evictions.
 *
 * Layout: a head (the lock and the counters), a hash index (buckets of chained entries),
 * then the arena the entries live in. An entry is a 64-byte header (its size, whether it
 * is live, its key's hash, the next entry in its bucket, its neighbours in recency, its
 * key's length and its tensor count), its key (UTF-16), and each tensor: [name length,
 * datatype, rank, byte length], its dims, its name (UTF-16) and its bytes, each part
 * padded to 8 bytes. Links are byte offsets + 1 (0: none), so a zeroed buffer is empty.
 *
 * The cache's size bounds the bytes its live entries take, as laid out here. A new entry
 * goes at the arena's top; evicted ones leave holes, and when the top reaches the arena's
 * end (a quarter more than the size) the live entries slide down over the holes, in
 * order, their links rewritten: the order of recency never changes, so eviction is
 * exactly least recently used. A lookup copies the entry's bytes out, so what a caller
 * holds never changes under it.
 *
 * Every operation holds the lock, a futex-style mutex on an Int32 (Atomics.wait, which
 * every thread of the server may call). A thread that ended while it held the lock would
 * leave it held: a thread that has waited LOCK_WAIT_MS (5 s) for it, while no other thread
 * took it, marks the cache broken, and
 * from then on every thread answers a miss and stores nothing, so requests run their
 * models and nothing is answered from a cache half written.
 */
import { DATA_TYPES, type DataType, type Tensor } from "../core/tensor.ts";
import type { CacheCounters } from "./response-cache.ts";
import type { ResponseCache } from "./cache.ts";
import { getLogger } from "../core/logger.ts";

const log = getLogger("src/cache/shared-cache.ts");

// The head, as Int32 indices: the lock (0 free, 1 held, 2 held with waiters), and broken (1).
const LOCK = 0;
const BROKEN = 1;
// The head, as Float64 indices (after the two Int32s).
const USED = 1;
const TOP = 2;
const ENTRIES = 3;
const LOOKUPS = 4;
const HITS = 5;
const MISSES = 6;
const EVICTIONS = 7;
const OLDEST = 8;
const NEWEST = 9;
const BUCKETS = 10;
const ARENA = 11;
const ARENA_END = 12;
const CAPACITY = 13;
const LOCK_WAIT = 14;
/** A random number mixed into every key's hash, so that a client cannot choose inputs whose keys share a bucket. */
const SEED = 15;
/** How many times the lock was taken: a waiter's wait starts again whenever it grows (the holder is alive). */
const TAKEN = 16;
const HEAD_BYTES = 192;

// An entry's header, as Float64 offsets from its first.
const E_SIZE = 0;
/** 1 while the entry is live, 0 once evicted; while the arena is compacted, its new offset + 1. */
const E_LIVE = 1;
const E_HASH = 2;
const E_CHAIN = 3;
const E_OLDER = 4;
const E_NEWER = 5;
const E_KEY_LENGTH = 6;
const E_TENSORS = 7;
const ENTRY_HEADER = 64;
/** A tensor's header: name length, datatype index, rank, byte length. */
const TENSOR_HEADER = 32;

/** How long a thread waits for the lock before it takes its holder for gone and the cache for broken (by default). */
const LOCK_WAIT_MS = 5000;
/** The largest buffer made (JavaScriptCore's bound on a SharedArrayBuffer is 4 GiB). */
const MAX_BUFFER = 2 ** 32 - 2 ** 16;

const pad = (n: number) => Math.ceil(n / 8) * 8;

/** The bytes an entry of `key` and `outputs` takes in the arena (what the cache's size bounds). */
export function entryBytes(key: string, outputs: readonly Tensor[]): number {
  let bytes = ENTRY_HEADER + pad(2 * key.length);
  for (const t of outputs) bytes += TENSOR_HEADER + 8 * t.shape.length + pad(2 * t.name.length) + pad(t.data.byteLength);
  return bytes;
}

export class SharedResponseCache implements ResponseCache {
  readonly buffer: SharedArrayBuffer;
  readonly capacity: number;
  readonly #i32: Int32Array;
  readonly #f64: Float64Array;
  readonly #u8: Uint8Array;
  readonly #u16: Uint16Array;
  readonly #buckets: number;
  readonly #bucketsAt: number;
  readonly #lockWaitMs: number;
  readonly #seed: number;

  /**
   * A new cache of `capacityBytes`, or undefined when one buffer cannot hold it (the
   * caller keeps a cache of this thread's own then).
   */
  static create(capacityBytes: number, lockWaitMs = LOCK_WAIT_MS): SharedResponseCache | undefined {
    const buckets = bucketCount(capacityBytes);
    const arenaAt = HEAD_BYTES + 8 * buckets;
    const slack = Math.max(Math.ceil(capacityBytes / 4), 64 * 1024);
    const size = pad(arenaAt + capacityBytes + slack);
    // Less room past the size would mean closing up holes on nearly every insert, the lock held throughout.
    if (size > MAX_BUFFER) return undefined;
    let buffer: SharedArrayBuffer;
    try {
      // Pages are taken from the system only as entries reach them.
      buffer = new SharedArrayBuffer(size);
    } catch {
      return undefined;
    }
    const f = new Float64Array(buffer, 0, HEAD_BYTES / 8);
    f[TOP] = arenaAt;
    f[BUCKETS] = buckets;
    f[ARENA] = arenaAt;
    f[ARENA_END] = size;
    f[CAPACITY] = capacityBytes;
    f[LOCK_WAIT] = lockWaitMs;
    f[SEED] = Math.floor(Math.random() * 2 ** 32);
    return new SharedResponseCache(buffer);
  }

  /** The cache in `buffer`, as another thread made it (create's `buffer`). */
  constructor(buffer: SharedArrayBuffer) {
    this.buffer = buffer;
    this.#i32 = new Int32Array(buffer, 0, 2);
    this.#f64 = new Float64Array(buffer);
    this.#u8 = new Uint8Array(buffer);
    this.#u16 = new Uint16Array(buffer);
    this.#buckets = this.#f64[BUCKETS]!;
    this.#bucketsAt = HEAD_BYTES / 8;
    this.capacity = this.#f64[CAPACITY]!;
    this.#lockWaitMs = this.#f64[LOCK_WAIT]!;
    this.#seed = this.#f64[SEED]!;
  }

  /** Whether a thread gave up waiting for the lock (every operation answers a miss since). */
  get broken(): boolean {
    return Atomics.load(this.#i32, BROKEN) === 1;
  }

  lookup(key: string): Tensor[] | undefined {
    const hash = hashOf(key, this.#seed);
    if (!this.#lock()) return undefined;
    const f = this.#f64;
    try {
      f[LOOKUPS]! += 1;
      const e = this.#find(key, hash);
      if (e < 0) {
        f[MISSES]! += 1;
        return undefined;
      }
      f[HITS]! += 1;
      if (f[NEWEST] !== e + 1) {
        this.#unlink(e);
        this.#append(e);
      }
      return this.#read(e);
    } finally {
      this.#unlock();
    }
  }

  /** Stores copies of `outputs` under `key`, evicting least recently used entries; false if it cannot fit (or the cache is broken). */
  insert(key: string, outputs: readonly Tensor[]): boolean {
    const bytes = entryBytes(key, outputs);
    if (bytes > this.capacity) return false;
    const hash = hashOf(key, this.#seed);
    if (!this.#lock()) return false;
    const f = this.#f64;
    try {
      if (this.#find(key, hash) >= 0) return true;
      while (f[USED]! + bytes > this.capacity) this.#evict(f[OLDEST]! - 1);
      if (f[TOP]! + bytes > f[ARENA_END]!) this.#compact();
      const e = f[TOP]!;
      // Written before the top moves past it: should a tensor not be written (a throw), nothing is left behind.
      this.#write(e, bytes, key, hash, outputs);
      f[TOP] = e + bytes;
      const bucket = this.#bucketsAt + (hash & (this.#buckets - 1));
      f[e / 8 + E_CHAIN] = f[bucket]!;
      f[bucket] = e + 1;
      this.#append(e);
      f[USED]! += bytes;
      f[ENTRIES]! += 1;
      return true;
    } finally {
      this.#unlock();
    }
  }

  counters(): CacheCounters {
    const f = this.#f64;
    if (!this.#lock()) return { entries: 0, bytes: 0, lookups: 0, hits: 0, misses: 0, evictions: 0 };
    try {
      return { entries: f[ENTRIES]!, bytes: f[USED]!, lookups: f[LOOKUPS]!, hits: f[HITS]!, misses: f[MISSES]!, evictions: f[EVICTIONS]! };
    } finally {
      this.#unlock();
    }
  }

  /** The live entry under `key` (its offset), or -1. */
  #find(key: string, hash: number): number {
    const f = this.#f64;
    const u16 = this.#u16;
    for (let link = f[this.#bucketsAt + (hash & (this.#buckets - 1))]!; link !== 0; ) {
      const e = link - 1;
      const h = e / 8;
      link = f[h + E_CHAIN]!;
      if (f[h + E_HASH] !== hash || f[h + E_KEY_LENGTH] !== key.length) continue;
      const at = (e + ENTRY_HEADER) / 2;
      let k = 0;
      while (k < key.length && u16[at + k] === key.charCodeAt(k)) k++;
      if (k === key.length) return e;
    }
    return -1;
  }

  #write(e: number, bytes: number, key: string, hash: number, outputs: readonly Tensor[]): void {
    const f = this.#f64;
    const h = e / 8;
    f[h + E_SIZE] = bytes;
    f[h + E_LIVE] = 1;
    f[h + E_HASH] = hash;
    f[h + E_CHAIN] = 0;
    f[h + E_OLDER] = 0;
    f[h + E_NEWER] = 0;
    f[h + E_KEY_LENGTH] = key.length;
    f[h + E_TENSORS] = outputs.length;
    let at = e + ENTRY_HEADER;
    at = this.#writeString(at, key);
    for (const t of outputs) {
      const th = at / 8;
      f[th] = t.name.length;
      f[th + 1] = DATA_TYPES.indexOf(t.datatype);
      f[th + 2] = t.shape.length;
      f[th + 3] = t.data.byteLength;
      at += TENSOR_HEADER;
      for (const d of t.shape) {
        f[at / 8] = d;
        at += 8;
      }
      at = this.#writeString(at, t.name);
      this.#u8.set(t.data, at);
      at += pad(t.data.byteLength);
    }
  }

  #writeString(at: number, s: string): number {
    const u16 = this.#u16;
    const i = at / 2;
    for (let k = 0; k < s.length; k++) u16[i + k] = s.charCodeAt(k);
    return at + pad(2 * s.length);
  }

  /** Copies of the entry's tensors. */
  #read(e: number): Tensor[] {
    const f = this.#f64;
    const h = e / 8;
    let at = e + ENTRY_HEADER + pad(2 * f[h + E_KEY_LENGTH]!);
    const n = f[h + E_TENSORS]!;
    const outputs: Tensor[] = [];
    for (let k = 0; k < n; k++) {
      const th = at / 8;
      const [nameLength, type, rank, byteLength] = [f[th]!, f[th + 1]!, f[th + 2]!, f[th + 3]!];
      at += TENSOR_HEADER;
      const shape = Array.from(f.subarray(at / 8, at / 8 + rank));
      at += 8 * rank;
      const name = String.fromCharCode(...this.#u16.subarray(at / 2, at / 2 + nameLength));
      at += pad(2 * nameLength);
      // slice(): a copy in memory of this thread's own, not a view of the shared buffer.
      const data = this.#u8.slice(at, at + byteLength);
      at += pad(byteLength);
      outputs.push({ name, datatype: DATA_TYPES[type] as DataType, shape, data });
    }
    return outputs;
  }

  #evict(e: number): void {
    const f = this.#f64;
    const h = e / 8;
    this.#unlink(e);
    // Out of its bucket's chain.
    const bucket = this.#bucketsAt + (f[h + E_HASH]! & (this.#buckets - 1));
    if (f[bucket] === e + 1) f[bucket] = f[h + E_CHAIN]!;
    else {
      let prev = f[bucket]! - 1;
      while (f[prev / 8 + E_CHAIN] !== e + 1) prev = f[prev / 8 + E_CHAIN]! - 1;
      f[prev / 8 + E_CHAIN] = f[h + E_CHAIN]!;
    }
    f[h + E_LIVE] = 0;
    f[USED]! -= f[h + E_SIZE]!;
    f[ENTRIES]! -= 1;
    f[EVICTIONS]! += 1;
  }

  /**
   * Slides the live entries down over the holes, in arena order: first each one's new
   * offset (in E_LIVE), then every link rewritten to the new offsets, then the moves.
   */
  #compact(): void {
    const f = this.#f64;
    const top = f[TOP]!;
    let to = f[ARENA]!;
    for (let e = f[ARENA]!; e < top; e += f[e / 8 + E_SIZE]!) {
      if (f[e / 8 + E_LIVE] === 0) continue;
      f[e / 8 + E_LIVE] = to + 1;
      to += f[e / 8 + E_SIZE]!;
    }
    // A link names an entry by its old offset + 1, whose E_LIVE now holds its new offset + 1.
    const moved = (link: number) => (link === 0 ? 0 : f[(link - 1) / 8 + E_LIVE]!);
    for (let e = f[ARENA]!; e < top; e += f[e / 8 + E_SIZE]!) {
      const h = e / 8;
      if (f[h + E_LIVE] === 0) continue;
      f[h + E_CHAIN] = moved(f[h + E_CHAIN]!);
      f[h + E_OLDER] = moved(f[h + E_OLDER]!);
      f[h + E_NEWER] = moved(f[h + E_NEWER]!);
    }
    for (let b = this.#bucketsAt; b < this.#bucketsAt + this.#buckets; b++) f[b] = moved(f[b]!);
    f[OLDEST] = moved(f[OLDEST]!);
    f[NEWEST] = moved(f[NEWEST]!);
    for (let e = f[ARENA]!; e < top; ) {
      const size = f[e / 8 + E_SIZE]!;
      const live = f[e / 8 + E_LIVE]!;
      if (live !== 0) {
        const dest = live - 1;
        if (dest !== e) this.#u8.copyWithin(dest, e, e + size);
        f[dest / 8 + E_LIVE] = 1;
      }
      e += size;
    }
    f[TOP] = to;
  }

  #unlink(e: number): void {
    const f = this.#f64;
    const h = e / 8;
    const older = f[h + E_OLDER]!;
    const newer = f[h + E_NEWER]!;
    if (older) f[(older - 1) / 8 + E_NEWER] = newer;
    else f[OLDEST] = newer;
    if (newer) f[(newer - 1) / 8 + E_OLDER] = older;
    else f[NEWEST] = older;
    f[h + E_OLDER] = 0;
    f[h + E_NEWER] = 0;
  }

  #append(e: number): void {
    const f = this.#f64;
    const h = e / 8;
    const newest = f[NEWEST]!;
    f[h + E_OLDER] = newest;
    f[h + E_NEWER] = 0;
    if (newest) f[(newest - 1) / 8 + E_NEWER] = e + 1;
    else f[OLDEST] = e + 1;
    f[NEWEST] = e + 1;
  }

  /** Takes the lock; false when the cache is broken, or becomes so after LOCK_WAIT_MS. */
  #lock(): boolean {
    const i = this.#i32;
    if (Atomics.load(i, BROKEN) === 1) return false;
    let c = Atomics.compareExchange(i, LOCK, 0, 1);
    if (c === 0) return this.#taken();
    // The wait is for one holder: it starts again whenever another thread took the lock meanwhile.
    let taken = this.#f64[TAKEN];
    let deadline = performance.now() + this.#lockWaitMs;
    if (c !== 2) c = Atomics.exchange(i, LOCK, 2);
    while (c !== 0) {
      if (Atomics.load(i, BROKEN) === 1) return false;
      if (this.#f64[TAKEN] !== taken) {
        taken = this.#f64[TAKEN];
        deadline = performance.now() + this.#lockWaitMs;
      }
      const left = deadline - performance.now();
      if (left <= 0) {
        if (Atomics.compareExchange(i, BROKEN, 0, 1) === 0) {
          log.error(
            `the response cache's lock was not let go for ${this.#lockWaitMs} ms (its holder stopped): the cache is off from now on, and every request runs its model`,
          );
        }
        Atomics.notify(i, LOCK);
        return false;
      }
      Atomics.wait(i, LOCK, 2, Math.min(left, 100));
      c = Atomics.exchange(i, LOCK, 2);
    }
    return this.#taken();
  }

  #taken(): boolean {
    this.#f64[TAKEN]! += 1;
    return true;
  }

  #unlock(): void {
    const i = this.#i32;
    if (Atomics.sub(i, LOCK, 1) !== 1) {
      Atomics.store(i, LOCK, 0);
      Atomics.notify(i, LOCK, 1);
    }
  }
}

/** Buckets for a cache of `capacity` bytes: about one per 1 KiB, a power of two from 256 to 2^20. */
function bucketCount(capacity: number): number {
  let n = 256;
  while (n < 2 ** 20 && n * 1024 < capacity) n *= 2;
  return n;
}

/** FNV-1a over the key's UTF-16 code units, from the cache's seed. */
function hashOf(key: string, seed: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let k = 0; k < key.length; k++) {
    h ^= key.charCodeAt(k);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
