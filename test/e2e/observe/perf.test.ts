/**
 * `nereid perf` (the perf_analyzer equivalent) from dist/nereid against a running
 * dist/nereid (#18): exact request counts against the statistics extension, the server
 * split, perf_analyzer's CSV header, HTTP and gRPC, batch sizes, input data from a file,
 * request-rate mode, and clear errors. Stability is set loose (-s 100): what these
 * tests check is counting and formats, not the shared machine's steadiness.
 * Issue #33 item 4: failed requests counted, the server's error shown and exit 1;
 * sequence models (simple_sequence) with zero errors; b64 and per-input-file data (the
 * OCR ensemble with an image); -H; --streaming (a decoupled model); --shared-memory
 * system; --collect-metrics.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT, serverCommand, startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";

let repo: ReturnType<typeof makeRepository>;
let server: ServerProcess;
let dir: string;

beforeAll(async () => {
  repo = makeRepository(["simple", "simple_identity"]);
  server = await startServerProcess([`--model-repository=${repo.dir}`]);
  dir = mkdtempSync(join(tmpdir(), "nereid-perf-"));
});

afterAll(async () => {
  await server?.stop();
  repo?.remove();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Runs `nereid perf` with `args`; its exit code and output. */
function perf(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const { cmd, args: pre } = serverCommand();
  return new Promise((resolve) => {
    const child = spawn(cmd, [...pre, "perf", ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.once("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

async function stats(model: string, on: ServerProcess = server) {
  const res = await fetch(`${on.url}/v2/models/${model}/stats`);
  const s = ((await res.json()) as { model_stats: { inference_count: number; execution_count: number; inference_stats: { success: { count: number } } }[] })
    .model_stats[0]!;
  return { success: s.inference_stats.success.count, inferences: s.inference_count, executions: s.execution_count };
}

const num = (text: string, re: RegExp) => Number(re.exec(text)?.[1] ?? NaN);
const CSV_HEADER =
  "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency";

describe("nereid perf", () => {
  it("over HTTP: every request it sent is one the server counted, and -f writes perf_analyzer's CSV", async () => {
    const before = await stats("simple");
    const csv = join(dir, "http.csv");
    const r = await perf(["-m", "simple", "-u", server.url.replace("http://", ""), "--concurrency-range", "1:2", "-p", "300", "-s", "100", "-v", "-f", csv]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const after = await stats("simple");
    const sent = num(r.stdout, /^Requests sent in all: (\d+)$/m);
    expect(sent).toBeGreaterThan(0);
    expect(after.success - before.success).toBe(sent);
    expect(after.inferences - before.inferences).toBe(sent);
    expect(r.stdout).toMatch(/^Request concurrency: 1\n  Pass \[1\] throughput: [\d.]+ infer\/sec\. Avg latency: \d+ usec$/m);
    expect(r.stdout).toMatch(/^    Avg HTTP time: \d+ usec \(send\/recv \d+ usec \+ response wait \d+ usec\)$/m);
    expect(r.stdout).toMatch(
      /^    Avg request latency: \d+ usec \(overhead \d+ usec \+ queue \d+ usec \+ compute input \d+ usec \+ compute infer \d+ usec \+ compute output \d+ usec\)$/m,
    );
    expect(r.stdout).toMatch(
      /^Inferences\/Second vs\. Client Average Batch Latency\nConcurrency: 1, throughput: [\d.]+ infer\/sec, latency \d+ usec\nConcurrency: 2, throughput: [\d.]+ infer\/sec, latency \d+ usec\n/m,
    );
    // One request of batch 1 per execution: the server block's counts agree with each other.
    for (const block of r.stdout.split("  Server: ").slice(1)) {
      const n = num(block, /Successful request count: (\d+)/);
      expect(n).toBeGreaterThan(0);
      expect(num(block, /Inference count: (\d+)/)).toBe(n);
      expect(num(block, /Execution count: (\d+)/)).toBe(n);
    }
    const lines = readFileSync(csv, "utf8").trimEnd().split("\n");
    expect(lines[0]).toBe(CSV_HEADER);
    expect(
      lines
        .slice(1)
        .map((l) => l.split(",")[0])
        .sort(),
    ).toEqual(["1", "2"]);
    for (const l of lines.slice(1)) expect(l.split(",")).toHaveLength(13);
    // Rows in increasing throughput, as perf_analyzer writes them.
    const tps = lines.slice(1).map((l) => Number(l.split(",")[1]));
    expect([...tps].sort((a, b) => a - b)).toEqual(tps);
  });

  it("over gRPC with -b 4: four inferences per request, p95 reports, zero data, --verbose-csv", async () => {
    const before = await stats("simple");
    const csv = join(dir, "grpc.csv");
    const r = await perf([
      "-m",
      "simple",
      "-i",
      "grpc",
      "-u",
      server.grpcTarget!,
      "-b",
      "4",
      "--percentile",
      "95",
      "--input-data",
      "zero",
      "-p",
      "300",
      "-s",
      "100",
      "-v",
      "-f",
      csv,
      "--verbose-csv",
    ]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const after = await stats("simple");
    const sent = num(r.stdout, /^Requests sent in all: (\d+)$/m);
    expect(after.success - before.success).toBe(sent);
    expect(after.inferences - before.inferences).toBe(4 * sent);
    expect(after.executions - before.executions).toBe(sent);
    expect(r.stdout).toContain("  Batch size: 4\n");
    expect(r.stdout).toMatch(/^    Avg gRPC time: \d+ usec/m);
    expect(r.stdout).toMatch(/^Inferences\/Second vs\. Client p95 Batch Latency\nConcurrency: 1, throughput: [\d.]+ infer\/sec, latency \d+ usec\n/m);
    const block = r.stdout.split("  Server: ")[1]!;
    expect(num(block, /Inference count: (\d+)/)).toBe(4 * num(block, /Successful request count: (\d+)/));
    expect(readFileSync(csv, "utf8").split("\n")[0]).toBe(`${CSV_HEADER},Avg latency,request/response,response wait`);
  });

  it("reads --input-data from a JSON file and needs --shape only for variable dims it does not give", async () => {
    const file = join(dir, "data.json");
    writeFileSync(file, JSON.stringify({ data: [{ INPUT0: { content: ["a", "bc", "def"], shape: [3] } }, { INPUT0: ["x"] }] }));
    const before = await stats("simple_identity");
    const r = await perf([
      "-m",
      "simple_identity",
      "-u",
      server.url.replace("http://", ""),
      "--input-data",
      file,
      "--shape",
      "INPUT0:1",
      "-p",
      "300",
      "-s",
      "100",
      "-v",
    ]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect((await stats("simple_identity")).success - before.success).toBe(num(r.stdout, /^Requests sent in all: (\d+)$/m));
    const noShape = await perf(["-m", "simple_identity", "-u", server.url.replace("http://", ""), "-p", "300"]);
    expect(noShape.code).toBe(1);
    expect(noShape.stderr).toBe("input 'INPUT0' has variable dims [-1]: give them with --shape INPUT0:<d1>,<d2>,...\n");
  });

  it("--request-rate-range sends at a fixed rate and names the column Request Rate", async () => {
    const csv = join(dir, "rate.csv");
    const r = await perf(["-m", "simple", "-u", server.url.replace("http://", ""), "--request-rate-range", "200", "-p", "500", "-s", "100", "-f", csv]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Request Rate: 200 inference requests per seconds\n  Client: \n    Request count: \d+\n/m);
    const lines = readFileSync(csv, "utf8").trimEnd().split("\n");
    expect(lines[0]).toBe(CSV_HEADER.replace("Concurrency", "Request Rate"));
    expect(lines[1]!.split(",")[0]).toBe("200");
  });

  it("fails with a clear message and exit code 1 on bad flags and unknown models", async () => {
    const noModel = await perf(["-p", "100"]);
    expect(noModel.code).toBe(1);
    expect(noModel.stderr).toMatch(/^error: -m <model> is required\n/);
    const badRange = await perf(["-m", "simple", "--concurrency-range", "4:2"]);
    expect(badRange.code).toBe(1);
    expect(badRange.stderr).toMatch(/^error: invalid value '4:2' for --concurrency-range: the end is below the start\n/);
    const unknown = await perf(["-m", "nosuch", "-u", server.url.replace("http://", "")]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/: 404 Request for unknown model: 'nosuch' is not found\n$/);
  });
});

/** ts_repeat (decoupled): for input N, N responses OUT = 0..N-1, then a response-less final. */
const REPEAT = `
export default class Repeat {
  execute(requests) {
    for (const r of requests) {
      const n = r.input("N").data[0];
      const sender = r.getResponseSender();
      for (let i = 0; i < n; i++) sender.send({ outputs: [{ name: "OUT", datatype: "INT32", shape: [1], data: [i] }] });
      sender.send(undefined, { final: true });
    }
  }
}
`;

const OCR_MODELS = ["ocr", "ocr_pre", "ocr_det", "ocr_boxes", "ocr_cls", "ocr_rotate", "ocr_rec", "ocr_ctc"];

describe("nereid perf against what perf_analyzer users drive (#33 item 4)", () => {
  let full: ServerProcess;
  let locked: ServerProcess;
  let extra: string;
  let simpleOnly: ReturnType<typeof makeRepository>;
  const sent = (stdout: string) => num(stdout, /^Requests sent in all: (\d+)$/m);
  const http = (s: ServerProcess) => s.url.replace("http://", "");

  beforeAll(async () => {
    extra = mkdtempSync(join(tmpdir(), "nereid-perf-repo-"));
    mkdirSync(join(extra, "ts_repeat", "1"), { recursive: true });
    writeFileSync(
      join(extra, "ts_repeat", "config.pbtxt"),
      `name: "ts_repeat"\nbackend: "typescript"\nmax_batch_size: 0\nmodel_transaction_policy { decoupled: true }\ninput [ { name: "N" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]\n`,
    );
    writeFileSync(join(extra, "ts_repeat", "1", "model.ts"), REPEAT);
    simpleOnly = makeRepository(["simple"]);
    const loads = ["simple", "simple_sequence", "ts_repeat", ...OCR_MODELS].map((m) => `--load-model=${m}`);
    [full, locked] = await Promise.all([
      startServerProcess(
        [
          `--model-repository=${join(ROOT, "model_repository")}`,
          `--model-repository=${extra}`,
          "--model-control-mode=explicit",
          ...loads,
          "--allow-client-shm=true",
        ],
        { timeoutMs: 120_000 },
      ),
      startServerProcess([`--model-repository=${simpleOnly.dir}`, "--http-restricted-api=inference:infer-key=secret"]),
    ]);
  }, 180_000);

  afterAll(async () => {
    await full?.stop();
    await locked?.stop();
    if (extra) rmSync(extra, { recursive: true, force: true });
    simpleOnly?.remove();
  });

  it("simple_sequence over HTTP and gRPC: sequence ids, starts and ends sent, zero errors, every request counted by the server", async () => {
    for (const args of [
      ["-u", http(full), "--concurrency-range", "1:2", "--sequence-length", "5"],
      ["-i", "grpc", "-u", full.grpcTarget!, "--request-rate-range", "200", "--num-of-sequences", "3", "--sequence-id-range", "100:110"],
    ]) {
      const before = await stats("simple_sequence", full);
      const r = await perf(["-m", "simple_sequence", ...args, "-p", "300", "-s", "100", "-v"]);
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      expect(r.stdout).not.toContain("Failed request count");
      const n = sent(r.stdout);
      expect(n).toBeGreaterThan(0);
      expect((await stats("simple_sequence", full)).success - before.success).toBe(n);
    }
  });

  it("a load the server refuses: every failure counted, the server's error shown, exit 1; -H with the header it wants passes", async () => {
    const before = await stats("simple", locked);
    const r = await perf(["-m", "simple", "-u", http(locked), "-p", "200", "-v"]);
    expect(r.code).toBe(1);
    const n = sent(r.stdout);
    expect(n).toBeGreaterThan(0);
    expect(r.stdout).toMatch(/^    Request count: 0\n    Failed request count: \d+\n/m);
    expect(r.stderr).toBe(
      `Failed to retrieve results from inference request: ${n} of ${n} requests failed. The server answered:\n  ${n}x This API is restricted, expecting header 'infer-key'\n`,
    );
    expect((await stats("simple", locked)).success).toBe(before.success);
    const ok = await perf(["-m", "simple", "-u", http(locked), "-H", "infer-key: secret", "-p", "200", "-s", "100", "-v"]);
    expect(ok.stderr).toBe("");
    expect(ok.code).toBe(0);
    expect((await stats("simple", locked)).success - before.success).toBe(sent(ok.stdout));
  });

  it("b64 input data: raw INT32 items and a BYTES element", async () => {
    const ints = Buffer.from(new Int32Array(Array.from({ length: 16 }, (_, i) => i)).buffer).toString("base64");
    const file = join(dir, "b64.json");
    writeFileSync(file, JSON.stringify({ data: [{ INPUT0: { b64: ints }, INPUT1: { content: { b64: ints }, shape: [16] } }] }));
    const before = await stats("simple");
    const r = await perf(["-m", "simple", "-u", server.url.replace("http://", ""), "--input-data", file, "-p", "200", "-s", "100", "-v"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect((await stats("simple")).success - before.success).toBe(sent(r.stdout));
    const bytes = join(dir, "b64-bytes.json");
    writeFileSync(bytes, JSON.stringify({ data: [{ INPUT0: { b64: Buffer.from("hello\n").toString("base64"), shape: [1] } }] }));
    const s = await perf(["-m", "simple_identity", "-i", "grpc", "-u", server.grpcTarget!, "--input-data", bytes, "-p", "200", "-s", "100"]);
    expect(s.stderr).toBe("");
    expect(s.code).toBe(0);
    const short = join(dir, "b64-short.json");
    writeFileSync(short, JSON.stringify({ data: [{ INPUT0: { b64: "AAAA" }, INPUT1: { b64: ints } }] }));
    const bad = await perf(["-m", "simple", "-u", server.url.replace("http://", ""), "--input-data", short]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toBe(`--input-data ${short}: input 'INPUT0' of entry 0: 3 bytes given, expected 64 for INT32 shape [16]\n`);
  });

  it("the OCR ensemble with an image file from a directory named after its input, zero errors; random bytes show the model's error", async () => {
    const random = await perf(["-m", "ocr", "-u", http(full), "-p", "300"]);
    expect(random.code).toBe(1);
    expect(random.stderr).toMatch(
      /^Failed to retrieve results from inference request: (\d+) of \1 requests failed\. The server answered:\n  \1x .*'image' is not a PNG or JPEG file \(unknown signature\): send the bytes of a PNG or JPEG file\n$/,
    );
    const data = join(dir, "ocr-data");
    mkdirSync(data);
    writeFileSync(join(data, "image"), readFileSync(join(ROOT, "docs", "ocr-example.png")));
    const before = await stats("ocr", full);
    // -s 200: any three windows agree. What this checks is the counts, not a steady rate: the
    // OCR ensemble answers a few requests a window, which vary with the machine's load.
    const r = await perf(["-m", "ocr", "-u", http(full), "--input-data", data, "-p", "1000", "-s", "200", "-v"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const n = sent(r.stdout);
    expect(n).toBeGreaterThan(0);
    expect((await stats("ocr", full)).success - before.success).toBe(n);
  }, 60_000);

  it("--streaming drives a decoupled model over ModelStreamInfer; without it, perf says to use it", async () => {
    const file = join(dir, "repeat.json");
    writeFileSync(file, JSON.stringify({ data: [{ N: [3] }] }));
    const before = await stats("ts_repeat", full);
    const r = await perf([
      "-m",
      "ts_repeat",
      "-i",
      "grpc",
      "-u",
      full.grpcTarget!,
      "--streaming",
      "--concurrency-range",
      "2",
      "--input-data",
      file,
      "-p",
      "300",
      "-s",
      "100",
      "-v",
    ]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("  Using asynchronous calls for inference\n");
    expect((await stats("ts_repeat", full)).success - before.success).toBe(sent(r.stdout));
    const unary = await perf(["-m", "ts_repeat", "-i", "grpc", "-u", full.grpcTarget!, "--input-data", file]);
    expect(unary.code).toBe(1);
    expect(unary.stderr).toBe("model 'ts_repeat' is decoupled: measure it with -i grpc --streaming\n");
  });

  it("--shared-memory system: inputs through registered regions over HTTP and gRPC, unregistered at the end", async () => {
    for (const args of [
      ["-u", http(full)],
      ["-i", "grpc", "-u", full.grpcTarget!],
    ]) {
      const before = await stats("simple", full);
      const r = await perf(["-m", "simple", ...args, "--shared-memory", "system", "-p", "200", "-s", "100", "-v"]);
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      expect((await stats("simple", full)).success - before.success).toBe(sent(r.stdout));
      expect(await (await fetch(`${full.url}/v2/systemsharedmemory/status`)).json()).toEqual([]);
    }
    // The first server keeps client shared memory off (the default): its refusal is shown.
    const off = await perf(["-m", "simple", "-u", server.url.replace("http://", ""), "--shared-memory", "system"]);
    expect(off.code).toBe(1);
    expect(off.stderr).toMatch(/: 503 Client shared memory is disabled\. Start the server with '--allow-client-shm=true' to enable\.\n$/);
  });

  it("--collect-metrics scrapes the server's metrics URL during each setting", async () => {
    const r = await perf([
      "-m",
      "simple",
      "-u",
      http(full),
      "--collect-metrics",
      "--metrics-url",
      `${full.metricsUrl}/metrics`,
      "--metrics-interval",
      "100",
      "-p",
      "300",
      "-s",
      "100",
    ]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^  Server Prometheus Metrics: \n    Avg GPU Utilization:\n/m);
    expect(num(r.stdout, /^    Scrapes: (\d+)$/m)).toBeGreaterThanOrEqual(3);
  });
});
