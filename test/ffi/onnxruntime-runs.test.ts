/**
 * ONNX Runtime runs through the Backend interface: async runs leave the event loop free,
 * the three run modes agree, and instances and models release their handles safely. The
 * per-execute() cost of the run modes is measured by scripts/bench-ort-execute.ts.
 */
import { describe, it, expect, beforeAll, afterAll, vi } from "vitest";
import { ElemType, valueInfo, node } from "../../scripts/lib/onnx-builder.ts";
import { OrtSession } from "../../ffi/onnxruntime/session.ts";
import { borrowOrtInstance } from "../../src/backends/onnxruntime/backend.ts";
import type { Tensor } from "../../src/core/tensor.ts";
import {
  ModelDir,
  params,
  loadModel,
  instanceFor,
  rejection,
  bytesOf,
  int32s,
  float32s,
  addSubSpec,
  addSubInputs,
  matmulSpec,
  matmulInput,
  matmulReferenceRow,
  MATMUL_N,
} from "./ort-helpers.ts";

const dir = new ModelDir();
let mmPath: string;
let w: Float32Array;
beforeAll(() => {
  dir.open();
  const mm = matmulSpec();
  mmPath = dir.model(mm.spec);
  w = mm.w;
});
afterAll(() => dir.close());

/**
 * One ORT thread per run: ORT's default pool takes every core, and on a small machine
 * (CI has two) the OS then deschedules the JS thread for milliseconds at a time. That is
 * contention for cores, not a blocked event loop, and would make tick counts meaningless.
 */
const ONE_THREAD = { intra_op_thread_count: "1" };
/** 512 × 1024 × 1024 × 3 multiply-adds: tens of ms on one core. */
const BATCH = 512;

function expectCloseToReference(out: Tensor, x: Float32Array, row: number): void {
  const got = float32s(out).subarray(row * MATMUL_N, (row + 1) * MATMUL_N);
  const ref = matmulReferenceRow(x, w, row);
  const scale = Math.max(...ref.map(Math.abs));
  expect(scale).toBeGreaterThan(0);
  for (let j = 0; j < MATMUL_N; j++) expect(Math.abs(got[j]! - ref[j]!)).toBeLessThan(scale * 1e-4);
}

describe("run modes", () => {
  const input = matmulInput(BATCH);
  let asyncResult: Uint8Array;

  it("async: a 1 ms interval keeps firing while a MatMul run is in flight", async () => {
    const { inst, close } = await instanceFor(dir.path, mmPath, { name: "mm_async", parameters: params({ run_mode: "async", ...ONE_THREAD }) });
    try {
      await inst.execute([input.tensor()], ["Y"]); // warm-up: first-run allocations
      let ticks = 0;
      let ticksWhenDone = -1;
      const interval = setInterval(() => ticks++, 1);
      const t0 = performance.now();
      const pending = inst.execute([input.tensor()], ["Y"]).then((r) => {
        ticksWhenDone = ticks;
        return r;
      });
      const r = await pending;
      const ms = performance.now() - t0;
      clearInterval(interval);
      console.log(`MatMul [${BATCH},${MATMUL_N}]×3 async run: ${ms.toFixed(1)} ms, interval fired ${ticksWhenDone} times meanwhile`);
      expect(ticksWhenDone).toBeGreaterThanOrEqual(3);
      const out = r.outputs[0]!;
      expect([out.name, out.datatype, out.shape]).toEqual(["Y", "FP32", [BATCH, MATMUL_N]]);
      expectCloseToReference(out, input.x, 0);
      expectCloseToReference(out, input.x, BATCH - 1);
      asyncResult = out.data;
    } finally {
      close();
    }
  });

  it("sync: runs on the calling thread (no timer fires meanwhile) and gives the same bytes", async () => {
    const { inst, close } = await instanceFor(dir.path, mmPath, { name: "mm_sync", parameters: params({ run_mode: "sync", ...ONE_THREAD }) });
    try {
      let ticks = 0;
      const interval = setInterval(() => ticks++, 1);
      const t0 = performance.now();
      const r = await inst.execute([input.tensor()], ["Y"]);
      const ms = performance.now() - t0;
      clearInterval(interval);
      console.log(`MatMul [${BATCH},${MATMUL_N}]×3 sync run: ${ms.toFixed(1)} ms, interval fired ${ticks} times meanwhile`);
      expect(ticks).toBe(0);
      expect(Buffer.from(r.outputs[0]!.data).equals(Buffer.from(asyncResult))).toBe(true);
    } finally {
      close();
    }
  });

  it("auto: 20 runs of a slow model stay off the event loop and give identical bytes", async () => {
    const spy = vi.spyOn(OrtSession.prototype, "run");
    const { inst, close } = await instanceFor(dir.path, mmPath, { name: "mm_auto", parameters: params({ run_mode: "auto", ...ONE_THREAD }) });
    try {
      for (let i = 0; i < 20; i++) {
        const r = await inst.execute([input.tensor()], ["Y"]);
        expect(Buffer.from(r.outputs[0]!.data).equals(Buffer.from(asyncResult)), `run ${i}`).toBe(true);
      }
      expect(spy.mock.calls.map((c) => c[2])).toEqual(Array(20).fill(true));
    } finally {
      spy.mockRestore();
      close();
    }
  });

  // Regression: a missing pair of parentheses once kept "auto" on the worker thread forever.
  it("auto: a tiny model moves to the calling thread after its first run", async () => {
    const path = dir.model({
      name: "tiny",
      inputs: [valueInfo("X", ElemType.FLOAT, [-1])],
      outputs: [valueInfo("Y", ElemType.FLOAT, [-1])],
      nodes: [node("Identity", ["X"], ["Y"])],
    });
    const spy = vi.spyOn(OrtSession.prototype, "run");
    const { inst, close } = await instanceFor(dir.path, path, { name: "tiny_auto", parameters: params({ run_mode: "auto" }) });
    try {
      // The policy itself is tested on given run times (test/unit/backends/run-mode.test.ts);
      // here only that the instance follows it: the first run goes to the worker, and once
      // an Identity run comes back under 200 µs (one in 20, even on a loaded machine) the
      // next one is inline. Later moves back depend on the machine's load, so not asserted.
      for (let i = 0; i < 20; i++) await inst.execute([{ name: "X", datatype: "FP32", shape: [2], data: bytesOf(Float32Array.of(i, -i)) }], ["Y"]);
      const asyncFlags = spy.mock.calls.map((c) => c[2]);
      expect(asyncFlags[0]).toBe(true);
      expect(asyncFlags).toContain(false);
    } finally {
      spy.mockRestore();
      close();
    }
  });
});

describe("ownership", () => {
  const addSub = () => dir.model(addSubSpec("own_addsub"));

  it("instance.close() twice is safe; a later execute() is rejected", async () => {
    const { model, inst } = await instanceFor(dir.path, addSub(), { name: "own1" });
    await inst.execute(addSubInputs(1).inputs, []);
    inst.close();
    inst.close();
    await expect(inst.execute(addSubInputs(1).inputs, [])).rejects.toThrow("onnxruntime: session is closed");
    model.close();
  });

  it("model.close() twice is safe; instances outlive their model; no new instance after close", async () => {
    const model = await loadModel(dir.path, addSub(), { name: "own2" });
    const inst = await model.createInstance("own2_0", "KIND_CPU", 0);
    model.close();
    model.close();
    const { a, b, inputs } = addSubInputs(2);
    const r = await inst.execute(inputs, ["SUM"]);
    expect(int32s(r.outputs[0]!)).toEqual(a.map((x, i) => x + b[i]!));
    inst.close();
    const err = await rejection(model.createInstance("own2_1", "KIND_CPU", 0));
    expect([err.code, err.message]).toEqual(["INTERNAL", "model is closed"]);
  });

  it("closing an instance during an async run lets the run finish, then releases", async () => {
    const input = matmulInput(BATCH);
    const { model, inst } = await instanceFor(dir.path, mmPath, { name: "own3", parameters: params({ run_mode: "async", ...ONE_THREAD }) });
    const reference = (await inst.execute([input.tensor()], ["Y"])).outputs[0]!.data;
    // execute() returns with the run on koffi's worker; its result cannot arrive before we yield.
    let settled = false;
    const pending = inst.execute([input.tensor()], ["Y"]).finally(() => (settled = true));
    inst.close();
    inst.close();
    model.close();
    expect(settled).toBe(false);
    const r = await pending;
    expect(r.outputs[0]!.shape).toEqual([BATCH, MATMUL_N]);
    expect(Buffer.from(r.outputs[0]!.data).equals(Buffer.from(reference))).toBe(true);
    // Released once the run is done.
    await expect(inst.execute([input.tensor()], ["Y"])).rejects.toThrow("onnxruntime: session is closed");
    inst.close();
  });

  it("closing during several async runs lets all of them finish with their own results", async () => {
    const { model, inst } = await instanceFor(dir.path, addSub(), { name: "own4", parameters: params({ run_mode: "async" }) });
    const runs = Array.from({ length: 8 }, (_, k) => {
      const { a, b, inputs } = addSubInputs(k + 1, k * 1000);
      return { a, b, p: inst.execute(inputs, ["DIFF", "SUM"]) };
    });
    inst.close();
    model.close();
    for (const { a, b, p } of runs) {
      const r = await p;
      expect(int32s(r.outputs[0]!)).toEqual(a.map((x, i) => x - b[i]!));
      expect(int32s(r.outputs[1]!)).toEqual(a.map((x, i) => x + b[i]!));
    }
    await expect(inst.execute(addSubInputs(1).inputs, [])).rejects.toThrow("onnxruntime: session is closed");
  });

  // A frontend worker's copy of a shared session that is closing (its version left the table while a run was in flight) runs nothing new: the request goes to the main thread (undefined), not a 500.
  it("a borrowed session closing with a run in flight refuses the next borrowed run without an error", async () => {
    const { model, inst } = await instanceFor(dir.path, addSub(), { name: "own_borrowed", parameters: params({ run_mode: "async" }) });
    const borrowed = borrowOrtInstance(inst.share!());
    const { a, b, inputs } = addSubInputs(2);
    const first = borrowed.executeBorrowed(inputs, ["SUM"]);
    borrowed.close();
    expect(await borrowed.executeBorrowed(addSubInputs(1).inputs, ["SUM"])).toBeUndefined();
    expect(int32s((await first)!.outputs[0]!)).toEqual(a.map((x, i) => x + b[i]!));
    inst.close();
    model.close();
  });

  // A run asked for after close() is refused even while an earlier run keeps the session alive.
  it("an execute() after close() is rejected even while an earlier run is in flight", async () => {
    const { model, inst } = await instanceFor(dir.path, addSub(), { name: "own_late", parameters: params({ run_mode: "async" }) });
    const first = inst.execute(addSubInputs(1).inputs, []);
    inst.close();
    const late = inst.execute(addSubInputs(1).inputs, []);
    late.catch(() => {});
    await first;
    model.close();
    await expect(late).rejects.toThrow("onnxruntime: session is closed");
  });

  it("concurrent async runs on one instance each get their own outputs", async () => {
    const { inst, close } = await instanceFor(dir.path, addSub(), { name: "own5", parameters: params({ run_mode: "async" }) });
    try {
      const runs = Array.from({ length: 32 }, (_, k) => {
        const { a, b, inputs } = addSubInputs((k % 8) + 1, k * 17);
        return { a, b, p: inst.execute(inputs, k % 2 ? ["SUM", "DIFF"] : ["DIFF", "SUM"]), order: k % 2 ? ["SUM", "DIFF"] : ["DIFF", "SUM"] };
      });
      for (const { a, b, p, order } of runs) {
        const r = await p;
        expect(r.outputs.map((o) => o.name)).toEqual(order);
        const byName = Object.fromEntries(r.outputs.map((o) => [o.name, int32s(o)]));
        expect(byName.SUM).toEqual(a.map((x, i) => x + b[i]!));
        expect(byName.DIFF).toEqual(a.map((x, i) => x - b[i]!));
      }
    } finally {
      close();
    }
  });
});
