/**
 * Load-time validation (Triton's ValidateModelConfig, ValidateModelIOConfig and
 * ValidateInstanceGroup rules): every message, exactly, with the model and the field.
 */
import { describe, it, expect } from "vitest";
import { validateModelConfig } from "../../../src/model-config/validate.ts";
import { normalizeModelConfig } from "../../../src/model-config/normalize.ts";
import { parsePbtxt } from "../../../src/model-config/pbtxt.ts";
import { ServerError } from "../../../src/core/errors.ts";
import type { ModelConfig, ModelInput, ModelOutput } from "../../../src/core/model-config-types.ts";
import { TRITON_EXAMPLES } from "./fixtures.ts";

const IN: ModelInput = { name: "a", data_type: "TYPE_FP32", dims: [1] };
const OUT: ModelOutput = { name: "b", data_type: "TYPE_FP32", dims: [1] };
const IO = { input: [IN], output: [OUT] };
const BATCH4 = { ...IO, max_batch_size: 4 };

function validationError(config: ModelConfig, modelName = "m"): ServerError {
  try {
    validateModelConfig(config, modelName);
  } catch (e) {
    expect(e).toBeInstanceOf(ServerError);
    return e as ServerError;
  }
  throw new Error(`no error for ${JSON.stringify(config)}`);
}

describe("validateModelConfig accepts", () => {
  it("a valid config, returning the very object it checked", () => {
    const config: ModelConfig = {
      name: "m",
      max_batch_size: 4,
      input: [{ ...IN, dims: [-1, 6], reshape: { shape: [-1, 2, 3] } }],
      output: [{ ...OUT, dims: [1], reshape: { shape: [] } }],
      instance_group: [{ name: "g", kind: "KIND_CPU", count: 1 }],
      dynamic_batching: { preferred_batch_size: [1, 4], priority_levels: 2, default_priority_level: 2, priority_queue_policy: { "1": {}, "2": {} } },
    };
    expect(validateModelConfig(config, "m")).toBe(config);
  });

  it.each(TRITON_EXAMPLES)("Triton's example after normalization: %s", (_, text) => {
    const config = parsePbtxt(text);
    const name = config.name!;
    const normalized = normalizeModelConfig(config, { modelName: name, gpuCount: 0 });
    expect(validateModelConfig(normalized, name)).toBe(normalized);
  });

  it("a config without a name, only inputs or only outputs, and a python model without either", () => {
    expect(() => validateModelConfig({ input: [IN] }, "m")).not.toThrow();
    expect(() => validateModelConfig({ output: [OUT] }, "m")).not.toThrow();
    expect(() => validateModelConfig({ backend: "python" }, "m")).not.toThrow();
  });

  it("reshapes Triton allows: scalar [1] ↔ [], equal counts, equal runs around variable dims", () => {
    for (const [dims, shape] of [
      [[1], []],
      [[1, 1], []],
      [[2, 2], [4]],
      [
        [2, 4, -1, 6],
        [8, -1, 1, 6],
      ],
      [[-1], [-1]],
    ]) {
      expect(() => validateModelConfig({ max_batch_size: 1, input: [{ ...IN, dims, reshape: { shape } }] }, "m"), JSON.stringify([dims, shape])).not.toThrow();
    }
  });

  it("TensorRT-only fields on a tensorrt_plan model, priority levels 0, and an input and output of one name", () => {
    const trt: ModelConfig = {
      platform: "tensorrt_plan",
      input: [
        { ...IN, is_shape_tensor: true },
        { name: "img", data_type: "TYPE_FP16", dims: [3, 8, 8], format: "FORMAT_NCHW", is_non_linear_format_io: true },
      ],
      instance_group: [{ name: "g", kind: "KIND_GPU", count: 1, gpus: [0], profile: ["0"] }],
    };
    expect(() => validateModelConfig(trt, "m")).not.toThrow();
    expect(() => validateModelConfig({ ...BATCH4, dynamic_batching: { priority_levels: 0 } }, "m")).not.toThrow();
    expect(() => validateModelConfig({ input: [IN], output: [{ ...OUT, name: "a" }] }, "m")).not.toThrow();
  });

  it("a sequence batcher with every control kind", () => {
    const seq: ModelConfig = {
      ...BATCH4,
      sequence_batching: {
        control_input: [
          { name: "S", control: [{ int32_false_true: [0, 1] }] },
          { name: "E", control: [{ kind: "CONTROL_SEQUENCE_END", bool_false_true: [false, true] }] },
          { name: "R", control: [{ kind: "CONTROL_SEQUENCE_READY", fp32_false_true: [0, 1] }] },
          { name: "C", control: [{ kind: "CONTROL_SEQUENCE_CORRID", data_type: "TYPE_STRING" }] },
        ],
        direct: { minimum_slot_utilization: 1 },
      },
    };
    expect(() => validateModelConfig(seq, "m")).not.toThrow();
  });
});

const control = (c: Record<string, unknown>[]): ModelConfig => ({ ...BATCH4, sequence_batching: { control_input: c } });
const EITHER = "'int32_false_true', 'fp32_false_true' or 'bool_false_true'";
const SEQ = "model 'm' field 'sequence_batching.control_input'";

const cases: [string, ModelConfig, string][] = [
  // model-level
  ["a name other than the directory's", { name: "x", ...IO }, "model 'm' field 'name': config name 'x' does not match the model directory name 'm'"],
  ["a negative max_batch_size", { ...IO, max_batch_size: -1 }, "model 'm' field 'max_batch_size': 'max_batch_size' must be non-negative, got -1"],
  ["no inputs and no outputs", {}, "model 'm': model must specify at least one input or output"],
  ["empty input and output lists", { input: [], output: [], backend: "onnxruntime" }, "model 'm': model must specify at least one input or output"],
  // tensors
  ["an input without a name", { input: [{ data_type: "TYPE_FP32", dims: [1] }] }, "model 'm' field 'input[0].name': model input must specify 'name'"],
  ["an empty input name", { input: [{ ...IN, name: "" }] }, "model 'm' field 'input[0].name': model input must specify 'name'"],
  [
    "an output without a name",
    { input: [IN], output: [OUT, { data_type: "TYPE_FP32", dims: [1] }] },
    "model 'm' field 'output[1].name': model output must specify 'name'",
  ],
  ["an input without data_type", { input: [{ name: "a", dims: [1] }] }, "model 'm' field 'input[0].data_type': model input 'a' must specify 'data_type'"],
  ["TYPE_INVALID", { input: [{ ...IN, data_type: "TYPE_INVALID" }] }, "model 'm' field 'input[0].data_type': model input 'a' must specify 'data_type'"],
  [
    "an output without dims",
    { input: [IN], output: [{ name: "b", data_type: "TYPE_FP32" }] },
    "model 'm' field 'output[0].dims': model output 'b' must specify 'dims'",
  ],
  [
    "empty dims, even with a reshape",
    { input: [{ ...IN, dims: [], reshape: { shape: [] } }] },
    "model 'm' field 'input[0].dims': model input 'a' must specify 'dims'",
  ],
  [
    "a zero dim",
    { input: [{ ...IN, dims: [-1, 0] }] },
    "model 'm' field 'input[0].dims': model input 'a' dimension must be integer >= 1, or -1 to indicate a variable-size dimension, got 0",
  ],
  [
    "a dim below -1",
    { input: [{ ...IN, dims: [-2] }] },
    "model 'm' field 'input[0].dims': model input 'a' dimension must be integer >= 1, or -1 to indicate a variable-size dimension, got -2",
  ],
  [
    "an empty reshape without batching",
    { input: [{ ...IN, reshape: { shape: [] } }] },
    "model 'm' field 'input[0].reshape': model input 'a' cannot have empty reshape for non-batching model as scalar tensors are not supported",
  ],
  [
    "a zero reshape dim",
    { input: [{ ...IN, reshape: { shape: [0] } }] },
    "model 'm' field 'input[0].reshape': model input 'a' reshape dimensions must be integer >= 1, or -1 to indicate a variable-size dimension, got 0",
  ],
  [
    "a reshape of another size",
    { input: [{ ...IN, dims: [2, 3], reshape: { shape: [5] } }] },
    "model 'm' field 'input[0].reshape': model input 'a' has different size for dims and reshape",
  ],
  [
    "a fixed reshape of variable dims",
    { output: [{ ...OUT, dims: [-1], reshape: { shape: [3] } }] },
    "model 'm' field 'output[0].reshape': model output 'b' has different size for dims and reshape",
  ],
  [
    "a different number of variable dims",
    { input: [{ ...IN, dims: [-1, 2], reshape: { shape: [-1, -1, 2] } }] },
    "model 'm' field 'input[0].reshape': model input 'a' has different number of variable-size dimensions for dims and reshape",
  ],
  [
    "runs that differ around a variable dim",
    { input: [{ ...IN, dims: [2, -1], reshape: { shape: [-1, 2] } }] },
    "model 'm' field 'input[0].reshape': model input 'a' has different size for dims and reshape",
  ],
  [
    "NCHW without 3 dims",
    { input: [{ ...IN, dims: [3, 224], format: "FORMAT_NCHW" }] },
    "model 'm' field 'input[0].format': model input NHWC/NCHW require 3 dims",
  ],
  [
    "a shape tensor outside TensorRT",
    { platform: "onnxruntime_onnx", input: [{ ...IN, is_shape_tensor: true }] },
    "model 'm' field 'input[0].is_shape_tensor': shape tensors are only supported for TensorRT platform",
  ],
  [
    "non-linear IO outside TensorRT",
    { input: [IN], output: [{ ...OUT, dims: [3, 8, 8], is_non_linear_format_io: true }] },
    "model 'm' field 'output[0].is_non_linear_format_io': Non-linear IO format is only supported for the TensorRT platform",
  ],
  [
    "non-linear IO without 3 dims",
    { platform: "tensorrt_plan", input: [{ ...IN, is_non_linear_format_io: true }] },
    "model 'm' field 'input[0].is_non_linear_format_io': Non-linear IO format input requires 3 dims",
  ],
  ["duplicate input names", { input: [IN, { ...IN, dims: [2] }] }, "model 'm' field 'input': model input 'a' is specified more than once"],
  ["duplicate output names", { input: [IN], output: [OUT, OUT] }, "model 'm' field 'output': model output 'b' is specified more than once"],
  // batch inputs and outputs
  [
    "a batch input without a source",
    { ...BATCH4, batch_input: [{ target_name: ["n"], data_type: "TYPE_INT32" }] },
    "model 'm' field 'batch_input[0].source_input': batch input kind 'BATCH_ELEMENT_COUNT' expects 1 source input, got 0",
  ],
  [
    "a batch input with an unknown source",
    { ...BATCH4, batch_input: [{ kind: "BATCH_ITEM_SHAPE", target_name: ["n"], data_type: "TYPE_INT32", source_input: ["zz"] }] },
    "model 'm' field 'batch_input[0].source_input': unknown source input name 'zz'",
  ],
  [
    "a batch input of type INT64",
    { ...BATCH4, batch_input: [{ target_name: ["n"], data_type: "TYPE_INT64", source_input: ["a"] }] },
    "model 'm' field 'batch_input[0].data_type': batch input data type must be TYPE_INT32 or TYPE_FP32",
  ],
  [
    "a batch output with an unknown target",
    { ...BATCH4, batch_output: [{ target_name: ["q"], source_input: ["a"] }] },
    "model 'm' field 'batch_output[0].target_name': unknown target output name 'q'",
  ],
  [
    "a batch output naming a target twice",
    { ...BATCH4, batch_output: [{ target_name: ["b", "b"], source_input: ["a"] }] },
    "model 'm' field 'batch_output[0].target_name': target output name 'b' can only be specified once",
  ],
  // dynamic batching
  [
    "dynamic batching without max_batch_size",
    { ...IO, dynamic_batching: {} },
    "model 'm' field 'dynamic_batching': dynamic batching requires 'max_batch_size' >= 1",
  ],
  [
    "dynamic batching with max_batch_size 0",
    { ...IO, max_batch_size: 0, dynamic_batching: {} },
    "model 'm' field 'dynamic_batching': dynamic batching requires 'max_batch_size' >= 1",
  ],
  [
    "a preferred size of 0",
    { ...BATCH4, dynamic_batching: { preferred_batch_size: [2, 0] } },
    "model 'm' field 'dynamic_batching.preferred_batch_size': dynamic batching preferred size must be positive, got 0",
  ],
  [
    "a preferred size above max_batch_size",
    { ...BATCH4, dynamic_batching: { preferred_batch_size: [2, 5] } },
    "model 'm' field 'dynamic_batching.preferred_batch_size': dynamic batching preferred size must be <= max batch size 4, got 5",
  ],
  [
    "priority levels without a default level",
    { ...BATCH4, dynamic_batching: { priority_levels: 2 } },
    "model 'm' field 'dynamic_batching.default_priority_level': default priority level must be in range [1, 2], got 0",
  ],
  [
    "a default level above the levels",
    { ...BATCH4, dynamic_batching: { priority_levels: 2, default_priority_level: 3 } },
    "model 'm' field 'dynamic_batching.default_priority_level': default priority level must be in range [1, 2], got 3",
  ],
  [
    "a queue policy for a level that does not exist",
    { ...BATCH4, dynamic_batching: { priority_levels: 2, default_priority_level: 1, priority_queue_policy: { "1": {}, "3": {} } } },
    "model 'm' field 'dynamic_batching.priority_queue_policy': priority queue policy must have priority level in range [1, 2], got 3",
  ],
  [
    "priority levels with preserve_ordering",
    { ...BATCH4, dynamic_batching: { preserve_ordering: true, priority_levels: 2, default_priority_level: 1 } },
    "model 'm' field 'dynamic_batching.priority_levels': Only one priority level is allowed when 'preserve_ordering' is true",
  ],
  [
    "a delaying default policy with preserve_ordering",
    { ...BATCH4, dynamic_batching: { preserve_ordering: true, default_queue_policy: { timeout_action: "DELAY", default_timeout_microseconds: 10 } } },
    "model 'm' field 'dynamic_batching.default_queue_policy': Queue policy can not have DELAY as timeout action when 'preserve_ordering' is true",
  ],
  [
    "a delaying priority policy with preserve_ordering",
    {
      ...BATCH4,
      dynamic_batching: {
        preserve_ordering: true,
        priority_levels: 1,
        default_priority_level: 1,
        priority_queue_policy: { "1": { timeout_action: "DELAY", default_timeout_microseconds: 10 } },
      },
    },
    "model 'm' field 'dynamic_batching.priority_queue_policy': Queue policy can not have DELAY as timeout action when 'preserve_ordering' is true",
  ],
  // sequence batching
  ["a control tensor without a name", control([{ control: [{ int32_false_true: [0, 1] }] }]), `${SEQ}: sequence batching control tensor must have a name`],
  [
    "one tensor for two controls",
    control([
      { name: "S", control: [{ int32_false_true: [0, 1] }] },
      { name: "S", control: [{ kind: "CONTROL_SEQUENCE_END", int32_false_true: [0, 1] }] },
    ]),
    `${SEQ}: sequence batching control tensor 'S' is specified for multiple control kinds`,
  ],
  [
    "two START controls",
    control([{ name: "S", control: [{ int32_false_true: [0, 1] }, { kind: "CONTROL_SEQUENCE_START", int32_false_true: [0, 1] }] }]),
    `${SEQ}: sequence batching specifies multiple CONTROL_SEQUENCE_START tensors`,
  ],
  [
    "a START control without values",
    control([{ name: "S", control: [{}] }]),
    `${SEQ}: sequence batching must specify either ${EITHER} for CONTROL_SEQUENCE_START`,
  ],
  [
    "a READY control with two value lists",
    control([{ name: "R", control: [{ kind: "CONTROL_SEQUENCE_READY", int32_false_true: [0, 1], bool_false_true: [false, true] }] }]),
    `${SEQ}: sequence batching specifies more than one from 'int32_false_true', 'fp32_false_true' and 'bool_false_true' for CONTROL_SEQUENCE_READY`,
  ],
  [
    "an END control with 3 values",
    control([{ name: "E", control: [{ kind: "CONTROL_SEQUENCE_END", fp32_false_true: [0, 1, 2] }] }]),
    `${SEQ}: sequence batching control 'fp32_false_true' must have exactly 2 entries for CONTROL_SEQUENCE_END`,
  ],
  [
    "a CORRID control with values",
    control([{ name: "C", control: [{ kind: "CONTROL_SEQUENCE_CORRID", data_type: "TYPE_UINT64", int32_false_true: [0, 1] }] }]),
    `${SEQ}: sequence batching must not specify either ${EITHER} for CONTROL_SEQUENCE_CORRID`,
  ],
  [
    "a CORRID control of type FP32",
    control([{ name: "C", control: [{ kind: "CONTROL_SEQUENCE_CORRID", data_type: "TYPE_FP32" }] }]),
    `${SEQ}: unexpected data type for control CONTROL_SEQUENCE_CORRID. Allowed data types are TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and TYPE_STRING`,
  ],
  [
    "an oldest preferred size above max_batch_size",
    { ...BATCH4, sequence_batching: { oldest: { preferred_batch_size: [8] } } },
    "model 'm' field 'sequence_batching.oldest': sequence batching preferred batch size must be <= max batch size 4, got 8",
  ],
  [
    "an oldest preferred size of 0",
    { ...BATCH4, sequence_batching: { oldest: { preferred_batch_size: [0] } } },
    "model 'm' field 'sequence_batching.oldest': sequence batching preferred batch size must be positive, got 0",
  ],
  [
    "a slot utilization above 1",
    { ...BATCH4, sequence_batching: { direct: { minimum_slot_utilization: 1.5 } } },
    "model 'm' field 'sequence_batching.direct': sequence batching minimum slot utilization must be in range (0.0, 1.0], got 1.5",
  ],
  [
    "the response cache with sequence batching",
    { ...BATCH4, sequence_batching: {}, response_cache: { enable: true } },
    "model 'm' field 'response_cache': Response Cache does not currently support model 'm' with sequence batching scheduler. Please disable the response cache.",
  ],
  [
    "the response cache with a decoupled model",
    { ...IO, model_transaction_policy: { decoupled: true }, response_cache: { enable: true } },
    "model 'm' field 'response_cache': Response Cache does not currently support model 'm' with 'decoupled' transaction policy. Please disable the response cache.",
  ],
  // ensembles
  [
    "an ensemble platform without steps",
    { ...IO, platform: "ensemble" },
    "model 'm' field 'platform': ensemble scheduling must be set for ensemble 'm' whose platform is ensemble",
  ],
  [
    "ensemble scheduling on another platform",
    { ...IO, platform: "onnxruntime_onnx", ensemble_scheduling: { step: [{ model_name: "x" }] } },
    "model 'm' field 'ensemble_scheduling': ensemble scheduling cannot be set for model 'm' whose platform is not ensemble",
  ],
  [
    "an ensemble without steps",
    { ...IO, platform: "ensemble", ensemble_scheduling: { step: [] } },
    "model 'm' field 'ensemble_scheduling': must specify one or more 'step's for ensemble 'm'",
  ],
  [
    "an ensemble step without a model",
    { ...IO, platform: "ensemble", ensemble_scheduling: { step: [{ model_version: -1 }] } },
    "model 'm' field 'ensemble_scheduling': must specify 'model_name' in step of ensemble 'm'",
  ],
  // instance groups
  [
    "an instance count of 0",
    {
      ...IO,
      instance_group: [
        { name: "g0", count: 1 },
        { name: "g1", count: 0 },
      ],
    },
    "model 'm' field 'instance_group[1].count': instance group 'g1' count must be >= 1, got 0",
  ],
  [
    "GPUs on a KIND_CPU group",
    { ...IO, instance_group: [{ name: "g", kind: "KIND_CPU", gpus: [0] }] },
    "model 'm' field 'instance_group[0].gpus': instance group 'g' has kind KIND_CPU but specifies one or more GPUs",
  ],
  [
    "GPUs on a KIND_MODEL group",
    { ...IO, instance_group: [{ name: "g", kind: "KIND_MODEL", gpus: [0] }] },
    "model 'm' field 'instance_group[0].gpus': instance group 'g' has kind KIND_MODEL but specifies one or more GPUs",
  ],
  [
    "a profile outside TensorRT",
    { ...IO, instance_group: [{ name: "g", profile: ["0"] }] },
    "model 'm' field 'instance_group[0].profile': instance group 'g' specifies 'profile', which is only supported for TensorRT models",
  ],
];

describe("validateModelConfig rejects", () => {
  it.each(cases)("%s", (_, config, message) => {
    const err = validationError(config);
    expect(err.code).toBe("INVALID_ARG");
    expect(err.message).toBe(message);
  });

  it("reports the first problem only, in field order", () => {
    const config: ModelConfig = { max_batch_size: -1, input: [{ name: "a" }], dynamic_batching: {} };
    expect(validationError(config).message).toBe("model 'm' field 'max_batch_size': 'max_batch_size' must be non-negative, got -1");
  });
});
