/**
 * @module The one thing Nereid asks of an object store (S3, Azure Blob, GCS): list the
 * objects under a prefix with their size and ETag, and read one object. Each service's
 * client sits behind this interface in a module of its own (s3.ts, azure.ts, gcs.ts);
 * remote-repository.ts copies a repository into a local folder through it. Each listing
 * goes through a ListingGuard, so that it is bounded in pages and objects.
 */
import { createHash } from "node:crypto";

/** One object as a listing shows it. */
export interface StoredObject {
  /** The full key (bucket-relative). */
  key: string;
  size: number;
  /** The store's entity tag; changes whenever the content does. */
  etag: string;
}

export interface ObjectStore {
  /** Every object whose key starts with `prefix` ("" for the whole bucket), any order. */
  list(prefix: string): Promise<StoredObject[]>;
  /** One object's bytes, as chunks. */
  read(key: string): Promise<AsyncIterable<Uint8Array>>;
}

/**
 * Bounds on one listing (issue #29 item 8). A model repository holds a few files per model
 * version; a store that says "truncated" forever (a broken or hostile server, a wrong prefix
 * over a huge bucket) must fail the sync, not grow the server's memory without end.
 */
export interface ListLimits {
  /** Pages one listing may take. */
  maxPages: number;
  /** Objects one listing may hold. */
  maxObjects: number;
}

export const LIST_LIMITS: Readonly<ListLimits> = { maxPages: 1000, maxObjects: 100_000 };

/** Counts a listing's pages and objects and remembers its continuation tokens; throws past a limit. */
export class ListingGuard {
  readonly #limits: Readonly<ListLimits>;
  readonly #tokens = new Set<string>();
  #pages = 0;
  #objects = 0;

  constructor(limits: Readonly<ListLimits> = LIST_LIMITS) {
    this.#limits = limits;
  }

  /**
   * Takes one page of `objects` objects, before they are kept. `truncated`: the store says
   * more follow; `next`: its continuation token. Throws when the listing holds too many
   * objects, takes too many pages, repeats a token, or says it goes on without a token (a
   * partial listing would make the sync remove files whose objects exist).
   */
  page(objects: number, truncated: boolean, next: string | undefined): void {
    this.#pages++;
    this.#objects += objects;
    const { maxPages, maxObjects } = this.#limits;
    if (this.#objects > maxObjects) throw new Error(`the listing holds more than ${maxObjects} objects, Nereid's limit for a model repository`);
    if (!truncated) return;
    if (!next) throw new Error("the store says the listing goes on but gives no continuation token");
    if (this.#pages >= maxPages) throw new Error(`the listing goes on past ${maxPages} pages, Nereid's limit for a model repository`);
    // Tokens are kept as digests: a store could send long ones.
    const digest = createHash("sha256").update(next).digest("base64");
    if (this.#tokens.has(digest)) throw new Error(`the store sent the same continuation token twice (after ${this.#pages} pages): its listing never ends`);
    this.#tokens.add(digest);
  }
}

/** An object's size as a listing gives it (a number or a decimal string), checked: a non-negative safe integer. */
export function objectSize(size: unknown, key: string): number {
  const n = typeof size === "string" && /^\d+$/.test(size) ? Number(size) : size;
  if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 0)
    throw new Error(`malformed listing page from the store: object ${JSON.stringify(key.slice(0, 200))} has size ${JSON.stringify(String(size).slice(0, 40))}`);
  return n;
}
