/**
 * The TensorRT 10 binding (ffi/tensorrt) and the tensorrt backend. There is no GPU, CUDA
 * or TensorRT on this machine, so:
 *
 * - the declarations are held against facts read from NVIDIA/TensorRT's headers at tag
 *   v10.0.0 (slots recounted identical through v10.16): vtable slots, enum values, the
 *   Dims64 layout; where a real NvInferImpl.h is installed, the slots are recounted from it;
 * - a missing library gives one clear error and no crash;
 * - everything else runs against TEST DOUBLES, test/ffi/doubles/fake_nvinfer.cpp and
 *   fake_cuda.c. The TensorRT double declares the V-classes in the header's order, so the
 *   C++ compiler (not this binding) decides each slot, and keeps the [vptr][mImpl] object
 *   layout; passing here shows the binding makes those calls the way the ABI says, frees
 *   each object once and routes errors and logs. It is no evidence about real TensorRT or
 *   a real GPU.
 */
import { LateRunner } from "../../src/core/runner.ts";
import { describe, it, expect, beforeAll, afterAll, afterEach } from "vitest";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getKoffi, LibraryLoadError, type KoffiLibrary } from "../../ffi/load.ts";
import {
  DIMS64,
  EXECUTION_CONTEXT_ALLOCATION,
  ILOGGER_SLOT,
  IMPL_OFFSET,
  OPT_PROFILE_SELECTOR,
  PUBLIC_SLOT,
  SEVERITY,
  TENSOR_FORMAT_LINEAR,
  TENSOR_IO_MODE,
  TENSOR_LOCATION,
  TRT_DATA_TYPE,
  TRT_MAJOR,
  VCUDA_ENGINE_SLOT,
  VEXECUTION_CONTEXT_SLOT,
  VRUNTIME_SLOT,
  decodeTrtVersion,
} from "../../ffi/tensorrt/abi.ts";
import { dims64Type, fromDims, toDims } from "../../ffi/tensorrt/symbols.ts";
import { probeTensorRt, tensorRtLibraryCandidates, TensorRtLibrary } from "../../ffi/tensorrt/library.ts";
import { TensorRtError } from "../../ffi/tensorrt/errors.ts";
import { LOGGER_TYPE_NAME } from "../../ffi/tensorrt/logger.ts";
import { TensorRtBackend } from "../../src/backends/tensorrt/backend.ts";
import { tritonDataType } from "../../src/backends/tensorrt/io.ts";
import { tensorRtReport } from "../../src/devices.ts";
import { ServerError } from "../../src/core/errors.ts";
import { configureLog, logSettings } from "../../src/core/logger.ts";
import type { ModelConfig } from "../../src/core/model-config-types.ts";
import type { BackendLoadContext } from "../../src/backends/backend.ts";

const DOUBLES = join(import.meta.dirname, "doubles");
const hasCompilers = ["cc", "c++"].every((c) => spawnSync(c, ["--version"], { stdio: "ignore" }).status === 0);
const realLibrary = tensorRtLibraryCandidates().slice(1).some(existsSync);
const realDriver = ["/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib/aarch64-linux-gnu/libcuda.so.1"].some(existsSync);
const ENV_KEYS = ["FAKE_TRT_VERSION", "FAKE_CUDA_STRICT_CONTEXT", "FAKE_CUDA_QUERY_PENDING", "NEREID_TENSORRT_LIBRARY", "NEREID_CUDA_LIBRARY"];
const saved = { ...process.env };

afterEach(() => {
  for (const key of ENV_KEYS) {
    if (saved[key] === undefined) delete process.env[key];
    else process.env[key] = saved[key];
  }
});

/** What NvInferImpl.h at v10.0.0 says (every 10.x tag through v10.16 agrees up to these slots). */
const HEADER_SLOTS = {
  VRuntime: { getPImpl: 2, deserializeCudaEngine: 3, setMaxThreads: 12, getMaxThreads: 13 },
  VCudaEngine: {
    getPImpl: 2,
    createExecutionContext: 5,
    getNbOptimizationProfiles: 10,
    getTensorShape: 19,
    getTensorDataType: 20,
    getTensorLocation: 21,
    isShapeInferenceIO: 22,
    getTensorIOMode: 23,
    getTensorFormat: 26,
    getProfileShape: 29,
    getNbIOTensors: 30,
    getIOTensorName: 31,
  },
  VExecutionContext: { getPImpl: 2, setInputShape: 21, getTensorShape: 22, setTensorAddress: 24, enqueueV3: 37 },
};
const TABLES = { VRuntime: VRUNTIME_SLOT, VCudaEngine: VCUDA_ENGINE_SLOT, VExecutionContext: VEXECUTION_CONTEXT_SLOT } as const;

describe("declarations against the TensorRT 10 headers", () => {
  it("has NvInferImpl.h's slot for every virtual method called, after VRoot's two destructor slots", () => {
    expect(VRUNTIME_SLOT).toEqual(HEADER_SLOTS.VRuntime);
    expect(VCUDA_ENGINE_SLOT).toEqual(HEADER_SLOTS.VCudaEngine);
    expect(VEXECUTION_CONTEXT_SLOT).toEqual(HEADER_SLOTS.VExecutionContext);
    // Public objects: [vptr][mImpl], vtable [~complete][~deleting]; ILogger: [log][~complete][~deleting].
    expect(IMPL_OFFSET).toBe(8);
    expect(PUBLIC_SLOT).toEqual({ completeDestructor: 0, deletingDestructor: 1 });
    expect(ILOGGER_SLOT).toEqual({ log: 0, completeDestructor: 1, deletingDestructor: 2 });
  });

  it("lays out Dims64 as NvInferRuntimeBase.h does: int32 nbDims, int64 d[8] at 8, 72 bytes", () => {
    const k = getKoffi();
    expect(DIMS64).toEqual({ MAX_DIMS: 8, size: 72, offsetOfD: 8 });
    expect([k.sizeof(dims64Type()), k.offsetof(dims64Type(), "d"), k.alignof(dims64Type())]).toEqual([72, 8, 8]);
    expect(toDims([3, 4])).toEqual({ nbDims: 2, d: [3, 4, 0, 0, 0, 0, 0, 0] });
    expect(fromDims({ nbDims: 2, d: [3, 4n, 0, 0, 0, 0, 0, 0] })).toEqual([3, 4]);
    expect(fromDims({ nbDims: -1, d: [0, 0, 0, 0, 0, 0, 0, 0] })).toBeUndefined();
    expect(() => toDims([1, 1, 1, 1, 1, 1, 1, 1, 1])).toThrow(/at most 8 dimensions/);
  });

  it("has the headers' enum values", () => {
    expect(TRT_DATA_TYPE).toEqual({ FLOAT: 0, HALF: 1, INT8: 2, INT32: 3, BOOL: 4, UINT8: 5, FP8: 6, BF16: 7, INT64: 8, INT4: 9, FP4: 10, E8M0: 11 });
    expect(TENSOR_IO_MODE).toEqual({ NONE: 0, INPUT: 1, OUTPUT: 2 });
    expect(OPT_PROFILE_SELECTOR).toEqual({ MIN: 0, OPT: 1, MAX: 2 });
    expect(EXECUTION_CONTEXT_ALLOCATION).toEqual({ STATIC: 0, ON_PROFILE_CHANGE: 1, USER_MANAGED: 2 });
    expect(SEVERITY).toEqual({ INTERNAL_ERROR: 0, ERROR: 1, WARNING: 2, INFO: 3, VERBOSE: 4 });
    expect(TENSOR_FORMAT_LINEAR).toBe(0);
    expect(TENSOR_LOCATION).toEqual({ DEVICE: 0, HOST: 1 });
  });

  it("maps TensorRT datatypes to Triton's, and nothing for the types Triton lacks", () => {
    const t = TRT_DATA_TYPE;
    expect([t.FLOAT, t.HALF, t.INT8, t.INT32, t.BOOL, t.UINT8, t.BF16, t.INT64].map(tritonDataType)).toEqual([
      "FP32",
      "FP16",
      "INT8",
      "INT32",
      "BOOL",
      "UINT8",
      "BF16",
      "INT64",
    ]);
    expect([t.FP8, t.INT4, t.FP4, t.E8M0, 99].map(tritonDataType)).toEqual([undefined, undefined, undefined, undefined, undefined]);
  });

  it("decodes getInferLibVersion() in both encodings (10+: major*10000; 8.x/9.x: major*1000)", () => {
    expect(decodeTrtVersion(100800)).toEqual({ major: 10, minor: 8, patch: 0 });
    expect(decodeTrtVersion(101601)).toEqual({ major: 10, minor: 16, patch: 1 });
    expect(decodeTrtVersion(110100)).toEqual({ major: 11, minor: 1, patch: 0 });
    expect(decodeTrtVersion(8601)).toEqual({ major: 8, minor: 6, patch: 1 });
    expect(TRT_MAJOR).toBe(10);
  });

  it("looks for the library in the documented places, an explicit path or NEREID_TENSORRT_LIBRARY alone", () => {
    delete process.env.NEREID_TENSORRT_LIBRARY;
    expect(tensorRtLibraryCandidates()).toEqual([
      "libnvinfer.so.10",
      "/usr/lib/x86_64-linux-gnu/libnvinfer.so.10",
      "/usr/lib/aarch64-linux-gnu/libnvinfer.so.10",
      "/usr/local/tensorrt/lib/libnvinfer.so.10",
    ]);
    expect(tensorRtLibraryCandidates("/x/libnvinfer.so.10")).toEqual(["/x/libnvinfer.so.10"]);
    process.env.NEREID_TENSORRT_LIBRARY = "/y/libnvinfer.so.10";
    expect(tensorRtLibraryCandidates()).toEqual(["/y/libnvinfer.so.10"]);
  });

  // On a host with TensorRT's headers, recount the slots from the installed NvInferImpl.h.
  const header = [
    process.env.NEREID_TENSORRT_INCLUDE && join(process.env.NEREID_TENSORRT_INCLUDE, "NvInferImpl.h"),
    "/usr/include/x86_64-linux-gnu/NvInferImpl.h",
    "/usr/include/aarch64-linux-gnu/NvInferImpl.h",
    "/usr/local/tensorrt/include/NvInferImpl.h",
  ]
    .filter((p): p is string => !!p)
    .find(existsSync);
  it.skipIf(!header)(`agrees with the installed ${header ?? "NvInferImpl.h (none here)"}`, () => {
    const src = readFileSync(header!, "utf8")
      .replace(/\/\*[\s\S]*?\*\//g, "")
      .replace(/\/\/[^\n]*/g, "");
    for (const [cls, table] of Object.entries(TABLES)) {
      const body = new RegExp(`class ${cls}\\s*:\\s*public\\s+VRoot\\s*\\{([\\s\\S]*?)\\n\\};`).exec(src)?.[1];
      expect(body, cls).toBeDefined();
      const names = body!
        .split(";")
        .filter((s) => s.includes("virtual"))
        .map((s) => /(\w+)\s*\(/.exec(s)![1]);
      for (const [method, slot] of Object.entries(table)) expect(names.indexOf(method) + 2, `${cls}::${method}`).toBe(slot);
    }
  });
});

describe.skipIf(realLibrary)("without TensorRT", () => {
  it("TensorRtLibrary.get() fails with one error that lists every place it looked", () => {
    delete process.env.NEREID_TENSORRT_LIBRARY;
    let err: unknown;
    try {
      TensorRtLibrary.get();
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(LibraryLoadError);
    const lines = (err as Error).message.split("\n");
    expect(lines[0]).toBe("cannot load TensorRT (libnvinfer.so.10); tried:");
    expect(lines.slice(1).map((l) => l.split(":")[0]!.trim())).toEqual(tensorRtLibraryCandidates());
    expect(() => probeTensorRt("/nonexistent/libnvinfer.so.10")).toThrow(LibraryLoadError);
    expect(tensorRtReport()).toMatch(/^no TensorRT: cannot load TensorRT \(libnvinfer\.so\.10\); tried:\n  libnvinfer\.so\.10: /);
  });

  it.skipIf(realDriver)("a model without a CUDA driver is UNAVAILABLE with the reason", async () => {
    delete process.env.NEREID_CUDA_LIBRARY;
    const err = await new TensorRtBackend().load(loadContext("nogpu", "/nonexistent/model.plan", trtConfig("nogpu"), {})).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServerError);
    expect((err as ServerError).code).toBe("UNAVAILABLE");
    expect((err as ServerError).message).toMatch(
      /^model 'nogpu': the tensorrt backend needs a CUDA driver: cannot load the CUDA driver \(libcuda\.so\.1\); tried:/,
    );
  });
});

function trtConfig(name: string, over: Partial<ModelConfig> = {}): ModelConfig {
  return {
    name,
    platform: "tensorrt_plan",
    backend: "tensorrt",
    max_batch_size: 8,
    input: [{ name: "INPUT0", data_type: "TYPE_FP32", dims: [4] }],
    output: [{ name: "OUTPUT0", data_type: "TYPE_FP32", dims: [4] }],
    instance_group: [{ name: `${name}_0`, kind: "KIND_GPU", count: 1, gpus: [0] }],
    ...over,
  };
}

function loadContext(name: string, modelPath: string, config: ModelConfig, backendConfig: Record<string, string>): BackendLoadContext {
  return { config, modelName: name, version: 1, modelDir: "/unused", modelPath, backendConfig, runner: new LateRunner() };
}

const f32 = (values: number[]) => new Uint8Array(new Float32Array(values).buffer);
const fromF32 = (data: Uint8Array) => Array.from(new Float32Array(data.buffer, data.byteOffset, data.byteLength / 4));

describe.skipIf(!hasCompilers)("with the test doubles (fake_nvinfer.cpp, fake_cuda.c; not TensorRT, not a GPU)", () => {
  let dir = "";
  let trt = "";
  let cuda = "";
  let plan = "";
  let hooks: Record<string, (...args: unknown[]) => number | string>;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "nereid-faketrt-"));
    trt = join(dir, "libfake_nvinfer.so");
    cuda = join(dir, "libfake_cuda.so");
    execFileSync("c++", ["-shared", "-fPIC", "-std=c++17", "-O1", "-o", trt, join(DOUBLES, "fake_nvinfer.cpp")]);
    execFileSync("cc", ["-shared", "-fPIC", "-O1", "-o", cuda, join(DOUBLES, "fake_cuda.c")]);
    plan = join(dir, "model.plan");
    writeFileSync(plan, "FAKEPLAN");
    writeFileSync(join(dir, "fp8.plan"), "FAKEPLAN:fp8");
    writeFileSync(join(dir, "chw4.plan"), "FAKEPLAN:chw4");
    writeFileSync(join(dir, "bad.plan"), "this is not a plan");
    const k = getKoffi();
    const t: KoffiLibrary = k.load(trt);
    const c: KoffiLibrary = k.load(cuda);
    hooks = {
      slot: t.func("long fake_slot(const char *cls, const char *method)"),
      live: t.func("long fake_live_objects()"),
      runtimeVersion: t.func("int32_t fake_last_runtime_version()"),
      maxThreads: t.func("int32_t fake_max_threads()"),
      strategy: t.func("int32_t fake_last_allocation_strategy()"),
      loggerType: t.func("const char *fake_logger_type_name()"),
      loggerOffsetToTop: t.func("long fake_logger_offset_to_top()"),
      enqueues: t.func("long fake_enqueue_count()"),
      sizeofDims: t.func("long fake_sizeof_dims()"),
      offsetofD: t.func("long fake_offsetof_dims_d()"),
      implOffset: t.func("long fake_impl_offset()"),
      allocations: c.func("long fake_cuda_live_allocations()"),
      streams: c.func("long fake_cuda_live_streams()"),
      primaryRefs: c.func("int fake_cuda_primary_refs()"),
      syncCalls: c.func("long fake_cuda_sync_calls()"),
      queryCalls: c.func("long fake_cuda_query_calls()"),
    };
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("the double, laid out by the C++ compiler from the header's declaration order, has the binding's slots and layout", () => {
    for (const [cls, table] of Object.entries(TABLES)) {
      for (const [method, slot] of Object.entries(table)) expect(hooks.slot!(cls, method), `${cls}::${method}`).toBe(slot);
    }
    expect(hooks.slot!("ILogger", "log")).toBe(ILOGGER_SLOT.log);
    expect([hooks.sizeofDims!(), hooks.offsetofD!(), hooks.implOffset!()]).toEqual([DIMS64.size, DIMS64.offsetOfD, IMPL_OFFSET]);
  });

  it("refuses a library whose major version is not 10, saying which it found", () => {
    for (const [reported, text] of [
      ["110000", "11.0.0"],
      ["8601", "8.6.1"],
    ] as const) {
      process.env.FAKE_TRT_VERSION = reported;
      let err: unknown;
      try {
        TensorRtLibrary.get(trt);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(TensorRtError);
      expect((err as Error).message).toContain(`TensorRT ${text} at ${trt} (getInferLibVersion() = ${reported}) is not supported`);
      expect((err as Error).message).toMatch(/install TensorRT 10\.x$/);
      const probe = probeTensorRt(trt);
      expect([probe.version.text, probe.supported]).toEqual([text, false]);
    }
  });

  it("creates a runtime through createInferRuntime_INTERNAL with a well-formed C++ logger, limited to one thread", () => {
    const lines: string[] = [];
    const before = { ...logSettings() };
    configureLog({ verbose: 1 }, (line) => lines.push(line));
    try {
      const lib = TensorRtLibrary.get(trt);
      expect(lib.version).toEqual({ major: 10, minor: 8, patch: 0, number: 100800, text: "10.8.0" });
      const runtime = lib.createRuntime();
      expect(hooks.runtimeVersion!()).toBe(100800);
      expect([hooks.maxThreads!(), runtime.maxThreads]).toEqual([1, 1]);
      // The ILogger's vtable[-2] (offset-to-top) and vtable[-1] (type_info) as typeid would read them.
      expect(lib.logger.hasTypeInfo).toBe(true);
      expect([hooks.loggerOffsetToTop!(), hooks.loggerType!()]).toEqual([0, LOGGER_TYPE_NAME]);
      expect(hooks.live!()).toBe(1);
      runtime.close();
      runtime.close();
      expect(hooks.live!()).toBe(0);
    } finally {
      configureLog(before, (line) => process.stderr.write(line + "\n"));
    }
    // TensorRT's severities reach the server log as Triton's tensorrt backend maps them.
    expect(lines.find((l) => l.includes("fake TensorRT runtime created"))).toMatch(/^I\d{4} .* ffi\/tensorrt\/logger\.ts\] fake TensorRT runtime created$/);
    expect(lines.find((l) => l.includes("this is a test double"))).toMatch(/^W\d{4} /);
    expect(lines.find((l) => l.includes("verbose detail"))).toMatch(/^I\d{4} /);
    expect(probeTensorRt(trt).supported).toBe(true);
  });

  it("turns a refused plan into an error carrying what TensorRT logged, and reads a good plan's engine", () => {
    using runtime = TensorRtLibrary.get(trt).createRuntime();
    let err: unknown;
    try {
      runtime.deserialize(new TextEncoder().encode("not a plan"));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TensorRtError);
    expect((err as Error).message).toBe(
      "TensorRT IRuntime::deserializeCudaEngine failed: IRuntime::deserializeCudaEngine: Error Code 1: Serialization (Serialization assertion failed: the blob is not a fake plan)",
    );
    expect(hooks.live!()).toBe(1);
    const engine = runtime.deserialize(readFileSync(plan));
    expect(engine.tensors).toEqual([
      { name: "INPUT0", mode: "input", dataType: 0, shape: [-1, 4], format: 0, location: 0, shapeInference: false },
      { name: "OUTPUT0", mode: "output", dataType: 0, shape: [-1, 4], format: 0, location: 0, shapeInference: false },
    ]);
    expect(engine.profileCount).toBe(1);
    expect([0, 1, 2].map((sel) => engine.profileShape("INPUT0", 0, sel))).toEqual([
      [1, 4],
      [4, 4],
      [8, 4],
    ]);
    expect(engine.profileShape("OUTPUT0", 0, OPT_PROFILE_SELECTOR.MAX)).toBeUndefined();
    const ctx = engine.createExecutionContext();
    expect(hooks.strategy!()).toBe(EXECUTION_CONTEXT_ALLOCATION.STATIC);
    expect(ctx.tensorShape("OUTPUT0")).toEqual([-1, 4]);
    ctx.setInputShape("INPUT0", [3, 4]);
    expect(ctx.tensorShape("OUTPUT0")).toEqual([3, 4]);
    expect(() => ctx.tensorShape("NOPE")).toThrow(/invalid shape/);
    expect(hooks.live!()).toBe(3);
    // Closing the runtime closes what it made first: context, engine, then itself.
    runtime.close();
    expect(hooks.live!()).toBe(0);
    expect(() => ctx.setInputShape("INPUT0", [1, 4])).toThrow(/already closed/);
  });

  describe("the tensorrt backend", () => {
    const backend = new TensorRtBackend();
    const backendConfig = () => ({ library: trt });

    beforeAll(() => {
      process.env.NEREID_CUDA_LIBRARY = cuda;
    });

    it("describes a plan for auto-complete, and refuses types and formats it cannot serve", async () => {
      process.env.NEREID_CUDA_LIBRARY = cuda;
      expect(await backend.describe(plan, backendConfig())).toEqual({
        inputs: [{ name: "INPUT0", datatype: "FP32", shape: [-1, 4] }],
        outputs: [{ name: "OUTPUT0", datatype: "FP32", shape: [-1, 4] }],
      });
      const fp8 = await backend.describe(join(dir, "fp8.plan"), backendConfig()).catch((e: unknown) => e);
      expect([(fp8 as ServerError).code, (fp8 as Error).message]).toEqual([
        "UNSUPPORTED",
        `${join(dir, "fp8.plan")}: tensor 'OUTPUT0' has TensorRT data type kFP8 (6), which has no Triton datatype`,
      ]);
      const chw4 = await backend.describe(join(dir, "chw4.plan"), backendConfig()).catch((e: unknown) => e);
      expect((chw4 as ServerError).code).toBe("UNSUPPORTED");
      expect((chw4 as Error).message).toMatch(/tensor 'INPUT0' uses TensorRT TensorFormat 3; the tensorrt backend only serves kLINEAR/);
      const bad = await backend.describe(join(dir, "bad.plan"), backendConfig()).catch((e: unknown) => e);
      expect((bad as Error).message).toMatch(/^TensorRT IRuntime::deserializeCudaEngine failed: .*not a fake plan/);
      expect([hooks.live!(), hooks.primaryRefs!()]).toEqual([0, 0]);
    });

    it("runs the plan on the (fake) GPU with exact outputs at batch 1 and 3, then frees everything exactly once", async () => {
      process.env.NEREID_CUDA_LIBRARY = cuda;
      const model = await backend.load(loadContext("trt", plan, trtConfig("trt"), backendConfig()));
      const instance = await model.createInstance("trt_0", "KIND_GPU", 0);
      const enqueues = Number(hooks.enqueues!());
      const one = await instance.execute([{ name: "INPUT0", datatype: "FP32", shape: [1, 4], data: f32([1, 2, 3, 4]) }], []);
      expect(one.outputs).toHaveLength(1);
      expect(one.outputs[0]).toMatchObject({ name: "OUTPUT0", datatype: "FP32", shape: [1, 4] });
      expect(fromF32(one.outputs[0]!.data)).toEqual([2, 4, 6, 8]);
      const input = Array.from({ length: 12 }, (_, i) => i * 1.5 - 4);
      const three = await instance.execute([{ name: "INPUT0", datatype: "FP32", shape: [3, 4], data: f32(input) }], ["OUTPUT0"]);
      expect(three.outputs[0]!.shape).toEqual([3, 4]);
      expect(fromF32(three.outputs[0]!.data)).toEqual(input.map((v) => v * 2));
      expect([three.computeInputNs, three.computeInferNs, three.computeOutputNs].every((n) => typeof n === "number" && n >= 0)).toBe(true);
      expect(Number(hooks.enqueues!()) - enqueues).toBe(2);
      // TensorRT's refusal of a shape outside profile 0 comes back as INVALID_ARG with its message.
      const nine = await instance.execute([{ name: "INPUT0", datatype: "FP32", shape: [9, 4], data: f32(Array(36).fill(1)) }], []).catch((e: unknown) => e);
      expect((nine as ServerError).code).toBe("INVALID_ARG");
      expect((nine as Error).message).toMatch(/setInputShape\('INPUT0', \[9,4\]\) failed: .*outside the optimization profile's \[1, 8\]/);
      // One runtime, engine and execution context; a primary-context reference; one buffer per tensor; one stream.
      expect([hooks.live!(), hooks.primaryRefs!(), hooks.allocations!(), hooks.streams!()]).toEqual([3, 1, 2, 1]);
      instance.close();
      instance.close();
      expect([hooks.live!(), hooks.allocations!(), hooks.streams!()]).toEqual([2, 0, 0]);
      model.close();
      model.close();
      expect([hooks.live!(), hooks.primaryRefs!(), hooks.allocations!(), hooks.streams!()]).toEqual([0, 0, 0, 0]);
    });

    it("refuses KIND_CPU, a GPU that does not exist, and a config the engine does not match", async () => {
      process.env.NEREID_CUDA_LIBRARY = cuda;
      const model = await backend.load(loadContext("trt", plan, trtConfig("trt"), backendConfig()));
      const cpu = await model.createInstance("c", "KIND_CPU", 0).catch((e: unknown) => e);
      expect([(cpu as ServerError).code, (cpu as Error).message]).toEqual([
        "UNSUPPORTED",
        "model 'trt': instance 'c' is KIND_CPU, but TensorRT engines run only on a GPU; use instance_group [ { kind: KIND_GPU } ]",
      ]);
      const gpu1 = await model.createInstance("g", "KIND_GPU", 1).catch((e: unknown) => e);
      expect([(gpu1 as ServerError).code, (gpu1 as Error).message]).toEqual([
        "INVALID_ARG",
        "model 'trt': GPU 1 does not exist (the CUDA driver reports 1 device(s))",
      ]);
      model.close();

      const cases: [Partial<ModelConfig>, RegExp][] = [
        [
          { input: [{ name: "INPUT0", data_type: "TYPE_FP32", dims: [5] }] },
          /input 'INPUT0' has dims \[5\] in config\.pbtxt but the engine's shape is \[-1,4\] \(its first dimension is the batch\)/,
        ],
        [
          { input: [{ name: "INPUT0", data_type: "TYPE_INT32", dims: [4] }] },
          /input 'INPUT0' is TYPE_INT32 in config\.pbtxt but kFLOAT \(0\) \(TYPE_FP32\) in the engine/,
        ],
        [{ input: [{ name: "X", data_type: "TYPE_FP32", dims: [4] }] }, /input 'X' is not an input of the TensorRT engine \(its inputs: 'INPUT0'\)/],
        [{ input: [] }, /the engine's input 'INPUT0' is not in config\.pbtxt/],
        [{ max_batch_size: 16 }, /max_batch_size is 16 but the engine's optimization profile 0 accepts at most 8 for input 'INPUT0'/],
        [
          { max_batch_size: 0, input: [{ name: "INPUT0", data_type: "TYPE_FP32", dims: [4] }] },
          /input 'INPUT0' has dims \[4\] in config\.pbtxt but the engine's shape is \[-1,4\]$/,
        ],
      ];
      for (const [over, message] of cases) {
        const m = await backend.load(loadContext("trt", plan, trtConfig("trt", over), backendConfig()));
        const err = await m.createInstance("g", "KIND_GPU", 0).catch((e: unknown) => e);
        expect((err as ServerError).code, JSON.stringify(over)).toBe("INVALID_ARG");
        expect((err as Error).message).toMatch(message);
        m.close();
      }
      // A bad plan: TensorRT's logged reason, and nothing left behind.
      const bad = await backend.load(loadContext("trt", join(dir, "bad.plan"), trtConfig("trt"), backendConfig()));
      const err = await bad.createInstance("g", "KIND_GPU", 0).catch((e: unknown) => e);
      expect((err as Error).message).toMatch(/^TensorRT IRuntime::deserializeCudaEngine failed: .*not a fake plan/);
      bad.close();
      expect([hooks.live!(), hooks.primaryRefs!(), hooks.allocations!(), hooks.streams!()]).toEqual([0, 0, 0, 0]);
    });

    // Last: once a worker-thread cuStreamSynchronize answers CUDA_ERROR_INVALID_CONTEXT the
    // process polls from then on.
    it("waits for the stream on koffi's worker thread, and falls back to polling when the driver wants a context there", async () => {
      process.env.NEREID_CUDA_LIBRARY = cuda;
      // Strict: a call without a current context fails, as the driver does; the JS thread has one.
      process.env.FAKE_CUDA_STRICT_CONTEXT = "1";
      process.env.FAKE_CUDA_QUERY_PENDING = "3";
      const model = await backend.load(loadContext("trt", plan, trtConfig("trt"), backendConfig()));
      const instance = await model.createInstance("trt_0", "KIND_GPU", 0);
      const [sync0, query0] = [Number(hooks.syncCalls!()), Number(hooks.queryCalls!())];
      const out = await instance.execute([{ name: "INPUT0", datatype: "FP32", shape: [2, 4], data: f32([1, 2, 3, 4, 5, 6, 7, 8]) }], []);
      expect(fromF32(out.outputs[0]!.data)).toEqual([2, 4, 6, 8, 10, 12, 14, 16]);
      // The worker's cuStreamSynchronize had no context (so it ran off the JS thread); the JS thread then polled 3 × NOT_READY + SUCCESS.
      expect(Number(hooks.syncCalls!()) - sync0).toBeGreaterThanOrEqual(1);
      expect(Number(hooks.queryCalls!()) - query0).toBe(4);
      const again = await instance.execute([{ name: "INPUT0", datatype: "FP32", shape: [1, 4], data: f32([0.5, 0, -1, 3]) }], []);
      expect(fromF32(again.outputs[0]!.data)).toEqual([1, 0, -2, 6]);
      instance.close();
      model.close();
      expect([hooks.live!(), hooks.primaryRefs!(), hooks.allocations!(), hooks.streams!()]).toEqual([0, 0, 0, 0]);
    });
  });
});
