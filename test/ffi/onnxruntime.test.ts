/**
 * The ONNX Runtime binding through the Backend interface: every Triton datatype,
 * runs off the event loop, errors, and handle ownership. Models are built here.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { mkdtempSync, writeFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir, availableParallelism } from "node:os";
import { join } from "node:path";
import { ElemType, valueInfo, node, initializer, encodeModel } from "../../scripts/lib/onnx-builder.ts";
import { OnnxRuntimeBackend, sessionConfig } from "../../src/backends/onnxruntime/backend.ts";
import { OrtRuntime } from "../../ffi/onnxruntime/handles.ts";
import { bindOrtApi } from "../../ffi/onnxruntime/symbols.ts";
import { joinBytes, type DataType, type Tensor } from "../../src/core/tensor.ts";
import type { ModelConfig } from "../../src/model-config/types.ts";
import type { BackendInstance } from "../../src/backends/backend.ts";

let dir: string;
const backend = new OnnxRuntimeBackend();
const enc = new TextEncoder();

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "nereid-ffi-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function writeModel(name: string, bytes: Uint8Array): string {
  const p = join(dir, `${name}.onnx`);
  writeFileSync(p, bytes);
  return p;
}

async function instanceFor(path: string, config: ModelConfig = {}, name = "m"): Promise<BackendInstance> {
  const model = await backend.load({ config: { name, instance_group: [{ count: 1, kind: "KIND_CPU" }], ...config }, modelName: name, version: 1, modelDir: dir, modelPath: path, backendConfig: {} });
  return model.createInstance(`${name}_0`, "KIND_CPU", 0);
}

const ELEM: Partial<Record<DataType, number>> = {
  BOOL: ElemType.BOOL, UINT8: ElemType.UINT8, UINT16: ElemType.UINT16, UINT32: ElemType.UINT32, UINT64: ElemType.UINT64,
  INT8: ElemType.INT8, INT16: ElemType.INT16, INT32: ElemType.INT32, INT64: ElemType.INT64, FP16: ElemType.FLOAT16,
  FP32: ElemType.FLOAT, FP64: ElemType.DOUBLE, BF16: ElemType.BFLOAT16, BYTES: ElemType.STRING,
};
const SIZE: Partial<Record<DataType, number>> = { BOOL: 1, UINT8: 1, INT8: 1, UINT16: 2, INT16: 2, FP16: 2, BF16: 2, UINT32: 4, INT32: 4, FP32: 4, UINT64: 8, INT64: 8, FP64: 8 };

describe("runtime", () => {
  it("is ONNX Runtime 1.30 with the CPU provider", () => {
    const rt = OrtRuntime.get();
    expect(rt.version).toBe("1.30.0");
    expect(rt.availableProviders()).toContain("CPUExecutionProvider");
    // Telemetry stays off: ORT would otherwise leave this file behind.
    expect(existsSync(`/tmp/mat-debug-${process.pid}.log`)).toBe(false);
  });

  it("names every place it looked when the library cannot be loaded", () => {
    expect(() => bindOrtApi(["/nonexistent/libonnxruntime.so.1"])).toThrow(
      /^cannot load ONNX Runtime \(libonnxruntime\.so\.1\); tried:\n {2}\/nonexistent\/libonnxruntime\.so\.1: /,
    );
  });
});

describe("every Triton datatype through an Identity model", () => {
  for (const dt of Object.keys(ELEM) as DataType[]) {
    it(dt, async () => {
      const path = writeModel(`identity_${dt}`, encodeModel({
        name: "id",
        inputs: [valueInfo("X", ELEM[dt]!, ["batch", 3])],
        outputs: [valueInfo("Y", ELEM[dt]!, ["batch", 3])],
        nodes: [node("Identity", ["X"], ["Y"])],
      }));
      const io = await backend.describe(path, {});
      expect(io).toEqual({ inputs: [{ name: "X", datatype: dt, shape: [-1, 3] }], outputs: [{ name: "Y", datatype: dt, shape: [-1, 3] }] });
      const data =
        dt === "BYTES"
          ? joinBytes(["", "héllo", "x".repeat(1 << 16), "a", "b", "c"].map((s) => enc.encode(s)))
          : Uint8Array.from({ length: 6 * SIZE[dt]! }, (_, i) => (dt === "BOOL" ? i % 2 : (i * 37 + 11) & 0xff));
      const inst = await instanceFor(path);
      const input: Tensor = { name: "X", datatype: dt, shape: [2, 3], data };
      const r = await inst.execute([input], ["Y"]);
      expect(r.outputs).toEqual([{ name: "Y", datatype: dt, shape: [2, 3], data }]);
      inst.close();
    });
  }
});

describe("Add/Sub and requested outputs", () => {
  let inst: BackendInstance;
  beforeAll(async () => {
    const path = writeModel("addsub", encodeModel({
      name: "addsub",
      inputs: [valueInfo("A", ElemType.INT32, ["batch", 16]), valueInfo("B", ElemType.INT32, ["batch", 16])],
      outputs: [valueInfo("SUM", ElemType.INT32, ["batch", 16]), valueInfo("DIFF", ElemType.INT32, ["batch", 16])],
      nodes: [node("Add", ["A", "B"], ["SUM"]), node("Sub", ["A", "B"], ["DIFF"])],
    }));
    inst = await instanceFor(path);
  });
  afterAll(() => inst.close());

  it("gives exact results at batch 1 and 8, outputs in the asked order", async () => {
    for (const batch of [1, 8]) {
      const a = Int32Array.from({ length: 16 * batch }, (_, i) => i * 3);
      const b = Int32Array.from({ length: 16 * batch }, (_, i) => 1000 - i);
      const r = await inst.execute(
        [{ name: "A", datatype: "INT32", shape: [batch, 16], data: new Uint8Array(a.buffer) }, { name: "B", datatype: "INT32", shape: [batch, 16], data: new Uint8Array(b.buffer) }],
        ["DIFF", "SUM"],
      );
      expect(r.outputs.map((o) => o.name)).toEqual(["DIFF", "SUM"]);
      expect([...new Int32Array(r.outputs[0]!.data.slice().buffer)]).toEqual([...a].map((x, i) => x - b[i]!));
      expect([...new Int32Array(r.outputs[1]!.data.slice().buffer)]).toEqual([...a].map((x, i) => x + b[i]!));
      expect(r.outputs[1]!.shape).toEqual([batch, 16]);
    }
    const only = await inst.execute(
      [{ name: "A", datatype: "INT32", shape: [1, 16], data: new Uint8Array(64) }, { name: "B", datatype: "INT32", shape: [1, 16], data: new Uint8Array(64) }],
      ["SUM"],
    );
    expect(only.outputs.map((o) => o.name)).toEqual(["SUM"]);
  });

  it("reports a bad run as an onnxruntime error and keeps working", async () => {
    await expect(
      inst.execute([{ name: "A", datatype: "INT32", shape: [1, 15], data: new Uint8Array(60) }, { name: "B", datatype: "INT32", shape: [1, 16], data: new Uint8Array(64) }], ["SUM"]),
    ).rejects.toThrow(/^onnxruntime: Run: ORT_/);
    const ok = await inst.execute(
      [{ name: "A", datatype: "INT32", shape: [1, 16], data: new Uint8Array(Int32Array.from({ length: 16 }, () => 2).buffer) }, { name: "B", datatype: "INT32", shape: [1, 16], data: new Uint8Array(64) }],
      ["SUM"],
    );
    expect([...new Int32Array(ok.outputs[0]!.data.slice().buffer)]).toEqual(Array(16).fill(2));
  });
});

describe("long runs leave the event loop free", () => {
  it("timers fire while an async MatMul runs, and sync/async/auto agree", async () => {
    const n = 1024;
    const w = new Float32Array(n * n).map((_, i) => ((i * 7919) % 13) / 13 - 0.5);
    const path = writeModel("matmul", encodeModel({
      name: "mm",
      inputs: [valueInfo("X", ElemType.FLOAT, ["batch", n])],
      outputs: [valueInfo("Y", ElemType.FLOAT, ["batch", n])],
      nodes: [node("MatMul", ["X", "W"], ["T1"]), node("MatMul", ["T1", "W"], ["T2"]), node("MatMul", ["T2", "W"], ["Y"])],
      initializers: [initializer("W", ElemType.FLOAT, [n, n], new Uint8Array(w.buffer))],
    }));
    const x = new Float32Array(64 * n).map((_, i) => (i % 5) / 5);
    const input = (): Tensor[] => [{ name: "X", datatype: "FP32", shape: [64, n], data: new Uint8Array(x.slice().buffer) }];
    const results: Uint8Array[] = [];
    for (const mode of ["async", "sync", "auto"]) {
      const inst = await instanceFor(path, { parameters: { run_mode: { string_value: mode } } }, `mm_${mode}`);
      // Which settles first: the run, or a timer armed right after the run started?
      const order: string[] = [];
      const run = inst.execute(input(), ["Y"]).then((r) => {
        order.push("run");
        return r;
      });
      setTimeout(() => order.push("timer"), 0);
      const r = await run;
      await new Promise((resolve) => setTimeout(resolve, 2));
      // 3 × 64×1024×1024 multiply-adds take milliseconds at least: an async run is still
      // in flight when the timer fires; a sync run finished before the timer was armed.
      if (mode === "async") expect(order).toEqual(["timer", "run"]);
      if (mode === "sync") expect(order).toEqual(["run", "timer"]);
      results.push(r.outputs[0]!.data);
      inst.close();
    }
    expect(results[1]).toEqual(results[0]);
    expect(results[2]).toEqual(results[0]);
  });
});

describe("errors and ownership", () => {
  it("a corrupt model file fails with ORT's reason", async () => {
    const path = writeModel("corrupt", new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9]));
    await expect(instanceFor(path)).rejects.toThrow(/^onnxruntime: CreateSession\(.*corrupt\.onnx\): ORT_(INVALID_PROTOBUF|FAIL|INVALID_GRAPH): /);
    await expect(backend.describe(join(dir, "missing.onnx"), {})).rejects.toThrow(/^onnxruntime: CreateSession\(.*missing\.onnx\): ORT_NO_SUCHFILE: /);
  });

  it("close() twice is safe for instances and models; a close during a run waits for it", async () => {
    const path = writeModel("id2", encodeModel({
      name: "id2",
      inputs: [valueInfo("X", ElemType.FLOAT, [2])],
      outputs: [valueInfo("Y", ElemType.FLOAT, [2])],
      nodes: [node("Identity", ["X"], ["Y"])],
    }));
    const model = await backend.load({ config: { name: "id2", parameters: { run_mode: { string_value: "async" } } }, modelName: "id2", version: 1, modelDir: dir, modelPath: path, backendConfig: {} });
    const inst = await model.createInstance("id2_0", "KIND_CPU", 0);
    const data = new Uint8Array(new Float32Array([1.5, -2]).buffer);
    const pending = inst.execute([{ name: "X", datatype: "FP32", shape: [2], data }], ["Y"]);
    inst.close();
    inst.close();
    expect((await pending).outputs[0]!.data).toEqual(data);
    await expect(inst.execute([{ name: "X", datatype: "FP32", shape: [2], data }], ["Y"])).rejects.toThrow("onnxruntime: session is closed");
    model.close();
    model.close();
  });

  it("maps Triton's onnxruntime parameters to session options", () => {
    const base: ModelConfig = { name: "m", instance_group: [{ count: 2 }] };
    expect(sessionConfig({ ...base, parameters: { intra_op_thread_count: { string_value: "3" }, inter_op_thread_count: { string_value: "2" }, enable_mem_arena: { string_value: "0" }, allow_spinning: { string_value: "true" } }, optimization: { graph: { level: -1 } } })).toEqual({
      intraOpThreads: 3, interOpThreads: 2, graphOptimizationLevel: 1, allowSpinning: true, memArena: false, entries: {},
    });
    expect(sessionConfig({ ...base, parameters: { "session.disable_prepacking": { string_value: "1" } } }).entries).toEqual({ "session.disable_prepacking": "1" });
    const d = sessionConfig(base);
    expect(d.intraOpThreads).toBe(Math.max(1, Math.floor(availableParallelism() / 2)));
    expect([d.interOpThreads, d.graphOptimizationLevel, d.allowSpinning, d.memArena]).toEqual([1, 99, false, true]);
    expect(sessionConfig({ ...base, optimization: { graph: { level: 1 } } }).graphOptimizationLevel).toBe(2);
    expect(() => sessionConfig({ ...base, parameters: { intra_op_thread_count: { string_value: "lots" } } })).toThrow(
      "model 'm': parameter 'intra_op_thread_count' must be a non-negative integer, got 'lots'",
    );
  });

  it("refuses execution accelerators and GPU instances on the CPU build", async () => {
    const path = writeModel("acc", encodeModel({ name: "acc", inputs: [valueInfo("X", ElemType.FLOAT, [1])], outputs: [valueInfo("Y", ElemType.FLOAT, [1])], nodes: [node("Identity", ["X"], ["Y"])] }));
    await expect(
      backend.load({ config: { name: "acc", optimization: { execution_accelerators: { gpu_execution_accelerator: [{ name: "tensorrt" }] } } }, modelName: "acc", version: 1, modelDir: dir, modelPath: path, backendConfig: {} }),
    ).rejects.toThrow("model 'acc': execution accelerator(s) 'tensorrt' are not available in this ONNX Runtime build (CPU only)");
    const model = await backend.load({ config: { name: "acc" }, modelName: "acc", version: 1, modelDir: dir, modelPath: path, backendConfig: {} });
    await expect(model.createInstance("g", "KIND_GPU", 0)).rejects.toThrow("KIND_GPU instances need the CUDA execution provider");
    model.close();
  });
});
