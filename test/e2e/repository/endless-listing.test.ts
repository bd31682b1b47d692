/**
 * #29 item 8 through the server binary: an S3 repository whose listing never ends (always
 * "truncated": fresh tokens over empty pages, or the same token again) stops the start with
 * an error that names the repository URL, after a bounded number of requests, instead of
 * growing the server's memory without end.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runServerToExit } from "../../helpers/server-process.ts";
import { listingPage, startListingServer, type ListingServer } from "../../helpers/listing-server.ts";
import { LIST_LIMITS } from "../../../src/repository/object-store/store.ts";

let fake: ListingServer;
beforeAll(async () => {
  // The server inherits these (this file runs in its own worker): the fake wants no real credentials.
  Object.assign(process.env, { AWS_ACCESS_KEY_ID: "k", AWS_SECRET_ACCESS_KEY: "s", AWS_REGION: "us-east-1", AWS_EC2_METADATA_DISABLED: "true" });
  fake = await startListingServer(() => ({ status: 500, body: "" }));
});
afterAll(() => fake?.close());

describe("an S3 listing that never ends (#29 item 8)", () => {
  it("stops the start after the page limit, naming the URL", async () => {
    fake.script = (api, n) => listingPage(api, [], `t${n + 1}`);
    fake.requests = 0;
    const url = `s3://${fake.endpoint.slice("http://".length)}/models/repo`;
    const { code, output } = await runServerToExit([`--model-repository=${url}`], { timeoutMs: 120_000 });
    expect(code).toBe(1);
    expect(output).toContain(
      `failed to read model repository '${url}': the listing goes on past ${LIST_LIMITS.maxPages} pages, Nereid's limit for a model repository`,
    );
    expect(fake.requests).toBe(LIST_LIMITS.maxPages);
  }, 150_000);

  it("stops the start at a repeated continuation token, naming the URL", async () => {
    fake.script = (api, n) => listingPage(api, [`repo/m${n}/config.pbtxt`], "same");
    fake.requests = 0;
    const url = `s3://${fake.endpoint.slice("http://".length)}/models/repo`;
    const { code, output } = await runServerToExit([`--model-repository=${url}`]);
    expect(code).toBe(1);
    expect(output).toContain(
      `failed to read model repository '${url}': the store sent the same continuation token twice (after 2 pages): its listing never ends`,
    );
    expect(fake.requests).toBe(2);
  });
});
