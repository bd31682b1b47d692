/**
 * Issue #21 item 4: the GCS store (src/repository/object-store/gcs.ts) through the real
 * @google-cloud/storage client against a fake of the JSON API's two calls it makes
 * (test/helpers/fake-gcs.ts: list with pages, download with alt=media). This checks our
 * use of the client, not GCS: no GCS server can be installed from npm.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gcsStore } from "../../../src/repository/object-store/gcs.ts";
import { startFakeGcs, type FakeGcs } from "../../helpers/fake-gcs.ts";

let fake: FakeGcs;
beforeAll(async () => {
  // Should the client ever look for a metadata server, it finds none on loopback instead of reaching out.
  process.env.METADATA_SERVER_DETECTION = "none";
  process.env.GCE_METADATA_HOST = "127.0.0.1:9";
  fake = await startFakeGcs("models", 1); // one object per page: the client must follow nextPageToken
  await fake.put({ "repo/simple/config.pbtxt": "name: 'simple'", "repo/simple/1/model.onnx": "ONNX bytes", "other/x": "x" });
});
afterAll(() => fake?.dispose());

const text = async (it: AsyncIterable<Uint8Array>) => {
  const parts: Buffer[] = [];
  for await (const c of it) parts.push(Buffer.from(c));
  return Buffer.concat(parts).toString();
};

describe("gcsStore (fake JSON API, not GCS)", () => {
  it("lists every object under a prefix across pages, with size and ETag", async () => {
    const listed = await gcsStore("models", {}, fake.endpoint).list("repo/");
    expect(listed.map((o) => [o.key, o.size])).toEqual([
      ["repo/simple/1/model.onnx", 10],
      ["repo/simple/config.pbtxt", 14],
    ]);
    expect(listed.every((o) => o.etag.length > 0)).toBe(true);
    expect(fake.requests.filter((r) => r.url.includes("pageToken=1"))).toHaveLength(1);
  });

  it("reads an object's bytes", async () => {
    expect(await text(await gcsStore("models", {}, fake.endpoint).read("repo/simple/1/model.onnx"))).toBe("ONNX bytes");
  });

  it("sends no credentials to a custom endpoint", () => {
    expect(fake.requests.length).toBeGreaterThan(0);
    expect(fake.requests.every((r) => r.auth === undefined)).toBe(true);
  });

  it("fails when the service does", async () => {
    fake.failing = true;
    try {
      await expect(gcsStore("models", {}, fake.endpoint).list("repo/")).rejects.toThrow(/fake outage|503/);
    } finally {
      fake.failing = false;
    }
  });
});
