/**
 * C-03, §2.3: ModelConfig ↔ JSON as Triton's /config prints it (configToJson) and as the
 * repository load API takes it (configFromJson).
 */
import { describe, it, expect } from "vitest";
import { parsePbtxt, printPbtxt } from "../../../src/model-config/pbtxt.ts";
import { configToJson, configFromJson } from "../../../src/model-config/json.ts";
import { modelConfigType, fieldKind, type MessageType, type EnumType } from "../../../src/model-config/schema.ts";
import { ServerError } from "../../../src/core/errors.ts";
import type { ModelConfig } from "../../../src/core/model-config-types.ts";
import { FIXTURES as SHARED_FIXTURES, TRITON_EXAMPLES } from "./fixtures.ts";

type Obj = Record<string, unknown>;

/** What /config sends: the object through JSON text. */
const viaText = (v: unknown): unknown => JSON.parse(JSON.stringify(v));

const TOP_DEFAULTS = {
  name: "",
  platform: "",
  backend: "",
  runtime: "",
  max_batch_size: 0,
  input: [],
  output: [],
  batch_input: [],
  batch_output: [],
  instance_group: [],
  default_model_filename: "",
  cc_model_filenames: {},
  metric_tags: {},
  parameters: {},
  model_warmup: [],
};

describe("configToJson", () => {
  it("prints every top-level scalar at its default, [] and {} for empty repeated fields and maps, and no unset message", () => {
    const json = configToJson({});
    expect(json).toEqual(TOP_DEFAULTS);
    // Schema order, as protobuf's JSON printer writes it.
    expect(Object.keys(json)).toEqual(Object.keys(TOP_DEFAULTS));
    expect(JSON.stringify(json)).toBe(
      '{"name":"","platform":"","backend":"","runtime":"","max_batch_size":0,"input":[],"output":[],"batch_input":[],"batch_output":[],' +
        '"instance_group":[],"default_model_filename":"","cc_model_filenames":{},"metric_tags":{},"parameters":{},"model_warmup":[]}',
    );
  });

  it("fills defaults inside nested messages, repeated messages and map values", () => {
    const json = configToJson({
      input: [{ name: "X" }],
      output: [{}],
      instance_group: [{ kind: "KIND_GPU" }],
      parameters: { p: {} },
      dynamic_batching: { priority_queue_policy: { "1": {} } },
    });
    expect(json.input).toEqual([
      {
        name: "X",
        data_type: "TYPE_INVALID",
        format: "FORMAT_NONE",
        dims: [],
        is_shape_tensor: false,
        allow_ragged_batch: false,
        optional: false,
        is_non_linear_format_io: false,
      },
    ]);
    expect(json.output).toEqual([
      { name: "", data_type: "TYPE_INVALID", dims: [], label_filename: "", is_shape_tensor: false, is_non_linear_format_io: false },
    ]);
    expect(json.instance_group).toEqual([
      { name: "", kind: "KIND_GPU", count: 0, gpus: [], secondary_devices: [], profile: [], passive: false, host_policy: "" },
    ]);
    expect(json.parameters).toEqual({ p: { string_value: "" } });
    expect(json.dynamic_batching).toEqual({
      preferred_batch_size: [],
      max_queue_delay_microseconds: 0,
      preserve_ordering: false,
      priority_levels: 0,
      default_priority_level: 0,
      priority_queue_policy: { "1": { timeout_action: "REJECT", default_timeout_microseconds: 0, allow_timeout_override: false, max_queue_size: 0 } },
    });
  });

  it("omits unset oneof members, scalar and message alike, and prints the set one", () => {
    const json = configToJson({
      version_policy: { latest: {} },
      sequence_batching: { state: [{ initial_state: [{}, { data_file: "f" }] }] },
      model_warmup: [{ inputs: { X: {}, Y: { random_data: true } } }],
      model_metrics: { metric_control: [{}] },
    });
    expect(json.version_policy).toEqual({ latest: { num_versions: 0 } });
    expect(json.sequence_batching).toEqual({
      max_sequence_idle_microseconds: 0,
      control_input: [],
      state: [
        {
          input_name: "",
          output_name: "",
          data_type: "TYPE_INVALID",
          dims: [],
          initial_state: [
            { data_type: "TYPE_INVALID", dims: [], name: "" },
            { data_type: "TYPE_INVALID", dims: [], data_file: "f", name: "" },
          ],
          use_same_buffer_for_input_output: false,
          use_growable_memory: false,
        },
      ],
      iterative_sequence: false,
    });
    expect(json.model_warmup).toEqual([
      {
        name: "",
        batch_size: 0,
        inputs: { X: { data_type: "TYPE_INVALID", dims: [] }, Y: { data_type: "TYPE_INVALID", dims: [], random_data: true } },
        count: 0,
      },
    ]);
    expect(json.model_metrics).toEqual({ metric_control: [{}] });
    // Only the scheduling member that is set appears.
    expect(Object.keys(json)).not.toContain("dynamic_batching");
    expect(Object.keys(json)).not.toContain("ensemble_scheduling");
    expect(configToJson({ version_policy: { all: {} } }).version_policy).toEqual({ all: {} });
  });

  it("prints enums as names and int64/uint64 fields as JSON numbers", () => {
    const config = parsePbtxt(`
      input { name: "X" data_type: 11 dims: [ -1, 3 ] reshape { shape: [ 3 ] } }
      dynamic_batching { max_queue_delay_microseconds: 100 priority_levels: 2 default_priority_level: 1 }
      instance_group { kind: 2 secondary_devices { device_id: 7 } }
      version_policy { specific { versions: [ 1, 9007199254740991 ] } }`);
    const text = JSON.stringify(configToJson(config));
    expect(text).toContain('"input":[{"name":"X","data_type":"TYPE_FP32","format":"FORMAT_NONE","dims":[-1,3],"reshape":{"shape":[3]},');
    expect(text).toContain('"max_queue_delay_microseconds":100,');
    expect(text).toContain('"priority_levels":2,"default_priority_level":1,');
    expect(text).toContain('"kind":"KIND_CPU",');
    expect(text).toContain('"secondary_devices":[{"kind":"KIND_NVDLA","device_id":7}]');
    expect(text).toContain('"version_policy":{"specific":{"versions":[1,9007199254740991]}}');
  });

  it("does not share arrays or maps with the config it prints", () => {
    const config: ModelConfig = { input: [{ name: "X", dims: [1] }], metric_tags: { a: "b" } };
    const json = configToJson(config) as { input: { dims: number[] }[]; metric_tags: Obj };
    json.input[0]!.dims.push(2);
    json.metric_tags.c = "d";
    expect(config).toEqual({ input: [{ name: "X", dims: [1] }], metric_tags: { a: "b" } });
  });

  // Protobuf's JSON mapping (what Triton prints): JSON.stringify would write null for them.
  it("writes non-finite floats as protobuf JSON strings, and reads them back", () => {
    const config = parsePbtxt("model_metrics { metric_control { histogram_options { buckets: [ 1, inf, -inf, nan ] } } }");
    const json = viaText(configToJson(config)) as { model_metrics: { metric_control: { histogram_options: { buckets: unknown[] } }[] } };
    expect(json.model_metrics.metric_control[0]!.histogram_options.buckets).toEqual([1, "Infinity", "-Infinity", "NaN"]);
    expect(configFromJson(json).model_metrics).toEqual(config.model_metrics);
  });
});

function errorOf(json: unknown): ServerError {
  try {
    configFromJson(json);
  } catch (e) {
    expect(e).toBeInstanceOf(ServerError);
    return e as ServerError;
  }
  throw new Error(`no error for ${JSON.stringify(json)}`);
}

describe("configFromJson", () => {
  it("accepts snake_case and camelCase names, numeric strings for 64-bit integers and enum numbers", () => {
    const config = configFromJson({
      name: "m",
      maxBatchSize: 8,
      input: [{ name: "X", dataType: 11, dims: ["-1", 3], isShapeTensor: false, allow_ragged_batch: true }],
      output: [{ name: "Y", data_type: "TYPE_STRING", dims: [1], labelFilename: "labels.txt" }],
      dynamicBatching: {
        preferredBatchSize: [4, 8],
        maxQueueDelayMicroseconds: "100",
        default_queue_policy: { timeoutAction: 1, defaultTimeoutMicroseconds: "5000" },
        priorityQueuePolicy: { "2": { timeout_action: "REJECT", maxQueueSize: 3 } },
      },
      instanceGroup: [{ kind: 2, count: 1, secondaryDevices: [{ deviceId: "3" }] }],
      ccModelFilenames: { "7.5": "a.plan" },
      metricTags: { team: "x" },
      parameters: { p: { stringValue: "v" } },
      modelWarmup: [{ batchSize: 1, inputs: { X: { dataType: "TYPE_FP32", dims: [3], zeroData: true } } }],
      versionPolicy: { specific: { versions: ["1", 2] } },
      modelTransactionPolicy: { decoupled: true },
      responseCache: { enable: false },
      model_metrics: { metricControl: [{ metricIdentifier: { family: "f" }, histogramOptions: { buckets: [1, "Infinity", "-Infinity", "NaN"] } }] },
    });
    expect(config).toEqual({
      name: "m",
      max_batch_size: 8,
      input: [{ name: "X", data_type: "TYPE_FP32", dims: [-1, 3], is_shape_tensor: false, allow_ragged_batch: true }],
      output: [{ name: "Y", data_type: "TYPE_STRING", dims: [1], label_filename: "labels.txt" }],
      dynamic_batching: {
        preferred_batch_size: [4, 8],
        max_queue_delay_microseconds: 100,
        default_queue_policy: { timeout_action: "DELAY", default_timeout_microseconds: 5000 },
        priority_queue_policy: { "2": { timeout_action: "REJECT", max_queue_size: 3 } },
      },
      instance_group: [{ kind: "KIND_CPU", count: 1, secondary_devices: [{ device_id: 3 }] }],
      cc_model_filenames: { "7.5": "a.plan" },
      metric_tags: { team: "x" },
      parameters: { p: { string_value: "v" } },
      model_warmup: [{ batch_size: 1, inputs: { X: { data_type: "TYPE_FP32", dims: [3], zero_data: true } } }],
      version_policy: { specific: { versions: [1, 2] } },
      model_transaction_policy: { decoupled: true },
      response_cache: { enable: false },
      model_metrics: { metric_control: [{ metric_identifier: { family: "f" }, histogram_options: { buckets: [1, Infinity, -Infinity, NaN] } }] },
    });
  });

  it("maps camelCase names with digits (int32FalseTrue, fp32FalseTrue) and nested camelCase messages", () => {
    const config = configFromJson({
      sequenceBatching: {
        maxSequenceIdleMicroseconds: "5000000",
        oldest: { maxCandidateSequences: 2, preferredBatchSize: [1] },
        controlInput: [
          { name: "S", control: [{ kind: "CONTROL_SEQUENCE_START", int32FalseTrue: [0, 1], fp32FalseTrue: [0, 1], boolFalseTrue: [false, true] }] },
        ],
        state: [{ inputName: "a", outputName: "b", initialState: [{ zeroData: true }], useSameBufferForInputOutput: true }],
      },
    });
    expect(config).toEqual({
      sequence_batching: {
        max_sequence_idle_microseconds: 5000000,
        oldest: { max_candidate_sequences: 2, preferred_batch_size: [1] },
        control_input: [
          { name: "S", control: [{ kind: "CONTROL_SEQUENCE_START", int32_false_true: [0, 1], fp32_false_true: [0, 1], bool_false_true: [false, true] }] },
        ],
        state: [{ input_name: "a", output_name: "b", initial_state: [{ zero_data: true }], use_same_buffer_for_input_output: true }],
      },
    });
  });

  it("skips fields given as null, so a null oneof member does not count as set", () => {
    expect(configFromJson({ name: null, platform: "x", dynamic_batching: null, sequence_batching: {} })).toEqual({ platform: "x", sequence_batching: {} });
  });

  it("keeps an empty config empty", () => {
    expect(configFromJson({})).toEqual({});
  });

  const errors: [string, unknown, string][] = [
    ["an array", [], "config: expected an object"],
    ["null", null, "config: expected an object"],
    ["a string", "name: x", "config: expected an object"],
    ["an unknown field", { foo: 1 }, "config: unknown field 'foo' in ModelConfig"],
    ["an unknown nested field", { input: [{ name: "X", bogus: 1 }] }, "config.input[0]: unknown field 'bogus' in ModelInput"],
    ["an unknown field in a map value", { parameters: { p: { value: "x" } } }, "config.parameters[p]: unknown field 'value' in ModelParameter"],
    ["a PascalCase name", { MaxBatchSize: 1 }, "config: unknown field 'MaxBatchSize' in ModelConfig"],
    ["a string for a string field given a number", { name: 3 }, "config.name: expected a string"],
    ["a string for a bool", { response_cache: { enable: "true" } }, "config.response_cache.enable: expected a boolean"],
    ["a number for a bool", { model_transaction_policy: { decoupled: 1 } }, "config.model_transaction_policy.decoupled: expected a boolean"],
    ["a non-numeric string for an int", { max_batch_size: "x" }, "config.max_batch_size: expected an integer"],
    ["a fraction for an int", { max_batch_size: 1.5 }, "config.max_batch_size: expected an integer"],
    ["an exponent string for an int64", { input: [{ dims: ["1e3"] }] }, "config.input[0].dims[0]: expected an integer"],
    ["an int64 string beyond 2^53", { input: [{ dims: ["9007199254740993"] }] }, "config.input[0].dims[0]: expected an integer"],
    ["a bool for an int", { max_batch_size: true }, "config.max_batch_size: expected an integer"],
    ["a negative uint32", { version_policy: { latest: { num_versions: -1 } } }, "config.version_policy.latest.num_versions: expected a non-negative integer"],
    [
      "a negative uint64 string",
      { dynamic_batching: { max_queue_delay_microseconds: "-1" } },
      "config.dynamic_batching.max_queue_delay_microseconds: expected a non-negative integer",
    ],
    [
      "a non-numeric string for a float",
      { model_metrics: { metric_control: [{ histogram_options: { buckets: ["one"] } }] } },
      "config.model_metrics.metric_control[0].histogram_options.buckets[0]: expected a number",
    ],
    [
      "an empty string for a float",
      { sequence_batching: { direct: { minimum_slot_utilization: "" } } },
      "config.sequence_batching.direct.minimum_slot_utilization: expected a number",
    ],
    [
      "null inside a repeated float",
      { model_metrics: { metric_control: [{ histogram_options: { buckets: [1, null] } }] } },
      "config.model_metrics.metric_control[0].histogram_options.buckets[1]: expected a number",
    ],
    ["an unknown enum name", { input: [{ data_type: "TYPE_NOPE" }] }, 'config.input[0].data_type: unknown value "TYPE_NOPE" for enum DataType'],
    ["an unknown enum number", { input: [{ data_type: 99 }] }, "config.input[0].data_type: unknown value 99 for enum DataType"],
    ["a nested enum given a bool", { instance_group: [{ kind: true }] }, "config.instance_group[0].kind: unknown value true for enum Kind"],
    ["an object for a repeated field", { input: {} }, "config.input: expected an array"],
    ["a scalar for a repeated field", { input: [{ dims: 3 }] }, "config.input[0].dims: expected an array"],
    ["a scalar inside a repeated message", { input: [3] }, "config.input[0]: expected an object"],
    ["an array for a message", { optimization: [] }, "config.optimization: expected an object"],
    ["an array for a map", { parameters: [] }, "config.parameters: expected an object"],
    ["a number for a map", { metric_tags: 1 }, "config.metric_tags: expected an object"],
    ["a number as a string map value", { cc_model_filenames: { a: 1 } }, "config.cc_model_filenames[a]: expected a string"],
    [
      "a non-integer uint64 map key",
      { dynamic_batching: { priority_queue_policy: { abc: {} } } },
      "config.dynamic_batching.priority_queue_policy[abc]: expected a non-negative integer",
    ],
    [
      "a negative uint64 map key",
      { dynamic_batching: { priority_queue_policy: { "-1": {} } } },
      "config.dynamic_batching.priority_queue_policy[-1]: expected a non-negative integer",
    ],
    [
      "two scheduling members",
      { dynamic_batching: {}, sequence_batching: {} },
      "config.sequence_batching: oneof 'scheduling_choice' already set by 'dynamic_batching'",
    ],
    ["two version policies", { version_policy: { latest: {}, all: {} } }, "config.version_policy.all: oneof 'policy_choice' already set by 'latest'"],
    [
      "two warmup data sources",
      { model_warmup: [{ inputs: { X: { zero_data: true, randomData: true } } }] },
      "config.model_warmup[0].inputs[X].random_data: oneof 'input_data_type' already set by 'zero_data'",
    ],
  ];

  it.each(errors)("rejects %s", (_, json, message) => {
    const err = errorOf(json);
    expect(err.code).toBe("INVALID_ARG");
    expect(err.message).toBe(message);
  });

  it("rejects int32 and uint32 values outside their 32-bit range", () => {
    expect(errorOf({ max_batch_size: 2147483648 }).message).toBe("config.max_batch_size: integer 2147483648 is out of range for int32");
    expect(errorOf({ optimization: { graph: { level: "-2147483649" } } }).message).toBe(
      "config.optimization.graph.level: integer -2147483649 is out of range for int32",
    );
    expect(errorOf({ version_policy: { latest: { num_versions: 4294967296 } } }).message).toBe(
      "config.version_policy.latest.num_versions: integer 4294967296 is out of range for uint32",
    );
    expect(configFromJson({ max_batch_size: 2147483647, version_policy: { latest: { num_versions: 4294967295 } } })).toEqual({
      max_batch_size: 2147483647,
      version_policy: { latest: { num_versions: 4294967295 } },
    });
  });

  it("takes floats as numbers or numeric strings, as protobuf's JSON parser does", () => {
    const config = configFromJson({
      sequence_batching: { direct: { minimumSlotUtilization: "0.5" } },
      model_metrics: { metric_control: [{ histogram_options: { buckets: ["1e-3", 2] } }] },
    });
    expect(config).toEqual({
      sequence_batching: { direct: { minimum_slot_utilization: 0.5 } },
      model_metrics: { metric_control: [{ histogram_options: { buckets: [0.001, 2] } }] },
    });
  });

  // Found by the fuzz suite (#14): a load override with such a key was answered 500.
  it("treats Object.prototype member names as unknown fields and enum values", () => {
    expect(errorOf({ constructor: 1 }).message).toBe("config: unknown field 'constructor' in ModelConfig");
    expect(errorOf(JSON.parse('{"output":[{"name":"y","__proto__":"x"}]}')).message).toBe("config.output[0]: unknown field '__proto__' in ModelOutput");
    expect(errorOf({ input: [{ toString: "x" }] }).message).toBe("config.input[0]: unknown field 'toString' in ModelInput");
    expect(errorOf({ input: [{ data_type: "valueOf" }] }).message).toBe('config.input[0].data_type: unknown value "valueOf" for enum DataType');
  });

  // Found by the fuzz suite (#14): a deeply nested value made the error text itself throw (HTTP 500 on a load), and long ones were echoed whole.
  it("shows a client's bad value or key in an error briefly: containers by kind, text clipped at 100 characters", () => {
    const deep = JSON.parse(`${"[".repeat(100_000)}${"]".repeat(100_000)}`);
    expect(errorOf({ input: [{ data_type: deep }] }).message).toBe("config.input[0].data_type: unknown value an array for enum DataType");
    expect(errorOf({ input: [{ data_type: { a: 1 } }] }).message).toBe("config.input[0].data_type: unknown value an object for enum DataType");
    expect(errorOf({ input: [{ data_type: "T".repeat(5000) }] }).message).toBe(
      `config.input[0].data_type: unknown value "${"T".repeat(99)}… for enum DataType`,
    );
    expect(errorOf({ ["k".repeat(5000)]: 1 }).message).toBe(`config: unknown field '${"k".repeat(100)}…' in ModelConfig`);
    expect(errorOf({ dynamic_batching: { priority_queue_policy: { ["9".repeat(5000)]: {} } } }).message.length).toBeLessThan(300);
  });

  it("writes integer map keys in canonical decimal form", () => {
    expect(configFromJson({ dynamic_batching: { priority_queue_policy: { "02": {} } } })).toEqual({ dynamic_batching: { priority_queue_policy: { "2": {} } } });
  });
});

/**
 * Walks `result` against `original` (both read as `type`) and returns the paths of fields
 * present in `result` but not in `original`, checking that each holds the field's default.
 */
function addedDefaults(type: MessageType, result: Obj, original: Obj, path: string, out: string[]): string[] {
  for (const [key, value] of Object.entries(result)) {
    const field = type.fields[key]!;
    const kind = fieldKind(field);
    const p = `${path}.${key}`;
    if (!(key in original)) {
      out.push(p);
      const def = field.map
        ? {}
        : field.repeated
          ? []
          : kind === "bool"
            ? false
            : kind === "string"
              ? ""
              : kind === "enum"
                ? (field.resolvedType as EnumType).valuesById[0]
                : 0;
      expect(kind === "message" && !field.map && !field.repeated, `${p} is an unset message`).toBe(false);
      expect(value, p).toEqual(def);
      continue;
    }
    if (kind !== "message") continue;
    const sub = field.resolvedType as MessageType;
    if (field.map) for (const [k, v] of Object.entries(value as Obj)) addedDefaults(sub, v as Obj, (original[key] as Obj)[k] as Obj, `${p}[${k}]`, out);
    else if (field.repeated) (value as Obj[]).forEach((v, i) => addedDefaults(sub, v, (original[key] as Obj[])[i]!, `${p}[${i}]`, out));
    else addedDefaults(sub, value as Obj, original[key] as Obj, p, out);
  }
  return out;
}

describe("round trip parsePbtxt → configToJson → configFromJson", () => {
  const TEXT = `
name: "rt"
max_batch_size: 4
version_policy { specific { versions: [ 2 ] } }
input { name: "X" data_type: TYPE_FP32 dims: [ -1, 3 ] }
dynamic_batching { priority_queue_policy { key: 1 value { max_queue_size: 2 } } }
instance_group { kind: KIND_CPU }
parameters { key: "p" value { } }
`;

  it("gives the parsed config plus every scalar default, [] and {} — but still no unset message or oneof member", () => {
    const parsed = parsePbtxt(TEXT);
    const back = configFromJson(viaText(configToJson(parsed)));
    expect(back).toEqual({
      ...TOP_DEFAULTS,
      name: "rt",
      max_batch_size: 4,
      // the set oneof member only: no `latest`, no `all`
      version_policy: { specific: { versions: [2] } },
      // no `reshape`: an unset message stays unset
      input: [
        {
          name: "X",
          data_type: "TYPE_FP32",
          format: "FORMAT_NONE",
          dims: [-1, 3],
          is_shape_tensor: false,
          allow_ragged_batch: false,
          optional: false,
          is_non_linear_format_io: false,
        },
      ],
      // no `default_queue_policy`
      dynamic_batching: {
        preferred_batch_size: [],
        max_queue_delay_microseconds: 0,
        preserve_ordering: false,
        priority_levels: 0,
        default_priority_level: 0,
        priority_queue_policy: { "1": { timeout_action: "REJECT", default_timeout_microseconds: 0, allow_timeout_override: false, max_queue_size: 2 } },
      },
      // no `rate_limiter`
      instance_group: [{ name: "", kind: "KIND_CPU", count: 0, gpus: [], secondary_devices: [], profile: [], passive: false, host_policy: "" }],
      parameters: { p: { string_value: "" } },
    });
    // Not added: unset messages (optimization, model_operations, response_cache, ...) and the other scheduling members.
    for (const key of [
      "optimization",
      "sequence_batching",
      "ensemble_scheduling",
      "model_operations",
      "model_transaction_policy",
      "model_repository_agents",
      "response_cache",
      "model_metrics",
    ]) {
      expect(back).not.toHaveProperty(key);
    }
    expect(back).toMatchObject(parsed);
  });

  const FIXTURES: [string, string][] = [
    [
      "sequence batching with control inputs and state",
      `name: "s" max_batch_size: 2
       sequence_batching { oldest { max_candidate_sequences: 2 }
         control_input [ { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ]
         state [ { input_name: "i" output_name: "o" data_type: TYPE_FP32 dims: [ -1 ] initial_state [ { dims: [ 1 ] zero_data: true } ] } ] }
       optimization { graph { level: 1 } cuda { graph_spec [ { batch_size: 2 input { key: "i" value { dim: [ 1 ] } } } ] } }
       model_warmup [ { name: "w" inputs { key: "i" value { data_type: TYPE_FP32 dims: [ 1 ] random_data: true } } } ]`,
    ],
    [
      "ensemble",
      `name: "e" platform: "ensemble"
       ensemble_scheduling { step [ { model_name: "a" model_version: -1 input_map { key: "x" value: "X" } output_map { key: "y" value: "Y" } } ] }
       model_repository_agents { agents [ { name: "checksum" parameters { key: "k" value: "v" } } ] }
       model_metrics { metric_control [ { metric_identifier { family: "f" } histogram_options { buckets: [ 0.5, 1 ] } } ] }`,
    ],
  ];

  it.each(FIXTURES)("%s: adds only defaults, and configToJson output is a fixed point", (_, text) => {
    const parsed = parsePbtxt(text);
    const json = viaText(configToJson(parsed)) as Obj;
    const back = configFromJson(json);
    const added = addedDefaults(modelConfigType(), back as Obj, parsed as Obj, "", []);
    expect(added.length).toBeGreaterThan(10);
    expect(back).toMatchObject(parsed);
    expect(viaText(configToJson(back))).toEqual(json);
    expect(configFromJson(json)).toEqual(back);
  });

  it.each([...SHARED_FIXTURES, ...TRITON_EXAMPLES])("%s: JSON round trip keeps every field, adds only defaults", (_, text) => {
    const parsed = parsePbtxt(text);
    const json = viaText(configToJson(parsed)) as Obj;
    const back = configFromJson(json);
    addedDefaults(modelConfigType(), back as Obj, parsed as Obj, "", []);
    expect(back).toMatchObject(parsed);
    expect(viaText(configToJson(back))).toEqual(json);
    // And back to text: the printed JSON-derived config parses to the same object.
    expect(parsePbtxt(printPbtxt(back))).toEqual(back);
  });
});
