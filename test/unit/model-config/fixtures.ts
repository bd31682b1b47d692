/**
 * Shared config fixtures for the model-config tests: four hand-written Triton-style
 * configs that together set every field of inference.ModelConfig and of every message
 * reachable from it (one config cannot: oneof members exclude each other), each with the
 * exact object parsePbtxt must give. Plus the schema walkers that check that claim.
 */
import { modelConfigType, fieldKind, type MessageType } from "../../../src/model-config/schema.ts";
import type { ModelConfig } from "../../../src/core/model-config-types.ts";

type Obj = Record<string, unknown>;

export const FULL_TEXT = `
# Every field that a dynamic-batching ONNX model can carry.
name: "full"
platform: "onnxruntime_onnx"
backend: "onnxruntime"
runtime: "libtriton_onnxruntime.so"
version_policy: { latest: { num_versions: 2 } }
max_batch_size: 16
input [
  {
    name: "INPUT0"
    data_type: TYPE_FP32
    format: FORMAT_NCHW
    dims: [ 3, -1, -1 ]
    reshape: { shape: [ 3, -1, -1 ] }
    is_shape_tensor: false
    allow_ragged_batch: true
    optional: True
    is_non_linear_format_io: f
  },
  { name: "SHAPE" data_type: TYPE_INT64 dims: [ 2 ] is_shape_tensor: 1 }
]
output {
  name: "OUTPUT0"
  data_type: TYPE_FP16
  dims: [ 1000 ]
  reshape < shape: [ 1, 1000 ] >
  label_filename: "labels.txt"
  is_shape_tensor: False
  is_non_linear_format_io: t
}
batch_input [
  { kind: BATCH_ACCUMULATED_ELEMENT_COUNT target_name: "INDEX" data_type: TYPE_INT32 source_input: "INPUT0" }
]
batch_input { kind: 5 target_name: [ "A", "B" ] data_type: TYPE_FP32 source_input: [ "SHAPE" ] }
batch_output { target_name: "OUTPUT0" kind: BATCH_SCATTER_WITH_INPUT_SHAPE source_input: "INPUT0" }
optimization {
  graph { level: -1 }
  priority: PRIORITY_MAX
  cuda {
    graphs: true
    busy_wait_events: true
    graph_spec [
      {
        batch_size: 8
        input { key: "INPUT0" value: { dim: [ 3, 224, 224 ] } }
        graph_lower_bound { batch_size: 1 input { key: "INPUT0" value { dim: [ 3, 112, 112 ] } } }
      }
    ]
    output_copy_stream: true
  }
  execution_accelerators {
    gpu_execution_accelerator: [
      {
        name: "tensorrt"
        parameters { key: "precision_mode" value: "FP16" }
        parameters { key: "max_workspace_size_bytes" value: "1073741824" }
      }
    ]
    cpu_execution_accelerator: [ { name: "openvino" } ]
  }
  input_pinned_memory { enable: false }
  output_pinned_memory: { enable: true }
  gather_kernel_buffer_threshold: 4
  eager_batching: true
}
dynamic_batching {
  preferred_batch_size: [ 4, 8 ]
  max_queue_delay_microseconds: 100
  preserve_ordering: true
  priority_levels: 3
  default_priority_level: 2
  default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 5000 allow_timeout_override: true max_queue_size: 32 }
  priority_queue_policy { key: 1 value: { timeout_action: REJECT max_queue_size: 4 } }
  priority_queue_policy [ { key: 3, value { default_timeout_microseconds: 200 } } ]
}
instance_group [
  {
    name: "gpu_group"
    kind: KIND_GPU
    count: 2
    rate_limiter {
      resources [ { name: "R1" global: true count: 4 }, { name: "R2" count: 1 } ]
      priority: 2
    }
    gpus: [ 0, 1 ]
    secondary_devices [ { kind: KIND_NVDLA device_id: 1 } ]
    profile: [ "0", "1" ]
    passive: true
    host_policy: "numa0"
  },
  { kind: KIND_CPU count: 1 }
]
default_model_filename: "model.onnx"
cc_model_filenames { key: "7.5" value: "model_t4.plan" }
cc_model_filenames [ { key: "8.0", value: "model_a100.plan" } ]
metric_tags { key: "team" value: "vision" }
parameters { key: "intra_op_thread_count" value: { string_value: "4" } }
parameters [
  { key: "execution_mode" value: { string_value: "0" } },
  { key: "inter_op_thread_count", value: { string_value: "1" } }
]
model_warmup [
  {
    name: "zeros"
    batch_size: 2
    inputs { key: "INPUT0" value: { data_type: TYPE_FP32 dims: [ 3, 8, 8 ] zero_data: true } }
    inputs { key: "SHAPE" value: { data_type: TYPE_INT64 dims: [ 2 ] random_data: true } }
    count: 3
  },
  { name: "file" batch_size: 1 inputs [ { key: "INPUT0" value { data_type: TYPE_FP32 dims: [ 3, 8, 8 ] input_data_file: "raw_input0" } } ] }
]
model_operations { op_library_filename: [ "libcustom_ops.so" ] }
model_transaction_policy { decoupled: false }
model_repository_agents {
  agents [ { name: "checksum" parameters { key: "MD5:1/model.onnx" value: "d41d8cd98f00b204e9800998ecf8427e" } } ]
}
response_cache { enable: true }
model_metrics {
  metric_control [
    {
      metric_identifier { family: "nv_inference_first_response_histogram_ms" }
      histogram_options { buckets: [ 1e-3, 0.5, 2.5E1, 100, inf ] }
    }
  ]
}
`;

export const FULL: ModelConfig = {
  name: "full",
  platform: "onnxruntime_onnx",
  backend: "onnxruntime",
  runtime: "libtriton_onnxruntime.so",
  version_policy: { latest: { num_versions: 2 } },
  max_batch_size: 16,
  input: [
    {
      name: "INPUT0",
      data_type: "TYPE_FP32",
      format: "FORMAT_NCHW",
      dims: [3, -1, -1],
      reshape: { shape: [3, -1, -1] },
      is_shape_tensor: false,
      allow_ragged_batch: true,
      optional: true,
      is_non_linear_format_io: false,
    },
    { name: "SHAPE", data_type: "TYPE_INT64", dims: [2], is_shape_tensor: true },
  ],
  output: [
    {
      name: "OUTPUT0",
      data_type: "TYPE_FP16",
      dims: [1000],
      reshape: { shape: [1, 1000] },
      label_filename: "labels.txt",
      is_shape_tensor: false,
      is_non_linear_format_io: true,
    },
  ],
  batch_input: [
    { kind: "BATCH_ACCUMULATED_ELEMENT_COUNT", target_name: ["INDEX"], data_type: "TYPE_INT32", source_input: ["INPUT0"] },
    { kind: "BATCH_ITEM_SHAPE_FLATTEN", target_name: ["A", "B"], data_type: "TYPE_FP32", source_input: ["SHAPE"] },
  ],
  batch_output: [{ target_name: ["OUTPUT0"], kind: "BATCH_SCATTER_WITH_INPUT_SHAPE", source_input: ["INPUT0"] }],
  optimization: {
    graph: { level: -1 },
    priority: "PRIORITY_MAX",
    cuda: {
      graphs: true,
      busy_wait_events: true,
      graph_spec: [
        {
          batch_size: 8,
          input: { INPUT0: { dim: [3, 224, 224] } },
          graph_lower_bound: { batch_size: 1, input: { INPUT0: { dim: [3, 112, 112] } } },
        },
      ],
      output_copy_stream: true,
    },
    execution_accelerators: {
      gpu_execution_accelerator: [{ name: "tensorrt", parameters: { precision_mode: "FP16", max_workspace_size_bytes: "1073741824" } }],
      cpu_execution_accelerator: [{ name: "openvino" }],
    },
    input_pinned_memory: { enable: false },
    output_pinned_memory: { enable: true },
    gather_kernel_buffer_threshold: 4,
    eager_batching: true,
  },
  dynamic_batching: {
    preferred_batch_size: [4, 8],
    max_queue_delay_microseconds: 100,
    preserve_ordering: true,
    priority_levels: 3,
    default_priority_level: 2,
    default_queue_policy: { timeout_action: "DELAY", default_timeout_microseconds: 5000, allow_timeout_override: true, max_queue_size: 32 },
    priority_queue_policy: {
      "1": { timeout_action: "REJECT", max_queue_size: 4 },
      "3": { default_timeout_microseconds: 200 },
    },
  },
  instance_group: [
    {
      name: "gpu_group",
      kind: "KIND_GPU",
      count: 2,
      rate_limiter: {
        resources: [
          { name: "R1", global: true, count: 4 },
          { name: "R2", count: 1 },
        ],
        priority: 2,
      },
      gpus: [0, 1],
      secondary_devices: [{ kind: "KIND_NVDLA", device_id: 1 }],
      profile: ["0", "1"],
      passive: true,
      host_policy: "numa0",
    },
    { kind: "KIND_CPU", count: 1 },
  ],
  default_model_filename: "model.onnx",
  cc_model_filenames: { "7.5": "model_t4.plan", "8.0": "model_a100.plan" },
  metric_tags: { team: "vision" },
  parameters: {
    intra_op_thread_count: { string_value: "4" },
    execution_mode: { string_value: "0" },
    inter_op_thread_count: { string_value: "1" },
  },
  model_warmup: [
    {
      name: "zeros",
      batch_size: 2,
      inputs: {
        INPUT0: { data_type: "TYPE_FP32", dims: [3, 8, 8], zero_data: true },
        SHAPE: { data_type: "TYPE_INT64", dims: [2], random_data: true },
      },
      count: 3,
    },
    { name: "file", batch_size: 1, inputs: { INPUT0: { data_type: "TYPE_FP32", dims: [3, 8, 8], input_data_file: "raw_input0" } } },
  ],
  model_operations: { op_library_filename: ["libcustom_ops.so"] },
  model_transaction_policy: { decoupled: false },
  model_repository_agents: { agents: [{ name: "checksum", parameters: { "MD5:1/model.onnx": "d41d8cd98f00b204e9800998ecf8427e" } }] },
  response_cache: { enable: true },
  model_metrics: {
    metric_control: [
      {
        metric_identifier: { family: "nv_inference_first_response_histogram_ms" },
        histogram_options: { buckets: [0.001, 0.5, 25, 100, Infinity] },
      },
    ],
  },
};

export const SEQ_DIRECT_TEXT = `
name: "seq"
backend: "onnxruntime"
max_batch_size: 8
version_policy { all { } }
input [ { name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
sequence_batching {
  direct { max_queue_delay_microseconds: 200 minimum_slot_utilization: 0.5 }
  max_sequence_idle_microseconds: 5000000
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START fp32_false_true: [ 0, 1 ] } ] },
    { name: "READY" control [ { kind: CONTROL_SEQUENCE_READY int32_false_true: [ 0, 1 ] } ] },
    { name: "END" control [ { kind: CONTROL_SEQUENCE_END bool_false_true: [ false, true ] } ] },
    { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] }
  ]
  state [
    {
      input_name: "INPUT_STATE"
      output_name: "OUTPUT_STATE"
      data_type: TYPE_FP32
      dims: [ -1, 64 ]
      initial_state [
        { data_type: TYPE_FP32 dims: [ 1, 64 ] zero_data: true name: "zeros" },
        { data_type: TYPE_FP32 dims: [ 1, 64 ] data_file: "init.bin" name: "from_file" }
      ]
      use_same_buffer_for_input_output: true
      use_growable_memory: true
    }
  ]
  iterative_sequence: true
}
`;

export const SEQ_DIRECT: ModelConfig = {
  name: "seq",
  backend: "onnxruntime",
  max_batch_size: 8,
  version_policy: { all: {} },
  input: [{ name: "INPUT", data_type: "TYPE_INT32", dims: [1] }],
  output: [{ name: "OUTPUT", data_type: "TYPE_INT32", dims: [1] }],
  sequence_batching: {
    direct: { max_queue_delay_microseconds: 200, minimum_slot_utilization: 0.5 },
    max_sequence_idle_microseconds: 5000000,
    control_input: [
      { name: "START", control: [{ kind: "CONTROL_SEQUENCE_START", fp32_false_true: [0, 1] }] },
      { name: "READY", control: [{ kind: "CONTROL_SEQUENCE_READY", int32_false_true: [0, 1] }] },
      { name: "END", control: [{ kind: "CONTROL_SEQUENCE_END", bool_false_true: [false, true] }] },
      { name: "CORRID", control: [{ kind: "CONTROL_SEQUENCE_CORRID", data_type: "TYPE_UINT64" }] },
    ],
    state: [
      {
        input_name: "INPUT_STATE",
        output_name: "OUTPUT_STATE",
        data_type: "TYPE_FP32",
        dims: [-1, 64],
        initial_state: [
          { data_type: "TYPE_FP32", dims: [1, 64], zero_data: true, name: "zeros" },
          { data_type: "TYPE_FP32", dims: [1, 64], data_file: "init.bin", name: "from_file" },
        ],
        use_same_buffer_for_input_output: true,
        use_growable_memory: true,
      },
    ],
    iterative_sequence: true,
  },
};

export const SEQ_OLDEST_TEXT = `
name: "seq_oldest"
max_batch_size: 4
version_policy: { specific: { versions: [ 1, 3 ] } }
sequence_batching {
  oldest { max_candidate_sequences: 4 preferred_batch_size: [ 2, 4 ] max_queue_delay_microseconds: 100 preserve_ordering: true }
}
`;

export const SEQ_OLDEST: ModelConfig = {
  name: "seq_oldest",
  max_batch_size: 4,
  version_policy: { specific: { versions: [1, 3] } },
  sequence_batching: {
    oldest: { max_candidate_sequences: 4, preferred_batch_size: [2, 4], max_queue_delay_microseconds: 100, preserve_ordering: true },
  },
};

export const ENSEMBLE_TEXT = `
name: "ensemble_model"
platform: "ensemble"
max_batch_size: 8
input [ { name: "IMAGE" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "CLASSIFICATION" data_type: TYPE_FP32 dims: [ 1000 ] } ]
ensemble_scheduling {
  step [
    {
      model_name: "preprocess"
      model_version: -1
      input_map { key: "RAW" value: "IMAGE" }
      output_map { key: "PREPROCESSED" value: "preprocessed_image" }
    },
    {
      model_name: "classifier"
      model_version: 2
      input_map { key: "INPUT0" value: "preprocessed_image" }
      input_map { key: "INPUT1" value: "IMAGE" }
      output_map { key: "OUTPUT0" value: "CLASSIFICATION" }
      model_namespace: "ns"
    }
  ]
  max_inflight_requests: 16
}
`;

export const ENSEMBLE: ModelConfig = {
  name: "ensemble_model",
  platform: "ensemble",
  max_batch_size: 8,
  input: [{ name: "IMAGE", data_type: "TYPE_STRING", dims: [1] }],
  output: [{ name: "CLASSIFICATION", data_type: "TYPE_FP32", dims: [1000] }],
  ensemble_scheduling: {
    step: [
      {
        model_name: "preprocess",
        model_version: -1,
        input_map: { RAW: "IMAGE" },
        output_map: { PREPROCESSED: "preprocessed_image" },
      },
      {
        model_name: "classifier",
        model_version: 2,
        input_map: { INPUT0: "preprocessed_image", INPUT1: "IMAGE" },
        output_map: { OUTPUT0: "CLASSIFICATION" },
        model_namespace: "ns",
      },
    ],
    max_inflight_requests: 16,
  },
};

export const FIXTURES: [string, string, ModelConfig][] = [
  ["dynamic batching, every non-oneof field", FULL_TEXT, FULL],
  ["sequence batching, direct strategy, implicit state", SEQ_DIRECT_TEXT, SEQ_DIRECT],
  ["sequence batching, oldest strategy", SEQ_OLDEST_TEXT, SEQ_OLDEST],
  ["ensemble with input_map and output_map", ENSEMBLE_TEXT, ENSEMBLE],
];

// --------------------------------------------------------------------- schema coverage

/** Every "<message>.<field>" reachable from inference.ModelConfig. */
export function schemaFields(): Set<string> {
  const out = new Set<string>();
  const seen = new Set<string>();
  const queue: MessageType[] = [modelConfigType()];
  while (queue.length > 0) {
    const type = queue.shift()!;
    if (seen.has(type.fullName)) continue;
    seen.add(type.fullName);
    for (const field of type.fieldsArray) {
      out.add(`${type.fullName}.${field.name}`);
      if (field.resolvedType?.kind === "message") queue.push(field.resolvedType);
    }
  }
  return out;
}

/** Every "<message>.<field>" set in `obj` (read as `type`); throws on a key the schema lacks. */
export function setFields(type: MessageType, obj: Obj, out: Set<string>): Set<string> {
  for (const [key, value] of Object.entries(obj)) {
    const field = type.fields[key];
    if (!field) throw new Error(`fixture has '${key}', which ${type.fullName} lacks`);
    out.add(`${type.fullName}.${key}`);
    if (fieldKind(field) !== "message") continue;
    const sub = field.resolvedType as MessageType;
    const items = (field.map ? Object.values(value as Obj) : field.repeated ? value : [value]) as Obj[];
    for (const item of items) setFields(sub, item, out);
  }
  return out;
}

// ------------------------------------------------------------------ Triton's examples

/** Triton's documentation examples, as users copy them (spacing and list styles kept). */
export const TRITON_EXAMPLES: [string, string, ModelConfig][] = [
  [
    "densenet_onnx (quickstart): reshape, format, label file, `max_batch_size : 0`",
    `
name: "densenet_onnx"
platform: "onnxruntime_onnx"
max_batch_size : 0
input [
  {
    name: "data_0"
    data_type: TYPE_FP32
    format: FORMAT_NCHW
    dims: [ 3, 224, 224 ]
    reshape { shape: [ 1, 3, 224, 224 ] }
  }
]
output [
  {
    name: "fc6_1"
    data_type: TYPE_FP32
    dims: [ 1000 ]
    reshape { shape: [ 1, 1000, 1, 1 ] }
    label_filename: "densenet_labels.txt"
  }
]`,
    {
      name: "densenet_onnx",
      platform: "onnxruntime_onnx",
      max_batch_size: 0,
      input: [{ name: "data_0", data_type: "TYPE_FP32", format: "FORMAT_NCHW", dims: [3, 224, 224], reshape: { shape: [1, 3, 224, 224] } }],
      output: [{ name: "fc6_1", data_type: "TYPE_FP32", dims: [1000], reshape: { shape: [1, 1000, 1, 1] }, label_filename: "densenet_labels.txt" }],
    },
  ],
  [
    "dynamic batching with priority levels and a priority_queue_policy map",
    `
name: "prio"
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
instance_group [ { count: 2 kind: KIND_CPU } ]
dynamic_batching {
  preferred_batch_size: [ 4, 8 ]
  max_queue_delay_microseconds: 100
  priority_levels: 2
  default_priority_level: 2
  default_queue_policy {
    timeout_action: REJECT
    default_timeout_microseconds: 100000
    allow_timeout_override: true
    max_queue_size: 16
  }
  priority_queue_policy {
    key: 1
    value: {
      timeout_action: DELAY
      default_timeout_microseconds: 50000
      max_queue_size: 4
    }
  }
}`,
    {
      name: "prio",
      backend: "onnxruntime",
      max_batch_size: 8,
      input: [{ name: "INPUT0", data_type: "TYPE_FP32", dims: [16] }],
      output: [{ name: "OUTPUT0", data_type: "TYPE_FP32", dims: [16] }],
      instance_group: [{ count: 2, kind: "KIND_CPU" }],
      dynamic_batching: {
        preferred_batch_size: [4, 8],
        max_queue_delay_microseconds: 100,
        priority_levels: 2,
        default_priority_level: 2,
        default_queue_policy: { timeout_action: "REJECT", default_timeout_microseconds: 100000, allow_timeout_override: true, max_queue_size: 16 },
        priority_queue_policy: { "1": { timeout_action: "DELAY", default_timeout_microseconds: 50000, max_queue_size: 4 } },
      },
    },
  ],
  [
    "model_warmup with an inputs map, and backend parameters",
    `
name: "warm"
backend: "onnxruntime"
max_batch_size: 4
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] }, { name: "INPUT1" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
parameters { key: "intra_op_thread_count" value: { string_value: "1" } }
parameters { key: "enable_mem_arena" value: { string_value: "1" } }
model_warmup [
  {
    name : "sample"
    batch_size: 2
    count: 3
    inputs {
      key: "INPUT0"
      value: {
        data_type: TYPE_FP32
        dims: [ 16 ]
        zero_data: true
      }
    }
    inputs {
      key: "INPUT1"
      value: {
        data_type: TYPE_STRING
        dims: [ 1 ]
        input_data_file: "raw_string"
      }
    }
  }
]`,
    {
      name: "warm",
      backend: "onnxruntime",
      max_batch_size: 4,
      input: [
        { name: "INPUT0", data_type: "TYPE_FP32", dims: [16] },
        { name: "INPUT1", data_type: "TYPE_STRING", dims: [1] },
      ],
      output: [{ name: "OUTPUT0", data_type: "TYPE_FP32", dims: [16] }],
      parameters: { intra_op_thread_count: { string_value: "1" }, enable_mem_arena: { string_value: "1" } },
      model_warmup: [
        {
          name: "sample",
          batch_size: 2,
          count: 3,
          inputs: {
            INPUT0: { data_type: "TYPE_FP32", dims: [16], zero_data: true },
            INPUT1: { data_type: "TYPE_STRING", dims: [1], input_data_file: "raw_string" },
          },
        },
      ],
    },
  ],
  [
    "sequence batching (oldest) with every control kind and implicit state",
    `
name: "accumulate"
backend: "onnxruntime"
max_batch_size: 2
input [ { name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
sequence_batching {
  max_sequence_idle_microseconds: 5000000
  oldest { max_candidate_sequences: 4 preferred_batch_size: [ 2 ] }
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
    { name: "END" control [ { kind: CONTROL_SEQUENCE_END bool_false_true: [ false, true ] } ] },
    { name: "READY" control [ { kind: CONTROL_SEQUENCE_READY fp32_false_true: [ 0, 1 ] } ] },
    { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] }
  ]
  state [
    {
      input_name: "INPUT_STATE"
      output_name: "OUTPUT_STATE"
      data_type: TYPE_INT32
      dims: [ 1 ]
      initial_state: { data_type: TYPE_INT32 dims: [ 1 ] zero_data: true name: "zero" }
    }
  ]
}`,
    {
      name: "accumulate",
      backend: "onnxruntime",
      max_batch_size: 2,
      input: [{ name: "INPUT", data_type: "TYPE_INT32", dims: [1] }],
      output: [{ name: "OUTPUT", data_type: "TYPE_INT32", dims: [1] }],
      sequence_batching: {
        max_sequence_idle_microseconds: 5000000,
        oldest: { max_candidate_sequences: 4, preferred_batch_size: [2] },
        control_input: [
          { name: "START", control: [{ kind: "CONTROL_SEQUENCE_START", int32_false_true: [0, 1] }] },
          { name: "END", control: [{ kind: "CONTROL_SEQUENCE_END", bool_false_true: [false, true] }] },
          { name: "READY", control: [{ kind: "CONTROL_SEQUENCE_READY", fp32_false_true: [0, 1] }] },
          { name: "CORRID", control: [{ kind: "CONTROL_SEQUENCE_CORRID", data_type: "TYPE_UINT64" }] },
        ],
        state: [
          {
            input_name: "INPUT_STATE",
            output_name: "OUTPUT_STATE",
            data_type: "TYPE_INT32",
            dims: [1],
            initial_state: [{ data_type: "TYPE_INT32", dims: [1], zero_data: true, name: "zero" }],
          },
        ],
      },
    },
  ],
  [
    "ensemble of two steps",
    `
name: "pipeline"
platform: "ensemble"
max_batch_size: 8
input [ { name: "RAW" data_type: TYPE_UINT8 dims: [ -1 ] } ]
output [ { name: "SCORES" data_type: TYPE_FP32 dims: [ 10 ] } ]
ensemble_scheduling {
  step [
    { model_name: "decode" model_version: -1 input_map { key: "IN" value: "RAW" } output_map { key: "OUT" value: "pixels" } },
    { model_name: "classify" model_version: 1 input_map { key: "x" value: "pixels" } output_map { key: "y" value: "SCORES" } }
  ]
}`,
    {
      name: "pipeline",
      platform: "ensemble",
      max_batch_size: 8,
      input: [{ name: "RAW", data_type: "TYPE_UINT8", dims: [-1] }],
      output: [{ name: "SCORES", data_type: "TYPE_FP32", dims: [10] }],
      ensemble_scheduling: {
        step: [
          { model_name: "decode", model_version: -1, input_map: { IN: "RAW" }, output_map: { OUT: "pixels" } },
          { model_name: "classify", model_version: 1, input_map: { x: "pixels" }, output_map: { y: "SCORES" } },
        ],
      },
    },
  ],
];
