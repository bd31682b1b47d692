/**
 * @module The one thing Nereid asks of an object store (S3, Azure Blob, GCS): list the
 * objects under a prefix with their size and ETag, and read one object. Each service's
 * client sits behind this interface in a module of its own (s3.ts, azure.ts, gcs.ts);
 * remote-repository.ts copies a repository into a local folder through it.
 */

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
