/**
 * #29 item 8: an object-store listing is bounded in pages and objects, for S3, Azure Blob
 * and GCS through their real clients against a scripted listing server: a listing that
 * always says "truncated" (with fresh tokens, with the same token, with empty pages, or
 * without a token) fails with a clear error instead of growing without end.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LISTING_APIS, listingPage, startListingServer, type ListingServer } from "../../helpers/listing-server.ts";
import { LIST_LIMITS, ListingGuard } from "../../../src/repository/object-store/store.ts";

let fake: ListingServer;
beforeAll(async () => {
  process.env.METADATA_SERVER_DETECTION = "none";
  process.env.GCE_METADATA_HOST = "127.0.0.1:9";
  fake = await startListingServer(() => ({ status: 500, body: "" }));
});
afterAll(() => fake?.close());

/** Runs `list` with `script`, returning what it listed or the error's message, and the requests it made. */
async function list(api: (typeof LISTING_APIS)[number], script: ListingServer["script"], limits = { maxPages: 20, maxObjects: 50 }) {
  fake.script = script;
  fake.requests = 0;
  try {
    const objects = await fake.store(api, limits).list("");
    return { keys: objects.map((o) => o.key), requests: fake.requests };
  } catch (err) {
    return { error: (err as Error).message, requests: fake.requests };
  }
}

const keys = (n: number, page: number) => Array.from({ length: n }, (_, i) => `p${page}/k${i}`);

describe.each(LISTING_APIS)("%s listing limits", (api) => {
  it("lists every page of a listing that ends", async () => {
    const r = await list(api, (a, n) => listingPage(a, keys(2, n), n < 2 ? `t${n + 1}` : undefined));
    expect(r).toEqual({ keys: ["p0/k0", "p0/k1", "p1/k0", "p1/k1", "p2/k0", "p2/k1"], requests: 3 });
  });

  it("fails a listing that always says truncated with fresh tokens once it holds too many objects", async () => {
    const r = await list(api, (a, n) => listingPage(a, keys(7, n), `t${n + 1}`));
    expect(r).toEqual({ error: "the listing holds more than 50 objects, Nereid's limit for a model repository", requests: 8 });
  });

  it("fails a listing of empty pages that never ends once it takes too many pages", async () => {
    const r = await list(api, (a, n) => listingPage(a, [], `t${n + 1}`));
    expect(r).toEqual({ error: "the listing goes on past 20 pages, Nereid's limit for a model repository", requests: 20 });
  });

  it("fails a listing that sends the same continuation token twice", async () => {
    const r = await list(api, (a, n) => listingPage(a, keys(1, n), n === 0 ? "first" : "again"));
    expect(r).toEqual({ error: "the store sent the same continuation token twice (after 3 pages): its listing never ends", requests: 3 });
  });
});

describe("s3 listing", () => {
  it("fails a listing that says truncated without a continuation token (a partial listing would remove files)", async () => {
    const truncatedNoToken = listingPage("s3", ["a"], "x");
    const body = String(truncatedNoToken.body).replace(/<NextContinuationToken>x<\/NextContinuationToken>/, "");
    const r = await list("s3", () => ({ ...truncatedNoToken, body }));
    expect(r).toEqual({ error: "the store says the listing goes on but gives no continuation token", requests: 1 });
  });
});

describe("ListingGuard", () => {
  it("allows 100,000 objects and 1000 pages by default, and no more", () => {
    expect(LIST_LIMITS).toEqual({ maxPages: 1000, maxObjects: 100_000 });
    const objects = new ListingGuard();
    for (let p = 0; p < 100; p++) objects.page(1000, true, `t${p}`);
    expect(() => objects.page(1, false, undefined)).toThrow("the listing holds more than 100000 objects, Nereid's limit for a model repository");
    const pages = new ListingGuard();
    for (let p = 0; p < 999; p++) pages.page(0, true, `t${p}`);
    pages.page(0, false, undefined); // the last page may be the 1000th
    const more = new ListingGuard();
    for (let p = 0; p < 999; p++) more.page(0, true, `t${p}`);
    expect(() => more.page(0, true, "t999")).toThrow("the listing goes on past 1000 pages, Nereid's limit for a model repository");
  });

  it("keeps digests of tokens, not the tokens (a store may send long ones)", () => {
    const g = new ListingGuard();
    g.page(0, true, "x".repeat(1 << 20));
    expect(() => g.page(0, true, "x".repeat(1 << 20))).toThrow("the store sent the same continuation token twice (after 2 pages)");
  });
});
