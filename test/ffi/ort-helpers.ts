/**
 * Shared by the ONNX Runtime binding tests and scripts/bench-ort-execute.ts (so nothing
 * here imports vitest): a temp folder for the models they build, loading through the
 * Backend interface, and small tensor helpers.
 */
import { LateRunner } from "../../src/core/runner.ts";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ElemType, valueInfo, node, initializer, encodeModel, type GraphSpec } from "../../scripts/lib/onnx-builder.ts";
import { OnnxRuntimeBackend } from "../../src/backends/onnxruntime/backend.ts";
import { ServerError } from "../../src/core/errors.ts";
import type { Tensor } from "../../src/core/tensor.ts";
import type { ModelConfig } from "../../src/core/model-config-types.ts";
import type { BackendInstance, BackendModel } from "../../src/backends/backend.ts";
import { OrtSessionOptions, type OrtEnvironment } from "../../ffi/onnxruntime/handles.ts";
import { OrtSession } from "../../ffi/onnxruntime/session.ts";
import { ONNX_TYPE } from "../../ffi/onnxruntime/symbols.ts";

export const backend = new OnnxRuntimeBackend();

/** A temp folder per test file; call from beforeAll / afterAll. */
export class ModelDir {
  path = "";
  open(): void {
    this.path = mkdtempSync(join(tmpdir(), "nereid-ffi-"));
  }
  close(): void {
    if (this.path) rmSync(this.path, { recursive: true, force: true });
  }
  write(name: string, bytes: Uint8Array): string {
    const p = join(this.path, `${name}.onnx`);
    writeFileSync(p, bytes);
    return p;
  }
  model(spec: GraphSpec): string {
    return this.write(spec.name, encodeModel(spec));
  }
}

/** `parameters` of a model config from plain strings. */
export function params(p: Record<string, string>): ModelConfig["parameters"] {
  return Object.fromEntries(Object.entries(p).map(([k, v]) => [k, { string_value: v }]));
}

export async function loadModel(dir: string, path: string, config: ModelConfig = {}): Promise<BackendModel> {
  const name = config.name ?? "m";
  return backend.load({
    config: { name, instance_group: [{ count: 1, kind: "KIND_CPU" }], ...config },
    modelName: name,
    version: 1,
    modelDir: dir,
    modelPath: path,
    backendConfig: {},
    runner: new LateRunner(),
  });
}

/** Loads the model and makes one CPU instance; the model is returned for closing. */
export async function instanceFor(dir: string, path: string, config: ModelConfig = {}): Promise<{ model: BackendModel; inst: BackendInstance; close(): void }> {
  const model = await loadModel(dir, path, config);
  const inst = await model.createInstance(`${config.name ?? "m"}_0`, "KIND_CPU", 0);
  return {
    model,
    inst,
    close() {
      inst.close();
      model.close();
    },
  };
}

/** The ServerError a promise rejects with (fails the test when it resolves or throws something else). */
export async function rejection(p: Promise<unknown>): Promise<ServerError> {
  let caught: unknown;
  try {
    await p;
  } catch (err) {
    caught = err;
  }
  if (!(caught instanceof ServerError))
    throw new Error(`expected a rejection with a ServerError, not ${caught === undefined ? "a resolved promise" : String(caught)}`);
  return caught;
}

export function bytesOf(a: ArrayBufferView): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength).slice();
}

export function int32s(t: Tensor): number[] {
  const d = t.data.slice();
  return [...new Int32Array(d.buffer, 0, d.byteLength / 4)];
}

export function float32s(t: Tensor): Float32Array {
  const d = t.data.slice();
  return new Float32Array(d.buffer, 0, d.byteLength / 4);
}

export function i32Tensor(name: string, shape: number[], values: ArrayLike<number>): Tensor {
  return { name, datatype: "INT32", shape, data: bytesOf(Int32Array.from(values)) };
}

/** A + B of two [1, 16] INT32 inputs of 5 and 2, run on a session of `env` made for the call. */
export async function runsAddSub(env: OrtEnvironment): Promise<Int32Array> {
  const dir = new ModelDir();
  dir.open();
  const options = new OrtSessionOptions(env.api, { intraOpThreads: 1, interOpThreads: 1, graphOptimizationLevel: 99, allowSpinning: false, memArena: true });
  try {
    const session = await OrtSession.open(env, dir.model(addSubSpec("runs_add_sub")), options);
    const input = (name: string, fill: number) => ({ name, elementType: ONNX_TYPE.INT32, shape: [1, 16], data: bytesOf(new Int32Array(16).fill(fill)) });
    try {
      const [sum] = await session.run([input("A", 5), input("B", 2)], ["SUM"], true);
      return new Int32Array(sum!.data.slice().buffer);
    } finally {
      session.close();
    }
  } finally {
    options.close();
    dir.close();
  }
}

/** A: INT32 [-1,16], B: INT32 [-1,16] → SUM = A + B, DIFF = A - B. */
export function addSubSpec(name = "addsub"): GraphSpec {
  return {
    name,
    inputs: [valueInfo("A", ElemType.INT32, ["batch", 16]), valueInfo("B", ElemType.INT32, ["batch", 16])],
    outputs: [valueInfo("SUM", ElemType.INT32, ["batch", 16]), valueInfo("DIFF", ElemType.INT32, ["batch", 16])],
    nodes: [node("Add", ["A", "B"], ["SUM"]), node("Sub", ["A", "B"], ["DIFF"])],
  };
}

export function addSubInputs(batch: number, seed = 0): { a: number[]; b: number[]; inputs: Tensor[] } {
  const a = Array.from({ length: 16 * batch }, (_, i) => i * 3 + seed - 100_000);
  const b = Array.from({ length: 16 * batch }, (_, i) => 1000 - i * 7 + seed * 2);
  return { a, b, inputs: [i32Tensor("A", [batch, 16], a), i32Tensor("B", [batch, 16], b)] };
}

export const MATMUL_N = 1024;

/** X [batch, 1024] · W · W · W with a fixed 1024×1024 W: slow enough to watch a run in flight. */
export function matmulSpec(name = "matmul"): { spec: GraphSpec; w: Float32Array } {
  const n = MATMUL_N;
  const w = new Float32Array(n * n).map((_, i) => ((i * 7919) % 13) / 13 - 0.5);
  return {
    w,
    spec: {
      name,
      inputs: [valueInfo("X", ElemType.FLOAT, ["batch", n])],
      outputs: [valueInfo("Y", ElemType.FLOAT, ["batch", n])],
      nodes: [node("MatMul", ["X", "W"], ["T1"]), node("MatMul", ["T1", "W"], ["T2"]), node("MatMul", ["T2", "W"], ["Y"])],
      initializers: [initializer("W", ElemType.FLOAT, [n, n], bytesOf(w))],
    },
  };
}

export function matmulInput(batch: number): { x: Float32Array; tensor: () => Tensor } {
  const x = new Float32Array(batch * MATMUL_N).map((_, i) => ((i * 31) % 11) / 11 - 0.25);
  return { x, tensor: () => ({ name: "X", datatype: "FP32", shape: [batch, MATMUL_N], data: bytesOf(x) }) };
}

/** Row `row` of X·W·W·W computed in float64, for a tolerance check of ORT's result. */
export function matmulReferenceRow(x: Float32Array, w: Float32Array, row: number): Float64Array {
  const n = MATMUL_N;
  let v = Float64Array.from(x.subarray(row * n, (row + 1) * n));
  for (let layer = 0; layer < 3; layer++) {
    const next = new Float64Array(n);
    for (let k = 0; k < n; k++) {
      const vk = v[k];
      if (vk === 0) continue;
      const base = k * n;
      for (let j = 0; j < n; j++) next[j] += vk * w[base + j];
    }
    v = next;
  }
  return v;
}
