/**
 * @module The ObjectStore for a parsed repository URL. Each service's client is imported
 * here, lazily, so that a server with local repositories only never loads them.
 */
import type { ObjectStoreUrl } from "../object-store-url.ts";
import type { ObjectStore } from "./store.ts";
import { azureCredential, gcsCredential, s3Credential, type Env } from "./credentials.ts";

/** `raw`: the URL as given (credential-file entries are matched against it). */
export async function openObjectStore(url: ObjectStoreUrl, raw: string, env: Env): Promise<ObjectStore> {
  switch (url.scheme) {
    case "s3": {
      const { s3Store } = await import("./s3.ts");
      const plain = `s3://${url.bucket}${url.prefix ? `/${url.prefix}` : ""}`;
      return s3Store(url.bucket, url.endpoint, s3Credential([raw, plain], env));
    }
    case "as": {
      const { azureStore } = await import("./azure.ts");
      return azureStore(url.account, url.container, azureCredential([raw], env), env);
    }
    case "gs": {
      const { gcsStore } = await import("./gcs.ts");
      return gcsStore(url.bucket, gcsCredential([raw], env));
    }
  }
}
