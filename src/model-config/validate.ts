/**
 * @module Load-time checks of a (normalized) model config, written as valibot schemas:
 * Triton's ValidateModelConfig, ValidateModelIOConfig and ValidateInstanceGroup rules that
 * do not need the model file or the GPUs, with Triton's wording. The first problem
 * throws INVALID_ARG "model '<m>' field '<path>': <what>" (or "model '<m>': <what>").
 */
import * as v from "valibot";
import { invalidArg } from "../core/errors.ts";
import type { ModelConfig } from "../core/model-config-types.ts";
import { sequenceBatchingSchema } from "./validate-sequence.ts";
import { rule } from "./validate-rule.ts";

const TENSORRT_PLATFORM = "tensorrt_plan";
const VARIABLE = -1;

/** What the schemas need to know about the config around the part they check. */
interface Context {
  modelName: string;
  maxBatch: number;
  platform: string;
  inputNames: ReadonlySet<string>;
  outputNames: ReadonlySet<string>;
}

const ints = v.array(v.pipe(v.number(), v.integer()));
const firstBad = (dims: readonly number[] | undefined) => (dims ?? []).find((d) => d < 1 && d !== VARIABLE);
const product = (dims: readonly number[]) => dims.reduce((n, d) => n * d, 1);

/** Element counts of the runs between variable dims: [2,4,-1,6] → [8, 6]. */
function runs(dims: readonly number[]): number[] {
  const out = [1];
  for (const d of dims) {
    if (d === VARIABLE) out.push(1);
    else out[out.length - 1]! *= d;
  }
  return out;
}

/** Triton's GetElementCount: -1 when any dim is variable, 0 for no dims. */
const elementCount = (dims: readonly number[]) => (dims.includes(VARIABLE) ? VARIABLE : dims.length === 0 ? 0 : product(dims));

/** Triton's dims ↔ reshape rule: equal element counts ([1] ↔ [] is a scalar), run by run around variable dims. */
function reshapeProblem(dims: readonly number[], shape: readonly number[]): string | undefined {
  const a = elementCount(dims);
  const b = elementCount(shape);
  if (a !== b && (b !== 0 || a !== 1)) return "has different size for dims and reshape";
  if (a !== VARIABLE) return undefined;
  const ra = runs(dims);
  const rb = runs(shape);
  if (ra.length !== rb.length) return "has different number of variable-size dimensions for dims and reshape";
  return ra.every((n, i) => n === rb[i]) ? undefined : "has different size for dims and reshape";
}

const tensorObject = v.looseObject({
  name: v.optional(v.string()),
  data_type: v.optional(v.string()),
  format: v.optional(v.string()),
  dims: v.optional(ints),
  reshape: v.optional(v.looseObject({ shape: v.optional(ints) })),
  is_shape_tensor: v.optional(v.boolean()),
  is_non_linear_format_io: v.optional(v.boolean()),
});
type Tensor = v.InferOutput<typeof tensorObject>;

/** ModelInput or ModelOutput; each rule assumes the ones before it passed. */
function tensorSchema(kind: "input" | "output", ctx: Context) {
  const named = (t: Tensor) => `model ${kind} '${t.name}'`;
  const shape = (t: Tensor) => t.reshape?.shape ?? [];
  return v.pipe(
    tensorObject,
    rule<Tensor>(
      "name",
      (t) => !!t.name,
      () => `model ${kind} must specify 'name'`,
    ),
    rule<Tensor>(
      "data_type",
      (t) => !!t.data_type && t.data_type !== "TYPE_INVALID",
      (t) => `${named(t)} must specify 'data_type'`,
    ),
    rule<Tensor>(
      "dims",
      (t) => (t.dims?.length ?? 0) > 0,
      (t) => `${named(t)} must specify 'dims'`,
    ),
    rule<Tensor>(
      "reshape",
      (t) => !(t.reshape && shape(t).length === 0 && ctx.maxBatch === 0),
      (t) => `${named(t)} cannot have empty reshape for non-batching model as scalar tensors are not supported`,
    ),
    rule<Tensor>(
      "dims",
      (t) => firstBad(t.dims) === undefined,
      (t) => `${named(t)} dimension must be integer >= 1, or -1 to indicate a variable-size dimension, got ${firstBad(t.dims)}`,
    ),
    rule<Tensor>(
      "reshape",
      (t) => firstBad(shape(t)) === undefined,
      (t) => `${named(t)} reshape dimensions must be integer >= 1, or -1 to indicate a variable-size dimension, got ${firstBad(shape(t))}`,
    ),
    rule<Tensor>(
      "reshape",
      (t) => !t.reshape || !reshapeProblem(t.dims!, shape(t)),
      (t) => `${named(t)} ${reshapeProblem(t.dims!, shape(t))}`,
    ),
    rule<Tensor>(
      "format",
      (t) => !(t.format === "FORMAT_NHWC" || t.format === "FORMAT_NCHW") || t.dims!.length === 3,
      () => "model input NHWC/NCHW require 3 dims",
    ),
    rule<Tensor>(
      "is_shape_tensor",
      (t) => !t.is_shape_tensor || ctx.platform === TENSORRT_PLATFORM,
      () => "shape tensors are only supported for TensorRT platform",
    ),
    rule<Tensor>(
      "is_non_linear_format_io",
      (t) => !t.is_non_linear_format_io || ctx.platform === TENSORRT_PLATFORM,
      () => "Non-linear IO format is only supported for the TensorRT platform",
    ),
    rule<Tensor>(
      "is_non_linear_format_io",
      (t) => !t.is_non_linear_format_io || t.dims!.length === 3,
      () => `Non-linear IO format ${kind} requires 3 dims`,
    ),
  );
}

/** The first name that appears twice. */
/** The first name seen twice (a Set, not indexOf: a config of 50k inputs would take seconds). */
function duplicate(names: readonly (string | undefined)[]): string | undefined {
  const seen = new Set<string | undefined>();
  for (const n of names) {
    if (seen.has(n)) return n;
    seen.add(n);
  }
  return undefined;
}

const queuePolicyObject = v.looseObject({ timeout_action: v.optional(v.string()), default_timeout_microseconds: v.optional(v.number()) });
type QueuePolicy = v.InferOutput<typeof queuePolicyObject>;
const delays = (p: QueuePolicy | undefined) => !!p && p.timeout_action === "DELAY" && !!p.default_timeout_microseconds;

const dynamicBatchingObject = v.looseObject({
  preferred_batch_size: v.optional(ints),
  preserve_ordering: v.optional(v.boolean()),
  priority_levels: v.optional(v.number()),
  default_priority_level: v.optional(v.number()),
  default_queue_policy: v.optional(queuePolicyObject),
  priority_queue_policy: v.optional(v.record(v.string(), queuePolicyObject)),
});
type DynamicBatching = v.InferOutput<typeof dynamicBatchingObject>;

function dynamicBatchingSchema(ctx: Context) {
  const levels = (d: DynamicBatching) => d.priority_levels ?? 0;
  const sizes = (d: DynamicBatching) => d.preferred_batch_size ?? [];
  const badKey = (d: DynamicBatching) => Object.keys(d.priority_queue_policy ?? {}).find((k) => Number(k) < 1 || Number(k) > levels(d));
  const ordered = "when 'preserve_ordering' is true";
  return v.pipe(
    dynamicBatchingObject,
    v.check(() => ctx.maxBatch >= 1, "dynamic batching requires 'max_batch_size' >= 1"),
    rule<DynamicBatching>(
      "preferred_batch_size",
      (d) => sizes(d).every((s) => s > 0),
      (d) => `dynamic batching preferred size must be positive, got ${sizes(d).find((s) => s <= 0)}`,
    ),
    rule<DynamicBatching>(
      "preferred_batch_size",
      (d) => sizes(d).every((s) => s <= ctx.maxBatch),
      (d) => `dynamic batching preferred size must be <= max batch size ${ctx.maxBatch}, got ${sizes(d).find((s) => s > ctx.maxBatch)}`,
    ),
    rule<DynamicBatching>(
      "default_priority_level",
      (d) => levels(d) === 0 || ((d.default_priority_level ?? 0) >= 1 && (d.default_priority_level ?? 0) <= levels(d)),
      (d) => `default priority level must be in range [1, ${levels(d)}], got ${d.default_priority_level ?? 0}`,
    ),
    rule<DynamicBatching>(
      "priority_queue_policy",
      (d) => levels(d) === 0 || badKey(d) === undefined,
      (d) => `priority queue policy must have priority level in range [1, ${levels(d)}], got ${badKey(d)}`,
    ),
    rule<DynamicBatching>(
      "priority_levels",
      (d) => !d.preserve_ordering || levels(d) <= 1,
      () => `Only one priority level is allowed ${ordered}`,
    ),
    rule<DynamicBatching>(
      "default_queue_policy",
      (d) => !d.preserve_ordering || !delays(d.default_queue_policy),
      () => `Queue policy can not have DELAY as timeout action ${ordered}`,
    ),
    rule<DynamicBatching>(
      "priority_queue_policy",
      (d) => !d.preserve_ordering || !Object.values(d.priority_queue_policy ?? {}).some(delays),
      () => `Queue policy can not have DELAY as timeout action ${ordered}`,
    ),
  );
}

const groupObject = v.looseObject({
  name: v.optional(v.string()),
  kind: v.optional(v.string()),
  count: v.optional(v.pipe(v.number(), v.integer())),
  gpus: v.optional(ints),
  profile: v.optional(v.array(v.string())),
});
type Group = v.InferOutput<typeof groupObject>;

function instanceGroupSchema(ctx: Context) {
  const named = (g: Group) => `instance group '${g.name ?? ""}'`;
  return v.pipe(
    groupObject,
    rule<Group>(
      "count",
      (g) => g.count === undefined || g.count >= 1,
      (g) => `${named(g)} count must be >= 1, got ${g.count}`,
    ),
    rule<Group>(
      "gpus",
      (g) => !(g.kind === "KIND_CPU" || g.kind === "KIND_MODEL") || !g.gpus?.length,
      (g) => `${named(g)} has kind ${g.kind} but specifies one or more GPUs`,
    ),
    rule<Group>(
      "profile",
      (g) => !g.profile?.length || ctx.platform === TENSORRT_PLATFORM,
      (g) => `${named(g)} specifies 'profile', which is only supported for TensorRT models`,
    ),
  );
}

const batchIOObject = v.looseObject({
  kind: v.optional(v.string()),
  data_type: v.optional(v.string()),
  source_input: v.optional(v.array(v.string())),
  target_name: v.optional(v.array(v.string())),
});
type BatchIO = v.InferOutput<typeof batchIOObject>;

/** BatchInput / BatchOutput (Triton's ValidateBatchIO). */
function batchIOSchema(what: "input" | "output", ctx: Context) {
  const defaultKind = what === "input" ? "BATCH_ELEMENT_COUNT" : "BATCH_SCATTER_WITH_INPUT_SHAPE";
  const sources = (b: BatchIO) => b.source_input ?? [];
  const targets = (b: BatchIO) => b.target_name ?? [];
  const unknownSource = (b: BatchIO) => sources(b).find((s) => !ctx.inputNames.has(s));
  const unknownTarget = (b: BatchIO) => targets(b).find((s) => !ctx.outputNames.has(s));
  const common = [
    rule<BatchIO>(
      "source_input",
      (b) => sources(b).length === 1,
      (b) => `batch ${what} kind '${b.kind ?? defaultKind}' expects 1 source input, got ${sources(b).length}`,
    ),
    rule<BatchIO>(
      "source_input",
      (b) => unknownSource(b) === undefined,
      (b) => `unknown source input name '${unknownSource(b)}'`,
    ),
  ];
  if (what === "input") {
    return v.pipe(
      batchIOObject,
      ...common,
      rule<BatchIO>(
        "data_type",
        (b) => b.data_type === "TYPE_INT32" || b.data_type === "TYPE_FP32",
        () => "batch input data type must be TYPE_INT32 or TYPE_FP32",
      ),
    );
  }
  return v.pipe(
    batchIOObject,
    ...common,
    rule<BatchIO>(
      "target_name",
      (b) => unknownTarget(b) === undefined,
      (b) => `unknown target output name '${unknownTarget(b)}'`,
    ),
    rule<BatchIO>(
      "target_name",
      (b) => duplicate(targets(b)) === undefined,
      (b) => `target output name '${duplicate(targets(b))}' can only be specified once`,
    ),
  );
}

function configObject(ctx: Context) {
  return v.looseObject({
    name: v.optional(v.string()),
    platform: v.optional(v.string()),
    backend: v.optional(v.string()),
    max_batch_size: v.optional(
      v.pipe(
        v.number(),
        v.integer(),
        v.minValue(0, (issue) => `'max_batch_size' must be non-negative, got ${issue.input}`),
      ),
    ),
    input: v.optional(v.array(tensorSchema("input", ctx))),
    output: v.optional(v.array(tensorSchema("output", ctx))),
    batch_input: v.optional(v.array(batchIOSchema("input", ctx))),
    batch_output: v.optional(v.array(batchIOSchema("output", ctx))),
    dynamic_batching: v.optional(dynamicBatchingSchema(ctx)),
    sequence_batching: v.optional(sequenceBatchingSchema(ctx.maxBatch)),
    ensemble_scheduling: v.optional(v.looseObject({ step: v.optional(v.array(v.looseObject({ model_name: v.optional(v.string()) }))) })),
    instance_group: v.optional(v.array(instanceGroupSchema(ctx))),
    model_transaction_policy: v.optional(v.looseObject({ decoupled: v.optional(v.boolean()) })),
    response_cache: v.optional(v.looseObject({ enable: v.optional(v.boolean()) })),
  });
}
type Config = v.InferOutput<ReturnType<typeof configObject>>;

function configSchema(ctx: Context) {
  const m = ctx.modelName;
  const names = (list: readonly { name?: string }[] | undefined) => (list ?? []).map((t) => t.name);
  const cacheUnsupported = (what: string) => `Response Cache does not currently support model '${m}' with ${what}. Please disable the response cache.`;
  return v.pipe(
    configObject(ctx),
    rule<Config>(
      "name",
      (c) => !c.name || c.name === m,
      (c) => `config name '${c.name}' does not match the model directory name '${m}'`,
    ),
    rule<Config>(
      "input",
      (c) => duplicate(names(c.input)) === undefined,
      (c) => `model input '${duplicate(names(c.input))}' is specified more than once`,
    ),
    rule<Config>(
      "output",
      (c) => duplicate(names(c.output)) === undefined,
      (c) => `model output '${duplicate(names(c.output))}' is specified more than once`,
    ),
    v.check((c) => (c.input?.length ?? 0) + (c.output?.length ?? 0) > 0 || c.backend === "python", "model must specify at least one input or output"),
    rule<Config>(
      "platform",
      (c) => c.platform !== "ensemble" || !!c.ensemble_scheduling,
      () => `ensemble scheduling must be set for ensemble '${m}' whose platform is ensemble`,
    ),
    rule<Config>(
      "ensemble_scheduling",
      (c) => !c.ensemble_scheduling || c.platform === "ensemble",
      () => `ensemble scheduling cannot be set for model '${m}' whose platform is not ensemble`,
    ),
    rule<Config>(
      "ensemble_scheduling",
      (c) => !c.ensemble_scheduling || (c.ensemble_scheduling.step?.length ?? 0) > 0,
      () => `must specify one or more 'step's for ensemble '${m}'`,
    ),
    rule<Config>(
      "ensemble_scheduling",
      (c) => (c.ensemble_scheduling?.step ?? []).every((s) => !!s.model_name),
      () => `must specify 'model_name' in step of ensemble '${m}'`,
    ),
    rule<Config>(
      "response_cache",
      (c) => !(c.response_cache?.enable && c.sequence_batching),
      () => cacheUnsupported("sequence batching scheduler"),
    ),
    rule<Config>(
      "response_cache",
      (c) => !(c.response_cache?.enable && c.model_transaction_policy?.decoupled),
      () => cacheUnsupported("'decoupled' transaction policy"),
    ),
  );
}

/** "input[0].dims", "dynamic_batching.priority_queue_policy" */
function pathText(path: readonly { key: unknown }[] | undefined): string {
  return (path ?? []).map((p, i) => (typeof p.key === "number" ? `[${p.key}]` : `${i === 0 ? "" : "."}${String(p.key)}`)).join("");
}

/** Whether `file` is a relative path that stays inside the folder it is joined to. */
function staysInside(file: string): boolean {
  if (file.includes("\0") || file.startsWith("/") || file.includes("\\")) return false;
  let depth = 0;
  for (const part of file.split("/")) {
    if (part === "..") depth--;
    else if (part !== "." && part !== "") depth++;
    if (depth < 0) return false;
  }
  return true;
}

/**
 * The file names a config gives (default_model_filename, cc_model_filenames, an output's
 * label_filename, a warmup input's input_data_file, a sequence state's initial data_file) must stay inside the model's folder:
 * a config may come from a client (a repository load's override), and none may make the
 * server read a file its operator did not put in the repository. Throws INVALID_ARG
 * without probing the file system.
 */
export function validateConfigFileNames(config: ModelConfig, modelName: string): void {
  const named: [string, unknown][] = [["default_model_filename", config.default_model_filename]];
  for (const [k, f] of Object.entries(config.cc_model_filenames ?? {})) named.push([`cc_model_filenames[${k}]`, f]);
  for (const [i, o] of (config.output ?? []).entries()) named.push([`output[${i}].label_filename`, o.label_filename]);
  for (const [i, w] of (config.model_warmup ?? []).entries()) {
    for (const [input, spec] of Object.entries((w.inputs ?? {}) as Record<string, { input_data_file?: unknown }>)) {
      named.push([`model_warmup[${i}].inputs[${input}].input_data_file`, spec?.input_data_file]);
    }
  }
  const states = (config.sequence_batching?.state ?? []) as { initial_state?: { data_file?: unknown }[] }[];
  for (const [i, st] of states.entries()) {
    for (const [j, init] of (st.initial_state ?? []).entries()) {
      named.push([`sequence_batching.state[${i}].initial_state[${j}].data_file`, init?.data_file]);
    }
  }
  for (const [field, file] of named) {
    if (file === undefined || file === "") continue;
    if (typeof file !== "string" || !staysInside(file)) {
      throw invalidArg(`model '${modelName}' field '${field}': must be a relative path inside the model's folder`);
    }
  }
}

/**
 * Returns `config` itself when it passes every check; otherwise throws INVALID_ARG for
 * the first problem, naming the model and the field.
 */
export function validateModelConfig(config: ModelConfig, modelName: string): ModelConfig {
  const ctx: Context = {
    modelName,
    maxBatch: typeof config.max_batch_size === "number" ? config.max_batch_size : 0,
    platform: config.platform ?? "",
    inputNames: new Set((config.input ?? []).map((t) => t.name ?? "")),
    outputNames: new Set((config.output ?? []).map((t) => t.name ?? "")),
  };
  const result = v.safeParse(configSchema(ctx), config, { abortEarly: true, abortPipeEarly: true });
  if (!result.success) {
    const issue = result.issues[0];
    const path = pathText(issue.path);
    throw invalidArg(`model '${modelName}'${path ? ` field '${path}'` : ""}: ${issue.message}`);
  }
  return config;
}
