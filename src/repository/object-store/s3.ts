/**
 * @module S3 (and S3-compatible servers) behind ObjectStore, with the maintained
 * @aws-sdk/client-s3. A custom endpoint (s3://host:port/bucket) is addressed path-style,
 * as MinIO and other S3-compatible servers expect; without one the SDK's own endpoint
 * for the region is used. Credentials: credentials.ts, else the SDK's default chain
 * (~/.aws files, instance roles). Imported only when an s3:// repository is given.
 */
import { GetObjectCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import { ListingGuard, objectSize, type ListLimits, type ObjectStore, type StoredObject } from "./store.ts";
import type { S3Credential } from "./credentials.ts";

export function s3Store(bucket: string, endpoint: string | undefined, cred: S3Credential, limits?: ListLimits): ObjectStore {
  const client = new S3Client({
    region: cred.region ?? "us-east-1",
    ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
    ...(cred.keyId && cred.secretKey
      ? { credentials: { accessKeyId: cred.keyId, secretAccessKey: cred.secretKey, ...(cred.sessionToken ? { sessionToken: cred.sessionToken } : {}) } }
      : {}),
    ...(cred.profile ? { profile: cred.profile } : {}),
    // A store that stops answering must not hold a poll or a load forever.
    requestHandler: { connectionTimeout: 5_000, requestTimeout: 60_000 },
    maxAttempts: 2,
  });
  return {
    async list(prefix) {
      const out: StoredObject[] = [];
      const guard = new ListingGuard(limits);
      let token: string | undefined;
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
        const contents = page.Contents ?? [];
        guard.page(contents.length, page.IsTruncated === true, page.NextContinuationToken);
        for (const o of contents) if (o.Key !== undefined) out.push({ key: o.Key, size: objectSize(o.Size ?? 0, o.Key), etag: o.ETag ?? "" });
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
      return out;
    },
    async read(key) {
      const res = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      if (!res.Body) throw new Error(`S3 object '${key}' has no body`);
      return res.Body as AsyncIterable<Uint8Array>;
    },
  };
}
