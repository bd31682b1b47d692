/**
 * A scripted listing server for the object-store listing tests and fuzzer (#29 item 8):
 * it answers the list call of S3 (ListObjectsV2, path-style), Azure Blob (List Blobs) and
 * the GCS JSON API with whatever page the test makes for each request, so that a listing
 * can be made to never end, repeat a token, or be malformed. The page builders write the
 * services' documented shapes.
 */
import { createServer, type Server } from "node:http";
import { freePort } from "./ports.ts";
import { AZURITE_ACCOUNT, AZURITE_KEY } from "./object-store-servers.ts";
import { s3Store } from "../../src/repository/object-store/s3.ts";
import { azureStore } from "../../src/repository/object-store/azure.ts";
import { gcsStore } from "../../src/repository/object-store/gcs.ts";
import type { ListLimits, ObjectStore } from "../../src/repository/object-store/store.ts";

export type ListingApi = "s3" | "azure" | "gcs";
export const LISTING_APIS: readonly ListingApi[] = ["s3", "azure", "gcs"];

export interface Page {
  status?: number;
  contentType?: string;
  body: string | Uint8Array;
}

/** The page for the `n`th list request (from 0) of `api`, which carried `token` (undefined on the first). */
export type PageScript = (api: ListingApi, n: number, token: string | undefined) => Page;

export interface ListingServer {
  endpoint: string;
  /** List requests answered so far. */
  requests: number;
  script: PageScript;
  /** A store of `api` that lists from this server. */
  store(api: ListingApi, limits?: ListLimits): ObjectStore;
  close(): Promise<void>;
}

const xmlEscape = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** One listing page of `keys` (1-byte objects); `next`: the continuation token, if more follow. */
export function listingPage(api: ListingApi, keys: readonly string[], next: string | undefined): Page {
  if (api === "gcs") {
    const items = keys.map((name) => ({ kind: "storage#object", name, bucket: "models", size: "1", etag: "e" }));
    return {
      contentType: "application/json",
      body: JSON.stringify({ kind: "storage#objects", items, ...(next !== undefined ? { nextPageToken: next } : {}) }),
    };
  }
  if (api === "s3") {
    const contents = keys.map((k) => `<Contents><Key>${xmlEscape(k)}</Key><Size>1</Size><ETag>"e"</ETag></Contents>`).join("");
    const more =
      next !== undefined
        ? `<IsTruncated>true</IsTruncated><NextContinuationToken>${xmlEscape(next)}</NextContinuationToken>`
        : "<IsTruncated>false</IsTruncated>";
    return {
      contentType: "application/xml",
      body: `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>models</Name><Prefix></Prefix><KeyCount>${keys.length}</KeyCount><MaxKeys>1000</MaxKeys>${more}${contents}</ListBucketResult>`,
    };
  }
  const blobs = keys
    .map(
      (k) =>
        `<Blob><Name>${xmlEscape(k)}</Name><Properties><Last-Modified>Fri, 27 Nov 2026 08:00:00 GMT</Last-Modified><Etag>0x1</Etag><Content-Length>1</Content-Length><BlobType>BlockBlob</BlobType></Properties></Blob>`,
    )
    .join("");
  return {
    contentType: "application/xml",
    body: `<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="http://127.0.0.1/${AZURITE_ACCOUNT}/" ContainerName="models"><Blobs>${blobs}</Blobs><NextMarker>${next !== undefined ? xmlEscape(next) : ""}</NextMarker></EnumerationResults>`,
  };
}

export async function startListingServer(script: PageScript): Promise<ListingServer> {
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const server: Server = createServer((req, res) => {
    const u = new URL(req.url!, "http://fake");
    let api: ListingApi | undefined;
    let token: string | null = null;
    if (u.pathname === "/storage/v1/b/models/o") [api, token] = ["gcs", u.searchParams.get("pageToken")];
    else if ((u.pathname === "/models" || u.pathname === "/models/") && u.searchParams.get("list-type") === "2")
      [api, token] = ["s3", u.searchParams.get("continuation-token")];
    else if (u.pathname === `/${AZURITE_ACCOUNT}/models` && u.searchParams.get("comp") === "list") [api, token] = ["azure", u.searchParams.get("marker")];
    if (!api) return void res.writeHead(404).end();
    const page = fake.script(api, fake.requests++, token ?? undefined);
    res.writeHead(page.status ?? 200, { "content-type": page.contentType ?? "application/octet-stream" }).end(page.body);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  const fake: ListingServer = {
    endpoint,
    requests: 0,
    script,
    store(api, limits) {
      if (api === "s3") return s3Store("models", endpoint, { keyId: "k", secretKey: "s", region: "us-east-1" }, limits);
      if (api === "gcs") return gcsStore("models", {}, endpoint, limits);
      const cs = `DefaultEndpointsProtocol=http;AccountName=${AZURITE_ACCOUNT};AccountKey=${AZURITE_KEY};BlobEndpoint=${endpoint}/${AZURITE_ACCOUNT};`;
      return azureStore(AZURITE_ACCOUNT, "models", {}, { AZURE_STORAGE_CONNECTION_STRING: cs }, limits);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  return fake;
}
