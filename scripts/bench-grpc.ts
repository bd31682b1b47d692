/**
 * gRPC vs HTTP benchmark: ModelInfer on `simple` at concurrency 16 (h2load, Debian
 * package nghttp2-client) against HTTP JSON on the same server (wrk), and a 1 MB FP32
 * identity tensor over gRPC, HTTP binary and HTTP JSON. One run, one machine.
 *
 *   npm run build && bun scripts/bench-grpc.ts [--duration=8] [--out=scripts/results/grpc.md]
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync, mkdirSync, appendFileSync, existsSync, cpSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { messageType } from "../src/frontends/grpc/protos.ts";
import { encodeModel, valueInfo, node, ElemType } from "./lib/onnx-builder.ts";
import { machineHeading, waitReady } from "./lib/bench.ts";

const root = resolve(import.meta.dir, "..");
const arg = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? def;
const DURATION = Number(arg("duration", "8"));
const OUT = resolve(root, arg("out", "scripts/results/grpc.md"));
const BINARY = join(root, "dist", "nereid");
if (!existsSync(BINARY)) throw new Error("dist/nereid is missing: npm run build");
for (const tool of ["wrk", "h2load"]) if (spawnSync(tool, ["--version"]).error) throw new Error(`${tool} is not installed`);

const work = mkdtempSync(join(tmpdir(), "nereid-bench-grpc-"));
const repo = join(work, "models");
cpSync(join(root, "model_repository", "simple"), join(repo, "simple"), { recursive: true });
mkdirSync(join(repo, "fp32_identity", "1"), { recursive: true });
writeFileSync(join(repo, "fp32_identity", "config.pbtxt"), 'name: "fp32_identity"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 0\ninput [ { name: "X" data_type: TYPE_FP32 dims: [ -1 ] } ]\noutput [ { name: "Y" data_type: TYPE_FP32 dims: [ -1 ] } ]\ninstance_group [ { count: 1 kind: KIND_CPU } ]\n');
writeFileSync(join(repo, "fp32_identity", "1", "model.onnx"), encodeModel({ name: "id", inputs: [valueInfo("X", ElemType.FLOAT, ["n"])], outputs: [valueInfo("Y", ElemType.FLOAT, ["n"])], nodes: [node("Identity", ["X"], ["Y"])] }));

const server = spawn(BINARY, [`--model-repository=${repo}`, "--http-port=18700", "--grpc-port=18701", "--allow-metrics=false", "--log-info=false"], { stdio: "ignore" });
await waitReady("http://127.0.0.1:18700/v2/health/ready");

/** A gRPC message frame: compressed flag, 4-byte big-endian length, protobuf bytes. */
function grpcFrame(obj: object): Buffer {
  const t = messageType("inference.ModelInferRequest");
  const bytes = t.encode(t.fromObject(obj)).finish();
  const head = Buffer.alloc(5);
  head.writeUInt32BE(bytes.byteLength, 1);
  return Buffer.concat([head, Buffer.from(bytes)]);
}

const A = Int32Array.from({ length: 16 }, (_, i) => i);
const simpleProto = { model_name: "simple", inputs: [{ name: "INPUT0", datatype: "INT32", shape: [1, 16] }, { name: "INPUT1", datatype: "INT32", shape: [1, 16] }], raw_input_contents: [new Uint8Array(A.buffer), new Uint8Array(A.buffer)] };
const N1M = (1024 * 1024) / 4;
const big = new Float32Array(N1M).map((_, i) => (i % 1000) / 7);
const bigProto = { model_name: "fp32_identity", inputs: [{ name: "X", datatype: "FP32", shape: [N1M] }], raw_input_contents: [new Uint8Array(big.buffer)] };
writeFileSync(join(work, "simple.grpc"), grpcFrame(simpleProto));
writeFileSync(join(work, "big.grpc"), grpcFrame(bigProto));
writeFileSync(join(work, "simple.json"), JSON.stringify({ inputs: [{ name: "INPUT0", shape: [1, 16], datatype: "INT32", data: [...A] }, { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: [...A] }] }));
writeFileSync(join(work, "big.json"), JSON.stringify({ inputs: [{ name: "X", shape: [N1M], datatype: "FP32", data: [...big] }] }));
const binHeader = JSON.stringify({ inputs: [{ name: "X", shape: [N1M], datatype: "FP32", parameters: { binary_data_size: N1M * 4 } }], parameters: { binary_data_output: true } });
writeFileSync(join(work, "big.bin"), Buffer.concat([Buffer.from(binHeader), Buffer.from(big.buffer)]));
const lua = (file: string, headerLength?: number) => {
  const p = join(work, `${file}.lua`);
  writeFileSync(p, `wrk.method = "POST"\nlocal f = io.open("${join(work, file)}", "rb"); wrk.body = f:read("*a"); f:close()\n${headerLength !== undefined ? `wrk.headers["Inference-Header-Content-Length"] = "${headerLength}"` : ""}\n`);
  return p;
};

function wrk(path: string, script: string, c: number): number {
  const out = spawnSync("wrk", ["-t", "1", "-c", String(c), "-d", `${DURATION}s`, "-s", script, `http://127.0.0.1:18700${path}`], { encoding: "utf8" }).stdout;
  return Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0);
}

function h2load(file: string, c: number): { rps: number; failed: number } {
  const args = ["-D", String(DURATION), "-c", "1", "-m", String(c), "-t", "1", "-d", join(work, file), "-H", "content-type: application/grpc", "-H", "te: trailers", "http://127.0.0.1:18701/inference.GRPCInferenceService/ModelInfer"];
  const out = spawnSync("h2load", args, { encoding: "utf8" }).stdout;
  const rps = Number(/finished in [\d.]+\w+, ([\d.]+) req\/s/.exec(out)?.[1] ?? 0);
  const failed = Number(/(\d+) failed/.exec(out)?.[1] ?? 0);
  return { rps, failed };
}

const httpJson16 = wrk("/v2/models/simple/infer", lua("simple.json"), 16);
const grpc16 = h2load("simple.grpc", 16);
const bigJson = wrk("/v2/models/fp32_identity/infer", lua("big.json"), 4);
const bigBin = wrk("/v2/models/fp32_identity/infer", lua("big.bin", Buffer.byteLength(binHeader)), 4);
const bigGrpc = h2load("big.grpc", 4);
server.kill("SIGTERM");

const rows = [
  machineHeading(),
  "",
  `${DURATION} s per cell, one run. gRPC load: h2load (one connection, c concurrent streams); HTTP: wrk.`,
  "",
  "| request | c | req/s | ratio | target |",
  "| --- | --- | --- | --- | --- |",
  `| \`simple\` HTTP JSON | 16 | ${Math.round(httpJson16)} | 1 | |`,
  `| \`simple\` gRPC ModelInfer | 16 | ${Math.round(grpc16.rps)} (${grpc16.failed} failed) | ${(grpc16.rps / httpJson16).toFixed(2)}× HTTP JSON | ≥ 0.6× |`,
  `| 1 MB FP32 identity, HTTP JSON | 4 | ${bigJson.toFixed(1)} | 1 | |`,
  `| 1 MB FP32 identity, HTTP binary | 4 | ${bigBin.toFixed(1)} | ${(bigBin / bigJson).toFixed(1)}× HTTP JSON | ≥ 3× |`,
  `| 1 MB FP32 identity, gRPC | 4 | ${bigGrpc.rps.toFixed(1)} (${bigGrpc.failed} failed) | ${(bigGrpc.rps / bigJson).toFixed(1)}× HTTP JSON | ≥ 3× |`,
  "",
];
mkdirSync(dirname(OUT), { recursive: true });
appendFileSync(OUT, rows.join("\n") + "\n");
console.log(rows.join("\n"));
process.exit(0);
