/**
 * #29 item 8, in the style of #14's fuzzers: S3, Azure Blob and GCS listings through their
 * real clients against the scripted listing server, with generated and mutated pages
 * (test/fuzz/store-gen.ts) and listings that never end, with a fixed seed. Each resolves to
 * a bounded list of well-formed objects or rejects with an Error, within bounded requests.
 */
import { describe, it, expect } from "vitest";
import { fuzzListing } from "../../fuzz/store-run.ts";
import { summary } from "../../fuzz/run.ts";

describe("fuzzed object-store listings (#29 item 8)", () => {
  it("100 mutated listings: bounded, an Error or well-formed objects, never a crash or a hang", async () => {
    const s = await fuzzListing({ seed: 20261127, count: Number(process.env.LISTING_FUZZ_COUNT ?? 100) });
    console.log(summary(s));
    expect(s.findings.map((f) => `case ${f.index}: ${f.problem} (${f.request})`).join("\n")).toBe("");
    for (const api of ["s3", "azure", "gcs"]) {
      expect(s.outcomes.get(`${api} listed`) ?? 0).toBeGreaterThan(5);
      expect(s.outcomes.get(`${api} error`) ?? 0).toBeGreaterThan(5);
    }
  }, 240_000);
});
