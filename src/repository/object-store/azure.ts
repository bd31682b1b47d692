/**
 * @module Azure Blob Storage behind ObjectStore, with the maintained @azure/storage-blob.
 * as://account/container/path reaches https://<account>.blob.core.windows.net with the
 * account key (AZURE_STORAGE_KEY or the credential file), or anonymously without one.
 * AZURE_STORAGE_CONNECTION_STRING, when set and naming the same account (or none), is used
 * instead: it is how a custom endpoint such as Azurite (BlobEndpoint=...) is given.
 * Imported only when an as:// repository is given.
 */
import { AnonymousCredential, BlobServiceClient, StorageSharedKeyCredential } from "@azure/storage-blob";
import type { ObjectStore, StoredObject } from "./store.ts";
import type { AzureCredential, Env } from "./credentials.ts";

/** The AccountName a connection string names, or undefined. */
function connectionAccount(cs: string): string | undefined {
  return /(?:^|;)\s*AccountName=([^;]*)/i.exec(cs)?.[1]?.trim() || undefined;
}

export function azureService(account: string, cred: AzureCredential, env: Env): BlobServiceClient {
  const cs = env.AZURE_STORAGE_CONNECTION_STRING;
  const options = { retryOptions: { maxTries: 2, tryTimeoutInMs: 60_000 } };
  if (cs && (connectionAccount(cs) ?? account) === account) return BlobServiceClient.fromConnectionString(cs, options);
  const url = `https://${account}.blob.core.windows.net`;
  const credential = cred.key ? new StorageSharedKeyCredential(account, cred.key) : new AnonymousCredential();
  return new BlobServiceClient(url, credential, options);
}

export function azureStore(account: string, container: string, cred: AzureCredential, env: Env): ObjectStore {
  const client = azureService(account, cred, env).getContainerClient(container);
  return {
    async list(prefix) {
      const out: StoredObject[] = [];
      for await (const blob of client.listBlobsFlat({ prefix: prefix || undefined })) {
        out.push({ key: blob.name, size: blob.properties.contentLength ?? 0, etag: blob.properties.etag ?? "" });
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
