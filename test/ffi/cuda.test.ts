/**
 * The CUDA driver binding where no driver exists (this machine, CI): one clear error,
 * no crash; declarations checked against cuda.h. Verified on an H100 with
 * scripts/verify-hardware.sh (scripts/results/hardware.md), not here.
 */
import { describe, it, expect } from "vitest";
import { existsSync } from "node:fs";
import { getKoffi, LibraryLoadError } from "../../ffi/load.ts";
import {
  CudaDriver,
  CU_DEVICE_ATTRIBUTE,
  CU_IPC_HANDLE_SIZE,
  CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS,
  CUDA_ERROR_NO_DEVICE,
  ipcHandleType,
} from "../../ffi/cuda/driver.ts";
import { runServerToExit } from "../helpers/server-process.ts";

const hasDriver = ["/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib/aarch64-linux-gnu/libcuda.so.1"].some(existsSync);

describe("ffi/cuda declarations (cuda.h)", () => {
  it("uses cuda.h's values and layouts", () => {
    expect(CU_DEVICE_ATTRIBUTE).toEqual({ COMPUTE_CAPABILITY_MAJOR: 75, COMPUTE_CAPABILITY_MINOR: 76, MULTIPROCESSOR_COUNT: 16 });
    expect(CU_IPC_HANDLE_SIZE).toBe(64);
    expect(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS).toBe(1);
    expect(CUDA_ERROR_NO_DEVICE).toBe(100);
    const k = getKoffi();
    expect(k.sizeof(ipcHandleType() as never)).toBe(64);
    expect(k.alignof(ipcHandleType() as never)).toBe(1);
  });
});

describe.skipIf(hasDriver)("without a CUDA driver", () => {
  it("CudaDriver.get() fails with one error that lists every place it looked", () => {
    let err: unknown;
    try {
      CudaDriver.get();
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(LibraryLoadError);
    expect((err as Error).message).toMatch(/^cannot load the CUDA driver \(libcuda\.so\.1\); tried:\n  libcuda\.so\.1: /);
    expect((err as Error).message.split("\n")).toHaveLength(5);
  });

  it("`nereid devices` says so and exits 0; --self-test exits 1", async () => {
    const plain = await runServerToExit(["devices"]);
    expect(plain.code).toBe(0);
    expect(plain.output).toMatch(/^no CUDA driver: cannot load the CUDA driver \(libcuda\.so\.1\); tried:/);
    expect(plain.output).toMatch(/\nno TensorRT: cannot load TensorRT \(libnvinfer\.so\.10\); tried:\n  libnvinfer\.so\.10: /);
    expect(plain.output).toMatch(/\nno OpenVINO: cannot load OpenVINO's C library \(libopenvino_c\.so\); tried:\n  libopenvino_c\.so: /);
    // ONNX Runtime's CUDA and TensorRT providers are compiled in, but their libraries are not beside it here (#34 item 2).
    expect(plain.output).toMatch(
      /\nONNX Runtime 1\.30\.\d+ \(\S+libonnxruntime\.so\.1[^)]*\), execution providers: [\w, ]*CPUExecutionProvider; compiled in but not usable here: [^\n]*CUDAExecutionProvider \(no libonnxruntime_providers_cuda\.so beside it\)/,
    );
    expect(plain.output).toMatch(/TensorrtExecutionProvider \(no libonnxruntime_providers_tensorrt\.so beside it\)/);
    expect(plain.output).not.toMatch(/execution providers: [^;\n]*CUDAExecutionProvider/);
    const self = await runServerToExit(["devices", "--self-test"]);
    expect(self.code).toBe(1);
    const bad = await runServerToExit(["devices", "--bogus"]);
    expect(bad.code).toBe(1);
    expect(bad.output).toContain("unexpected argument '--bogus' for 'devices'");
  });
});

describe("ffi/nvml (nvml.h)", () => {
  it("lays out nvmlUtilization_t and nvmlMemory_t as nvml.h does", async () => {
    const { nvmlTypes, NVML_UUID_BUFFER } = await import("../../ffi/nvml/nvml.ts");
    const k = getKoffi();
    const t = nvmlTypes();
    expect(k.sizeof(t.util as never)).toBe(8);
    expect(k.sizeof(t.mem as never)).toBe(24);
    expect(k.offsetof(t.mem as never, "used")).toBe(16);
    expect(NVML_UUID_BUFFER).toBe(96);
  });

  it.skipIf(hasDriver)("without NVML the GPU sampler reports why and has no samples", async () => {
    const { GpuSampler } = await import("../../src/metrics/gpu.ts");
    const s = new GpuSampler(1000);
    expect(s.unavailable).toMatch(/^cannot load NVML \(libnvidia-ml\.so\.1\); tried:\n  libnvidia-ml\.so\.1: /);
    expect(s.samples).toEqual([]);
    s.close();
  });
});
