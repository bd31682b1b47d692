/**
 * @module Triton's config defaults (normalization) and ONNX auto-complete from the
 * model file's declared inputs and outputs.
 */
import { invalidArg } from "../core/errors.ts";
import { toConfigType } from "../core/tensor.ts";
import type { ModelConfig, ModelInput, ModelOutput, ConfigDataType } from "./types.ts";
import type { ModelFileIO, TensorSpec } from "../backends/backend.ts";

export function normalizeModelConfig(input: ModelConfig, opts: { modelName: string; gpuCount: number }): ModelConfig {
  const config: ModelConfig = structuredClone(input);
  config.name ||= opts.modelName;
  config.max_batch_size ??= 0;
  config.version_policy ??= { latest: { num_versions: 1 } };
  if (config.dynamic_batching && config.max_batch_size > 0 && !config.dynamic_batching.preferred_batch_size?.length) {
    config.dynamic_batching.preferred_batch_size = [config.max_batch_size];
  }
  const seq = config.sequence_batching as { max_sequence_idle_microseconds?: number } | undefined;
  if (seq && !seq.max_sequence_idle_microseconds) seq.max_sequence_idle_microseconds = 1_000_000;

  if (config.platform !== "ensemble") {
    // Triton names a group it adds after the model, and the groups it is given <model>_<index>.
    const given = !!config.instance_group?.length;
    const groups = given ? config.instance_group! : [{}];
    config.instance_group = groups.map((g, idx) => {
      const group = { ...g };
      group.name ||= given ? `${config.name}_${idx}` : config.name!;
      if (!group.kind || group.kind === "KIND_AUTO") group.kind = opts.gpuCount > 0 ? "KIND_GPU" : "KIND_CPU";
      if (!group.count) group.count = group.kind === "KIND_CPU" && config.backend === "onnxruntime" ? 2 : 1;
      if (group.kind === "KIND_GPU" && !group.gpus?.length) group.gpus = Array.from({ length: opts.gpuCount }, (_, i) => i);
      return group;
    });
    const opt = (config.optimization ??= {}) as Record<string, { enable?: boolean } | undefined>;
    opt.input_pinned_memory ??= { enable: true };
    opt.output_pinned_memory ??= { enable: true };
  }
  return config;
}

function canBatch(io: ModelFileIO): boolean {
  return [...io.inputs, ...io.outputs].every((t) => t.shape.length >= 1 && t.shape[0] === -1);
}

function fromSpec<T extends ModelInput | ModelOutput>(spec: TensorSpec, batching: boolean): T {
  const dims = batching ? spec.shape.slice(1) : [...spec.shape];
  const t = { name: spec.name, data_type: toConfigType(spec.datatype) as ConfigDataType, dims } as T;
  if (dims.length === 0) {
    t.dims = [1];
    if (batching) t.reshape = { shape: [] };
  }
  return t;
}

function complete<T extends ModelInput | ModelOutput>(given: T[] | undefined, specs: TensorSpec[], batching: boolean): T[] {
  if (!given?.length) return specs.map((s) => fromSpec<T>(s, batching));
  return given.map((t) => {
    const spec = specs.find((s) => s.name === t.name);
    if (!spec) return t;
    const filled = fromSpec<T>(spec, batching);
    return { ...t, data_type: t.data_type ?? filled.data_type, dims: t.dims ?? filled.dims, ...(t.dims ? {} : filled.reshape ? { reshape: filled.reshape } : {}) };
  });
}

/** The ONNX Runtime backend's auto-complete (reference §7.13). */
export function autoCompleteConfig(input: ModelConfig, io: ModelFileIO, opts: { defaultMaxBatchSize: number }): ModelConfig {
  const config: ModelConfig = structuredClone(input);
  const batchable = canBatch(io);
  if (config.max_batch_size === undefined || config.max_batch_size === 0) {
    if (batchable && config.max_batch_size === undefined) {
      config.max_batch_size = opts.defaultMaxBatchSize;
      if (config.max_batch_size > 1 && !config.dynamic_batching && !config.sequence_batching && !config.ensemble_scheduling) {
        config.dynamic_batching = {};
      }
    }
  } else if (!batchable) {
    throw invalidArg(`model '${config.name ?? ""}': model does not support batching while non-zero max_batch_size is specified`);
  }
  const batching = (config.max_batch_size ?? 0) > 0;
  config.input = complete<ModelInput>(config.input, io.inputs, batching);
  config.output = complete<ModelOutput>(config.output, io.outputs, batching);
  return config;
}
