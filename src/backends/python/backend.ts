/**
 * @module The `python` backend (issue #32), as Triton's python_backend runs a model: a
 * version folder's `model.py` (or the config's default_model_filename) defines
 * `TritonPythonModel`; each instance is a stub process of its own (instance.ts) running
 * the model's Python (interpreter.ts), with tensors crossing through shared memory
 * (arena.ts) and control messages through the stub's pipes (stub-process.ts).
 *
 * Settings (`--backend-config=python,<key>=<value>`): `interpreter` (default `python3`
 * on PATH), `shm-default-byte-size` (each of an instance's two shared-memory regions;
 * default 64 MiB, only pages in use take memory), `stub-timeout-seconds` (default 30:
 * how long a stub may go without answering a health check before it is killed and
 * restarted).
 */
import { basename, dirname } from "node:path";
import { invalidArg, unavailable } from "../../core/errors.ts";
import type { ModelConfig } from "../../core/model-config-types.ts";
import type { Backend, BackendInstance, BackendLoadContext, BackendModel } from "../backend.ts";
import { StubMemory } from "./arena.ts";
import { PythonInstance } from "./instance.ts";
import { resolveInterpreter, type Interpreter } from "./interpreter.ts";
import { CUSTOM_METRICS, type CustomMetrics } from "../custom-metrics.ts";
import { StubProcess, type Message } from "./stub-process.ts";

const DEFAULT_SHM_BYTES = 64 << 20;
const DEFAULT_TIMEOUT_S = 30;

function positive(config: Record<string, string>, key: string, fallback: number): number {
  const v = config[key];
  if (v === undefined || v === "") return fallback;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw invalidArg(`--backend-config=python,${key} must be a positive number, not '${v}'`);
  return n;
}

class PythonModel implements BackendModel {
  constructor(
    readonly ctx: BackendLoadContext,
    readonly interpreter: Interpreter,
    readonly metrics: CustomMetrics,
  ) {}

  createInstance(name: string, kind: "KIND_CPU" | "KIND_GPU" | "KIND_MODEL", deviceId: number): Promise<BackendInstance> {
    const bc = this.ctx.backendConfig;
    return PythonInstance.create({
      ctx: this.ctx,
      name,
      kind,
      deviceId,
      interpreter: this.interpreter,
      shmSize: Math.ceil(positive(bc, "shm-default-byte-size", DEFAULT_SHM_BYTES)),
      timeoutMs: positive(bc, "stub-timeout-seconds", DEFAULT_TIMEOUT_S) * 1000,
      metrics: this.metrics,
    });
  }

  close(): void {
    this.interpreter.dispose();
  }
}

export class PythonBackend implements Backend {
  readonly name = "python";
  readonly defaultModelFilename = "model.py";
  readonly gpus = "own" as const;
  readonly #backendConfig: Record<string, string>;
  /** Shared with the typescript backend: one set of families on /metrics. */
  readonly metrics: CustomMetrics = CUSTOM_METRICS;

  /** `backendConfig`: the merged `--backend-config` settings for python (auto-complete runs before a load gives them). */
  constructor(backendConfig: Record<string, string> = {}) {
    this.#backendConfig = backendConfig;
  }

  /** Runs the model's static auto_complete_config(auto_complete_model_config) in a short-lived stub. */
  async autoComplete(config: ModelConfig, modelPath: string): Promise<ModelConfig> {
    const model = config.name || basename(dirname(dirname(modelPath)));
    const interpreter = resolveInterpreter(model, config, dirname(dirname(modelPath)), this.#backendConfig);
    const memory = new StubMemory(4096);
    const timeoutMs = positive(this.#backendConfig, "stub-timeout-seconds", DEFAULT_TIMEOUT_S) * 1000;
    try {
      return await new Promise<ModelConfig>((resolve, reject) => {
        let fatal: string | undefined;
        const stub: StubProcess = new StubProcess({
          label: `model '${model}'`,
          interpreter,
          modelPath,
          memory,
          timeoutMs,
          onMessage: (m: Message) => {
            if (m.t === "config") resolve(m.config as ModelConfig);
            else if (m.t === "init_err") reject(invalidArg(`model '${model}': auto_complete_config failed: ${String(m.m)}`));
            else if (m.t === "fatal") fatal = `${String(m.m)} (interpreter '${interpreter.command}')`;
            else return;
            stub.endInput();
          },
          onExit: (reason) => reject(unavailable(`model '${model}': auto-complete failed: ${fatal ?? `the Python stub process ${reason}`}`)),
        });
        const end = stub.wait();
        stub.send({ t: "auto", config });
        void end;
      });
    } finally {
      memory.close();
      interpreter.dispose();
    }
  }

  async load(ctx: BackendLoadContext): Promise<BackendModel> {
    if (ctx.config.max_batch_size === undefined) ctx.config.max_batch_size = 0;
    const interpreter = resolveInterpreter(ctx.modelName, ctx.config, ctx.modelDir, ctx.backendConfig);
    return new PythonModel(ctx, interpreter, this.metrics);
  }
}
