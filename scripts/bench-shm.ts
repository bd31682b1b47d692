/**
 * 16 MB FP32 identity round trip (issue #7): system shared memory (input and output in
 * registered regions, a JSON request) vs the HTTP binary extension vs gRPC raw contents,
 * against dist/nereid, one client request at a time. Appends to scripts/results/shm.md.
 *
 *   npm run build && bun scripts/bench-shm.ts [--iterations=40]
 */
import { spawn, spawnSync } from "node:child_process";
import { appendFileSync, mkdirSync, mkdtempSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { machineHeading, waitReady } from "./lib/bench.ts";
import { credentials, makeGenericClientConstructor, type Client } from "@grpc/grpc-js";
import { serviceDefinition } from "../src/frontends/grpc/protos.ts";
import { ElemType, encodeModel, node, valueInfo } from "./lib/onnx-builder.ts";
import { SharedMemoryMapping, createSharedMemory, unlinkSharedMemory } from "../ffi/libc/shm.ts";

const root = resolve(import.meta.dir, "..");
const arg = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? def;
const N = Number(arg("iterations", "40"));
const OUT = resolve(root, arg("out", "scripts/results/shm.md"));
const BINARY = join(root, "dist", "nereid");
if (!existsSync(BINARY)) throw new Error("dist/nereid is missing: npm run build");

const BYTES = 16 * 1024 * 1024;
const COUNT = BYTES / 4;
const repo = mkdtempSync(join(tmpdir(), "nereid-bench-shm-"));
mkdirSync(join(repo, "fp32_identity", "1"), { recursive: true });
writeFileSync(
  join(repo, "fp32_identity", "config.pbtxt"),
  'name: "fp32_identity"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 0\ninput [ { name: "X" data_type: TYPE_FP32 dims: [ -1 ] } ]\noutput [ { name: "Y" data_type: TYPE_FP32 dims: [ -1 ] } ]\n',
);
writeFileSync(
  join(repo, "fp32_identity", "1", "model.onnx"),
  encodeModel({
    name: "id",
    inputs: [valueInfo("X", ElemType.FLOAT, ["n"])],
    outputs: [valueInfo("Y", ElemType.FLOAT, ["n"])],
    nodes: [node("Identity", ["X"], ["Y"])],
  }),
);

const httpPort = 18870;
const grpcPort = 18871;
const child = spawn(
  BINARY,
  [`--model-repository=${repo}`, `--http-port=${httpPort}`, `--grpc-port=${grpcPort}`, "--allow-metrics=false", "--log-info=false", "--allow-client-shm=true"],
  { stdio: "ignore" },
);
const base = `http://127.0.0.1:${httpPort}`;
await waitReady(`${base}/v2/health/ready`);

const data = new Float32Array(COUNT).map((_, i) => i);
const payload = new Uint8Array(data.buffer);

async function time(fn: () => Promise<void>): Promise<{ p50: number; mean: number }> {
  for (let i = 0; i < 3; i++) await fn();
  const ms: number[] = [];
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    await fn();
    ms.push(performance.now() - t0);
  }
  ms.sort((a, b) => a - b);
  return { p50: ms[Math.floor(N / 2)]!, mean: ms.reduce((a, b) => a + b, 0) / N };
}

// HTTP binary extension, driven by curl (one process, one kept-alive connection): Bun's
// fetch spends ~10x longer than the server on a 16 MiB body, which would measure the client.
const header = JSON.stringify({
  inputs: [{ name: "X", shape: [COUNT], datatype: "FP32", parameters: { binary_data_size: BYTES } }],
  parameters: { binary_data_output: true },
});
const bodyFile = join(repo, "body.bin");
writeFileSync(bodyFile, Buffer.concat([Buffer.from(header), Buffer.from(payload)]));
const curlArgs: string[] = [];
for (let i = 0; i < N + 3; i++) {
  if (i > 0) curlArgs.push("--next");
  curlArgs.push(
    "-s",
    "-o",
    "/dev/null",
    "-w",
    "%{http_code} %{size_download} %{time_total}\\n",
    "-H",
    `Inference-Header-Content-Length: ${Buffer.byteLength(header)}`,
    "--data-binary",
    `@${bodyFile}`,
    `${base}/v2/models/fp32_identity/infer`,
  );
}
const curl = spawnSync("curl", curlArgs, { encoding: "utf8", maxBuffer: 1 << 20 });
const curlMs = curl.stdout
  .trim()
  .split("\n")
  .slice(3)
  .map((line) => {
    const [code, size, t] = line.split(" ");
    if (code !== "200" || Number(size) < BYTES) throw new Error(`http: ${line}`);
    return Number(t) * 1000;
  })
  .sort((a, b) => a - b);
const http = { p50: curlMs[Math.floor(N / 2)]!, mean: curlMs.reduce((a, b) => a + b, 0) / N };

// gRPC raw contents.
const Ctor = makeGenericClientConstructor(serviceDefinition("inference.GRPCInferenceService"), "GRPCInferenceService");
const client = new Ctor(`127.0.0.1:${grpcPort}`, credentials.createInsecure(), {
  "grpc.max_receive_message_length": -1,
  "grpc.max_send_message_length": -1,
}) as Client & Record<string, (req: object, cb: (err: Error | null, res: { raw_output_contents: Uint8Array[] }) => void) => void>;
const grpc = await time(
  () =>
    new Promise<void>((res, rej) =>
      client.ModelInfer!({ model_name: "fp32_identity", inputs: [{ name: "X", datatype: "FP32", shape: [COUNT] }], raw_input_contents: [payload] }, (err, r) =>
        err ? rej(err) : r.raw_output_contents[0]!.byteLength === BYTES ? res() : rej(new Error("grpc: short output")),
      ),
    ),
);
client.close();

// System shared memory: the client writes its input into a region and reads the output from another.
const IN = `/nereid-bench-${process.pid}-in`;
const OUTR = `/nereid-bench-${process.pid}-out`;
createSharedMemory(IN, BYTES);
createSharedMemory(OUTR, BYTES);
const inMap = SharedMemoryMapping.open(IN, BYTES);
const outMap = SharedMemoryMapping.open(OUTR, BYTES);
for (const [name, key] of [
  ["in", IN],
  ["out", OUTR],
] as const) {
  const r = await fetch(`${base}/v2/systemsharedmemory/region/${name}/register`, {
    method: "POST",
    body: JSON.stringify({ key, offset: 0, byte_size: BYTES }),
  });
  if (r.status !== 200) throw new Error(`register ${name}: ${await r.text()}`);
}
const shmBody = JSON.stringify({
  inputs: [{ name: "X", shape: [COUNT], datatype: "FP32", parameters: { shared_memory_region: "in", shared_memory_byte_size: BYTES } }],
  outputs: [{ name: "Y", parameters: { shared_memory_region: "out", shared_memory_byte_size: BYTES } }],
});
const shm = await time(async () => {
  inMap.bytes.set(payload);
  const r = await fetch(`${base}/v2/models/fp32_identity/infer`, { method: "POST", body: shmBody });
  await r.arrayBuffer();
  if (r.status !== 200) throw new Error(`shm: ${r.status}`);
});
if (Buffer.compare(Buffer.from(outMap.bytes.subarray(0, 64)), Buffer.from(payload.subarray(0, 64))) !== 0) throw new Error("shm output mismatch");
inMap.unmap();
outMap.unmap();
unlinkSharedMemory(IN);
unlinkSharedMemory(OUTR);
child.kill("SIGTERM");

const row = (name: string, r: { p50: number; mean: number }) =>
  `| ${name} | ${r.p50.toFixed(2)} | ${r.mean.toFixed(2)} | ${((2 * BYTES) / 2 ** 20 / (r.p50 / 1000)).toFixed(0)} |`;
const lines = [
  machineHeading(),
  "",
  `16 MiB FP32 identity (in and out), ${N} sequential requests after 3 warm-ups, client in Bun on the same host.`,
  "",
  "| transport | p50 ms | mean ms | MiB/s moved (in + out) at p50 |",
  "| --- | --- | --- | --- |",
  row("system shared memory (JSON request, regions for input and output; client writes the input each time)", shm),
  row("HTTP binary extension (client: curl)", http),
  row("gRPC raw_input_contents / raw_output_contents (client: grpc-js in Bun)", grpc),
  "",
];
mkdirSync(dirname(OUT), { recursive: true });
appendFileSync(OUT, lines.join("\n") + "\n");
console.log(lines.join("\n"));
process.exit(0);
