/**
 * @module Model config → ONNX Runtime session settings, with Triton's onnxruntime backend
 * parameter names (intra_op_thread_count, inter_op_thread_count, execution_mode,
 * enable_mem_arena, enable_mem_pattern, session.* config entries) and its mapping of
 * optimization.graph.level; plus our own run_mode and allow_spinning.
 */
import { availableParallelism } from "node:os";
import { GRAPH_OPTIMIZATION_LEVEL } from "../../../ffi/onnxruntime/symbols.ts";
import type { ExecutionProvider, SessionConfig } from "../../../ffi/onnxruntime/handles.ts";
import { invalidArg } from "../../core/errors.ts";
import type { ModelConfig } from "../../core/model-config-types.ts";

/** How a run is dispatched: koffi's worker thread (async), the calling thread (sync), or measured (auto). */
export type RunMode = "auto" | "async" | "sync";

function param(config: ModelConfig, key: string): string | undefined {
  return config.parameters?.[key]?.string_value;
}

function intParam(config: ModelConfig, key: string, fallback: number): number {
  const v = param(config, key);
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw invalidArg(`model '${config.name}': parameter '${key}' must be a non-negative integer, got '${v}'`);
  return n;
}

/** Triton's ParseBoolValue: true/on/1 and false/off/0, any case. */
function boolParam(config: ModelConfig, key: string): boolean | undefined {
  const v = param(config, key);
  if (v === undefined) return undefined;
  const l = v.toLowerCase();
  if (l === "true" || l === "on" || l === "1") return true;
  if (l === "false" || l === "off" || l === "0") return false;
  throw invalidArg(`model '${config.name}': parameter '${key}' must be true or false, got '${v}'`);
}

/** Triton: level -1 → basic only, 1 → basic + extended, 2 → none, otherwise (0, unset) → all. */
function graphLevel(config: ModelConfig): number {
  const level = Number((config.optimization as { graph?: { level?: number | string } } | undefined)?.graph?.level ?? 0);
  if (level === -1) return GRAPH_OPTIMIZATION_LEVEL.ENABLE_BASIC;
  if (level === 1) return GRAPH_OPTIMIZATION_LEVEL.ENABLE_EXTENDED;
  if (level === 2) return GRAPH_OPTIMIZATION_LEVEL.DISABLE_ALL;
  return GRAPH_OPTIMIZATION_LEVEL.ENABLE_ALL;
}

/**
 * The intra-op threads of each instance when intra_op_thread_count is unset or 0: the
 * cores but one, shared among the instances (instances × threads ≤ cores − 1), at least 1.
 * The core left over runs the threads that serve requests: when they and ONNX Runtime's
 * threads share every core, a run's threads are preempted, its parallel sections wait for
 * the preempted one, and each item costs more CPU (#30: with dynamic batching at c=32 on 2
 * cores, 1 thread instead of 2 used 11–31% less server CPU per item). Triton leaves 0 to
 * ONNX Runtime, which takes every physical core for each session.
 */
export function defaultIntraOpThreads(cores: number, instances: number): number {
  return Math.max(1, Math.floor((cores - 1) / Math.max(1, instances)));
}

/**
 * Session settings for each instance of `config` (on GPU `gpuDevice` for a KIND_GPU
 * instance). Thread counts left at 0 share the cores among the instances
 * (defaultIntraOpThreads), and intra-op threads do not spin after a run unless
 * allow_spinning says so.
 */
export function sessionConfig(config: ModelConfig, gpuDevice?: number): SessionConfig {
  const instances = (config.instance_group ?? []).reduce((n, g) => n + (g.count ?? 1), 0);
  const intra = intParam(config, "intra_op_thread_count", 0) || defaultIntraOpThreads(availableParallelism(), instances);
  const inter = intParam(config, "inter_op_thread_count", 0) || 1;
  const mode = intParam(config, "execution_mode", 0);
  if (mode > 1) throw invalidArg(`model '${config.name}': parameter 'execution_mode' must be 0 (sequential) or 1 (parallel), got '${mode}'`);
  const memPattern = boolParam(config, "enable_mem_pattern");
  return {
    intraOpThreads: intra,
    interOpThreads: inter,
    graphOptimizationLevel: graphLevel(config),
    allowSpinning: boolParam(config, "allow_spinning") ?? false,
    memArena: boolParam(config, "enable_mem_arena") ?? true,
    ...(mode === 1 ? { parallelExecution: true } : {}),
    ...(memPattern === undefined ? {} : { memPattern }),
    providers: executionProviders(config, gpuDevice),
    entries: Object.fromEntries(
      Object.entries(config.parameters ?? {})
        .filter(([k]) => k.startsWith("session."))
        .map(([k, v]) => [k, v.string_value ?? ""]),
    ),
  };
}

export function runMode(config: ModelConfig): RunMode {
  const v = param(config, "run_mode") ?? "auto";
  if (v !== "auto" && v !== "async" && v !== "sync") throw invalidArg(`model '${config.name}': parameter 'run_mode' must be auto, async or sync, got '${v}'`);
  return v;
}

interface Accelerator {
  name?: string;
  parameters?: Record<string, string>;
}

/**
 * optimization.execution_accelerators → ONNX Runtime execution providers for one
 * instance, as Triton's onnxruntime backend appends them (onnxruntime.cc, LoadModel):
 * for a KIND_GPU instance on GPU `gpuDevice`, the GPU accelerators ("tensorrt", whose
 * Triton parameter names precision_mode and max_workspace_size_bytes become ORT's option
 * keys), then CUDA always, with the "cuda" accelerator's parameters, each with
 * device_id = the instance's GPU; for every instance, the CPU accelerators ("openvino").
 * A KIND_CPU instance ignores the GPU accelerators, as in Triton. Unknown accelerator
 * names are refused for every kind.
 */
export function executionProviders(config: ModelConfig, gpuDevice?: number): ExecutionProvider[] {
  const acc = (
    config.optimization as { execution_accelerators?: { gpu_execution_accelerator?: Accelerator[]; cpu_execution_accelerator?: Accelerator[] } } | undefined
  )?.execution_accelerators;
  const gpu: ExecutionProvider[] = [];
  const cuda: Record<string, string> = {};
  for (const a of acc?.gpu_execution_accelerator ?? []) {
    const params = { ...a.parameters };
    if (a.name === "tensorrt") {
      const options: Record<string, string> = {};
      for (const [k, v] of Object.entries(params)) {
        if (k === "precision_mode") {
          if (v === "FP16") options.trt_fp16_enable = "1";
          else if (v === "INT8") options.trt_int8_enable = "1";
          else if (v !== "FP32") throw invalidArg(`model '${config.name}': unsupported precision mode '${v}' for the tensorrt accelerator`);
        } else if (k === "max_workspace_size_bytes") options.trt_max_workspace_size = v;
        else options[k] = v;
      }
      gpu.push({ name: "TensorRT", options });
    } else if (a.name === "cuda") {
      Object.assign(cuda, params);
    } else {
      throw invalidArg(`model '${config.name}': unknown gpu execution accelerator '${a.name}' (expected tensorrt or cuda)`);
    }
  }
  const out: ExecutionProvider[] = [];
  if (gpuDevice !== undefined) {
    const device_id = String(gpuDevice);
    for (const p of gpu) out.push({ name: p.name, options: { ...p.options, device_id } });
    out.push({ name: "CUDA", options: { ...cuda, device_id } });
  }
  for (const a of acc?.cpu_execution_accelerator ?? []) {
    if (a.name !== "openvino") throw invalidArg(`model '${config.name}': unknown cpu execution accelerator '${a.name}' (expected openvino)`);
    out.push({ name: "OpenVINO", options: { ...a.parameters } });
  }
  return out;
}
