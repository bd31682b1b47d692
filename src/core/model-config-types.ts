/**
 * @module TypeScript view of inference.ModelConfig (proto/model_config.proto) in its
 * protobuf-JSON form: snake_case field names, enums as their names ("TYPE_FP32"),
 * 64-bit integers as JS numbers, repeated fields as arrays, maps as records, and each
 * oneof member as its own optional key. The config.pbtxt parser produces this shape and
 * the /config endpoints print it.
 */

export type ConfigDataType =
  | "TYPE_INVALID"
  | "TYPE_BOOL"
  | "TYPE_UINT8"
  | "TYPE_UINT16"
  | "TYPE_UINT32"
  | "TYPE_UINT64"
  | "TYPE_INT8"
  | "TYPE_INT16"
  | "TYPE_INT32"
  | "TYPE_INT64"
  | "TYPE_FP16"
  | "TYPE_FP32"
  | "TYPE_FP64"
  | "TYPE_STRING"
  | "TYPE_BF16";

export interface ModelTensorReshape {
  shape?: number[];
}

export interface ModelInput {
  name?: string;
  data_type?: ConfigDataType;
  format?: "FORMAT_NONE" | "FORMAT_NHWC" | "FORMAT_NCHW";
  dims?: number[];
  reshape?: ModelTensorReshape;
  is_shape_tensor?: boolean;
  allow_ragged_batch?: boolean;
  optional?: boolean;
  is_non_linear_format_io?: boolean;
}

export interface ModelOutput {
  name?: string;
  data_type?: ConfigDataType;
  dims?: number[];
  reshape?: ModelTensorReshape;
  label_filename?: string;
  is_shape_tensor?: boolean;
  is_non_linear_format_io?: boolean;
}

/** What an instance needs from the rate limiter (`--rate-limit=execution_count`). */
export interface ModelRateLimiter {
  resources?: { name?: string; global?: boolean; count?: number }[];
  /** Weight among waiting instances: 2 gets half the chances of 1; 0 counts as 1. */
  priority?: number;
}

export interface ModelInstanceGroup {
  name?: string;
  kind?: "KIND_AUTO" | "KIND_GPU" | "KIND_CPU" | "KIND_MODEL";
  count?: number;
  rate_limiter?: ModelRateLimiter;
  gpus?: number[];
  secondary_devices?: Record<string, unknown>[];
  profile?: string[];
  passive?: boolean;
  host_policy?: string;
}

export interface ModelVersionPolicy {
  latest?: { num_versions?: number };
  all?: Record<string, never>;
  specific?: { versions?: number[] };
}

export interface ModelQueuePolicy {
  timeout_action?: "REJECT" | "DELAY";
  default_timeout_microseconds?: number;
  allow_timeout_override?: boolean;
  max_queue_size?: number;
}

export interface ModelDynamicBatching {
  preferred_batch_size?: number[];
  max_queue_delay_microseconds?: number;
  preserve_ordering?: boolean;
  priority_levels?: number;
  default_priority_level?: number;
  default_queue_policy?: ModelQueuePolicy;
  priority_queue_policy?: Record<string, ModelQueuePolicy>;
}

export interface ModelParameter {
  string_value?: string;
}

/** The whole ModelConfig; fields not listed here are kept as-is by the index signature. */
export interface ModelConfig {
  name?: string;
  platform?: string;
  backend?: string;
  runtime?: string;
  version_policy?: ModelVersionPolicy;
  max_batch_size?: number;
  input?: ModelInput[];
  output?: ModelOutput[];
  batch_input?: Record<string, unknown>[];
  batch_output?: Record<string, unknown>[];
  optimization?: Record<string, unknown>;
  dynamic_batching?: ModelDynamicBatching;
  sequence_batching?: Record<string, unknown>;
  ensemble_scheduling?: Record<string, unknown>;
  instance_group?: ModelInstanceGroup[];
  default_model_filename?: string;
  cc_model_filenames?: Record<string, string>;
  metric_tags?: Record<string, string>;
  parameters?: Record<string, ModelParameter>;
  model_warmup?: Record<string, unknown>[];
  model_operations?: Record<string, unknown>;
  model_transaction_policy?: { decoupled?: boolean };
  model_repository_agents?: Record<string, unknown>;
  response_cache?: { enable?: boolean };
  model_metrics?: {
    metric_control?: { metric_identifier?: { family?: string }; histogram_options?: { buckets?: (number | string)[] } }[];
  };
  [field: string]: unknown;
}
