/**
 * Issue #21 item 4: the GCS store (src/repository/object-store/gcs.ts) through the real
 * @google-cloud/storage client against a fake of the JSON API's two calls it makes (list
 * with pages, download with alt=media), served here over HTTP. This checks our use of the
 * client, not GCS: no GCS server can be installed from npm, and GCS itself is not reached.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import { gcsStore } from "../../../src/repository/object-store/gcs.ts";

const objects = new Map<string, string>([
  ["repo/simple/config.pbtxt", "name: 'simple'"],
  ["repo/simple/1/model.onnx", "ONNX bytes"],
  ["other/x", "x"],
]);
const requests: { url: string; auth?: string }[] = [];
let failing = false;
let server: Server;
let endpoint = "";

beforeAll(async () => {
  // Should the client ever look for a metadata server, it finds none on loopback instead of reaching out.
  process.env.METADATA_SERVER_DETECTION = "none";
  process.env.GCE_METADATA_HOST = "127.0.0.1:9";
  server = createServer((req, res) => {
    requests.push({ url: req.url!, auth: req.headers.authorization });
    const u = new URL(req.url!, "http://fake");
    if (failing) {
      res.writeHead(503, { "content-type": "application/json" }).end(JSON.stringify({ error: { code: 503, message: "fake outage" } }));
      return;
    }
    const list = /^\/storage\/v1\/b\/models\/o$/.exec(u.pathname);
    if (list) {
      // One object per page, so that the client has to follow nextPageToken.
      const keys = [...objects.keys()].filter((k) => k.startsWith(u.searchParams.get("prefix") ?? ""));
      const at = Number(u.searchParams.get("pageToken") ?? 0);
      const items = keys.slice(at, at + 1).map((name) => ({ kind: "storage#object", name, bucket: "models", size: String(objects.get(name)!.length), etag: `E-${name}` }));
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ kind: "storage#objects", items, ...(at + 1 < keys.length ? { nextPageToken: String(at + 1) } : {}) }));
      return;
    }
    const get = /^\/storage\/v1\/b\/models\/o\/(.+)$/.exec(u.pathname);
    const data = get && objects.get(decodeURIComponent(get[1]!));
    if (data !== undefined && data !== null && u.searchParams.get("alt") === "media") {
      res.writeHead(200, { "content-type": "application/octet-stream" }).end(data);
      return;
    }
    res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { code: 404, message: "No such object" } }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  endpoint = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const text = async (it: AsyncIterable<Uint8Array>) => {
  const parts: Buffer[] = [];
  for await (const c of it) parts.push(Buffer.from(c));
  return Buffer.concat(parts).toString();
};

describe("gcsStore (fake JSON API, not GCS)", () => {
  it("lists every object under a prefix across pages, with size and ETag", async () => {
    const store = gcsStore("models", {}, endpoint);
    const listed = await store.list("repo/");
    expect(listed.sort((a, b) => a.key.localeCompare(b.key))).toEqual([
      { key: "repo/simple/1/model.onnx", size: 10, etag: "E-repo/simple/1/model.onnx" },
      { key: "repo/simple/config.pbtxt", size: 14, etag: "E-repo/simple/config.pbtxt" },
    ]);
    expect(requests.filter((r) => r.url.includes("pageToken=1"))).toHaveLength(1);
  });

  it("reads an object's bytes", async () => {
    const store = gcsStore("models", {}, endpoint);
    expect(await text(await store.read("repo/simple/1/model.onnx"))).toBe("ONNX bytes");
  });

  it("sends no credentials to a custom endpoint", () => {
    expect(requests.length).toBeGreaterThan(0);
    expect(requests.every((r) => r.auth === undefined)).toBe(true);
  });

  it("fails when the service does", async () => {
    failing = true;
    try {
      await expect(gcsStore("models", {}, endpoint).list("repo/")).rejects.toThrow(/fake outage|503/);
    } finally {
      failing = false;
    }
  });
});
