/**
 * Stall benchmark (issue #29): how long one large request holds up everyone else. One
 * client asks `simple` (HTTP JSON) every 5 ms; beside it, one large request at a time:
 * 1M BYTES elements into the ONNX `simple_identity` (HTTP JSON, HTTP binary, gRPC
 * raw_input_contents, gRPC typed contents), 8M BYTES elements (over the limit: refused),
 * and large FP32 outputs of a TypeScript model as JSON (8M elements, and 30M, which is
 * beyond the JSON output bound). The large request is sent by a child process so that
 * building and reading it never delays the probing client. Per case: the worst `simple`
 * latency while the large request ran, per round, the
 * large request's answer and time. Appends to scripts/results/stall.md.
 *
 *   npm run build && bun scripts/bench-stall.ts [--binary=dist/nereid] [--rounds=3] [--label=after] [--out=scripts/results/stall.md]
 */
import { spawn, type ChildProcess } from "node:child_process";
import { appendFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, openSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { credentials, makeGenericClientConstructor, type ServiceError } from "@grpc/grpc-js";
import { machineHeading, sleep, waitReady } from "./lib/bench.ts";
import { simpleAndIdentityRepository } from "./lib/bench-models.ts";
import { serviceDefinition } from "../src/frontends/grpc/protos.ts";
import { joinBytes } from "../src/core/tensor.ts";

const root = resolve(import.meta.dir, "..");
const arg = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? def;
const HTTP = 18730;
const GRPC = 18731;
const M1 = 1 << 20;

/** The BYTES elements of the large requests: short, distinct strings (one character for 8M, to fit in 64 MiB of JSON). */
const element = (i: number, n: number) => (n > M1 ? String(i % 10) : `s${i % 100_000}`);

interface Sent {
  status: string;
  ms: number;
}

/** Child mode: sends one large request (case `name`) and prints { status, ms }. */
async function send(name: string): Promise<Sent> {
  const t0 = performance.now();
  const done = (status: string): Sent => ({ status, ms: Math.round(performance.now() - t0) });
  const http = async (model: string, body: Uint8Array | string, headers: Record<string, string> = {}) => {
    const res = await fetch(`http://127.0.0.1:${HTTP}/v2/models/${model}/infer`, { method: "POST", body, headers });
    const text = await res.arrayBuffer();
    return done(res.status === 200 ? `200 (${text.byteLength} bytes)` : `${res.status}: ${new TextDecoder().decode(text).slice(0, 120)}`);
  };
  const strings = (n: number) => Array.from({ length: n }, (_, i) => element(i, n));
  const binaryBytes = (n: number) => {
    const enc = new TextEncoder();
    return joinBytes(strings(n).map((s) => enc.encode(s)));
  };
  const grpc = (request: object) =>
    new Promise<Sent>((res) => {
      const Ctor = makeGenericClientConstructor(serviceDefinition("inference.GRPCInferenceService"), "GRPCInferenceService");
      const client = new Ctor(`127.0.0.1:${GRPC}`, credentials.createInsecure(), {
        "grpc.max_receive_message_length": -1,
        "grpc.max_send_message_length": -1,
      }) as unknown as Record<string, (r: object, cb: (e: ServiceError | null, r: unknown) => void) => void>;
      client.ModelInfer!(request, (err) => res(done(err ? `gRPC ${err.code}: ${err.details.slice(0, 120)}` : "OK")));
    });
  const jsonBytes = (n: number) => JSON.stringify({ inputs: [{ name: "INPUT0", datatype: "BYTES", shape: [1, n], data: strings(n) }] });
  const binaryBody = (n: number) => {
    const data = binaryBytes(n);
    const header = JSON.stringify({
      inputs: [{ name: "INPUT0", datatype: "BYTES", shape: [1, n], parameters: { binary_data_size: data.byteLength } }],
      parameters: { binary_data_output: true },
    });
    const head = new TextEncoder().encode(header);
    const body = new Uint8Array(head.byteLength + data.byteLength);
    body.set(head);
    body.set(data, head.byteLength);
    return { body, headers: { "inference-header-content-length": String(head.byteLength) } };
  };
  const bigOut = (n: number) => JSON.stringify({ inputs: [{ name: "N", datatype: "INT32", shape: [1], data: [n] }] });
  // Bodies are built before the clock starts.
  let run: () => Promise<Sent>;
  switch (name) {
    case "json-1M": {
      const b = jsonBytes(M1);
      run = () => http("simple_identity", b);
      break;
    }
    case "binary-1M": {
      const { body, headers } = binaryBody(M1);
      run = () => http("simple_identity", body, headers);
      break;
    }
    case "grpc-raw-1M": {
      const d = binaryBytes(M1);
      run = () => grpc({ model_name: "simple_identity", inputs: [{ name: "INPUT0", datatype: "BYTES", shape: [1, M1] }], raw_input_contents: [d] });
      break;
    }
    case "grpc-contents-1M": {
      const e = new TextEncoder();
      const c = strings(M1).map((s) => e.encode(s));
      run = () => grpc({ model_name: "simple_identity", inputs: [{ name: "INPUT0", datatype: "BYTES", shape: [1, M1], contents: { bytes_contents: c } }] });
      break;
    }
    case "json-8M": {
      const b = jsonBytes(8 * M1);
      run = () => http("simple_identity", b);
      break;
    }
    case "grpc-raw-8M": {
      const d = binaryBytes(8 * M1);
      run = () => grpc({ model_name: "simple_identity", inputs: [{ name: "INPUT0", datatype: "BYTES", shape: [1, 8 * M1] }], raw_input_contents: [d] });
      break;
    }
    case "json-out-8M": {
      const b = bigOut(8 * M1);
      run = () => http("big_output", b);
      break;
    }
    case "json-out-30M": {
      const b = bigOut(30_000_000);
      run = () => http("big_output", b);
      break;
    }
    default:
      throw new Error(`unknown case ${name}`);
  }
  return run();
}

const CASES: [string, string][] = [
  ["json-1M", "1M BYTES in, HTTP JSON (identity, JSON out)"],
  ["binary-1M", "1M BYTES in, HTTP binary (identity, binary out)"],
  ["grpc-raw-1M", "1M BYTES in, gRPC raw_input_contents"],
  ["grpc-contents-1M", "1M BYTES in, gRPC bytes_contents"],
  ["json-8M", "8M BYTES in, HTTP JSON"],
  ["grpc-raw-8M", "8M BYTES in, gRPC raw_input_contents"],
  ["json-out-8M", "8M FP32 out as JSON (TypeScript model)"],
  ["json-out-30M", "30M FP32 out as JSON (TypeScript model)"],
];

if (process.argv.includes("--send")) {
  const name = arg("case", "");
  // Build first, then say so, then send: the parent starts probing on "ready".
  const p = send(name);
  console.log(JSON.stringify(await p));
  process.exit(0);
}

const ROUNDS = Number(arg("rounds", "3"));
const LABEL = arg("label", "");
const OUT = resolve(root, arg("out", "scripts/results/stall.md"));
const BINARY = resolve(arg("binary", join(root, "dist", "nereid")));
if (!existsSync(BINARY)) throw new Error(`${BINARY} is missing: npm run build`);

const work = mkdtempSync(join(tmpdir(), "nereid-bench-stall-"));
const repo = simpleAndIdentityRepository(root, work);
cpSync(join(root, "model_repository", "simple_identity"), join(repo, "simple_identity"), { recursive: true });
mkdirSync(join(repo, "big_output", "1"), { recursive: true });
writeFileSync(
  join(repo, "big_output", "config.pbtxt"),
  'name: "big_output"\nbackend: "typescript"\nmax_batch_size: 0\ninput [ { name: "N" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "Y" data_type: TYPE_FP32 dims: [ -1 ] } ]\n',
);
writeFileSync(
  join(repo, "big_output", "1", "model.ts"),
  `export default class BigOutput {
  execute(requests: any[]) {
    return requests.map((r) => {
      const n = r.input("N").data[0];
      const y = new Float32Array(n);
      for (let i = 0; i < n; i++) y[i] = (i % 1000) / 8;
      return { outputs: [{ name: "Y", datatype: "FP32", shape: [n], data: y }] };
    });
  }
}
`,
);

const log = openSync(join(work, "nereid.log"), "w");
const server: ChildProcess = spawn(
  BINARY,
  [`--model-repository=${repo}`, `--http-port=${HTTP}`, `--grpc-port=${GRPC}`, "--allow-metrics=false", "--log-info=false"],
  { stdio: ["ignore", log, log] },
);
const base = `http://127.0.0.1:${HTTP}`;
await waitReady(`${base}/v2/health/ready`, 120_000);

const A = Array.from({ length: 16 }, (_, i) => i);
const SIMPLE = JSON.stringify({
  inputs: [
    { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: A },
    { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: A },
  ],
});
async function probeOnce(): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${base}/v2/models/simple/infer`, { method: "POST", body: SIMPLE });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`simple: ${res.status}`);
  return performance.now() - t0;
}

/** Probes `simple` every 5 ms until `until` settles; the latencies. */
async function probeWhile(until: Promise<unknown>): Promise<number[]> {
  let settled = false;
  void until.finally(() => (settled = true));
  const out: number[] = [];
  while (!settled) {
    const start = performance.now();
    out.push(await probeOnce());
    const wait = 5 - (performance.now() - start);
    if (wait > 0) await sleep(wait);
  }
  return out;
}

/** Runs one case in a child process; resolves once it printed its result. */
function runCase(name: string): Promise<Sent> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [import.meta.path, "--send", `--case=${name}`], { stdio: ["ignore", "pipe", "inherit"] });
    let text = "";
    child.stdout!.on("data", (d) => (text += d));
    child.on("exit", (code) => (code === 0 ? res(JSON.parse(text) as Sent) : rej(new Error(`${name}: child exited ${code}`))));
  });
}

for (let i = 0; i < 200; i++) await probeOnce(); // warm-up
const idle = await probeWhile(sleep(2000));
const results: Record<string, { worst: number[]; sent: Sent[] }> = {};
for (let round = 0; round < ROUNDS; round++) {
  for (const [name] of CASES) {
    const sending = runCase(name);
    const lat = await probeWhile(sending);
    const sent = await sending;
    const r = (results[name] ??= { worst: [], sent: [] });
    r.worst.push(Math.max(...lat));
    r.sent.push(sent);
    console.log(
      `round ${round + 1} ${name}: worst simple ${Math.max(...lat).toFixed(1)} ms over ${lat.length} probes; large request ${sent.status} in ${sent.ms} ms`,
    );
    await sleep(500);
  }
}
// Wait for the port to be free again before the next run of the script.
await new Promise((res) => (server.once("exit", res), server.kill("SIGTERM")));

const sortedIdle = [...idle].sort((a, b) => a - b);
const rows = [
  machineHeading() + (LABEL ? ` (${LABEL})` : ""),
  "",
  `${ROUNDS} rounds; load average at the end ${loadavg()[0]!.toFixed(1)}. One client sends \`simple\` (HTTP JSON) every 5 ms; beside it, one large request at a time from another process. Idle \`simple\` latency: p50 ${sortedIdle[Math.floor(idle.length / 2)]!.toFixed(2)} ms, max ${sortedIdle.at(-1)!.toFixed(2)} ms.`,
  "",
  "| large request | worst `simple` latency per round, ms | large request: answer; time per round, ms |",
  "| --- | --- | --- |",
  ...CASES.map(([name, what]) => {
    const r = results[name]!;
    return `| ${what} | ${r.worst.map((w) => w.toFixed(0)).join(", ")} | ${r.sent.at(-1)!.status.slice(0, 60)}; ${r.sent.map((x) => x.ms).join(", ")} |`;
  }),
  "",
];
mkdirSync(dirname(OUT), { recursive: true });
appendFileSync(OUT, rows.join("\n") + "\n");
console.log(rows.join("\n"));
process.exit(0);
