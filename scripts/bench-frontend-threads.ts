/**
 * The HTTP and gRPC frontends on worker threads (--http-thread-count,
 * --grpc-infer-thread-count, #19): requests per second with both frontends on the main
 * thread (1) and each on 2 worker threads, on the same binary, in interleaved rounds
 * (medians), unpinned: `simple` over JSON at c=64 (wrk -t 2) and over gRPC at 64 streams
 * on 8 connections (h2load), and a 1 MB FP32 identity tensor over JSON at c=4 (wrk -t 1)
 * and over gRPC on 4 connections (h2load).
 *
 *   npm run build && bun scripts/bench-frontend-threads.ts [--duration=8] [--rounds=3] [--out=scripts/results/frontend-threads.md]
 */
import { spawnSync } from "node:child_process";
import { appendFileSync, existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { grpcFrame, simpleAndIdentityRepository } from "./lib/bench-models.ts";
import { machineHeading, waitReady, spawnThreadedServer } from "./lib/bench.ts";

const root = resolve(import.meta.dir, "..");
const arg = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? def;
const DURATION = Number(arg("duration", "8"));
const ROUNDS = Number(arg("rounds", "3"));
const OUT = resolve(root, arg("out", "scripts/results/frontend-threads.md"));
const BINARY = join(root, "dist", "nereid");
if (!existsSync(BINARY)) throw new Error("dist/nereid is missing: npm run build");
for (const tool of ["wrk", "h2load"])
  if (spawnSync(tool, ["--version"]).error) throw new Error(`${tool} is not installed (apt-get install wrk nghttp2-client)`);

const work = mkdtempSync(join(tmpdir(), "nereid-bench-threads-"));
const repo = simpleAndIdentityRepository(root, work);
const A = Array.from({ length: 16 }, (_, i) => i);
const N1M = 262_144;
const big = Array.from({ length: N1M }, (_, i) => (i % 1000) / 7);
writeFileSync(
  join(work, "simple.json"),
  JSON.stringify({
    inputs: [
      { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: A },
      { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: A },
    ],
  }),
);
writeFileSync(join(work, "big.json"), JSON.stringify({ inputs: [{ name: "X", shape: [N1M], datatype: "FP32", data: big }] }));
const lua = (file: string) => {
  const p = join(work, `${file}.lua`);
  writeFileSync(p, `wrk.method = "POST"\nlocal f = io.open("${join(work, file)}", "rb"); wrk.body = f:read("*a"); f:close()\n`);
  return p;
};
const PORT = 18750;
const GRPC_PORT = 18751;

const a = new Uint8Array(Int32Array.from(A).buffer);
writeFileSync(
  join(work, "simple.grpc"),
  grpcFrame({ model_name: "simple", inputs: ["INPUT0", "INPUT1"].map((name) => ({ name, datatype: "INT32", shape: [1, 16] })), raw_input_contents: [a, a] }),
);
writeFileSync(
  join(work, "big.grpc"),
  grpcFrame({
    model_name: "fp32_identity",
    inputs: [{ name: "X", datatype: "FP32", shape: [N1M] }],
    raw_input_contents: [new Uint8Array(Float32Array.from(big).buffer)],
  }),
);

function wrk(path: string, script: string, threads: number, c: number): { rps: number; failed: number } {
  const out = spawnSync("wrk", ["-t", String(threads), "-c", String(c), "-d", `${DURATION}s`, "-s", script, `http://127.0.0.1:${PORT}${path}`], {
    encoding: "utf8",
  }).stdout;
  return { rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0), failed: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0) };
}

/** h2load on `connections` connections with `streams` calls in flight on each; a failed call is one without grpc-status 0 as well. */
function h2load(file: string, connections: number, streams: number): { rps: number; failed: number } {
  const args = [
    "-D",
    String(DURATION),
    "-c",
    String(connections),
    "-m",
    String(streams),
    "-t",
    "1",
    "-d",
    join(work, file),
    "-H",
    "content-type: application/grpc",
    "-H",
    "te: trailers",
    `http://127.0.0.1:${GRPC_PORT}/inference.GRPCInferenceService/ModelInfer`,
  ];
  const out = spawnSync("h2load", args, { encoding: "utf8" }).stdout;
  return {
    rps: Number(/finished in [\d.]+\w+, ([\d.]+) req\/s/.exec(out)?.[1] ?? 0),
    failed: Number(/(\d+) failed/.exec(out)?.[1] ?? 0) + Number(/(\d+) errored/.exec(out)?.[1] ?? 0),
  };
}

const CELLS = ["simple JSON", "1 MB JSON", "simple gRPC", "1 MB gRPC"] as const;
type Cell = (typeof CELLS)[number];

async function measure(threads: number): Promise<Record<Cell, { rps: number; failed: number }>> {
  const server = spawnThreadedServer(BINARY, repo, PORT, GRPC_PORT, threads);
  try {
    await waitReady(`http://127.0.0.1:${PORT}/v2/health/ready`);
    return {
      "simple JSON": wrk("/v2/models/simple/infer", lua("simple.json"), 2, 64),
      "1 MB JSON": wrk("/v2/models/fp32_identity/infer", lua("big.json"), 1, 4),
      "simple gRPC": h2load("simple.grpc", 8, 8),
      "1 MB gRPC": h2load("big.grpc", 4, 1),
    };
  } finally {
    server.kill("SIGTERM");
    await new Promise((r) => server.once("exit", r));
  }
}

const runs: Record<number, Record<Cell, number[]>> = {};
const failed: Record<number, number> = { 1: 0, 2: 0 };
for (let r = 0; r < ROUNDS; r++) {
  for (const threads of [1, 2]) {
    const m = await measure(threads);
    runs[threads] ??= { "simple JSON": [], "1 MB JSON": [], "simple gRPC": [], "1 MB gRPC": [] };
    for (const cell of CELLS) {
      runs[threads]![cell].push(m[cell].rps);
      failed[threads]! += m[cell].failed;
    }
    console.log(`round ${r + 1}, ${threads} thread(s): ${CELLS.map((c) => `${c} ${m[c].rps.toFixed(1)}`).join(", ")} req/s`);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const rows = CELLS.map((cell) => {
  const one = median(runs[1]![cell]);
  const two = median(runs[2]![cell]);
  const where = { "simple JSON": "c=64", "1 MB JSON": "c=4", "simple gRPC": "8 connections × 8 streams", "1 MB gRPC": "4 connections" }[cell];
  return `| ${cell}, ${where} | ${one.toFixed(1)} | ${two.toFixed(1)} | ${(two / one).toFixed(2)} | ${cell === "simple JSON" ? "≥ 1.4" : ""} |`;
});
const text = `
${machineHeading()}

One dist/nereid per cell, unpinned, the load generators on the same machine; ${ROUNDS} interleaved rounds of ${DURATION} s per cell, medians. "1": the HTTP and gRPC frontends on the main thread (\`--http-thread-count=1 --grpc-infer-thread-count=1\`); "2": each on two worker threads, the core on the main thread.

| measure | 1 thread req/s | 2 threads req/s | 2 ÷ 1 | goal |
| --- | ---: | ---: | ---: | ---: |
${rows.join("\n")}

Failed requests: ${failed[1]} (1 thread), ${failed[2]} (2 threads). 1 MB gRPC ÷ 1 MB HTTP binary is measured by scripts/bench-grpc.ts.
`;
appendFileSync(OUT, text);
console.log(text);
