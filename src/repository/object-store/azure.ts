/**
 * @module Azure Blob Storage behind ObjectStore, with the maintained @azure/storage-blob.
 * as://account/container/path reaches https://<account>.blob.core.windows.net with the
 * account key (AZURE_STORAGE_KEY or the credential file), or anonymously without one.
 * AZURE_STORAGE_CONNECTION_STRING, when set and naming the same account (or none), is used
 * instead: it is how a custom endpoint such as Azurite (BlobEndpoint=...) is given; one
 * with a BlobEndpoint and no key or SAS of its own is signed with the account key above.
 * Imported only when an as:// repository is given.
 */
import { AnonymousCredential, BlobServiceClient, StorageSharedKeyCredential } from "@azure/storage-blob";
import { ListingGuard, objectSize, type ListLimits, type ObjectStore, type StoredObject } from "./store.ts";
import type { AzureCredential, Env } from "./credentials.ts";

/** A connection string's settings, by lower-cased name. */
function settings(cs: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of cs.split(";")) {
    const at = part.indexOf("=");
    if (at > 0) out.set(part.slice(0, at).trim().toLowerCase(), part.slice(at + 1).trim());
  }
  return out;
}

export function azureService(account: string, cred: AzureCredential, env: Env): BlobServiceClient {
  const options = { retryOptions: { maxTries: 2, tryTimeoutInMs: 60_000 } };
  const key = () => (cred.key ? new StorageSharedKeyCredential(account, cred.key) : new AnonymousCredential());
  const cs = env.AZURE_STORAGE_CONNECTION_STRING;
  const s = cs ? settings(cs) : undefined;
  if (cs && s && (s.get("accountname") || account) === account) {
    if (s.has("accountkey") || s.has("sharedaccesssignature")) return BlobServiceClient.fromConnectionString(cs, options);
    const endpoint = s.get("blobendpoint");
    if (endpoint) return new BlobServiceClient(endpoint, key(), options);
  }
  return new BlobServiceClient(`https://${account}.blob.core.windows.net`, key(), options);
}

export function azureStore(account: string, container: string, cred: AzureCredential, env: Env, limits?: ListLimits): ObjectStore {
  const client = azureService(account, cred, env).getContainerClient(container);
  return {
    async list(prefix) {
      const out: StoredObject[] = [];
      const guard = new ListingGuard(limits);
      for await (const page of client.listBlobsFlat({ prefix: prefix || undefined }).byPage()) {
        const blobs = page.segment.blobItems;
        guard.page(blobs.length, !!page.continuationToken, page.continuationToken);
        for (const blob of blobs)
          out.push({ key: blob.name, size: objectSize(blob.properties.contentLength ?? 0, blob.name), etag: blob.properties.etag ?? "" });
      }
      return out;
    },
    async read(key) {
      const res = await client.getBlobClient(key).download();
      if (!res.readableStreamBody) throw new Error(`Azure blob '${key}' has no body`);
      return res.readableStreamBody as unknown as AsyncIterable<Uint8Array>;
    },
  };
}
