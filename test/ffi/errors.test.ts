/**
 * Issue #20: one error type from the FFI up. Every native failure is a NativeError, which
 * is a ServerError: it carries Triton's code (so frontends/http/status.ts and
 * frontends/grpc/status.ts map it like any other error) and its message names the library
 * and the call. One case per library binding; the CUDA cases use the driver double
 * (test/ffi/doubles/fake_cuda.c), which is not a GPU.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ServerError, type ErrorCode } from "../../src/core/errors.ts";
import { NativeError, LibraryLoadError } from "../../ffi/errors.ts";
import { loadLibrary } from "../../ffi/load.ts";
import { statusError as ortStatusError } from "../../ffi/onnxruntime/status.ts";
import { OrtEnvironment, OrtSessionOptions } from "../../ffi/onnxruntime/handles.ts";
import { OrtSession } from "../../ffi/onnxruntime/session.ts";
import { bindOrtApi, GRAPH_OPTIMIZATION_LEVEL, ORT_ERROR_CODES, type OrtApi } from "../../ffi/onnxruntime/symbols.ts";
import { statusError as ovStatusError } from "../../ffi/openvino/status.ts";
import { OV_STATUS, elementTypeTableFor } from "../../ffi/openvino/types.ts";
import { OpenVinoRuntime } from "../../ffi/openvino/runtime.ts";
import type { OvApi } from "../../ffi/openvino/symbols.ts";
import { TensorRtError } from "../../ffi/tensorrt/errors.ts";
import { toDims } from "../../ffi/tensorrt/symbols.ts";
import { CudaDriver, CudaError, cudaErrorCode } from "../../ffi/cuda/driver.ts";
import { SharedMemoryFile, createSharedMemory, unlinkSharedMemory } from "../../ffi/libc/shm.ts";
import { sdNotify } from "../../ffi/libc/notify.ts";

/** What `fn` threw (or its promise rejected with). */
async function thrown(fn: () => unknown): Promise<unknown> {
  try {
    await fn();
  } catch (err) {
    return err;
  }
  throw new Error("expected a throw");
}

/** `err` is a NativeError, hence a ServerError, with `code`, `library` and `call`. */
function expectNative(err: unknown, code: ErrorCode, library: string, call: string | undefined): NativeError {
  expect(err).toBeInstanceOf(NativeError);
  expect(err).toBeInstanceOf(ServerError);
  const e = err as NativeError;
  expect([e.code, e.library, e.call]).toEqual([code, library, call]);
  // ServerError.from passes it through: nothing between the FFI and a frontend recodes it.
  expect(ServerError.from(e)).toBe(e);
  return e;
}

describe("library loading", () => {
  it("a library that cannot be loaded is a LibraryLoadError: UNAVAILABLE, naming the library and dlopen", async () => {
    const err = expectNative(await thrown(() => loadLibrary("X (libx.so)", ["/nonexistent/libx.so"])), "UNAVAILABLE", "X (libx.so)", "dlopen");
    expect(err).toBeInstanceOf(LibraryLoadError);
    expect(err.message).toMatch(/^cannot load X \(libx\.so\); tried:\n {2}\/nonexistent\/libx\.so: /);
  });

  it("a library that loads but is not the one asked for is UNAVAILABLE, naming the missing entry point", async () => {
    const ort = expectNative(await thrown(() => bindOrtApi(["libm.so.6"])), "UNAVAILABLE", "ONNX Runtime", "OrtGetApiBase");
    expect(ort.message).toMatch(/^libm\.so\.6 does not export OrtGetApiBase: /);
    const ov = expectNative(await thrown(() => OpenVinoRuntime.load(["libc.so.6"])), "UNAVAILABLE", "OpenVINO", "ov_get_error_info");
    expect(ov.message).toMatch(/^libc\.so\.6 does not export ov_get_error_info, so it is not OpenVINO's C library/);
    const old = expectNative(await thrown(() => elementTypeTableFor("2022.3.0-9052")), "UNAVAILABLE", "OpenVINO", "ov_get_openvino_version");
    expect(old.message).toMatch(/^OpenVINO 2022\.3\.0-9052 is older than 2023\.0/);
  });
});

describe("ONNX Runtime", () => {
  it("maps OrtErrorCode to Triton's code and names the call", () => {
    const cases: [(typeof ORT_ERROR_CODES)[number], ErrorCode][] = [
      ["ORT_INVALID_ARGUMENT", "INVALID_ARG"],
      ["ORT_NOT_IMPLEMENTED", "UNSUPPORTED"],
      ["ORT_FAIL", "INTERNAL"],
      ["ORT_NO_SUCHFILE", "INTERNAL"],
    ];
    for (const [name, code] of cases) {
      let released = false;
      const api = {
        GetErrorCode: () => ORT_ERROR_CODES.indexOf(name),
        GetErrorMessage: () => "why",
        ReleaseStatus: () => (released = true),
      } as unknown as OrtApi;
      const err = expectNative(ortStatusError(api, 1n, "Run"), code, "onnxruntime", "Run");
      expect(err.message).toBe(`onnxruntime: Run: ${name}: why`);
      expect(released).toBe(true);
    }
  });

  it("a real failed call: CreateSession on a missing file", async () => {
    const env = OrtEnvironment.get();
    using options = new OrtSessionOptions(env.api, {
      intraOpThreads: 1,
      interOpThreads: 1,
      graphOptimizationLevel: GRAPH_OPTIMIZATION_LEVEL.DISABLE_ALL,
      allowSpinning: false,
      memArena: false,
    });
    const path = "/nonexistent/model.onnx";
    const err = expectNative(await thrown(() => OrtSession.open(env, path, options)), "INTERNAL", "onnxruntime", `CreateSession(${path})`);
    expect(err.message).toMatch(/^onnxruntime: CreateSession\(\/nonexistent\/model\.onnx\): ORT_NO_SUCHFILE: /);
  });
});

describe("OpenVINO", () => {
  it("maps ov_status_e to Triton's code and names the call", () => {
    const api = { ov_get_error_info: () => "the library's phrase", ov_get_last_err_msg: undefined } as unknown as OvApi;
    const cases: [number, ErrorCode][] = [
      [OV_STATUS.PARAMETER_MISMATCH, "INVALID_ARG"],
      [OV_STATUS.INVALID_C_PARAM, "INVALID_ARG"],
      [OV_STATUS.OUT_OF_BOUNDS, "INVALID_ARG"],
      [OV_STATUS.NOT_IMPLEMENTED, "UNSUPPORTED"],
      [OV_STATUS.INFER_CANCELLED, "CANCELLED"],
      [OV_STATUS.GENERAL_ERROR, "INTERNAL"],
    ];
    for (const [status, code] of cases) {
      const err = expectNative(ovStatusError(api, status, "ov_infer_request_infer"), code, "openvino", "ov_infer_request_infer");
      expect(err.message).toMatch(/^openvino: ov_infer_request_infer: [A-Z_]+: the library's phrase$/);
    }
  });
});

describe("TensorRT", () => {
  it("a failed call is INTERNAL unless the caller knows better; a shape beyond TensorRT's limit is INVALID_ARG", async () => {
    const failed = expectNative(
      TensorRtError.failed("IRuntime::deserializeCudaEngine", ["bad blob"]),
      "INTERNAL",
      "TensorRT",
      "IRuntime::deserializeCudaEngine",
    );
    expect(failed.message).toBe("TensorRT IRuntime::deserializeCudaEngine failed: bad blob");
    const shape = "IExecutionContext::setInputShape('X', [9])";
    expectNative(TensorRtError.failed(shape, [], { code: "INVALID_ARG" }), "INVALID_ARG", "TensorRT", shape);
    const dims = expectNative(await thrown(() => toDims([1, 1, 1, 1, 1, 1, 1, 1, 1])), "INVALID_ARG", "TensorRT", undefined);
    expect(dims.message).toMatch(/at most 8 dimensions, got 9/);
  });
});

describe("the CUDA driver", () => {
  it("maps CUresult to Triton's code", () => {
    expect([1, 101, 400, 100, 801, 2, 201, 999].map(cudaErrorCode)).toEqual([
      "INVALID_ARG",
      "INVALID_ARG",
      "INVALID_ARG",
      "UNAVAILABLE",
      "UNSUPPORTED",
      "INTERNAL",
      "INTERNAL",
      "INTERNAL",
    ]);
  });

  const hasCompiler = spawnSync("cc", ["--version"], { stdio: "ignore" }).status === 0;
  describe.skipIf(!hasCompiler)("with the driver double (fake_cuda.c, not a GPU)", () => {
    let dir = "";
    let saved: string | undefined;
    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), "nereid-errors-"));
      const lib = join(dir, "libfake_cuda.so");
      execFileSync("cc", ["-shared", "-fPIC", "-O1", "-o", lib, join(import.meta.dirname, "doubles", "fake_cuda.c")]);
      saved = process.env.NEREID_CUDA_LIBRARY;
      process.env.NEREID_CUDA_LIBRARY = lib;
    });
    afterAll(() => {
      if (saved === undefined) delete process.env.NEREID_CUDA_LIBRARY;
      else process.env.NEREID_CUDA_LIBRARY = saved;
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it("a failed call reads 'CUDA driver: <call> failed: <name> (<CUresult>): <text>' with the CUresult's code", async () => {
      const driver = CudaDriver.get();
      const device = expectNative(await thrown(() => driver.primaryContext(7)), "INVALID_ARG", "CUDA driver", "cuDevicePrimaryCtxRetain");
      expect(device).toBeInstanceOf(CudaError);
      expect(device.message).toMatch(/^CUDA driver: cuDevicePrimaryCtxRetain failed: CUDA_ERROR_INVALID_DEVICE \(101\): /);
      expect((device as CudaError).result).toBe(101);
      const ctx = driver.primaryContext(0);
      try {
        const ipc = expectNative(await thrown(() => ctx.openIpc(new Uint8Array(64), 64)), "UNSUPPORTED", "CUDA driver", "cuIpcOpenMemHandle_v2");
        expect(ipc.message).toMatch(/^CUDA driver: cuIpcOpenMemHandle_v2 failed: CUDA_ERROR_NOT_SUPPORTED \(801\): /);
        const size = expectNative(await thrown(() => ctx.openIpc(new Uint8Array(3), 64)), "INVALID_ARG", "CUDA driver", "cuIpcOpenMemHandle_v2");
        expect(size.message).toBe("CUDA driver: cuIpcOpenMemHandle_v2: a CUDA IPC handle is 64 bytes, got 3");
        const zero = expectNative(await thrown(() => ctx.alloc(0)), "INVALID_ARG", "CUDA driver", "cuMemAlloc_v2");
        expect(zero.message).toMatch(/^CUDA driver: cuMemAlloc_v2 failed: CUDA_ERROR_INVALID_VALUE \(1\): /);
      } finally {
        ctx.release();
      }
    });
  });
});

describe("libc", () => {
  const key = `/nereid-errors-${process.pid}`;
  afterAll(() => unlinkSharedMemory(key));

  it("shared memory keeps Triton's codes and texts: INTERNAL for an object that cannot be opened, INVALID_ARG for one too small", async () => {
    const missing = expectNative(await thrown(() => SharedMemoryFile.open("/nereid-no-such-object", 8)), "INTERNAL", "libc", "shm_open");
    expect(missing.message).toBe("Unable to open shared memory region: '/nereid-no-such-object'");
    createSharedMemory(key, 16);
    const small = expectNative(await thrown(() => SharedMemoryFile.open(key, 64)), "INVALID_ARG", "libc", "lseek");
    expect(small.message).toBe(`shared memory object '${key}' holds 16 bytes, fewer than the 64 requested`);
  });

  it("sd_notify refuses a socket path that does not fit sockaddr_un", async () => {
    expectNative(await thrown(() => sdNotify("READY=1", `/${"x".repeat(200)}`)), "INVALID_ARG", "libc", undefined);
  });
});

describe("ffi/ throws only NativeErrors (#31)", () => {
  it("no file under ffi/ constructs a plain Error", async () => {
    const { readdirSync, readFileSync } = await import("node:fs");
    const root = join(import.meta.dirname, "..", "..", "ffi");
    const files = (readdirSync(root, { recursive: true }) as string[]).filter((f) => f.endsWith(".ts"));
    expect(files.length).toBeGreaterThan(10);
    const plain = files.flatMap((f) =>
      readFileSync(join(root, f), "utf8")
        .split("\n")
        .flatMap((line, i) => (/\bnew (?:Type|Range)?Error\(/.test(line) ? [`ffi/${f}:${i + 1}`] : [])),
    );
    expect(plain).toEqual([]);
  });
});
