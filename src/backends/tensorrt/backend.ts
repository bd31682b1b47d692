/**
 * @module The tensorrt backend (Triton's platform "tensorrt_plan", backend "tensorrt"):
 * serialized TensorRT 10 engines (model.plan) on NVIDIA GPUs through ffi/tensorrt and the
 * CUDA driver binding (ffi/cuda). Per model: one IRuntime, and per GPU the model's
 * instances use, the device's primary context and one engine deserialized from the plan;
 * per instance (KIND_GPU only): an execution context, a stream and device buffers
 * (instance.ts). Without a CUDA driver or a usable libnvinfer.so.10 the model is
 * UNAVAILABLE with the reason and the other models serve.
 *
 * Backend config: `--backend-config=tensorrt,library=PATH` (else NEREID_TENSORRT_LIBRARY,
 * else the search in ffi/tensorrt/library.ts). The CUDA driver comes from
 * NEREID_CUDA_LIBRARY or the usual search (ffi/cuda/driver.ts).
 *
 * Not served: vectorized I/O formats, shape tensors, data-dependent output shapes, and
 * optimization profiles other than 0 (each is refused with a message, not run wrongly).
 */
import { readFileSync } from "node:fs";
import { ServerError, invalidArg, unsupported } from "../../core/errors.ts";
import { CudaDriver, type PrimaryContext } from "../../../ffi/cuda/driver.ts";
import { TensorRtLibrary } from "../../../ffi/tensorrt/library.ts";
import type { TrtEngine } from "../../../ffi/tensorrt/engine.ts";
import type { TrtRuntime } from "../../../ffi/tensorrt/runtime.ts";
import type { CudaStream } from "../../../ffi/cuda/driver.ts";
import type { TrtExecutionContext } from "../../../ffi/tensorrt/context.ts";
import { bindEngine, tensorSpec, type EngineBinding } from "./io.ts";
import { TrtInstance } from "./instance.ts";
import type { Backend, BackendInstance, BackendLoadContext, BackendModel, ModelFileIO } from "../backend.ts";

/** What the model keeps per GPU. */
interface DeviceEngine {
  context: PrimaryContext;
  engine: TrtEngine;
  binding: EngineBinding;
}

class TrtModel implements BackendModel {
  readonly #ctx: BackendLoadContext;
  readonly #driver: CudaDriver;
  readonly #library: TensorRtLibrary;
  #runtime: TrtRuntime | undefined;
  readonly #devices = new Map<number, DeviceEngine>();
  #closed = false;

  constructor(ctx: BackendLoadContext, driver: CudaDriver, library: TensorRtLibrary) {
    this.#ctx = ctx;
    this.#driver = driver;
    this.#library = library;
  }

  async createInstance(name: string, kind: "KIND_CPU" | "KIND_GPU" | "KIND_MODEL", deviceId: number): Promise<BackendInstance> {
    const model = this.#ctx.modelName;
    if (this.#closed) throw new ServerError("INTERNAL", `model '${model}' is closed`);
    if (kind !== "KIND_GPU") {
      throw unsupported(`model '${model}': instance '${name}' is ${kind}, but TensorRT engines run only on a GPU; use instance_group [ { kind: KIND_GPU } ]`);
    }
    const device = this.#device(deviceId);
    device.context.makeCurrent();
    let exec: TrtExecutionContext | undefined;
    let stream: CudaStream | undefined;
    try {
      exec = device.engine.createExecutionContext();
      stream = device.context.stream();
      return new TrtInstance(name, device.context, exec, stream, device.binding);
    } catch (err) {
      stream?.destroy();
      exec?.close();
      throw ServerError.from(err);
    }
  }

  /** The engine on GPU `deviceId`, deserialized (and checked against the config) the first time. */
  #device(deviceId: number): DeviceEngine {
    const have = this.#devices.get(deviceId);
    if (have) return have;
    const model = this.#ctx.modelName;
    const count = this.#driver.deviceCount();
    if (!Number.isInteger(deviceId) || deviceId < 0 || deviceId >= count) {
      throw invalidArg(`model '${model}': GPU ${deviceId} does not exist (the CUDA driver reports ${count} device(s))`);
    }
    const context = this.#driver.primaryContext(deviceId);
    let engine: TrtEngine | undefined;
    try {
      this.#runtime ??= this.#library.createRuntime();
      engine = this.#runtime.deserialize(readFileSync(this.#ctx.modelPath));
      const e = engine;
      const binding = bindEngine(this.#ctx.config, e.tensors, (n, sel) => e.profileShape(n, 0, sel), model);
      const device = { context, engine, binding };
      this.#devices.set(deviceId, device);
      return device;
    } catch (err) {
      engine?.close();
      if (this.#devices.size === 0) {
        this.#runtime?.close();
        this.#runtime = undefined;
      }
      context.release();
      throw ServerError.from(err);
    }
  }

  /** Engines (each with its device current), then the runtime, then the primary contexts. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const d of this.#devices.values()) {
      d.context.makeCurrent();
      d.engine.close();
    }
    const first = this.#devices.values().next().value;
    first?.context.makeCurrent();
    this.#runtime?.close();
    this.#runtime = undefined;
    for (const d of this.#devices.values()) d.context.release();
    this.#devices.clear();
  }
}

export class TensorRtBackend implements Backend {
  readonly name = "tensorrt";
  readonly platform = "tensorrt_plan";
  readonly defaultModelFilename = "model.plan";
  readonly gpuOnly = true;

  /** The CUDA driver and TensorRT, or UNAVAILABLE saying which is missing and why. */
  #native(where: string, backendConfig: Record<string, string>): { driver: CudaDriver; library: TensorRtLibrary } {
    let driver: CudaDriver;
    try {
      driver = CudaDriver.get();
    } catch (err) {
      throw new ServerError("UNAVAILABLE", `${where}: the tensorrt backend needs a CUDA driver: ${(err as Error).message}`, { cause: err });
    }
    try {
      return { driver, library: TensorRtLibrary.get(backendConfig.library) };
    } catch (err) {
      throw new ServerError("UNAVAILABLE", `${where}: the tensorrt backend cannot use TensorRT: ${(err as Error).message}`, { cause: err });
    }
  }

  /** Deserializes the plan on GPU 0 to read its I/O tensors; everything is freed before returning. */
  async describe(modelPath: string, backendConfig: Record<string, string>): Promise<ModelFileIO> {
    const { driver, library } = this.#native(modelPath, backendConfig);
    if (driver.deviceCount() === 0) throw new ServerError("UNAVAILABLE", `${modelPath}: the tensorrt backend needs a GPU, and the CUDA driver reports none`);
    const context = driver.primaryContext(0);
    try {
      using runtime = library.createRuntime();
      using engine = runtime.deserialize(readFileSync(modelPath));
      const specs = engine.tensors.map((t) => ({ mode: t.mode, spec: tensorSpec(t, modelPath) }));
      return { inputs: specs.filter((s) => s.mode === "input").map((s) => s.spec), outputs: specs.filter((s) => s.mode === "output").map((s) => s.spec) };
    } catch (err) {
      throw ServerError.from(err);
    } finally {
      context.release();
    }
  }

  async load(ctx: BackendLoadContext): Promise<BackendModel> {
    const { driver, library } = this.#native(`model '${ctx.modelName}'`, ctx.backendConfig);
    return new TrtModel(ctx, driver, library);
  }
}
