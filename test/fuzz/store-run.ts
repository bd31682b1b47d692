/**
 * The in-process fuzz loops for what Nereid reads from stores (#29 items 6 and 8), in the
 * seeded, bounded style of run.ts (shared by the vitest suite and scripts/fuzz.ts).
 *
 * cache-entry: decodeEntry on generated and mutated redis values never throws; what it
 * accepts passes an independent check (known datatype, non-negative safe integer dims,
 * bytes that match the shape, exact BYTES framing, unique names, the wanted outputs
 * present) and re-encodes to the same outputs; each decode within a second.
 * listing: S3, Azure and GCS list() through their real clients against the scripted
 * listing server with generated and mutated pages (and listings that never end) resolve
 * to at most maxObjects well-formed objects or reject with an Error, after at most
 * maxPages pages per attempt, within the case timeout.
 */
import { isDeepStrictEqual } from "node:util";
import { Rng } from "./rng.ts";
import { genEntryCase, genListingCase } from "./store-gen.ts";
import { count, more, record, stats, type RunOptions, type TargetStats } from "./run.ts";
import { decodeEntry, encodeEntry } from "../../src/cache/entry-codec.ts";
import { DATA_TYPES, ELEMENT_SIZE, splitBytes, type Tensor } from "../../src/core/tensor.ts";
import { LISTING_APIS, listingPage, startListingServer } from "../helpers/listing-server.ts";
import type { ListLimits, StoredObject } from "../../src/repository/object-store/store.ts";

const SLOW_MS = 1000;

/** Why `outputs` would not make a valid response, checked without the codec's own code. */
export function outputsProblem(outputs: readonly Tensor[], wanted: readonly string[]): string | undefined {
  const names = new Set<string>();
  for (const t of outputs) {
    if (typeof t.name !== "string") return "a name that is not a string";
    if (names.has(t.name)) return `output ${JSON.stringify(t.name)} twice`;
    names.add(t.name);
    if (!(DATA_TYPES as readonly string[]).includes(t.datatype)) return `unknown datatype ${JSON.stringify(t.datatype)}`;
    if (!Array.isArray(t.shape) || !t.shape.every((d) => typeof d === "number" && Number.isSafeInteger(d) && d >= 0))
      return `bad shape ${JSON.stringify(t.shape)}`;
    const n = t.shape.reduce((a, d) => a * d, 1);
    if (t.datatype === "BYTES") {
      let elements: number;
      try {
        elements = splitBytes(t.data).length;
      } catch {
        return `output ${JSON.stringify(t.name)}: broken BYTES framing accepted`;
      }
      if (elements !== n) return `output ${JSON.stringify(t.name)}: ${elements} BYTES elements for shape ${JSON.stringify(t.shape)}`;
    } else if (t.data.byteLength !== n * ELEMENT_SIZE[t.datatype])
      return `output ${JSON.stringify(t.name)}: ${t.data.byteLength} bytes for ${t.datatype} ${JSON.stringify(t.shape)}`;
  }
  for (const w of wanted) if (!names.has(w)) return `wanted output ${JSON.stringify(w)} missing`;
  return undefined;
}

/** One value through decodeEntry and the oracle; the outcome and the problem, if any. */
export function checkEntry(value: Uint8Array, wanted: readonly string[]): { outcome: "valid" | "invalid"; problem?: string } {
  const t0 = performance.now();
  let decoded: ReturnType<typeof decodeEntry>;
  try {
    decoded = decodeEntry(value, wanted);
  } catch (err) {
    return { outcome: "invalid", problem: `decodeEntry threw ${(err as Error)?.name}: ${(err as Error)?.message}` };
  }
  const ms = performance.now() - t0;
  if (ms > SLOW_MS) return { outcome: decoded.outputs ? "valid" : "invalid", problem: `slow: ${Math.round(ms)} ms` };
  if (!decoded.outputs)
    return typeof decoded.invalid === "string" && decoded.invalid.length > 0
      ? { outcome: "invalid" }
      : { outcome: "invalid", problem: "an invalid entry without a reason" };
  const problem = outputsProblem(decoded.outputs, wanted);
  if (problem) return { outcome: "valid", problem: `accepted an entry it should refuse: ${problem}` };
  const again = decodeEntry(encodeEntry(decoded.outputs), wanted);
  if (!isDeepStrictEqual(again.outputs, decoded.outputs)) return { outcome: "valid", problem: "the accepted outputs do not re-encode to themselves" };
  return { outcome: "valid" };
}

export function fuzzCacheEntry(o: RunOptions): TargetStats {
  const s = stats("cache-entry");
  const t0 = Date.now();
  for (let i = o.first ?? 0; more(i, o); i++) {
    const c = genEntryCase(Rng.forCase(o.seed, "cache-entry", i));
    s.cases++;
    const check = checkEntry(c.value, c.wanted);
    count(s, check.outcome);
    if (check.problem)
      record(s, o, {
        target: "cache-entry",
        seed: o.seed,
        index: i,
        problem: check.problem,
        request: `redis value, wanted ${JSON.stringify(c.wanted)}`,
        input: c.value,
      });
  }
  s.ms = Date.now() - t0;
  return s;
}

/** Small limits, so that a listing that never ends ends within a case. */
export const FUZZ_LIST_LIMITS: ListLimits = { maxPages: 8, maxObjects: 150 };

function objectProblem(o: StoredObject): string | undefined {
  if (typeof o.key !== "string") return `a key that is not a string: ${JSON.stringify(o.key)}`;
  if (typeof o.size !== "number" || !Number.isSafeInteger(o.size) || o.size < 0) return `object ${JSON.stringify(o.key.slice(0, 80))}: size ${String(o.size)}`;
  if (typeof o.etag !== "string") return `object ${JSON.stringify(o.key.slice(0, 80))}: an etag that is not a string`;
  return undefined;
}

export async function fuzzListing(o: RunOptions): Promise<TargetStats> {
  const s = stats("listing");
  const t0 = Date.now();
  // The clients must find no cloud metadata server (GCS) nor credentials files in the way.
  process.env.METADATA_SERVER_DETECTION = "none";
  process.env.GCE_METADATA_HOST = "127.0.0.1:9";
  const server = await startListingServer(() => ({ status: 404, body: "" }));
  const timeoutMs = o.timeoutMs ?? 10_000;
  try {
    for (let i = o.first ?? 0; more(i, o); i++) {
      const r = Rng.forCase(o.seed, "listing", i);
      const c = genListingCase(r, r.pick(LISTING_APIS));
      s.cases++;
      server.requests = 0;
      server.script = (api, n) => {
        if (n < c.pages.length) return c.pages[n]!;
        return c.then === "repeat" ? listingPage(api, [`repo/more${n}`], `fresh${n}`) : { status: 403, body: "" };
      };
      let timer: ReturnType<typeof setTimeout> | undefined;
      const listed = server
        .store(c.api, FUZZ_LIST_LIMITS)
        .list("")
        .then(
          (objects) => ({ objects }),
          (err: unknown) => ({ err }),
        );
      const result = await Promise.race([listed, new Promise<"timeout">((res) => (timer = setTimeout(() => res("timeout"), timeoutMs)))]);
      clearTimeout(timer);
      let problem: string | undefined;
      let outcome: string;
      if (result === "timeout") [outcome, problem] = ["timeout", `no answer in ${timeoutMs} ms`];
      else if ("err" in result) {
        outcome = `${c.api} error`;
        if (!(result.err instanceof Error)) problem = `rejected with a non-Error: ${String(result.err)}`;
      } else {
        outcome = `${c.api} listed`;
        if (!Array.isArray(result.objects)) problem = "resolved to a non-array";
        else if (result.objects.length > FUZZ_LIST_LIMITS.maxObjects) problem = `${result.objects.length} objects, over the limit`;
        else problem = result.objects.map(objectProblem).find((p) => p);
      }
      // Each client tries a page at most twice (S3 maxAttempts, Azure maxTries, GCS one retry).
      if (!problem && server.requests > 2 * FUZZ_LIST_LIMITS.maxPages) problem = `${server.requests} requests, over twice the page limit`;
      count(s, outcome);
      if (problem) {
        const input = new TextEncoder().encode(c.pages.map((p) => `--- status ${p.status ?? 200}\n${String(p.body)}`).join("\n"));
        record(s, o, { target: "listing", seed: o.seed, index: i, problem, request: `${c.api} listing, then ${c.then}`, input });
      }
    }
  } finally {
    await server.close();
  }
  s.ms = Date.now() - t0;
  return s;
}
