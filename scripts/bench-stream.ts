/**
 * Streaming benchmark (issue #16): one stream carrying 1,000 small responses (INT32 [1])
 * from a decoupled TypeScript model, over gRPC ModelStreamInfer and over HTTP
 * generate_stream (SSE), against one unary request to an ordinary TypeScript model with
 * the same input and output, over the same protocol, in the same run. Everything at
 * concurrency 1 from one client (grpc-js and fetch under Bun), wall time on the client.
 * The figure asked for: the cost of one streamed response as a fraction of one unary
 * request's (target: at most a third).
 *
 *   npm run build && bun scripts/bench-stream.ts [--rounds=30] [--unary=2000] [--out=scripts/results/stream.md]
 */
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync, mkdirSync, appendFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { type Client, credentials, makeGenericClientConstructor, type ClientDuplexStream } from "@grpc/grpc-js";
import { serviceDefinition } from "../src/frontends/grpc/protos.ts";
import { machineHeading, waitReady } from "./lib/bench.ts";

const root = resolve(import.meta.dir, "..");
const arg = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? def;
const ROUNDS = Number(arg("rounds", "30"));
const UNARY = Number(arg("unary", "2000"));
const N = 1000;
const OUT = resolve(root, arg("out", "scripts/results/stream.md"));
const BINARY = join(root, "dist", "nereid");
if (!existsSync(BINARY)) throw new Error("dist/nereid is missing: npm run build");

const work = mkdtempSync(join(tmpdir(), "nereid-bench-stream-"));
const io = `input [ { name: "N" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]\n`;
const add = (path: string, text: string) => {
  mkdirSync(dirname(join(work, path)), { recursive: true });
  writeFileSync(join(work, path), text);
};
add("repeat/config.pbtxt", `name: "repeat"\nbackend: "typescript"\nmax_batch_size: 0\nmodel_transaction_policy { decoupled: true }\n${io}`);
add(
  "repeat/1/model.js",
  `export default class Repeat {
  execute(requests) {
    for (const r of requests) {
      const n = r.input("N").data[0];
      const sender = r.getResponseSender();
      for (let i = 0; i < n; i++) sender.send({ outputs: [{ name: "OUT", datatype: "INT32", shape: [1], data: [i] }] }, { final: i === n - 1 });
    }
  }
}
`,
);
add("unary/config.pbtxt", `name: "unary"\nbackend: "typescript"\nmax_batch_size: 0\n${io}`);
add(
  "unary/1/model.js",
  `export default class Unary {\n  execute(requests) {\n    return requests.map((r) => ({ outputs: [{ name: "OUT", datatype: "INT32", shape: [1], data: r.input("N").data }] }));\n  }\n}\n`,
);

const server = spawn(BINARY, [`--model-repository=${work}`, "--http-port=18800", "--grpc-port=18801", "--allow-metrics=false", "--log-info=false"], {
  stdio: "ignore",
});
await waitReady("http://127.0.0.1:18800/v2/models/repeat/ready");
await waitReady("http://127.0.0.1:18800/v2/models/unary/ready");

const Ctor = makeGenericClientConstructor(serviceDefinition("inference.GRPCInferenceService"), "GRPCInferenceService");
const client = new Ctor("127.0.0.1:18801", credentials.createInsecure()) as unknown as Client & {
  ModelStreamInfer: () => ClientDuplexStream<object, any>;
  ModelInfer: (req: object, cb: (err: unknown, res: any) => void) => void;
};
const request = (model: string, n: number) => ({
  model_name: model,
  inputs: [{ name: "N", datatype: "INT32", shape: [1] }],
  raw_input_contents: [Buffer.from(new Int32Array([n]).buffer)],
});

/** One stream; each round sends one request and waits for its N responses (the last is final). Returns ms per round. */
async function grpcStream(rounds: number): Promise<number[]> {
  const stream = client.ModelStreamInfer();
  const times: number[] = [];
  let got = 0;
  let done: (() => void) | undefined;
  stream.on("data", (m) => {
    if (m.error_message) throw new Error(m.error_message);
    got++;
    if (m.infer_response.parameters?.triton_final_response?.bool_param) done?.();
  });
  for (let r = 0; r < rounds; r++) {
    got = 0;
    const t0 = performance.now();
    await new Promise<void>((res) => {
      done = res;
      stream.write(request("repeat", N));
    });
    times.push(performance.now() - t0);
    if (got !== N) throw new Error(`gRPC stream: ${got} responses, expected ${N}`);
  }
  stream.end();
  return times;
}

async function grpcUnary(count: number): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    await new Promise<void>((res, rej) =>
      client.ModelInfer(request("unary", i), (err, r) =>
        err ? rej(err) : Buffer.from(r.raw_output_contents[0]).readInt32LE(0) === i ? res() : rej(new Error("wrong answer")),
      ),
    );
  }
  return (performance.now() - t0) / count;
}

async function sse(rounds: number): Promise<number[]> {
  const times: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now();
    const res = await fetch("http://127.0.0.1:18800/v2/models/repeat/generate_stream", { method: "POST", body: JSON.stringify({ N }) });
    const text = await res.text();
    times.push(performance.now() - t0);
    const events = text.split("\n\n").filter((e) => e.startsWith("data: ")).length;
    if (events !== N) throw new Error(`SSE: ${events} events, expected ${N}`);
  }
  return times;
}

async function httpUnary(count: number): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const res = await fetch("http://127.0.0.1:18800/v2/models/unary/infer", {
      method: "POST",
      body: JSON.stringify({ inputs: [{ name: "N", shape: [1], datatype: "INT32", data: [i] }] }),
    });
    const j = (await res.json()) as { outputs: { data: number[] }[] };
    if (j.outputs[0]!.data[0] !== i) throw new Error("wrong answer");
  }
  return (performance.now() - t0) / count;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

try {
  // Warm up both paths.
  await grpcStream(3);
  await grpcUnary(200);
  await sse(3);
  await httpUnary(200);

  const gStream = median(await grpcStream(ROUNDS));
  const gUnary = await grpcUnary(UNARY);
  const hStream = median(await sse(ROUNDS));
  const hUnary = await httpUnary(UNARY);

  const row = (proto: string, streamMs: number, unaryMs: number) => {
    const perResponseUs = (streamMs * 1000) / N;
    return `| ${proto} | ${streamMs.toFixed(1)} | ${Math.round(N / (streamMs / 1000)).toLocaleString("en-US")} | ${perResponseUs.toFixed(1)} | ${(unaryMs * 1000).toFixed(0)} | ${(perResponseUs / (unaryMs * 1000)).toFixed(3)} |`;
  };
  const text = [
    "",
    machineHeading(),
    "",
    `One stream, ${N} INT32 [1] responses per request from a decoupled TypeScript model (all sent from execute), median of ${ROUNDS} rounds; unary: ${UNARY} sequential requests to an ordinary TypeScript model with the same input and output. Client: grpc-js / fetch under Bun, concurrency 1, wall time on the client.`,
    "",
    "| protocol | ms per 1,000-response stream | responses/s | µs per streamed response | µs per unary request | streamed / unary |",
    "| --- | ---: | ---: | ---: | ---: | ---: |",
    row("gRPC ModelStreamInfer vs ModelInfer", gStream, gUnary),
    row("HTTP generate_stream (SSE) vs /infer (JSON)", hStream, hUnary),
    "",
  ].join("\n");
  if (!existsSync(OUT)) writeFileSync(OUT, "# Streaming benchmark (`npm run bench:stream`)\n");
  appendFileSync(OUT, text);
  console.log(text);
} finally {
  client.close();
  server.kill("SIGTERM");
}
