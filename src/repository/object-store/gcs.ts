/**
 * @module Google Cloud Storage behind ObjectStore, with the maintained
 * @google-cloud/storage. Credentials: GOOGLE_APPLICATION_CREDENTIALS or the credential
 * file's key file, else the client's application default credentials. The client itself
 * honours STORAGE_EMULATOR_HOST, an emulator's JSON API base URL
 * (http://host:port/storage/v1), without authentication; `apiEndpoint` (http://host:port)
 * does the same for tests. Not verified against GCS itself (see the README). Imported only
 * when a gs:// repository is given.
 */
import { Storage } from "@google-cloud/storage";
import { ListingGuard, type ListLimits, type ObjectStore, type StoredObject } from "./store.ts";
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
      // Page by page (not autoPaginate, which collects without end): each page goes through the guard.
      const out: StoredObject[] = [];
      const guard = new ListingGuard(limits);
      let pageToken: string | undefined;
      do {
        const [files, next] = await bucket.getFiles({ prefix: prefix || undefined, autoPaginate: false, ...(pageToken ? { pageToken } : {}) });
        const token = (next as { pageToken?: string } | null | undefined)?.pageToken;
        guard.page(files.length, !!token, token);
        for (const f of files) out.push({ key: f.name, size: Number(f.metadata.size ?? 0), etag: String(f.metadata.etag ?? f.metadata.md5Hash ?? "") });
        pageToken = token;
      } while (pageToken);
      return out;
    },
    async read(key) {
      return bucket.file(key).createReadStream();
    },
  };
}
