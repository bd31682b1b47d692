/**
 * Issue #34 item 4: Triton's own perf_analyzer (test/helpers/perf-analyzer.ts says which
 * build and why) against the compiled binary, over HTTP and gRPC: `simple`,
 * `simple_sequence` with --sequence-length (both also on ModelStreamInfer streams with
 * --streaming, which the gRPC workers serve), and the `ocr` ensemble with a real image as
 * --input-data. Each run's report is checked against Nereid's /v2/models/<m>/stats:
 *
 * - With --request-count N perf_analyzer sends exactly N requests and measures them all, so
 *   Nereid's success count rises by exactly N and its fail count by 0, and the report's
 *   client section says N. Its server section is perf_analyzer's reading of Nereid's
 *   statistics between two snapshots, the first taken after its workers have started
 *   sending (inference_profiler.cc: the load starts, then Measure() reads the statistics), so
 *   it may miss the first few answers: 0 < server ≤ N.
 * - In time windows (--concurrency-range 1:2) perf_analyzer reports only the requests that
 *   ended inside its last windows, while Nereid counts every request, so the relation is
 *   an inequality: Nereid's rise ≥ the sum of the report's counts (each reported request got
 *   a success answer, which Nereid counted before sending it), and no failures.
 *
 * --profile-export-file holds every measured request with its inputs and outputs; the
 * outputs are checked against what each model computes.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServerProcess, ROOT, type ServerProcess } from "../helpers/server-process.ts";
import { perfAnalyzer, type PerfAnalyzer } from "../helpers/perf-analyzer.ts";
import { ensureImageMagick, renderText } from "../helpers/render-text.ts";
import { joinBytes } from "../../src/core/tensor.ts";
import { csvHeader } from "../../src/perf/report.ts";
import { parsePerfArgs } from "../../src/perf/options.ts";

const OCR_LINES = ["NEREID SERVES OCR", "Triton 2026"];
const OCR_STEPS = ["ocr_boxes", "ocr_cls", "ocr_ctc", "ocr_det", "ocr_pre", "ocr_rec", "ocr_rotate"];

let server: ServerProcess;
let pa: PerfAnalyzer;
let dir: string;

beforeAll(async () => {
  pa = perfAnalyzer();
  ensureImageMagick();
  dir = mkdtempSync(join(tmpdir(), "nereid-perf-analyzer-"));
  server = await startServerProcess(
    [
      `--model-repository=${join(ROOT, "model_repository")}`,
      "--model-control-mode=explicit",
      ...["simple", "simple_sequence", "ocr"].map((m) => `--load-model=${m}`),
      "--allow-client-shm=true",
    ],
    { timeoutMs: 120_000 },
  );
}, 900_000);

afterAll(async () => {
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Counts {
  success: number;
  fail: number;
  execution: number;
}

async function counts(model: string): Promise<Counts> {
  const s = ((await (await fetch(`${server.url}/v2/models/${model}/stats`)).json()) as any).model_stats[0];
  return { success: s.inference_stats.success.count, fail: s.inference_stats.fail.count, execution: s.execution_count };
}

const rise = (after: Counts, before: Counts): Counts => ({
  success: after.success - before.success,
  fail: after.fail - before.fail,
  execution: after.execution - before.execution,
});

interface Run {
  stdout: string;
  /** --profile-export-file: one experiment per concurrency, each with its measured requests. */
  experiments: { experiment: { mode: string; value: number }; requests: ExportedRequest[] }[];
  csv: string[][];
}

interface ExportedRequest {
  timestamp: number;
  sequence_id?: number;
  request_inputs: Record<string, any>;
  response_outputs: Record<string, any>[];
}

/**
 * Runs perf_analyzer with `args` (plus the export and CSV files) and reads what it wrote.
 * Asynchronously: a test blocked for longer than the server's keep-alive idle time would
 * then send its next request down a connection the server has closed meanwhile.
 */
async function run(name: string, args: string[]): Promise<Run> {
  const exportFile = join(dir, `${name}.json`);
  const csvFile = join(dir, `${name}.csv`);
  const { stdout } = await promisify(execFile)(pa.bin, [...args, "--profile-export-file", exportFile, "-f", csvFile], {
    encoding: "utf8",
    env: pa.env,
    timeout: 240_000,
  });
  // BYTES inputs and outputs are written as raw bytes, not UTF-8: read the file byte for byte.
  const exported = JSON.parse(readFileSync(exportFile, "latin1"));
  const csv = readFileSync(csvFile, "utf8")
    .trim()
    .split("\n")
    .map((l) => l.split(","));
  return { stdout, experiments: exported.experiments, csv };
}

/** The report's "Request count" (client) and "Successful request count" (server) per concurrency. */
function reported(stdout: string): { client: number; server: number }[] {
  return stdout
    .split("Request concurrency: ")
    .slice(1)
    .map((section) => ({
      client: Number(/Client: \n\s+Request count: (\d+)/.exec(section)?.[1]),
      server: Number(/Server: \n(?:.*\n)*?\s+Successful request count: (\d+)/.exec(section)?.[1]),
    }));
}

/** The report of a --request-count run: N measured, 0 < Nereid's count in it ≤ N. */
function expectCounted(stdout: string, n: number): void {
  const [only, ...more] = reported(stdout);
  expect(more).toEqual([]);
  expect(only!.client).toBe(n);
  expect(only!.server).toBeGreaterThan(0);
  expect(only!.server).toBeLessThanOrEqual(n);
}

/** perf_analyzer's CSV columns as `nereid perf` writes them (src/perf/report.ts): the real tool must agree. */
const CSV_HEADER = csvHeader(parsePerfArgs(["-m", "simple"])).split(",");

/** `simple` computes OUTPUT0 = INPUT0 + INPUT1 and OUTPUT1 = INPUT0 − INPUT1 in int32. */
function expectSimpleAnswers(requests: ExportedRequest[]): void {
  for (const r of requests) {
    const a = r.request_inputs.INPUT0 as number[];
    const b = r.request_inputs.INPUT1 as number[];
    expect(a).toHaveLength(16);
    expect(r.response_outputs).toEqual([{ OUTPUT0: a.map((x, i) => (x + b[i]!) | 0), OUTPUT1: a.map((x, i) => (x - b[i]!) | 0) }]);
  }
}

describe("perf_analyzer against the binary", () => {
  for (const protocol of ["http", "grpc"] as const) {
    it(`simple over ${protocol}: exactly --request-count requests, each answered right, counted once in Nereid's statistics`, async () => {
      const url = protocol === "http" ? server.url.replace("http://", "") : server.grpcTarget!;
      const before = await counts("simple");
      const r = await run(`simple-${protocol}`, ["-m", "simple", "-i", protocol, "-u", url, "--concurrency-range", "2", "--request-count", "200"]);
      // simple has no dynamic batcher: one execution per request.
      expect(rise(await counts("simple"), before)).toEqual({ success: 200, fail: 0, execution: 200 });
      expectCounted(r.stdout, 200);
      expect(r.experiments.map((e) => [e.experiment, e.requests.length])).toEqual([[{ mode: "concurrency", value: 2 }, 200]]);
      expectSimpleAnswers(r.experiments[0]!.requests);
      expect(r.csv[0]).toEqual(CSV_HEADER);
      expect(r.csv.slice(1).map((row) => row[0])).toEqual(["2"]);
    });
  }

  for (const protocol of ["http", "grpc"] as const) {
    it(`simple over ${protocol} with --shared-memory system: inputs and outputs in its regions, exact counts, no failures, the regions unregistered at the end`, async () => {
      const url = protocol === "http" ? server.url.replace("http://", "") : server.grpcTarget!;
      const before = await counts("simple");
      const r = await run(`simple-shm-${protocol}`, [
        "-m",
        "simple",
        "-i",
        protocol,
        "-u",
        url,
        "--shared-memory",
        "system",
        "--output-shared-memory-size",
        "64",
        "--concurrency-range",
        "2",
        "--request-count",
        "100",
      ]);
      // tritonclient's C++ HTTP client refuses an output in shared memory that comes back with parameters.
      expect(r.stdout).not.toMatch(/had error/);
      expect(rise(await counts("simple"), before)).toEqual({ success: 100, fail: 0, execution: 100 });
      expectCounted(r.stdout, 100);
      expect(await (await fetch(`${server.url}/v2/systemsharedmemory/status`)).json()).toEqual([]);
    });
  }

  it("simple over gRPC with --streaming (ModelStreamInfer, served in the gRPC workers): exact counts, each answer right", async () => {
    const before = await counts("simple");
    const r = await run("simple-stream", [
      "-m",
      "simple",
      "-i",
      "grpc",
      "-u",
      server.grpcTarget!,
      "--streaming",
      "--concurrency-range",
      "2",
      "--request-count",
      "200",
    ]);
    expect(r.stdout).not.toMatch(/had error/);
    expect(rise(await counts("simple"), before)).toEqual({ success: 200, fail: 0, execution: 200 });
    expectCounted(r.stdout, 200);
    expect(r.experiments[0]!.requests).toHaveLength(200);
    expectSimpleAnswers(r.experiments[0]!.requests);
  });

  it("simple over HTTP in time windows at concurrency 1 and 2: Nereid counts at least what the report measured, and no failures", async () => {
    const before = await counts("simple");
    // -s 1000: on a shared CI machine the windows need not agree to count as stable.
    const r = await run("simple-windows", ["-m", "simple", "-u", server.url.replace("http://", ""), "--concurrency-range", "1:2", "-p", "300", "-s", "1000"]);
    const grown = rise(await counts("simple"), before);
    const report = reported(r.stdout);
    expect(report).toHaveLength(2);
    expect(grown.fail).toBe(0);
    expect(grown.execution).toBe(grown.success);
    const measured = report.reduce((n, c) => n + c.client, 0);
    expect(measured).toBeGreaterThan(0);
    expect(grown.success).toBeGreaterThanOrEqual(measured);
    // The report's server side is Nereid's own count over the measured windows: within the run.
    expect(grown.success).toBeGreaterThanOrEqual(report.reduce((n, c) => n + c.server, 0));
    expect(r.experiments.map((e) => e.experiment.value)).toEqual([1, 2]);
    const exported = r.experiments.flatMap((e) => e.requests);
    expect(grown.success).toBeGreaterThanOrEqual(exported.length);
    expectSimpleAnswers(exported);
    // One row per concurrency; perf_analyzer orders them by throughput, which at c=1 and 2 on a busy machine can come either way.
    expect(
      r.csv
        .slice(1)
        .map((row) => row[0])
        .sort(),
    ).toEqual(["1", "2"]);
  });

  it.each([
    ["HTTP", [] as string[]],
    ["gRPC with --streaming", ["-i", "grpc", "--streaming"]],
  ])("simple_sequence with --sequence-length over %s: exact counts, and each sequence's outputs are its running int32 sums", async (_over, how) => {
    const before = await counts("simple_sequence");
    const url = how.length > 0 ? server.grpcTarget! : server.url.replace("http://", "");
    const r = await run(`sequence${how.length > 0 ? "-stream" : ""}`, [
      "-m",
      "simple_sequence",
      ...how,
      "-u",
      url,
      "--concurrency-range",
      "2",
      "--sequence-length",
      "4",
      "--request-count",
      "200",
    ]);
    expect(rise(await counts("simple_sequence"), before)).toEqual({ success: 200, fail: 0, execution: 200 });
    expectCounted(r.stdout, 200);
    const requests = r.experiments[0]!.requests;
    expect(requests).toHaveLength(200);
    const sequences = new Map<number, ExportedRequest[]>();
    for (const q of requests) sequences.set(q.sequence_id!, [...(sequences.get(q.sequence_id!) ?? []), q]);
    // Lengths vary by ±20% around 4 (perf_analyzer's default variation): at least 200 / 5 sequences.
    expect(sequences.size).toBeGreaterThanOrEqual(40);
    for (const [id, seq] of sequences) {
      expect(id).toBeGreaterThan(0);
      seq.sort((x, y) => x.timestamp - y.timestamp);
      let sum = 0;
      for (const q of seq) {
        sum = (sum + (q.request_inputs.INPUT as number)) | 0;
        expect(q.response_outputs).toEqual([{ OUTPUT: sum }]);
      }
    }
  });

  it("the ocr ensemble with a rendered image as --input-data: exact counts for the ensemble and each of its steps, and the text read back", async () => {
    const png = renderText(OCR_LINES); // 1152 x 320, as test/e2e/ocr/ocr.test.ts reads it
    const inputData = join(dir, "ocr-input.json");
    // perf_analyzer's b64 form of a BYTES tensor is its serialized elements (length-prefixed).
    writeFileSync(inputData, JSON.stringify({ data: [{ image: { b64: Buffer.from(joinBytes([png])).toString("base64") } }] }));
    const models = ["ocr", ...OCR_STEPS];
    const before = await Promise.all(models.map(counts));
    const r = await run("ocr", [
      "-m",
      "ocr",
      "-u",
      server.url.replace("http://", ""),
      "--concurrency-range",
      "2",
      "--request-count",
      "4",
      "--input-data",
      inputData,
    ]);
    const after = await Promise.all(models.map(counts));
    // As Triton counts it, the ensemble executes once per request (its steps' compute summed); each step model runs once per request.
    expect(rise(after[0]!, before[0]!)).toEqual({ success: 4, fail: 0, execution: 4 });
    for (let i = 1; i < models.length; i++) expect([models[i], rise(after[i]!, before[i]!)]).toEqual([models[i], { success: 4, fail: 0, execution: 4 }]);
    // The report lists every step as a composing model, with Nereid's counts for it.
    const composing = [...r.stdout.matchAll(/^ {2}(ocr_\w+), version: 1\n(?:.*\n)*?\s+Successful request count: (\d+)/gm)].map((m) => [m[1], Number(m[2])]);
    expect(composing.map(([name]) => name)).toEqual(OCR_STEPS);
    for (const [, n] of composing) expect([1, 2, 3, 4]).toContain(n);
    expectCounted(r.stdout, 4);
    const requests = r.experiments[0]!.requests;
    expect(requests).toHaveLength(4);
    // perf_analyzer writes a BYTES output as its serialized elements less the first length:
    // line one, then line two's 4-byte little-endian length and its text.
    const second = OCR_LINES[1]!;
    const text = `${OCR_LINES[0]}${String.fromCharCode(second.length, 0, 0, 0)}${second}`;
    for (const q of requests) {
      expect(q.response_outputs).toHaveLength(1);
      expect(q.response_outputs[0]!.text).toBe(text);
      expect(q.response_outputs[0]!.scores).toHaveLength(2);
    }
  }, 240_000);
});
