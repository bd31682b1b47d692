/**
 * gRPC vs HTTP benchmark: ModelInfer on `simple` at concurrency 16 (h2load, Debian
 * package nghttp2-client) against HTTP JSON on the same server (wrk), and a 1 MB FP32
 * identity tensor over gRPC, HTTP binary and HTTP JSON, and the same JSON body against a
 * naive Bun.serve + ONNX Runtime server. Rounds of every cell in turn, medians.
 *
 *   npm run build && bun scripts/bench-grpc.ts [--duration=8] [--rounds=3] [--out=scripts/results/grpc.md]
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync, mkdirSync, appendFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { grpcFrame, simpleAndIdentityRepository } from "./lib/bench-models.ts";
import { machineHeading, waitReady, wrk } from "./lib/bench.ts";
import { naiveIdentityServerSource } from "./lib/naive-server.ts";

const root = resolve(import.meta.dir, "..");
const arg = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? def;
const DURATION = Number(arg("duration", "8"));
const ROUNDS = Number(arg("rounds", "3"));
const OUT = resolve(root, arg("out", "scripts/results/grpc.md"));
const BINARY = join(root, "dist", "nereid");
if (!existsSync(BINARY)) throw new Error("dist/nereid is missing: npm run build");
for (const tool of ["wrk", "h2load"]) if (spawnSync(tool, ["--version"]).error) throw new Error(`${tool} is not installed`);

const work = mkdtempSync(join(tmpdir(), "nereid-bench-grpc-"));
const repo = simpleAndIdentityRepository(root, work);

const server = spawn(BINARY, [`--model-repository=${repo}`, "--http-port=18700", "--grpc-port=18701", "--allow-metrics=false", "--log-info=false"], {
  stdio: "ignore",
});
await waitReady("http://127.0.0.1:18700/v2/health/ready");

const A = Int32Array.from({ length: 16 }, (_, i) => i);
const simpleProto = {
  model_name: "simple",
  inputs: [
    { name: "INPUT0", datatype: "INT32", shape: [1, 16] },
    { name: "INPUT1", datatype: "INT32", shape: [1, 16] },
  ],
  raw_input_contents: [new Uint8Array(A.buffer), new Uint8Array(A.buffer)],
};
const N1M = (1024 * 1024) / 4;
const big = new Float32Array(N1M).map((_, i) => (i % 1000) / 7);
const bigProto = { model_name: "fp32_identity", inputs: [{ name: "X", datatype: "FP32", shape: [N1M] }], raw_input_contents: [new Uint8Array(big.buffer)] };
writeFileSync(join(work, "simple.grpc"), grpcFrame(simpleProto));
writeFileSync(join(work, "big.grpc"), grpcFrame(bigProto));
writeFileSync(
  join(work, "simple.json"),
  JSON.stringify({
    inputs: [
      { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: [...A] },
      { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: [...A] },
    ],
  }),
);
writeFileSync(join(work, "big.json"), JSON.stringify({ inputs: [{ name: "X", shape: [N1M], datatype: "FP32", data: [...big] }] }));
const binHeader = JSON.stringify({
  inputs: [{ name: "X", shape: [N1M], datatype: "FP32", parameters: { binary_data_size: N1M * 4 } }],
  parameters: { binary_data_output: true },
});
writeFileSync(join(work, "big.bin"), Buffer.concat([Buffer.from(binHeader), Buffer.from(big.buffer)]));
const lua = (file: string, headerLength?: number) => {
  const p = join(work, `${file}.lua`);
  writeFileSync(
    p,
    `wrk.method = "POST"\nlocal f = io.open("${join(work, file)}", "rb"); wrk.body = f:read("*a"); f:close()\n${headerLength !== undefined ? `wrk.headers["Inference-Header-Content-Length"] = "${headerLength}"` : ""}\n`,
  );
  return p;
};

/** wrk on the server's HTTP port (or another), one thread; errors are non-2xx answers and timeouts. */
const wrkOn = (port: number, path: string, script: string, c: number) => wrk(`http://127.0.0.1:${port}${path}`, c, DURATION, script, { threads: 1 });

function h2load(file: string, c: number): { rps: number; failed: number } {
  const args = [
    "-D",
    String(DURATION),
    "-c",
    "1",
    "-m",
    String(c),
    "-t",
    "1",
    "-d",
    join(work, file),
    "-H",
    "content-type: application/grpc",
    "-H",
    "te: trailers",
    "http://127.0.0.1:18701/inference.GRPCInferenceService/ModelInfer",
  ];
  const out = spawnSync("h2load", args, { encoding: "utf8" }).stdout;
  const rps = Number(/finished in [\d.]+\w+, ([\d.]+) req\/s/.exec(out)?.[1] ?? 0);
  const failed = Number(/(\d+) failed/.exec(out)?.[1] ?? 0);
  return { rps, failed };
}

// The naive reference for 1 MB JSON: Bun.serve, req.json(), the same koffi session, Response.json.
writeFileSync(join(work, "naive.ts"), naiveIdentityServerSource(root, join(repo, "fp32_identity", "1", "model.onnx")));
const naive = spawn(process.execPath, [join(work, "naive.ts"), "18702"], { stdio: "ignore" });
await waitReady("http://127.0.0.1:18702/", 20_000, "POST", JSON.stringify({ inputs: [{ shape: [1], data: [1] }] }));

type Cell = { rps: number; failed: number };
const cells: Record<string, Cell[]> = {};
const add = (name: string, c: Cell) => (cells[name] ??= []).push(c);
for (let round = 0; round < ROUNDS; round++) {
  const j16 = wrkOn(18700, "/v2/models/simple/infer", lua("simple.json"), 16);
  add("simpleJson", { rps: j16.rps, failed: j16.errors });
  add("simpleGrpc", h2load("simple.grpc", 16));
  const bj = wrkOn(18700, "/v2/models/fp32_identity/infer", lua("big.json"), 4);
  add("bigJson", { rps: bj.rps, failed: bj.errors });
  const nj = wrkOn(18702, "/", lua("big.json"), 4);
  add("naiveJson", { rps: nj.rps, failed: nj.errors });
  const bb = wrkOn(18700, "/v2/models/fp32_identity/infer", lua("big.bin", Buffer.byteLength(binHeader)), 4);
  add("bigBin", { rps: bb.rps, failed: bb.errors });
  add("bigGrpc", h2load("big.grpc", 4));
  console.log(
    `round ${round + 1}: ${Object.entries(cells)
      .map(([k, v]) => `${k} ${v.at(-1)!.rps.toFixed(1)}${v.at(-1)!.failed ? ` (${v.at(-1)!.failed} failed)` : ""}`)
      .join(", ")}`,
  );
}
server.kill("SIGTERM");
naive.kill("SIGTERM");

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const m = (name: string) => median(cells[name]!.map((c) => c.rps));
const failed = (name: string) => cells[name]!.reduce((n, c) => n + c.failed, 0);
/** The median over rounds of a ratio taken within each round. */
const ratio = (a: string, b: string) => median(cells[a]!.map((c, i) => c.rps / cells[b]![i]!.rps));
const rows = [
  machineHeading(),
  "",
  `${ROUNDS} rounds of ${DURATION} s per cell, medians; ratios are medians of each round's ratio. gRPC load: h2load (one connection, c concurrent streams); HTTP: wrk (one thread). The naive server: Bun.serve, req.json(), the same koffi ONNX Runtime session, Response.json.`,
  "",
  "| request | c | req/s (failed) | ratio | target |",
  "| --- | --- | --- | --- | --- |",
  `| \`simple\` HTTP JSON | 16 | ${Math.round(m("simpleJson"))} (${failed("simpleJson")}) | 1 | |`,
  `| \`simple\` gRPC ModelInfer | 16 | ${Math.round(m("simpleGrpc"))} (${failed("simpleGrpc")}) | ${ratio("simpleGrpc", "simpleJson").toFixed(2)}× HTTP JSON | ≥ 0.6× |`,
  `| 1 MB FP32 identity, HTTP JSON | 4 | ${m("bigJson").toFixed(1)} (${failed("bigJson")}) | 1 | |`,
  `| 1 MB FP32 identity, JSON, naive server | 4 | ${m("naiveJson").toFixed(1)} (${failed("naiveJson")}) | Nereid ÷ naive: ${ratio("bigJson", "naiveJson").toFixed(2)} | ≥ 1.0 |`,
  `| 1 MB FP32 identity, HTTP binary | 4 | ${m("bigBin").toFixed(1)} (${failed("bigBin")}) | ${ratio("bigBin", "bigJson").toFixed(1)}× HTTP JSON | ≥ 3× |`,
  `| 1 MB FP32 identity, gRPC | 4 | ${m("bigGrpc").toFixed(1)} (${failed("bigGrpc")}) | ${ratio("bigGrpc", "bigJson").toFixed(1)}× HTTP JSON; ÷ HTTP binary: ${ratio("bigGrpc", "bigBin").toFixed(2)} | ≥ 3×; ÷ binary ≥ 0.8 |`,
  "",
];
mkdirSync(dirname(OUT), { recursive: true });
appendFileSync(OUT, rows.join("\n") + "\n");
console.log(rows.join("\n"));
process.exit(0);
