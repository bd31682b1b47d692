/**
 * The naive reference server of the HTTP benchmarks: `simple` served with nothing but
 * `req.json()` → the project's koffi OrtSession (called inline) → `Response.json`; no
 * validation, scheduling, statistics or Triton encoding. Returned as source text, run as
 * `bun <file> <port>`.
 */
import { join } from "node:path";

export function naiveServerSource(root: string, modelPath: string): string {
  return `
import { OrtEnvironment, OrtSessionOptions } from ${JSON.stringify(join(root, "ffi/onnxruntime/handles.ts"))};
import { OrtSession } from ${JSON.stringify(join(root, "ffi/onnxruntime/session.ts"))};
const env = OrtEnvironment.get();
const options = new OrtSessionOptions(env.api, { intraOpThreads: 1, interOpThreads: 1, graphOptimizationLevel: 99, allowSpinning: false, memArena: true });
const session = await OrtSession.open(env, ${JSON.stringify(modelPath)}, options);
const int32 = (d: number[]) => new Uint8Array(Int32Array.from(d).buffer);
Bun.serve({ port: Number(process.argv[2]), async fetch(req) {
  const body = (await req.json()) as { inputs: { data: number[] }[] };
  const out = await session.run([
    { name: "INPUT0", elementType: 6, shape: [1, 16], data: int32(body.inputs[0]!.data) },
    { name: "INPUT1", elementType: 6, shape: [1, 16], data: int32(body.inputs[1]!.data) },
  ], ["OUTPUT0", "OUTPUT1"], false, true);
  const data = (i: number) => Array.from(new Int32Array(out[i]!.data!.buffer, out[i]!.data!.byteOffset, 16));
  return Response.json({ model_name: "simple", model_version: "1", outputs: [
    { name: "OUTPUT0", datatype: "INT32", shape: [1, 16], data: data(0) },
    { name: "OUTPUT1", datatype: "INT32", shape: [1, 16], data: data(1) },
  ] });
} });
`;
}

/**
 * The naive reference server that #30's goal names: `simple` served with `req.json()` →
 * onnxruntime-node's `InferenceSession.run` (its N-API binding, the run on its own thread
 * pool) → `Response.json`, one intra-op thread, as reference/ceilings.md measured it.
 * Returned as source text, run as `bun <file> <port>`.
 */
export function naiveOrtNodeServerSource(root: string, modelPath: string): string {
  return `
import * as ort from ${JSON.stringify(join(root, "node_modules", "onnxruntime-node"))};
const session = await ort.InferenceSession.create(${JSON.stringify(modelPath)}, { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: "all" });
Bun.serve({ port: Number(process.argv[2]), async fetch(req) {
  const body = (await req.json()) as { inputs: { data: number[] }[] };
  const out = await session.run({
    INPUT0: new ort.Tensor("int32", Int32Array.from(body.inputs[0]!.data), [1, 16]),
    INPUT1: new ort.Tensor("int32", Int32Array.from(body.inputs[1]!.data), [1, 16]),
  });
  return Response.json({ model_name: "simple", model_version: "1", outputs: [
    { name: "OUTPUT0", datatype: "INT32", shape: [1, 16], data: Array.from(out.OUTPUT0!.data as Int32Array) },
    { name: "OUTPUT1", datatype: "INT32", shape: [1, 16], data: Array.from(out.OUTPUT1!.data as Int32Array) },
  ] });
} });
`;
}

/**
 * The same naive server for an FP32 identity model (`X` → `Y`, any length) over JSON:
 * `req.json()`, the values into a Float32Array, the koffi OrtSession, the output back
 * to a number array and `Response.json`.
 */
export function naiveIdentityServerSource(root: string, modelPath: string): string {
  return `
import { OrtEnvironment, OrtSessionOptions } from ${JSON.stringify(join(root, "ffi/onnxruntime/handles.ts"))};
import { OrtSession } from ${JSON.stringify(join(root, "ffi/onnxruntime/session.ts"))};
const env = OrtEnvironment.get();
const options = new OrtSessionOptions(env.api, { intraOpThreads: 1, interOpThreads: 1, graphOptimizationLevel: 99, allowSpinning: false, memArena: true });
const session = await OrtSession.open(env, ${JSON.stringify(modelPath)}, options);
Bun.serve({ port: Number(process.argv[2]), maxRequestBodySize: 1 << 30, async fetch(req) {
  const body = (await req.json()) as { inputs: { shape: number[]; data: number[] }[] };
  const x = Float32Array.from(body.inputs[0]!.data);
  const out = await session.run([{ name: "X", elementType: 1, shape: [x.length], data: new Uint8Array(x.buffer) }], ["Y"], false, true);
  const y = out[0]!.data!;
  const data = Array.from(new Float32Array(y.buffer, y.byteOffset, y.byteLength / 4));
  return Response.json({ model_name: "fp32_identity", model_version: "1", outputs: [{ name: "Y", datatype: "FP32", shape: [data.length], data }] });
} });
`;
}
