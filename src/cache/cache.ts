/**
 * @module The ResponseCache seam: Triton's `local` cache (response-cache.ts) and its
 * `redis` cache (redis-cache.ts) behind one interface. The server computes the key
 * (cache-key.ts) and calls lookup before scheduling and insert after a miss.
 */
import type { Tensor } from "../core/tensor.ts";

export interface ResponseCache {
  /**
   * The outputs stored under `key`, or undefined for a miss. A remote cache answers
   * later, and answers a miss (never an error) when it is slow or unreachable, so the
   * request runs its model instead. `outputNames`: the outputs the request needs; a cache
   * whose entries can come from elsewhere (redis) answers a miss for an entry without them.
   */
  lookup(key: string, outputNames?: readonly string[]): Tensor[] | undefined | Promise<Tensor[] | undefined>;
  /** Stores `outputs` (copies, or their bytes) under `key`; a remote cache finishes later and never throws. */
  insert(key: string, outputs: readonly Tensor[]): void;
  /** A remote cache's link, with which another thread (a frontend worker) connects to the same store. */
  readonly link?: RemoteCacheLink;
  /** Releases connections; the local cache has none. */
  close?(): Promise<void>;
}

/** What another thread needs to reach the same remote cache (structured-clonable). */
export interface RemoteCacheLink {
  settings: Readonly<Record<string, string>>;
  /** Int32: set by the first thread that warns of an invalid entry (the others log theirs at verbose level 1). */
  warned: SharedArrayBuffer;
}
