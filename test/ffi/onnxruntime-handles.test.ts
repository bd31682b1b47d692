/**
 * Ownership at the handle level: every OrtValue a run creates (inputs, preallocated
 * outputs, outputs ORT allocates, string tensors) is released exactly once, on success
 * and on failure; each wrapper's close() releases once however often it is called.
 */
import { describe, it, expect, beforeAll, afterAll, afterEach, vi } from "vitest";
import { ElemType, valueInfo, node } from "../../scripts/lib/onnx-builder.ts";
import { OrtEnvironment, OrtMemoryInfo, OrtSessionOptions, type SessionConfig } from "../../ffi/onnxruntime/handles.ts";
import { OrtValue, type OrtInput } from "../../ffi/onnxruntime/value.ts";
import { OrtSession } from "../../ffi/onnxruntime/session.ts";
import { joinBytes } from "../../src/core/tensor.ts";
import { ONNX_TYPE, GRAPH_OPTIMIZATION_LEVEL } from "../../ffi/onnxruntime/symbols.ts";
import { ModelDir, addSubSpec, bytesOf } from "./ort-helpers.ts";

const dir = new ModelDir();
beforeAll(() => dir.open());
afterAll(() => dir.close());
afterEach(() => vi.restoreAllMocks());

const env = OrtEnvironment.get();
const CONFIG: SessionConfig = {
  intraOpThreads: 1,
  interOpThreads: 1,
  graphOptimizationLevel: GRAPH_OPTIMIZATION_LEVEL.ENABLE_ALL,
  allowSpinning: false,
  memArena: true,
};

/** Records the pointers passed to one of the API's release functions. */
function releases(fn: "ReleaseValue" | "ReleaseSession" | "ReleaseSessionOptions" | "ReleaseMemoryInfo") {
  return vi.spyOn(env.api, fn);
}

function i32Input(name: string, batch: number, fill: number): OrtInput {
  return { name, elementType: ONNX_TYPE.INT32, shape: [batch, 16], data: bytesOf(new Int32Array(batch * 16).fill(fill)) };
}

function sessionFor(path: string): { session: OrtSession; close(): void } {
  const options = new OrtSessionOptions(env.api, CONFIG);
  const session = new OrtSession(env, path, options);
  return { session, close: () => (session.close(), options.close()) };
}

function expectDistinctAndNonNull(calls: unknown[][], n: number): void {
  const ptrs = calls.map((c) => c[0]);
  expect(ptrs).toHaveLength(n);
  expect(ptrs.every((p) => typeof p === "bigint" && p !== 0n)).toBe(true);
  expect(new Set(ptrs).size).toBe(n);
}

describe("a run releases each of its OrtValues once", () => {
  it("async, batched: 2 inputs + 2 outputs preallocated in JS memory", async () => {
    const { session, close } = sessionFor(dir.model(addSubSpec("h_batched")));
    const spy = releases("ReleaseValue");
    const out = await session.run([i32Input("A", 3, 5), i32Input("B", 3, 2)], ["SUM", "DIFF"], true, true);
    expectDistinctAndNonNull(spy.mock.calls, 4);
    expect(new Int32Array(out[0]!.data.slice().buffer)).toEqual(new Int32Array(48).fill(7));
    expect(new Int32Array(out[1]!.data.slice().buffer)).toEqual(new Int32Array(48).fill(3));
    close();
  });

  it("sync, batched and small: the 4 values stay bound across runs and are released once, at close", async () => {
    const { session, close } = sessionFor(dir.model(addSubSpec("h_bound")));
    const spy = releases("ReleaseValue");
    const first = await session.run([i32Input("A", 3, 5), i32Input("B", 3, 2)], ["SUM", "DIFF"], false, true);
    const second = await session.run([i32Input("A", 3, 9), i32Input("B", 3, 1)], ["SUM", "DIFF"], false, true);
    expect(spy.mock.calls).toHaveLength(0);
    // Each run's outputs are its own copies: the second run did not change the first's.
    expect(new Int32Array(first[0]!.data.slice().buffer)).toEqual(new Int32Array(48).fill(7));
    expect(new Int32Array(second[0]!.data.slice().buffer)).toEqual(new Int32Array(48).fill(10));
    expect(new Int32Array(second[1]!.data.slice().buffer)).toEqual(new Int32Array(48).fill(8));
    close();
    expectDistinctAndNonNull(spy.mock.calls, 4);
  });

  it("sync, batched and small: runs that switch layouts (batch size, outputs asked for, input order) each get their own bound values", async () => {
    const { session, close } = sessionFor(dir.model(addSubSpec("h_layouts")));
    const spy = releases("ReleaseValue");
    const run = (inputs: OrtInput[], outputs: string[]) => session.run(inputs, outputs, false, true);
    const values = (o: { data: Uint8Array }) => [...new Int32Array(o.data.slice().buffer)];
    const b3 = await run([i32Input("A", 3, 5), i32Input("B", 3, 2)], ["SUM", "DIFF"]);
    const b1 = await run([i32Input("A", 1, 4), i32Input("B", 1, 1)], ["SUM", "DIFF"]);
    const b3again = await run([i32Input("A", 3, 8), i32Input("B", 3, 6)], ["SUM", "DIFF"]);
    const diffOnly = await run([i32Input("A", 3, 1), i32Input("B", 3, 4)], ["DIFF"]);
    const swapped = await run([i32Input("B", 1, 10), i32Input("A", 1, 3)], ["SUM", "DIFF"]);
    const b1again = await run([i32Input("A", 1, 0), i32Input("B", 1, 2)], ["SUM", "DIFF"]);
    expect(b3.map((o) => o.shape)).toEqual([
      [3, 16],
      [3, 16],
    ]);
    expect(values(b3[0]!)).toEqual(Array(48).fill(7));
    expect(values(b3[1]!)).toEqual(Array(48).fill(3));
    expect(b1.map((o) => o.shape)).toEqual([
      [1, 16],
      [1, 16],
    ]);
    expect([values(b1[0]!), values(b1[1]!)]).toEqual([Array(16).fill(5), Array(16).fill(3)]);
    expect([values(b3again[0]!), values(b3again[1]!)]).toEqual([Array(48).fill(14), Array(48).fill(2)]);
    expect(diffOnly.map((o) => o.name)).toEqual(["DIFF"]);
    expect(values(diffOnly[0]!)).toEqual(Array(48).fill(-3));
    expect([values(swapped[0]!), values(swapped[1]!)]).toEqual([Array(16).fill(13), Array(16).fill(-7)]);
    expect([values(b1again[0]!), values(b1again[1]!)]).toEqual([Array(16).fill(2), Array(16).fill(-2)]);
    expect(spy.mock.calls).toHaveLength(0);
    close();
    // Four layouts: batch 3 and batch 1 with both outputs (4 values each), DIFF alone (3), B before A (4).
    expectDistinctAndNonNull(spy.mock.calls, 15);
  });

  for (const [mode, async] of [
    ["sync", false],
    ["async", true],
  ] as const) {
    it(`${mode}, not batched: 2 inputs + 2 outputs ORT allocates`, async () => {
      const { session, close } = sessionFor(dir.model(addSubSpec("h_unbatched")));
      const spy = releases("ReleaseValue");
      const out = await session.run([i32Input("A", 2, 5), i32Input("B", 2, 2)], ["DIFF"], async, false);
      expectDistinctAndNonNull(spy.mock.calls, 3);
      expect(out.map((o) => [o.name, o.shape])).toEqual([["DIFF", [2, 16]]]);
      close();
    });
  }

  it("string tensors in and out", async () => {
    const { session, close } = sessionFor(
      dir.model({
        name: "h_strings",
        inputs: [valueInfo("X", ElemType.STRING, [-1])],
        outputs: [valueInfo("Y", ElemType.STRING, [-1])],
        nodes: [node("Identity", ["X"], ["Y"])],
      }),
    );
    const spy = releases("ReleaseValue");
    // Serialized as Triton does; one element holds a 0 byte (written at its exact length).
    const data = joinBytes([Uint8Array.of(1, 2), Uint8Array.of(), Uint8Array.of(0, 9)]);
    const out = await session.run([{ name: "X", elementType: ONNX_TYPE.STRING, shape: [3], data }], ["Y"], false);
    expectDistinctAndNonNull(spy.mock.calls, 2);
    expect(out[0]!.data).toEqual(data);
    // 2^17 elements of every length from 0 to 99 (the long ones copied whole), exact both ways.
    const enc = new TextEncoder();
    const many = joinBytes(Array.from({ length: 2 ** 17 }, (_, i) => enc.encode(`é${i}`.padEnd(i % 100, "x"))));
    const big = await session.run([{ name: "X", elementType: ONNX_TYPE.STRING, shape: [2 ** 17], data: many }], ["Y"], true);
    expect(big[0]!.shape).toEqual([2 ** 17]);
    expect(Buffer.compare(big[0]!.data, many)).toBe(0);
    // The same with a 0 byte in every 1000th element (each written at its exact length).
    const zeros = joinBytes(Array.from({ length: 2 ** 17 }, (_, i) => (i % 1000 === 0 ? Uint8Array.of(7, 0, 7) : enc.encode(`z${i}`))));
    const back = await session.run([{ name: "X", elementType: ONNX_TYPE.STRING, shape: [2 ** 17], data: zeros }], ["Y"], false);
    expect(Buffer.compare(back[0]!.data, zeros)).toBe(0);
    close();
  });

  it("string input whose framing does not match its shape → INVALID_ARG, nothing leaked", async () => {
    const { session, close } = sessionFor(
      dir.model({
        name: "h_strings_bad",
        inputs: [valueInfo("X", ElemType.STRING, [-1])],
        outputs: [valueInfo("Y", ElemType.STRING, [-1])],
        nodes: [node("Identity", ["X"], ["Y"])],
      }),
    );
    const spy = releases("ReleaseValue");
    // Two elements declared; the first claims the bytes the second's prefix needs.
    const data = Uint8Array.of(4, 0, 0, 0, 97, 98, 99, 100);
    await expect(session.run([{ name: "X", elementType: ONNX_TYPE.STRING, shape: [2], data }], ["Y"], false)).rejects.toThrow(
      "onnxruntime: string input 'X': element 0 runs past the end of the data",
    );
    await expect(
      session.run([{ name: "X", elementType: ONNX_TYPE.STRING, shape: [1], data: Uint8Array.of(1, 0, 0, 0, 97, 98) }], ["Y"], false),
    ).rejects.toThrow("onnxruntime: string input 'X': 1 bytes follow the last of its 1 elements");
    // Each failed run released the one value it had made (the same address may come back).
    expect(spy.mock.calls.map((c) => typeof c[0] === "bigint" && c[0] !== 0n)).toEqual([true, true]);
    close();
  });

  it("a failed Run still releases every value it created, and the session stays usable", async () => {
    const { session, close } = sessionFor(dir.model(addSubSpec("h_fail")));
    const spy = releases("ReleaseValue");
    await expect(session.run([i32Input("A", 1, 1), i32Input("NOPE", 1, 1)], ["SUM"], true, true)).rejects.toThrow(
      /^onnxruntime: Run: ORT_INVALID_ARGUMENT: .*NOPE/,
    );
    // NOPE is not an input of the model, so no batch size is known and SUM is not preallocated.
    expectDistinctAndNonNull(spy.mock.calls, 2);
    // Mismatched shapes fail inside ORT's kernels.
    spy.mockClear();
    await expect(session.run([i32Input("A", 1, 1), { ...i32Input("B", 1, 1), shape: [2, 8] }], ["SUM", "DIFF"], false, false)).rejects.toThrow(
      /^onnxruntime: Run: /,
    );
    expect(spy.mock.calls.length).toBeGreaterThanOrEqual(2);
    expect(new Set(spy.mock.calls.map((c) => c[0])).size).toBe(spy.mock.calls.length);
    const ok = await session.run([i32Input("A", 1, 4), i32Input("B", 1, 1)], ["SUM"], false, true);
    expect(new Int32Array(ok[0]!.data.slice().buffer)).toEqual(new Int32Array(16).fill(5));
    close();
  });
});

describe("close() releases once", () => {
  it("OrtSession and OrtSessionOptions", () => {
    const sessions = releases("ReleaseSession");
    const options = releases("ReleaseSessionOptions");
    const { session, close } = sessionFor(dir.model(addSubSpec("h_close")));
    close();
    close();
    session[Symbol.dispose]();
    expect(sessions).toHaveBeenCalledTimes(1);
    expect(options).toHaveBeenCalledTimes(1);
  });

  it("OrtValue, with `using`", () => {
    const spy = releases("ReleaseValue");
    {
      using v = OrtValue.overData(env, "V", ONNX_TYPE.FLOAT, [2], bytesOf(Float32Array.of(1.5, -2)));
      expect(v.read("V")).toEqual({ name: "V", elementType: ONNX_TYPE.FLOAT, shape: [2], data: bytesOf(Float32Array.of(1.5, -2)) });
      v.close();
    }
    expect(spy).toHaveBeenCalledTimes(1);
  });

  it("OrtMemoryInfo", () => {
    const spy = releases("ReleaseMemoryInfo");
    const info = OrtMemoryInfo.cpu(env.api);
    expect(info.handle).not.toBeNull();
    info.close();
    info[Symbol.dispose]();
    expect(spy).toHaveBeenCalledTimes(1);
    expect(info.handle).toBeNull();
  });

  it("half-built session options are released before the error is thrown", () => {
    const spy = releases("ReleaseSessionOptions");
    expect(() => new OrtSessionOptions(env.api, { ...CONFIG, graphOptimizationLevel: 7 })).toThrow(
      "onnxruntime: SetSessionGraphOptimizationLevel: ORT_INVALID_ARGUMENT: graph_optimization_level is not valid",
    );
    expect(spy).toHaveBeenCalledTimes(1);
  });
});
