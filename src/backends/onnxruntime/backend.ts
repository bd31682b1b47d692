/**
 * @module The ONNX Runtime backend: one OrtSession per model instance, session options
 * from the model config (Triton's onnxruntime backend parameter names), and runs that
 * leave the event loop free unless the model has proven tiny.
 */
import { nowNs } from "../../core/clock.ts";
import { statSync } from "node:fs";
import { OrtEnvironment, OrtSessionOptions } from "../../../ffi/onnxruntime/handles.ts";
import { OrtSession, type SharedOrtSession } from "../../../ffi/onnxruntime/session.ts";
import { mallocTrim } from "../../../ffi/libc/malloc.ts";
import { koffiNativePath, setKoffiNativePath } from "../../../ffi/load.ts";
import { GRAPH_OPTIMIZATION_LEVEL } from "../../../ffi/onnxruntime/symbols.ts";
import { ServerError, invalidArg } from "../../core/errors.ts";
import { runMode, sessionConfig, type RunMode } from "./options.ts";
import { AutoRunMode } from "./run-mode.ts";
import { protocolType, toOrtInput, fromOrtOutput } from "./tensors.ts";
import type { Backend, BackendInstance, BackendLoadContext, BackendModel, ExecuteResult, ModelFileIO, SharedInstance, TensorSpec } from "../backend.ts";
import type { Tensor } from "../../core/tensor.ts";

/** An ONNX Runtime instance as another thread borrows it (OrtInstance.share). */
interface SharedOrtInstance {
  name: string;
  /** The library the process loaded (the same one, already open, in every thread). */
  library: string;
  session: SharedOrtSession;
  mode: RunMode;
  batched: boolean;
}

class OrtInstance implements BackendInstance {
  readonly name: string;
  readonly #session: OrtSession;
  readonly #outputNames: string[];
  readonly #mode: RunMode;
  /** Set in "auto" mode: decides each run's thread from the runs before. */
  readonly #auto: AutoRunMode | undefined;
  readonly #batched: boolean;

  constructor(name: string, session: OrtSession, mode: RunMode, batched: boolean) {
    this.name = name;
    this.#batched = batched;
    this.#session = session;
    this.#outputNames = session.outputs.map((o) => o.name);
    this.#mode = mode;
    this.#auto = mode === "auto" ? new AutoRunMode() : undefined;
  }

  async execute(inputs: Tensor[], outputNames: readonly string[]): Promise<ExecuteResult> {
    const t0 = nowNs();
    const ortInputs = inputs.map(toOrtInput);
    const names = outputNames.length > 0 ? outputNames : this.#outputNames;
    let bytes = 0;
    if (this.#auto) for (const t of inputs) bytes += t.data.byteLength;
    const t1 = nowNs();
    const sync = this.#auto ? this.#auto.syncFor(bytes) : this.#mode === "sync";
    // A small synchronous run answers without a promise of its own.
    const raw = (sync && this.#session.runBound(ortInputs, names, this.#batched)) || (await this.#session.run(ortInputs, names, !sync, this.#batched));
    const t2 = nowNs();
    const outputs = raw.map(fromOrtOutput);
    const t3 = nowNs();
    this.#auto?.record((t2 - t1) / 1000, sync, bytes);
    return { outputs, computeInputNs: t1 - t0, computeInferNs: t2 - t1, computeOutputNs: t3 - t2 };
  }

  share(): SharedInstance {
    const spec: SharedOrtInstance = {
      name: this.name,
      library: OrtEnvironment.get().api.libraryPath,
      session: this.#session.share(),
      mode: this.#mode,
      batched: this.#batched,
    };
    return { backend: "onnxruntime", spec };
  }

  /** A borrowed instance's run, inside the owner's guard: undefined when the owner has retired the session. */
  async executeBorrowed(inputs: Tensor[], outputNames: readonly string[]): Promise<ExecuteResult | undefined> {
    if (!this.#session.enter()) return undefined;
    try {
      return await this.execute(inputs, outputNames);
    } finally {
      this.#session.leave();
    }
  }

  close(): void {
    this.#session.close();
  }
}

/**
 * Another thread's ONNX Runtime instance, to run in this one (a frontend worker): the
 * process's one OrtEnv and the owner's session; close() frees only this thread's part.
 */
export function borrowOrtInstance(shared: SharedInstance): OrtInstance {
  const spec = shared.spec as SharedOrtInstance;
  // In the compiled binary koffi's native module is an embedded file the owner's thread was told of.
  if (spec.session.koffi && !koffiNativePath()) setKoffiNativePath(spec.session.koffi);
  const env = OrtEnvironment.get(spec.library);
  return new OrtInstance(spec.name, OrtSession.borrow(env, spec.session), spec.mode, spec.batched);
}

export type { OrtInstance };

class OrtModel implements BackendModel {
  readonly #ctx: BackendLoadContext;
  readonly #env: OrtEnvironment;
  /** Session options of KIND_CPU / KIND_MODEL instances (CPU accelerators only). */
  #options: OrtSessionOptions | undefined;
  /** Session options of KIND_GPU instances, per GPU (CUDA, and TensorRT when asked for). */
  readonly #gpuOptions = new Map<number, OrtSessionOptions>();
  readonly #mode: RunMode;

  constructor(ctx: BackendLoadContext, env: OrtEnvironment) {
    this.#ctx = ctx;
    this.#env = env;
    this.#mode = runMode(ctx.config);
    this.#options = this.#sessionOptions();
  }

  /** Session options for a CPU instance, or a KIND_GPU one on `gpu`; UNSUPPORTED naming the providers ORT refused. */
  #sessionOptions(gpu?: number): OrtSessionOptions {
    const config = sessionConfig(this.#ctx.config, gpu);
    try {
      return new OrtSessionOptions(this.#env.api, config);
    } catch (err) {
      if (!config.providers?.length) throw err;
      const why = gpu === undefined ? "requested by its execution_accelerators" : `needed by its KIND_GPU instances on GPU ${gpu}`;
      throw new ServerError(
        "UNSUPPORTED",
        `model '${this.#ctx.modelName}': execution provider(s) ${config.providers.map((p) => p.name).join(", ")} ${why}: ` +
          `${(err as Error).message} (providers compiled into this ONNX Runtime: ${this.#env.availableProviders().join(", ")})`,
        { cause: err },
      );
    }
  }

  async createInstance(name: string, kind: "KIND_CPU" | "KIND_GPU" | "KIND_MODEL", deviceId: number): Promise<BackendInstance> {
    if (!this.#options) throw new ServerError("INTERNAL", "model is closed");
    let options = this.#options;
    if (kind === "KIND_GPU") {
      options = this.#gpuOptions.get(deviceId) ?? this.#sessionOptions(deviceId);
      this.#gpuOptions.set(deviceId, options);
    }
    const session = await OrtSession.open(this.#env, this.#ctx.modelPath, options);
    mallocTrim(); // ORT's copy of the model file, freed once the session is built
    return new OrtInstance(name, session, this.#mode, (this.#ctx.config.max_batch_size ?? 0) > 0);
  }

  close(): void {
    this.#options?.close();
    this.#options = undefined;
    for (const o of this.#gpuOptions.values()) o.close();
    this.#gpuOptions.clear();
    // The sessions' weights and arenas are free now: collect the JS objects that still
    // pointed at them, then give the freed pages back (RSS after an unload).
    (globalThis as { Bun?: { gc(force: boolean): void } }).Bun?.gc(true);
    mallocTrim();
  }
}

export class OnnxRuntimeBackend implements Backend {
  readonly name = "onnxruntime";
  readonly platform = "onnxruntime_onnx";
  readonly defaultModelFilename = "model.onnx";

  #environment(backendConfig: Record<string, string>): OrtEnvironment {
    try {
      return OrtEnvironment.get(backendConfig.library);
    } catch (err) {
      throw new ServerError("UNAVAILABLE", (err as Error).message, { cause: err });
    }
  }

  async describe(modelPath: string, backendConfig: Record<string, string>): Promise<ModelFileIO> {
    const env = this.#environment(backendConfig);
    using options = new OrtSessionOptions(env.api, {
      intraOpThreads: 1,
      interOpThreads: 1,
      graphOptimizationLevel: GRAPH_OPTIMIZATION_LEVEL.DISABLE_ALL,
      allowSpinning: false,
      memArena: false,
    });
    // Created on koffi's worker thread: parsing a large model must not block the event loop.
    using session = await OrtSession.open(env, resolveModelFile(modelPath), options);
    const spec = (t: { name: string; elementType: number; shape: number[]; isTensor: boolean }): TensorSpec => {
      const datatype = t.isTensor ? protocolType(t.elementType) : undefined;
      if (!datatype) throw invalidArg(`tensor '${t.name}' of ${modelPath} has a type that Triton cannot describe`);
      return { name: t.name, datatype, shape: t.shape };
    };
    return { inputs: session.inputs.map(spec), outputs: session.outputs.map(spec) };
  }

  async load(ctx: BackendLoadContext): Promise<BackendModel> {
    return new OrtModel({ ...ctx, modelPath: resolveModelFile(ctx.modelPath) }, this.#environment(ctx.backendConfig));
  }
}

/** Triton accepts model.onnx as a file or as a folder holding model.onnx. */
function resolveModelFile(path: string): string {
  try {
    return statSync(path).isDirectory() ? `${path}/model.onnx` : path;
  } catch {
    return path;
  }
}
