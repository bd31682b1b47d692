/**
 * A fake of the two Google Cloud Storage JSON API calls that src/repository/object-store/gcs.ts
 * makes through @google-cloud/storage: list a bucket's objects under a prefix (paged) and
 * download one (alt=media). It is not GCS: no GCS server can be installed from npm, so
 * this checks our use of the real client, not the service. Requests are recorded.
 */
import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import { freePort, type ObjectServer } from "./object-store-servers.ts";

export interface FakeGcs extends ObjectServer {
  /** http://127.0.0.1:port: the client's apiEndpoint or STORAGE_EMULATOR_HOST. */
  endpoint: string;
  requests: { url: string; auth?: string }[];
  /** Answer every request with 503 while true. */
  failing: boolean;
}

export async function startFakeGcs(bucket: string, pageSize = 1000): Promise<FakeGcs> {
  const port = await freePort();
  const objects = new Map<string, Uint8Array>();
  let server: Server | undefined;
  const fake: FakeGcs = {
    port,
    endpoint: `http://127.0.0.1:${port}`,
    requests: [],
    failing: false,
    async start() {
      if (server) return;
      const s = createServer((req, res) => {
        fake.requests.push({ url: req.url!, auth: req.headers.authorization });
        const u = new URL(req.url!, "http://fake");
        const json = (status: number, body: unknown) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
        if (fake.failing) return json(503, { error: { code: 503, message: "fake outage" } });
        if (u.pathname === `/storage/v1/b/${bucket}/o`) {
          const keys = [...objects.keys()].filter((k) => k.startsWith(u.searchParams.get("prefix") ?? "")).sort();
          const at = Number(u.searchParams.get("pageToken") ?? 0);
          const items = keys.slice(at, at + pageSize).map((name) => {
            const data = objects.get(name)!;
            return { kind: "storage#object", name, bucket, size: String(data.length), etag: createHash("md5").update(data).digest("base64") };
          });
          return json(200, { kind: "storage#objects", items, ...(at + pageSize < keys.length ? { nextPageToken: String(at + pageSize) } : {}) });
        }
        const get = new RegExp(`^/storage/v1/b/${bucket}/o/(.+)$`).exec(u.pathname);
        const data = get ? objects.get(decodeURIComponent(get[1]!)) : undefined;
        if (data && u.searchParams.get("alt") === "media") return void res.writeHead(200, { "content-type": "application/octet-stream" }).end(data);
        return json(404, { error: { code: 404, message: "No such object" } });
      });
      await new Promise<void>((resolve, reject) => {
        s.once("error", reject);
        s.listen(port, "127.0.0.1", () => resolve());
      });
      server = s;
    },
    async stop() {
      const s = server;
      server = undefined;
      if (!s) return;
      s.closeAllConnections();
      await new Promise<void>((r) => s.close(() => r()));
    },
    async put(files) {
      for (const [key, body] of Object.entries(files)) objects.set(key, typeof body === "string" ? new TextEncoder().encode(body) : body);
    },
    async remove(keys) {
      for (const key of keys) objects.delete(key);
    },
    async dispose() {
      await fake.stop();
    },
  };
  await fake.start();
  return fake;
}
