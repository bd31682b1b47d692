/**
 * The ONNX Runtime binding through the Backend interface: the runtime itself, every
 * Triton datatype, a two-output model, errors, and session options from the model
 * config. Runs, ownership and timing are in onnxruntime-runs.test.ts. Models are built here.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { existsSync, mkdirSync, copyFileSync, statSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { ElemType, valueInfo, node, mulberry32 } from "../../scripts/lib/onnx-builder.ts";
import { executionProviders, sessionConfig } from "../../src/backends/onnxruntime/options.ts";
import { OrtEnvironment } from "../../ffi/onnxruntime/handles.ts";
import { bindOrtApi } from "../../ffi/onnxruntime/symbols.ts";
import { LibraryLoadError } from "../../ffi/load.ts";
import { ServerError } from "../../src/core/errors.ts";
import { joinBytes, splitBytes, type DataType, type Tensor } from "../../src/core/tensor.ts";
import type { ModelConfig } from "../../src/core/model-config-types.ts";
import { ModelDir, backend, params, loadModel, instanceFor, rejection, bytesOf, int32s, float32s, i32Tensor, addSubSpec, addSubInputs } from "./ort-helpers.ts";

const dir = new ModelDir();
beforeAll(() => dir.open());
afterAll(() => dir.close());
const enc = new TextEncoder();

describe("OrtEnvironment", () => {
  it("is onnxruntime-node's ONNX Runtime 1.30.0 with the CPU provider", () => {
    const rt = OrtEnvironment.get();
    expect(rt.version).toBe("1.30.0");
    expect(rt.api.version).toBe("1.30.0");
    expect(rt.api.libraryPath).toMatch(/onnxruntime-node\/bin\/napi-v6\/linux\/(x64|arm64)\/libonnxruntime\.so\.1$/);
    const providers = rt.availableProviders();
    expect(providers).toContain("CPUExecutionProvider");
    expect(providers.every((p) => typeof p === "string" && p.endsWith("ExecutionProvider"))).toBe(true);
    // One runtime per process: a second get() (even naming a library) returns it.
    expect(OrtEnvironment.get()).toBe(rt);
    expect(OrtEnvironment.get("/elsewhere/libonnxruntime.so.1")).toBe(rt);
    // Telemetry stays off: ORT would otherwise leave this file behind. One left by an
    // earlier process with the same pid (pids are reused) is older than this process.
    const left = `/tmp/mat-debug-${process.pid}.log`;
    const started = Date.now() - process.uptime() * 1000;
    expect(existsSync(left) && statSync(left).mtimeMs >= started).toBe(false);
  });
});

describe("bindOrtApi", () => {
  it("lists the path it tried and why it failed", () => {
    let err: unknown;
    try {
      bindOrtApi(["/nonexistent/libonnxruntime.so.1"]);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(LibraryLoadError);
    const message = (err as Error).message;
    expect(message).toMatch(/^cannot load ONNX Runtime \(libonnxruntime\.so\.1\); tried:\n {2}\/nonexistent\/libonnxruntime\.so\.1: .+$/);
    expect(message).toContain("No such file or directory");
  });

  it("lists every candidate in order, each with its own reason", () => {
    const notElf = dir.write("not-a-library", enc.encode("this is not an ELF file\n".repeat(200)));
    let message = "";
    try {
      bindOrtApi(["/nonexistent/a/libonnxruntime.so.1", notElf]);
    } catch (e) {
      message = (e as Error).message;
    }
    const lines = message.split("\n");
    expect(lines[0]).toBe("cannot load ONNX Runtime (libonnxruntime.so.1); tried:");
    expect(lines[1]).toMatch(/^ {2}\/nonexistent\/a\/libonnxruntime\.so\.1: .*No such file or directory/);
    expect(lines[2]).toMatch(new RegExp(`^  ${regexEscape(notElf)}: .*invalid ELF header`));
    expect(lines).toHaveLength(3);
  });

  it("says so when a library loads but is not ONNX Runtime", () => {
    expect(() => bindOrtApi(["libm.so.6"])).toThrow(/^libm\.so\.6 does not export OrtGetApiBase: /);
  });
});

// ---------------------------------------------------------------------------------------

const ELEM: Record<DataType, number> = {
  BOOL: ElemType.BOOL,
  UINT8: ElemType.UINT8,
  UINT16: ElemType.UINT16,
  UINT32: ElemType.UINT32,
  UINT64: ElemType.UINT64,
  INT8: ElemType.INT8,
  INT16: ElemType.INT16,
  INT32: ElemType.INT32,
  INT64: ElemType.INT64,
  FP16: ElemType.FLOAT16,
  FP32: ElemType.FLOAT,
  FP64: ElemType.DOUBLE,
  BF16: ElemType.BFLOAT16,
  BYTES: ElemType.STRING,
};
const SIZE: Record<DataType, number> = {
  BOOL: 1,
  UINT8: 1,
  INT8: 1,
  UINT16: 2,
  INT16: 2,
  FP16: 2,
  BF16: 2,
  UINT32: 4,
  INT32: 4,
  FP32: 4,
  UINT64: 8,
  INT64: 8,
  FP64: 8,
  BYTES: 0,
};

/** The extreme and special values of each type (NaN payloads, -0, subnormals, infinities, min/max). */
const EDGES: Record<Exclude<DataType, "BYTES">, () => ArrayBufferView> = {
  BOOL: () => Uint8Array.of(0, 1, 1, 0),
  UINT8: () => Uint8Array.of(0, 255, 1, 128),
  INT8: () => Int8Array.of(-128, 127, -1, 0),
  UINT16: () => Uint16Array.of(0, 65535, 1, 32768),
  INT16: () => Int16Array.of(-32768, 32767, -1, 0),
  UINT32: () => Uint32Array.of(0, 0xffffffff, 1, 0x80000000),
  INT32: () => Int32Array.of(-(2 ** 31), 2 ** 31 - 1, -1, 0),
  UINT64: () => BigUint64Array.of(0n, 2n ** 64n - 1n, 1n, 2n ** 63n),
  INT64: () => BigInt64Array.of(-(2n ** 63n), 2n ** 63n - 1n, -1n, 0n),
  FP16: () => Uint16Array.of(0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e01, 0x3c00, 0x0001, 0x7bff),
  BF16: () => Uint16Array.of(0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc1, 0x3f80, 0x0001, 0x7f7f),
  FP32: () => Uint32Array.of(0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00001, 0x3f800000, 0x00000001, 0x7f7fffff),
  FP64: () =>
    BigUint64Array.of(0n, 0x8000000000000000n, 0x7ff0000000000000n, 0xfff0000000000000n, 0x7ff8000000000001n, 0x3ff0000000000000n, 1n, 0x7fefffffffffffffn),
};

/** `count` elements of `dt`: the edge values first, then pseudo-random bytes. */
function elementBytes(dt: Exclude<DataType, "BYTES">, count: number): Uint8Array {
  const out = new Uint8Array(count * SIZE[dt]);
  const rnd = mulberry32(ELEM[dt]);
  for (let i = 0; i < out.length; i++) out[i] = dt === "BOOL" ? (rnd() < 0.5 ? 0 : 1) : Math.floor(rnd() * 256);
  const edges = bytesOf(EDGES[dt]());
  out.set(edges.subarray(0, Math.min(edges.length, out.length)));
  return out;
}

const MIB_STRING = enc.encode("ü".repeat(1 << 19)); // 1 MiB of 2-byte UTF-8
function stringElements(count: number): Uint8Array[] {
  if (count === 8) {
    return [
      enc.encode(""),
      enc.encode("héllo"),
      enc.encode("日本語 🙂 ∑"),
      MIB_STRING,
      enc.encode("a"),
      Uint8Array.of(0xff, 0xfe, 0x80), // not UTF-8: BYTES are bytes
      enc.encode("tab\tnewline\n"),
      enc.encode(""),
    ];
  }
  return Array.from({ length: count }, (_, i) => enc.encode(i % 7 === 0 ? "" : `element ${i} — ✓`));
}

describe("every Triton datatype through an Identity model", () => {
  for (const dt of Object.keys(ELEM) as DataType[]) {
    describe(dt, () => {
      let path: string;
      beforeAll(() => {
        path = dir.model({
          name: `identity_${dt}`,
          inputs: [valueInfo("X", ELEM[dt], ["batch", 4])],
          outputs: [valueInfo("Y", ELEM[dt], ["batch", 4])],
          nodes: [node("Identity", ["X"], ["Y"])],
        });
      });

      it("describe() gives the protocol datatype and -1 for the symbolic dim", async () => {
        expect(await backend.describe(path, {})).toEqual({
          inputs: [{ name: "X", datatype: dt, shape: [-1, 4] }],
          outputs: [{ name: "Y", datatype: dt, shape: [-1, 4] }],
        });
      });

      // 8 elements stay under the 128 bytes that are copied before ORT sees them; 160 go zero-copy.
      for (const batch of [2, 40, 0]) {
        it(`round-trips the exact bytes at shape [${batch}, 4]`, async () => {
          const data = dt === "BYTES" ? joinBytes(stringElements(batch * 4)) : elementBytes(dt, batch * 4);
          const expected = data.slice();
          const { inst, close } = await instanceFor(dir.path, path, { name: `id_${dt}` });
          try {
            const input: Tensor = { name: "X", datatype: dt, shape: [batch, 4], data };
            const r = await inst.execute([input], ["Y"]);
            expect(r.outputs).toHaveLength(1);
            const out = r.outputs[0]!;
            expect({ name: out.name, datatype: out.datatype, shape: out.shape, bytes: out.data.byteLength }).toEqual({
              name: "Y",
              datatype: dt,
              shape: [batch, 4],
              bytes: expected.byteLength,
            });
            expect(Buffer.from(out.data).equals(Buffer.from(expected))).toBe(true);
            if (dt === "BYTES") expect(splitBytes(out.data).map((s) => s.byteLength)).toEqual(stringElements(batch * 4).map((s) => s.byteLength));
            // The input is left as it was, and the output is a buffer of its own.
            expect(Buffer.from(data).equals(Buffer.from(expected))).toBe(true);
            data.fill(0x5a);
            expect(Buffer.from(out.data).equals(Buffer.from(expected))).toBe(true);
          } finally {
            close();
          }
        });
      }
    });
  }

  // Regression: elements with a 0 byte were once cut short by FillStringTensor's C strings.
  it("keeps BYTES elements that contain a NUL byte", async () => {
    const path = dir.model({
      name: "identity_nul",
      inputs: [valueInfo("X", ElemType.STRING, [-1])],
      outputs: [valueInfo("Y", ElemType.STRING, [-1])],
      nodes: [node("Identity", ["X"], ["Y"])],
    });
    const { inst, close } = await instanceFor(dir.path, path);
    try {
      const elements = [Uint8Array.of(0x61, 0x00, 0x62), Uint8Array.of(0x00)];
      const r = await inst.execute([{ name: "X", datatype: "BYTES", shape: [2], data: joinBytes(elements) }], ["Y"]);
      expect(splitBytes(r.outputs[0]!.data)).toEqual(elements);
    } finally {
      close();
    }
  });

  it("describe() gives -1 for every unknown dim and [] for scalars", async () => {
    const x = valueInfo("X", ElemType.FLOAT, ["batch", 3, "n"]);
    // A dim with neither a value nor a name.
    (x.type.tensorType.shape.dim as object[]).push({});
    const path = dir.model({
      name: "dims",
      inputs: [x, valueInfo("S", ElemType.INT64, [])],
      outputs: [valueInfo("Y", ElemType.FLOAT, ["batch", 3, "n", "m"]), valueInfo("T", ElemType.INT64, [])],
      nodes: [node("Identity", ["X"], ["Y"]), node("Identity", ["S"], ["T"])],
    });
    expect(await backend.describe(path, {})).toEqual({
      inputs: [
        { name: "X", datatype: "FP32", shape: [-1, 3, -1, -1] },
        { name: "S", datatype: "INT64", shape: [] },
      ],
      outputs: [
        { name: "Y", datatype: "FP32", shape: [-1, 3, -1, -1] },
        { name: "T", datatype: "INT64", shape: [] },
      ],
    });
    const { inst, close } = await instanceFor(dir.path, path);
    try {
      const s = bytesOf(BigInt64Array.of(-42n));
      const r = await inst.execute(
        [
          { name: "X", datatype: "FP32", shape: [1, 3, 1, 1], data: bytesOf(Float32Array.of(1, 2, 3)) },
          { name: "S", datatype: "INT64", shape: [], data: s },
        ],
        ["T"],
      );
      expect(r.outputs).toEqual([{ name: "T", datatype: "INT64", shape: [], data: s }]);
    } finally {
      close();
    }
  });

  it("describe() accepts a folder holding model.onnx, as Triton does", async () => {
    const folder = join(dir.path, "as-folder");
    mkdirSync(folder);
    copyFileSync(dir.model(addSubSpec("folder_src")), join(folder, "model.onnx"));
    const io = await backend.describe(folder, {});
    expect(io.inputs.map((t) => t.name)).toEqual(["A", "B"]);
    const { inst, close } = await instanceFor(dir.path, folder);
    try {
      const r = await inst.execute([i32Tensor("A", [1, 16], Array(16).fill(5)), i32Tensor("B", [1, 16], Array(16).fill(2))], ["DIFF"]);
      expect(int32s(r.outputs[0]!)).toEqual(Array(16).fill(3));
    } finally {
      close();
    }
  });

  it("Cast from FP32 gives the IEEE half and bfloat16 bit patterns", async () => {
    const path = dir.model({
      name: "cast16",
      inputs: [valueInfo("X", ElemType.FLOAT, [-1])],
      outputs: [valueInfo("H", ElemType.FLOAT16, [-1]), valueInfo("B", ElemType.BFLOAT16, [-1])],
      nodes: [node("Cast", ["X"], ["H"], { to: ElemType.FLOAT16 }), node("Cast", ["X"], ["B"], { to: ElemType.BFLOAT16 })],
    });
    const { inst, close } = await instanceFor(dir.path, path);
    try {
      // Values exact in both formats, so no rounding mode is involved.
      const x = Float32Array.of(1, -2, 0.5, 3.140625, Infinity, -0, 0.0078125);
      const r = await inst.execute([{ name: "X", datatype: "FP32", shape: [x.length], data: bytesOf(x) }], []);
      const u16 = (t: Tensor) => [...new Uint16Array(t.data.slice().buffer)];
      expect(r.outputs.map((o) => [o.name, o.datatype, o.shape])).toEqual([
        ["H", "FP16", [7]],
        ["B", "BF16", [7]],
      ]);
      expect(u16(r.outputs[0]!)).toEqual([0x3c00, 0xc000, 0x3800, 0x4248, 0x7c00, 0x8000, 0x2000]);
      expect(u16(r.outputs[1]!)).toEqual([0x3f80, 0xc000, 0x3f00, 0x4049, 0x7f80, 0x8000, 0x3c00]);
    } finally {
      close();
    }
  });
});

// ---------------------------------------------------------------------------------------

describe.each(["auto", "sync", "async"])("Add/Sub INT32 [-1,16] (run_mode %s)", (mode) => {
  let inst: Awaited<ReturnType<typeof instanceFor>>;
  beforeAll(async () => {
    inst = await instanceFor(dir.path, dir.model(addSubSpec()), { name: `addsub_${mode}`, parameters: params({ run_mode: mode }) });
  });
  afterAll(() => inst.close());

  it("describe() gives both outputs", async () => {
    expect(await backend.describe(dir.model(addSubSpec()), {})).toEqual({
      inputs: [
        { name: "A", datatype: "INT32", shape: [-1, 16] },
        { name: "B", datatype: "INT32", shape: [-1, 16] },
      ],
      outputs: [
        { name: "SUM", datatype: "INT32", shape: [-1, 16] },
        { name: "DIFF", datatype: "INT32", shape: [-1, 16] },
      ],
    });
  });

  for (const batch of [1, 8]) {
    it(`gives exact results at batch ${batch}, outputs in the asked order`, async () => {
      const { a, b, inputs } = addSubInputs(batch, batch);
      const r = await inst.inst.execute(inputs, ["DIFF", "SUM"]);
      expect(r.outputs.map((o) => [o.name, o.datatype, o.shape])).toEqual([
        ["DIFF", "INT32", [batch, 16]],
        ["SUM", "INT32", [batch, 16]],
      ]);
      expect(int32s(r.outputs[0]!)).toEqual(a.map((x, i) => x - b[i]!));
      expect(int32s(r.outputs[1]!)).toEqual(a.map((x, i) => x + b[i]!));
      expect(r.computeInferNs).toBeGreaterThan(0);
    });
  }

  it("returns only the outputs asked for, and every output in model order when none is named", async () => {
    const { a, b, inputs } = addSubInputs(3);
    const sum = await inst.inst.execute(inputs, ["SUM"]);
    expect(sum.outputs.map((o) => o.name)).toEqual(["SUM"]);
    expect(int32s(sum.outputs[0]!)).toEqual(a.map((x, i) => x + b[i]!));
    const diff = await inst.inst.execute(inputs, ["DIFF"]);
    expect(diff.outputs.map((o) => o.name)).toEqual(["DIFF"]);
    expect(int32s(diff.outputs[0]!)).toEqual(a.map((x, i) => x - b[i]!));
    const all = await inst.inst.execute(inputs, []);
    expect(all.outputs.map((o) => o.name)).toEqual(["SUM", "DIFF"]);
  });

  it("reads inputs that are unaligned views into a larger buffer", async () => {
    for (const batch of [1, 4]) {
      const { a, b } = addSubInputs(batch, 7);
      const bytes = 64 * batch;
      const backing = new Uint8Array(1 + 2 * bytes + 3).fill(0xee);
      backing.set(bytesOf(Int32Array.from(a)), 1);
      backing.set(bytesOf(Int32Array.from(b)), 1 + bytes + 1);
      const A: Tensor = { name: "A", datatype: "INT32", shape: [batch, 16], data: backing.subarray(1, 1 + bytes) };
      const B: Tensor = { name: "B", datatype: "INT32", shape: [batch, 16], data: backing.subarray(2 + bytes, 2 + 2 * bytes) };
      const r = await inst.inst.execute([A, B], ["SUM", "DIFF"]);
      expect(int32s(r.outputs[0]!)).toEqual(a.map((x, i) => x + b[i]!));
      expect(int32s(r.outputs[1]!)).toEqual(a.map((x, i) => x - b[i]!));
    }
  });

  it("broadcasts a batch-1 input against a batch-8 one", async () => {
    const { a, inputs } = addSubInputs(8);
    const b = Array.from({ length: 16 }, (_, i) => i);
    const r = await inst.inst.execute([inputs[0]!, i32Tensor("B", [1, 16], b)], ["SUM"]);
    expect(r.outputs[0]!.shape).toEqual([8, 16]);
    expect(int32s(r.outputs[0]!)).toEqual(a.map((x, i) => x + b[i % 16]!));
  });
});

// Regression: outputs with a dynamic first dim were once preallocated as [input batch, ...]
// even for models outside Triton's batching contract.
it("an output whose dynamic dim 0 is not the batch gets its computed shape", async () => {
  const path = dir.model({
    name: "concat0",
    inputs: [valueInfo("X", ElemType.FLOAT, ["batch", 4])],
    outputs: [valueInfo("Y", ElemType.FLOAT, ["rows", 4])],
    nodes: [node("Concat", ["X", "X"], ["Y"], { axis: 0 })],
  });
  const { inst, close } = await instanceFor(dir.path, path);
  try {
    const x = Float32Array.from({ length: 8 }, (_, i) => i);
    const r = await inst.execute([{ name: "X", datatype: "FP32", shape: [2, 4], data: bytesOf(x) }], ["Y"]);
    expect(r.outputs[0]!.shape).toEqual([4, 4]);
    expect([...float32s(r.outputs[0]!)]).toEqual([...x, ...x]);
  } finally {
    close();
  }
});

// ---------------------------------------------------------------------------------------

function regexEscape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}

describe("errors", () => {
  it("a corrupt model file fails at createInstance and describe with ORT's reason", async () => {
    const rnd = mulberry32(1234);
    const path = dir.write(
      "corrupt",
      Uint8Array.from({ length: 4096 }, () => Math.floor(rnd() * 256)),
    );
    const model = await loadModel(dir.path, path);
    const err = await rejection(model.createInstance("c_0", "KIND_CPU", 0));
    expect(err.message.startsWith(`onnxruntime: CreateSession(${path}): `)).toBe(true);
    expect(err.message).toContain("ORT_");
    expect(err.message).toMatch(/: ORT_(INVALID_PROTOBUF|FAIL|INVALID_GRAPH): /);
    model.close();
    const err2 = await rejection(backend.describe(path, {}));
    expect(err2.message.startsWith(`onnxruntime: CreateSession(${path}): ORT_`)).toBe(true);
  });

  it("a missing model file names the path and ORT_NO_SUCHFILE", async () => {
    const path = join(dir.path, "missing.onnx");
    const model = await loadModel(dir.path, path);
    const err = await rejection(model.createInstance("m_0", "KIND_CPU", 0));
    expect(err.message).toMatch(new RegExp(`^onnxruntime: CreateSession\\(${regexEscape(path)}\\): ORT_NO_SUCHFILE: .*${regexEscape(path)}`));
    model.close();
    await expect(backend.describe(path, {})).rejects.toThrow(new RegExp(`^onnxruntime: CreateSession\\(${regexEscape(path)}\\): ORT_NO_SUCHFILE: `));
    // A folder without model.onnx names the file looked for.
    const folder = join(dir.path, "empty-folder");
    mkdirSync(folder);
    await expect(backend.describe(folder, {})).rejects.toThrow(`onnxruntime: CreateSession(${folder}/model.onnx): ORT_NO_SUCHFILE: `);
  });

  describe.each(["sync", "async"])("a bad run (run_mode %s) is an onnxruntime Run error and the instance keeps working", (mode) => {
    let inst: Awaited<ReturnType<typeof instanceFor>>;
    const good = (): Tensor => ({ name: "X", datatype: "FP32", shape: [2, 3], data: bytesOf(Float32Array.of(1, 2, 3, 4, 5, 6)) });
    beforeAll(async () => {
      const path = dir.model({
        name: "fixed",
        inputs: [valueInfo("X", ElemType.FLOAT, [2, 3])],
        outputs: [valueInfo("Y", ElemType.FLOAT, [2, 3])],
        nodes: [node("Neg", ["X"], ["Y"])],
      });
      inst = await instanceFor(dir.path, path, { name: `fixed_${mode}`, parameters: params({ run_mode: mode }) });
    });
    afterAll(() => inst.close());

    const cases: [string, Tensor[], string[], RegExp][] = [
      [
        "a wrong shape",
        [{ name: "X", datatype: "FP32", shape: [3, 2], data: new Uint8Array(24) }],
        ["Y"],
        /^onnxruntime: Run: ORT_INVALID_ARGUMENT: Got invalid dimensions for input: X/,
      ],
      ["a wrong rank", [{ name: "X", datatype: "FP32", shape: [6], data: new Uint8Array(24) }], ["Y"], /^onnxruntime: Run: ORT_INVALID_ARGUMENT: /],
      [
        "a wrong datatype",
        [{ name: "X", datatype: "INT32", shape: [2, 3], data: new Uint8Array(24) }],
        ["Y"],
        /^onnxruntime: Run: ORT_INVALID_ARGUMENT: Unexpected input data type/,
      ],
      [
        "an unknown input",
        [{ name: "Z", datatype: "FP32", shape: [2, 3], data: new Uint8Array(24) }],
        ["Y"],
        /^onnxruntime: Run: ORT_INVALID_ARGUMENT: Invalid input name: Z/,
      ],
      ["an unknown output", [good()], ["Q"], /^onnxruntime: Run: ORT_INVALID_ARGUMENT: Invalid output name: Q/],
      [
        "too few bytes",
        [{ name: "X", datatype: "FP32", shape: [2, 3], data: new Uint8Array(20) }],
        ["Y"],
        /^onnxruntime: CreateTensorWithDataAsOrtValue\(X\): ORT_INVALID_ARGUMENT: not enough space/,
      ],
    ];
    for (const [what, inputs, outputs, re] of cases) {
      it(what, async () => {
        const err = await rejection(inst.inst.execute(inputs, outputs));
        expect(err.code).toBe("INVALID_ARG");
        expect(err.message).toMatch(re);
        const r = await inst.inst.execute([good()], ["Y"]);
        expect(r.outputs[0]!.shape).toEqual([2, 3]);
        expect([...float32s(r.outputs[0]!)]).toEqual([-1, -2, -3, -4, -5, -6]);
      });
    }
  });
});

// ---------------------------------------------------------------------------------------

describe("session options from the model config", () => {
  const base: ModelConfig = { name: "m", instance_group: [{ count: 2, kind: "KIND_CPU" }] };
  const cores = availableParallelism();

  it("maps Triton's onnxruntime parameters", () => {
    expect(
      sessionConfig({
        ...base,
        parameters: params({ intra_op_thread_count: "3", inter_op_thread_count: "2", enable_mem_arena: "0", allow_spinning: "true" }),
        optimization: { graph: { level: -1 } },
      }),
    ).toEqual({ intraOpThreads: 3, interOpThreads: 2, graphOptimizationLevel: 1, allowSpinning: true, memArena: false, providers: [], entries: {} });
    expect(sessionConfig({ ...base, parameters: params({ enable_mem_arena: "false" }) }).memArena).toBe(false);
    expect(sessionConfig({ ...base, parameters: params({ enable_mem_arena: "1" }) }).memArena).toBe(true);
    expect(sessionConfig({ ...base, parameters: params({ allow_spinning: "false" }) }).allowSpinning).toBe(false);
    expect(sessionConfig({ ...base, parameters: params({ "session.disable_prepacking": "1", run_mode: "sync" }) }).entries).toEqual({
      "session.disable_prepacking": "1",
    });
  });

  it("maps optimization.graph.level as Triton does: -1 → ENABLE_BASIC, 1 → ENABLE_EXTENDED, 2 → DISABLE_ALL, 0 and unset → ENABLE_ALL", () => {
    const level = (l?: number) => sessionConfig({ ...base, ...(l === undefined ? {} : { optimization: { graph: { level: l } } }) }).graphOptimizationLevel;
    expect(level(-1)).toBe(1);
    expect(level(1)).toBe(2);
    expect(level(2)).toBe(0);
    expect(level(3)).toBe(99);
    expect(level(0)).toBe(99);
    expect(level(undefined)).toBe(99);
    expect(sessionConfig({ ...base, optimization: {} }).graphOptimizationLevel).toBe(99);
  });

  it("defaults: intra threads = floor((cores − 1) / instances) ≥ 1, one inter thread, arena on, no spinning", () => {
    const intra = (instance_group?: ModelConfig["instance_group"]) =>
      sessionConfig({ name: "m", ...(instance_group ? { instance_group } : {}) }).intraOpThreads;
    expect(intra(undefined)).toBe(Math.max(1, cores - 1));
    expect(intra([])).toBe(Math.max(1, cores - 1));
    expect(intra([{ kind: "KIND_CPU" }])).toBe(Math.max(1, cores - 1));
    expect(intra([{ count: 2 }])).toBe(Math.max(1, Math.floor((cores - 1) / 2)));
    expect(intra([{ count: 2 }, { count: 3 }])).toBe(Math.max(1, Math.floor((cores - 1) / 5)));
    expect(intra([{ count: 10_000 }])).toBe(1);
    // 0 means "default", as in Triton.
    expect(sessionConfig({ ...base, parameters: params({ intra_op_thread_count: "0" }) }).intraOpThreads).toBe(Math.max(1, Math.floor((cores - 1) / 2)));
    const d = sessionConfig(base);
    expect([d.interOpThreads, d.graphOptimizationLevel, d.allowSpinning, d.memArena, d.entries]).toEqual([1, 99, false, true, {}]);
  });

  it("maps execution_mode and enable_mem_pattern; booleans read as Triton's ParseBoolValue does", () => {
    const c = (p: Record<string, string>) => sessionConfig({ ...base, parameters: params(p) });
    expect(c({ execution_mode: "1" }).parallelExecution).toBe(true);
    expect("parallelExecution" in c({ execution_mode: "0" })).toBe(false);
    expect("memPattern" in c({})).toBe(false);
    expect(c({ enable_mem_pattern: "OFF" }).memPattern).toBe(false);
    expect(c({ enable_mem_pattern: "on" }).memPattern).toBe(true);
    expect(c({ enable_mem_arena: "TRUE" }).memArena).toBe(true);
    expect(c({ allow_spinning: "1" }).allowSpinning).toBe(true);
    expect(() => c({ enable_mem_arena: "yes" })).toThrow("model 'm': parameter 'enable_mem_arena' must be true or false, got 'yes'");
    expect(() => c({ execution_mode: "2" })).toThrow("model 'm': parameter 'execution_mode' must be 0 (sequential) or 1 (parallel), got '2'");
  });

  it("a bad thread count is INVALID_ARG with the exact message", () => {
    for (const key of ["intra_op_thread_count", "inter_op_thread_count"]) {
      for (const v of ["lots", "-1", "1.5"]) {
        let err: unknown;
        try {
          sessionConfig({ ...base, parameters: params({ [key]: v }) });
        } catch (e) {
          err = e;
        }
        expect(err).toBeInstanceOf(ServerError);
        expect((err as ServerError).code).toBe("INVALID_ARG");
        expect((err as ServerError).message).toBe(`model 'm': parameter '${key}' must be a non-negative integer, got '${v}'`);
      }
    }
  });

  it("load() rejects a bad value and an unknown run_mode with INVALID_ARG", async () => {
    const path = dir.model(addSubSpec("opts_bad"));
    const e1 = await rejection(loadModel(dir.path, path, { name: "bad", parameters: params({ intra_op_thread_count: "many" }) }));
    expect([e1.code, e1.message]).toEqual(["INVALID_ARG", "model 'bad': parameter 'intra_op_thread_count' must be a non-negative integer, got 'many'"]);
    const e2 = await rejection(loadModel(dir.path, path, { name: "bad", parameters: params({ run_mode: "fast" }) }));
    expect([e2.code, e2.message]).toEqual(["INVALID_ARG", "model 'bad': parameter 'run_mode' must be auto, async or sync, got 'fast'"]);
  });

  it("maps Triton's execution_accelerators to ORT providers and option keys, per instance kind as Triton's onnxruntime backend does", () => {
    const cfg = (gpu: object[], cpu: object[] = []) =>
      ({ name: "m", optimization: { execution_accelerators: { gpu_execution_accelerator: gpu, cpu_execution_accelerator: cpu } } }) as ModelConfig;
    const both = cfg(
      [{ name: "tensorrt", parameters: { precision_mode: "FP16", max_workspace_size_bytes: "1073741824", trt_engine_cache_enable: "1" } }],
      [{ name: "openvino", parameters: { device_type: "CPU" } }],
    );
    // A KIND_GPU instance on GPU 1: TensorRT, then CUDA, both on the instance's GPU, then the CPU accelerators.
    expect(executionProviders(both, 1)).toEqual([
      { name: "TensorRT", options: { trt_fp16_enable: "1", trt_max_workspace_size: "1073741824", trt_engine_cache_enable: "1", device_id: "1" } },
      { name: "CUDA", options: { device_id: "1" } },
      { name: "OpenVINO", options: { device_type: "CPU" } },
    ]);
    // A CPU instance ignores the GPU accelerators.
    expect(executionProviders(both)).toEqual([{ name: "OpenVINO", options: { device_type: "CPU" } }]);
    // The cuda accelerator's parameters go to the CUDA provider; the instance's GPU wins over a device_id given there.
    expect(executionProviders(cfg([{ name: "cuda", parameters: { device_id: "1", gpu_mem_limit: "1000000" } }]), 0)).toEqual([
      { name: "CUDA", options: { device_id: "0", gpu_mem_limit: "1000000" } },
    ]);
    expect(executionProviders({ name: "m" }, 2)).toEqual([{ name: "CUDA", options: { device_id: "2" } }]);
    expect(executionProviders({ name: "m" })).toEqual([]);
    expect(() => executionProviders(cfg([{ name: "tensorrt", parameters: { precision_mode: "FP8" } }]))).toThrow(
      "unsupported precision mode 'FP8' for the tensorrt accelerator",
    );
    expect(() => executionProviders(cfg([{ name: "tpu" }]))).toThrow("unknown gpu execution accelerator 'tpu' (expected tensorrt or cuda)");
  });

  it("KIND_GPU instances and CPU accelerators reach ONNX Runtime's provider API; this CPU build refuses each with its own message", async () => {
    const path = dir.model(addSubSpec("opts_acc"));
    const optimization = (gpu: object[], cpu: object[] = []) => ({
      execution_accelerators: { gpu_execution_accelerator: gpu, cpu_execution_accelerator: cpu },
    });
    // GPU accelerators only matter to KIND_GPU instances: the model loads and its CPU instances serve.
    const gpuOnly = await loadModel(dir.path, path, {
      name: "acc",
      optimization: optimization([{ name: "tensorrt", parameters: { precision_mode: "FP16", max_workspace_size_bytes: "1073741824" } }]),
    });
    const cpuInstance = await gpuOnly.createInstance("c", "KIND_CPU", 0);
    cpuInstance.close();
    const trt = await rejection(gpuOnly.createInstance("g", "KIND_GPU", 0));
    expect(trt.code).toBe("UNSUPPORTED");
    expect(trt.message).toMatch(
      /^model 'acc': execution provider\(s\) TensorRT, CUDA needed by its KIND_GPU instances on GPU 0: onnxruntime: (Create|Update)TensorRTProviderOptions: ORT_\w+: [\s\S]+\(providers compiled into this ONNX Runtime: [\w, ]*CPUExecutionProvider\)$/,
    );
    gpuOnly.close();
    const plain = await loadModel(dir.path, path, { name: "acc" });
    const cuda = await rejection(plain.createInstance("g", "KIND_GPU", 1));
    expect(cuda.code).toBe("UNSUPPORTED");
    expect(cuda.message).toMatch(
      /^model 'acc': execution provider\(s\) CUDA needed by its KIND_GPU instances on GPU 1: onnxruntime: (CreateCUDAProviderOptions|UpdateCUDAProviderOptions|SessionOptionsAppendExecutionProvider_CUDA_V2): ORT_\w+: [\s\S]+/,
    );
    plain.close();
    const ov = await rejection(
      loadModel(dir.path, path, { name: "acc", optimization: optimization([], [{ name: "openvino", parameters: { device_type: "CPU" } }]) }),
    );
    expect(ov.message).toMatch(
      /^model 'acc': execution provider\(s\) OpenVINO requested by its execution_accelerators: onnxruntime: SessionOptionsAppendExecutionProvider\(OpenVINO\): ORT_\w+: [\s\S]+/,
    );
    const unknown = await rejection(loadModel(dir.path, path, { name: "acc", optimization: optimization([{ name: "tpu" }]) }));
    expect([unknown.code, unknown.message]).toEqual(["INVALID_ARG", "model 'acc': unknown gpu execution accelerator 'tpu' (expected tensorrt or cuda)"]);
  });

  it("ORT accepts every option combination and the session computes the same", async () => {
    const path = dir.model(addSubSpec("opts_ok"));
    const { a, b, inputs } = addSubInputs(2, 5);
    const variants: ModelConfig[] = [
      {
        parameters: params({ intra_op_thread_count: "1", inter_op_thread_count: "2", enable_mem_arena: "0", allow_spinning: "true" }),
        optimization: { graph: { level: -1 } },
      },
      { parameters: params({ enable_mem_arena: "1", allow_spinning: "false", "session.disable_prepacking": "1" }), optimization: { graph: { level: 1 } } },
      { optimization: { graph: { level: 0 } } },
      { parameters: params({ execution_mode: "1", inter_op_thread_count: "2", enable_mem_pattern: "false" }), optimization: { graph: { level: 2 } } },
      { parameters: params({ enable_mem_pattern: "true" }) },
    ];
    for (const v of variants) {
      const { inst, close } = await instanceFor(dir.path, path, { name: "opts", ...v });
      try {
        const r = await inst.execute(inputs, ["SUM", "DIFF"]);
        expect(int32s(r.outputs[0]!)).toEqual(a.map((x, i) => x + b[i]!));
        expect(int32s(r.outputs[1]!)).toEqual(a.map((x, i) => x - b[i]!));
      } finally {
        close();
      }
    }
  });
});
