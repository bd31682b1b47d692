/**
 * @module Triton's config defaults (NormalizeModelConfig and NormalizeInstanceGroup, whose
 * results show in /config) and the ONNX Runtime backend's auto-complete from the model
 * file's declared inputs and outputs. Both return a new config and leave their input alone.
 */
import { invalidArg } from "../core/errors.ts";
import { toConfigType } from "../core/tensor.ts";
import type { ConfigDataType, ModelConfig, ModelInput, ModelInstanceGroup, ModelOutput } from "../core/model-config-types.ts";
import type { ModelFileIO, TensorSpec } from "./model-file-io.ts";

/** Triton's SEQUENCE_IDLE_DEFAULT_MICROSECONDS. */
export const SEQUENCE_IDLE_DEFAULT_MICROSECONDS = 1_000_000;

/** Backends whose CPU groups default to two instances (Triton's SetDefaultInstanceCount). */
const TWO_CPU_INSTANCE_BACKENDS = new Set(["onnxruntime", "tensorflow"]);

export function isEnsemble(config: ModelConfig): boolean {
  return config.ensemble_scheduling !== undefined || config.platform === "ensemble";
}

/** Resolves kind, count and GPUs of one group as Triton does; `name` is already set. */
function normalizeGroup(group: ModelInstanceGroup, backend: string | undefined, gpuCount: number): ModelInstanceGroup {
  if (!group.kind || group.kind === "KIND_AUTO") {
    // AUTO runs on GPU only when there are GPUs and every GPU it lists exists.
    const listedMissing = (group.gpus ?? []).some((g) => g < 0 || g >= gpuCount);
    group.kind = gpuCount > 0 && !listedMissing ? "KIND_GPU" : "KIND_CPU";
  }
  if (!group.count || group.count < 1) {
    group.count = group.kind === "KIND_CPU" && TWO_CPU_INSTANCE_BACKENDS.has(backend ?? "") ? 2 : 1;
  }
  if (group.kind === "KIND_GPU" && !group.gpus?.length && gpuCount > 0) {
    group.gpus = Array.from({ length: gpuCount }, (_, i) => i);
  }
  return group;
}

/**
 * Applies Triton's defaults: name, version policy (latest 1), preferred batch sizes,
 * sequence idle time, instance groups (named, kind resolved, counted, GPUs listed) and
 * pinned memory. Ensembles get no instance groups and no optimization block.
 */
export function normalizeModelConfig(input: ModelConfig, opts: { modelName: string; gpuCount: number }): ModelConfig {
  const config: ModelConfig = structuredClone(input);
  config.name ||= opts.modelName;
  config.max_batch_size ??= 0;
  config.version_policy ??= { latest: { num_versions: 1 } };
  const maxBatch = config.max_batch_size;

  const dynamic = config.dynamic_batching;
  if (dynamic && !dynamic.preferred_batch_size?.length && maxBatch > 0) dynamic.preferred_batch_size = [maxBatch];

  const seq = config.sequence_batching as { max_sequence_idle_microseconds?: number; oldest?: { preferred_batch_size?: number[] } } | undefined;
  if (seq) {
    if (!seq.max_sequence_idle_microseconds) seq.max_sequence_idle_microseconds = SEQUENCE_IDLE_DEFAULT_MICROSECONDS;
    if (seq.oldest && !seq.oldest.preferred_batch_size?.length && maxBatch > 0) seq.oldest.preferred_batch_size = [maxBatch];
  }

  if (!isEnsemble(config)) {
    // A group Triton adds is named after the model; listed groups without a name get <model>_<index>.
    const groups = config.instance_group?.length ? config.instance_group : [{ name: config.name }];
    config.instance_group = groups.map((g, idx) => normalizeGroup({ ...g, name: g.name || `${config.name}_${idx}` }, config.backend, opts.gpuCount));
    const opt = (config.optimization ??= {}) as Record<string, { enable?: boolean } | undefined>;
    opt.input_pinned_memory ??= { enable: true };
    opt.output_pinned_memory ??= { enable: true };
  }
  return config;
}

// ------------------------------------------------------------------------- auto-complete

/** Every input and output has a leading -1 (ONNX Runtime backend's AutoCompleteMaxBatch). */
function canBatch(io: ModelFileIO): boolean {
  return [...io.inputs, ...io.outputs].every((t) => t.shape.length >= 1 && t.shape[0] === -1);
}

const hasType = (t: ModelInput | ModelOutput) => !!t.data_type && t.data_type !== "TYPE_INVALID";
const hasDims = (t: ModelInput | ModelOutput) => (t.dims?.length ?? 0) > 0;

/** A config tensor from the file's: batch dim dropped; a scalar becomes dims [1] (+ empty reshape when batching). */
function fromSpec(spec: TensorSpec, batching: boolean): ModelInput & ModelOutput {
  const dims = batching ? spec.shape.slice(1) : [...spec.shape];
  const t: ModelInput & ModelOutput = { name: spec.name, data_type: toConfigType(spec.datatype) as ConfigDataType, dims };
  if (dims.length === 0) {
    t.dims = [1];
    if (batching) t.reshape = { shape: [] };
  }
  return t;
}

/** Fills a missing data_type or dims of a listed tensor from the file's tensor of that name. */
function fillFromSpec<T extends ModelInput | ModelOutput>(t: T, specs: readonly TensorSpec[], batching: boolean): T {
  const spec = specs.find((s) => s.name === t.name);
  if (!spec || (hasType(t) && hasDims(t))) return t;
  const from = fromSpec(spec, batching);
  const out: T = { ...t };
  if (!hasType(t)) out.data_type = from.data_type;
  if (!hasDims(t)) {
    out.dims = from.dims;
    if (from.reshape && !t.reshape) out.reshape = from.reshape;
  }
  return out;
}

/**
 * The ONNX Runtime backend's auto-complete (reference §7.13). Skipped when the config
 * lists inputs (or batch inputs) and outputs that all have a data_type and dims. Otherwise:
 * a model that can batch gets max_batch_size = `defaultMaxBatchSize` when it has none (or
 * 0) and, with max_batch_size > 1 and no scheduler, `dynamic_batching {}`; a model that
 * cannot batch must not ask for batching; a missing input or output list is filled from
 * the file, and listed tensors lacking data_type or dims get them from the file.
 */
export function autoCompleteConfig(input: ModelConfig, io: ModelFileIO, opts: { defaultMaxBatchSize: number; modelName?: string }): ModelConfig {
  const config: ModelConfig = structuredClone(input);
  const inputs = config.input ?? [];
  const outputs = config.output ?? [];
  const inputCount = inputs.length + (config.batch_input?.length ?? 0);
  const complete = [...inputs, ...outputs].every((t) => hasType(t) && hasDims(t));
  if (inputCount > 0 && outputs.length > 0 && complete) return config;

  if (canBatch(io)) {
    if (!config.max_batch_size) config.max_batch_size = Math.max(opts.defaultMaxBatchSize, 0);
    if (config.max_batch_size > 1 && !config.dynamic_batching && !config.sequence_batching && !config.ensemble_scheduling) {
      config.dynamic_batching = {};
    }
  } else if (config.max_batch_size) {
    const name = opts.modelName ?? config.name ?? "";
    throw invalidArg(`autofill failed for model '${name}': model does not support batching while non-zero max_batch_size is specified`);
  }

  const batching = (config.max_batch_size ?? 0) > 0;
  if (inputCount === 0) config.input = io.inputs.map((s) => fromSpec(s, batching));
  else if (inputs.length > 0) config.input = inputs.map((t) => fillFromSpec(t, io.inputs, batching));
  if (outputs.length === 0) config.output = io.outputs.map((s) => fromSpec(s, batching));
  else config.output = outputs.map((t) => fillFromSpec(t, io.outputs, batching));
  return config;
}
