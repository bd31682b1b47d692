/**
 * `nereid perf` (the perf_analyzer equivalent) from dist/nereid against a running
 * dist/nereid (#18): exact request counts against the statistics extension, the server
 * split, perf_analyzer's CSV header, HTTP and gRPC, batch sizes, input data from a file,
 * request-rate mode, and clear errors. Stability is set loose (-s 100): what these
 * tests check is counting and formats, not the shared machine's steadiness.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serverCommand, startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
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

async function stats(model: string) {
  const res = await fetch(`${server.url}/v2/models/${model}/stats`);
  const s = ((await res.json()) as { model_stats: { inference_count: number; execution_count: number; inference_stats: { success: { count: number } } }[] }).model_stats[0]!;
  return { success: s.inference_stats.success.count, inferences: s.inference_count, executions: s.execution_count };
}

const num = (text: string, re: RegExp) => Number(re.exec(text)?.[1] ?? NaN);
const CSV_HEADER = "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency";

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
    expect(r.stdout).toMatch(/^    Avg request latency: \d+ usec \(overhead \d+ usec \+ queue \d+ usec \+ compute input \d+ usec \+ compute infer \d+ usec \+ compute output \d+ usec\)$/m);
    expect(r.stdout).toMatch(/^Inferences\/Second vs\. Client Average Batch Latency\nConcurrency: 1, throughput: [\d.]+ infer\/sec, latency \d+ usec\nConcurrency: 2, throughput: [\d.]+ infer\/sec, latency \d+ usec\n/m);
    // One request of batch 1 per execution: the server block's counts agree with each other.
    for (const block of r.stdout.split("  Server: ").slice(1)) {
      const n = num(block, /Successful request count: (\d+)/);
      expect(n).toBeGreaterThan(0);
      expect(num(block, /Inference count: (\d+)/)).toBe(n);
      expect(num(block, /Execution count: (\d+)/)).toBe(n);
    }
    const lines = readFileSync(csv, "utf8").trimEnd().split("\n");
    expect(lines[0]).toBe(CSV_HEADER);
    expect(lines.slice(1).map((l) => l.split(",")[0]).sort()).toEqual(["1", "2"]);
    for (const l of lines.slice(1)) expect(l.split(",")).toHaveLength(13);
    // Rows in increasing throughput, as perf_analyzer writes them.
    const tps = lines.slice(1).map((l) => Number(l.split(",")[1]));
    expect([...tps].sort((a, b) => a - b)).toEqual(tps);
  });

  it("over gRPC with -b 4: four inferences per request, p95 reports, zero data, --verbose-csv", async () => {
    const before = await stats("simple");
    const csv = join(dir, "grpc.csv");
    const r = await perf(["-m", "simple", "-i", "grpc", "-u", server.grpcTarget!, "-b", "4", "--percentile", "95", "--input-data", "zero", "-p", "300", "-s", "100", "-v", "-f", csv, "--verbose-csv"]);
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
    const r = await perf(["-m", "simple_identity", "-u", server.url.replace("http://", ""), "--input-data", file, "--shape", "INPUT0:1", "-p", "300", "-s", "100", "-v"]);
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
