/**
 * @module Google Cloud Storage behind ObjectStore, with the maintained
 * @google-cloud/storage. Credentials: GOOGLE_APPLICATION_CREDENTIALS or the credential
 * file's key file, else the client's application default credentials. The client itself
 * honours STORAGE_EMULATOR_HOST, an emulator's JSON API base URL
 * (http://host:port/storage/v1), without authentication; `apiEndpoint` (http://host:port)
 * does the same for tests. Not verified against GCS itself (see docs/models/repository.md). Imported only
 * when a gs:// repository is given.
 */
import { Storage } from "@google-cloud/storage";
import { ListingGuard, objectSize, type ListLimits, type ObjectStore, type StoredObject } from "./store.ts";
import type { GcsCredential } from "./credentials.ts";

export function gcsStore(bucketName: string, cred: GcsCredential, apiEndpoint?: string, limits?: ListLimits): ObjectStore {
  const storage = new Storage({
    ...(cred.keyFile ? { keyFilename: cred.keyFile } : {}),
    ...(apiEndpoint ? { apiEndpoint, useAuthWithCustomEndpoint: false } : {}),
    retryOptions: { maxRetries: 1, totalTimeout: 60 },
  });
  const bucket = storage.bucket(bucketName);
  return {
    async list(prefix) {
      // Page by page through the JSON API's list call, read here: getFiles() maps the page in a
      // callback, where a malformed page (items not an array, an item without a name) throws
      // out of reach of any caller, and autoPaginate collects without end.
      const out: StoredObject[] = [];
      const guard = new ListingGuard(limits);
      let pageToken: string | undefined;
      do {
        const qs = { ...(prefix ? { prefix } : {}), ...(pageToken ? { pageToken } : {}) };
        const page = await new Promise<unknown>((resolve, reject) => bucket.request({ uri: "/o", qs }, (err, body) => (err ? reject(err) : resolve(body))));
        const { items, next } = listPage(page);
        guard.page(items.length, next !== undefined, next);
        for (const item of items) out.push(item);
        pageToken = next;
      } while (pageToken);
      return out;
    },
    async read(key) {
      return bucket.file(key).createReadStream();
    },
  };
}

/** One page of the JSON API's objects list, checked: its objects, and the next page's token. */
function listPage(page: unknown): { items: StoredObject[]; next: string | undefined } {
  const body = (page && typeof page === "object" ? page : {}) as { items?: unknown; nextPageToken?: unknown };
  const raw = body.items ?? [];
  if (!Array.isArray(raw)) throw new Error("malformed listing page from the store: 'items' is not an array");
  if (body.nextPageToken !== undefined && typeof body.nextPageToken !== "string")
    throw new Error("malformed listing page from the store: 'nextPageToken' is not a string");
  const items = raw.map((item: unknown): StoredObject => {
    const o = (item && typeof item === "object" ? item : {}) as { name?: unknown; size?: unknown; etag?: unknown; md5Hash?: unknown };
    if (typeof o.name !== "string" || o.name === "") throw new Error("malformed listing page from the store: an object without a name");
    return { key: o.name, size: objectSize(o.size ?? 0, o.name), etag: String(o.etag ?? o.md5Hash ?? "") };
  });
  return { items, next: body.nextPageToken || undefined };
}
