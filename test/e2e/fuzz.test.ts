/**
 * #14: the fuzz suite of test/fuzz with fixed seeds and bounded counts, through the compiled
 * binary: generated and mutated HTTP infer requests and routes (P-06..P-14, P-27..P-29),
 * explicit-mode loads with JSON config overrides (P-18), gRPC messages mutated on the wire
 * (G-02, G-09), generate bodies (P-31) and the SageMaker and Vertex AI routes (#29), and the
 * corpus of known cases. The repository (test/fuzz/models.ts) has `simple` on each path a
 * request can take: run by the worker that read it, batched on the scheduling thread, in a
 * TypeScript model's worker thread and in a Python stub (Debian's python3 with numpy), and
 * the known-good request goes to each in turn. HTTP cases are sent with Content-Length,
 * chunked, or with no body and no framing at all (framingOf in test/fuzz/run.ts). The oracles are in
 * test/fuzz/run.ts: no 500 or INTERNAL, Triton's error shape, errors of at most 4 KiB, no
 * drop, hang or death, no worker thread failed (the server starts another, so only its log
 * tells), and the known-good request keeps its exact answer. Findings of bugs still open on
 * this branch are listed in test/fuzz/known-open.ts and do not fail the suite. For longer
 * runs: `bun scripts/fuzz.ts --seconds=300`.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { fuzzHttp, fuzzLoad, fuzzGrpc, fuzzGenerate, fuzzSagemaker, fuzzVertex, summary, type TargetStats } from "../fuzz/run.ts";
import { startFuzzFixture, startFuzzServer, type FuzzFixture } from "../fuzz/servers.ts";
import { CORPUS } from "../fuzz/corpus.ts";
import { isKnownOpen } from "../fuzz/known-open.ts";

let fx: FuzzFixture;

beforeAll(async () => {
  fx = await startFuzzFixture();
});

afterAll(async () => {
  await fx?.close();
});

/** The findings that are not known-open bugs, one paragraph each (empty when none). */
function newFindings(s: TargetStats): string {
  return s.findings
    .filter((f) => !f.known)
    .map((f) => `${f.target} case ${f.index} (seed ${f.seed}): ${f.problem}\n  ${f.request.replace(/\n/g, "\n  ")}\n  answer: ${f.answer ?? "-"}`)
    .join("\n");
}

const rate = (s: TargetStats, ...keys: string[]) => keys.reduce((n, k) => n + (s.outcomes.get(k) ?? 0), 0) / s.cases;

describe("fuzzed input (#14)", () => {
  it("HTTP: 4000 generated infer requests and /v2 routes get a Triton answer, never a 500; the known-good request keeps its answer", async () => {
    const s = await fuzzHttp(fx.server, { seed: 20261122, count: 4000, checkEvery: 100 });
    console.log(summary(s));
    expect(newFindings(s)).toBe("");
    // Every 500 is a known-open bug; most cases are refused, as client errors; enough run through.
    expect(s.outcomes.get("500") ?? 0).toBe(s.findings.filter((f) => f.problem.startsWith("HTTP 500")).length);
    expect(rate(s, "400")).toBeGreaterThan(0.5);
    expect(rate(s, "200")).toBeGreaterThan(0.1);
    expect(fx.server.alive()).toBe(true);
  });

  it("HTTP: 400 explicit-mode loads with generated and mutated JSON config overrides", async () => {
    const s = await fuzzLoad(fx.server, { modelBase64: fx.modelBase64 }, { seed: 7, count: 400, checkEvery: 50 });
    console.log(summary(s));
    expect(newFindings(s)).toBe("");
    expect(rate(s, "200")).toBeGreaterThan(0.05); // some configs load
    expect(fx.server.alive()).toBe(true);
  });

  it("gRPC: 2000 generated and wire-mutated messages get OK or a client-side status, never INTERNAL or UNKNOWN; the known-good call keeps its answer", async () => {
    const s = await fuzzGrpc(fx.server, { seed: 7, count: 2000, checkEvery: 100 });
    console.log(summary(s));
    expect(newFindings(s)).toBe("");
    // Most messages decode and reach the server (grpc-js answers undecodable ones itself).
    expect(rate(s, "0", "3", "5")).toBeGreaterThan(0.5);
    expect(fx.server.alive()).toBe(true);
  });
});

describe("fuzzed input on the routes beside /infer (#29)", () => {
  it("generate: 2000 generated and mutated /generate and /generate_stream bodies get a Triton answer or well-formed events, never a 500", async () => {
    const s = await fuzzGenerate(fx.server, { seed: 29, count: 2000, checkEvery: 100 });
    console.log(summary(s));
    expect(newFindings(s)).toBe("");
    expect(rate(s, "400")).toBeGreaterThan(0.3);
    expect(rate(s, "200")).toBeGreaterThan(0.05); // some reach the models and answer
    expect(fx.server.alive()).toBe(true);
  });

  it("SageMaker: 2000 /invocations, /ping and multi-model requests get Triton's SageMaker answers, never a 500", async () => {
    const s = await fuzzSagemaker(fx.server, { seed: 29, count: 2000, checkEvery: 100 });
    console.log(summary(s));
    expect(newFindings(s)).toBe("");
    expect(rate(s, "200")).toBeGreaterThan(0.05);
    expect(rate(s, "501")).toBeGreaterThan(0); // the multi-model routes, never served
    expect(fx.server.alive()).toBe(true);
  });

  it("Vertex AI: 2000 predict requests, with and without redirects, get Triton's Vertex AI answers, never a 500", async () => {
    const s = await fuzzVertex(fx.server, { seed: 29, count: 2000, checkEvery: 100 });
    console.log(summary(s));
    expect(newFindings(s)).toBe("");
    expect(rate(s, "200")).toBeGreaterThan(0.05);
    expect(rate(s, "403")).toBeGreaterThan(0); // redirects to endpoints that change state
    expect(fx.server.alive()).toBe(true);
  });
});

describe("fuzz corpus (#14)", () => {
  for (const c of CORPUS) {
    // Known-open cases (test/fuzz/known-open.ts) wait for their fixes on other branches.
    it.skipIf(isKnownOpen(c.id))(`${c.id}: ${c.item}`, async () => {
      const extra: { stop(): Promise<void> }[] = [];
      try {
        const problem = await c.run({
          server: fx.server,
          scratch: fx.scratch,
          base64Model: fx.modelBase64,
          startServer: async (args) => {
            const s = await startFuzzServer([`--model-repository=${fx.repoDir}`, ...args]);
            extra.push(s);
            return s;
          },
        });
        expect(problem).toBeUndefined();
        expect(fx.server.alive()).toBe(true);
        expect(fx.server.threadFailed()).toBeUndefined();
      } finally {
        await Promise.all(extra.map((s) => s.stop()));
      }
    });
  }
});
