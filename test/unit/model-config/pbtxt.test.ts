/** C-01, C-02: config.pbtxt parse and print; every ModelConfig field round-trips. */
import { describe, it, expect } from "vitest";
import protobuf from "protobufjs";
import { parsePbtxt, printPbtxt } from "../../../src/model-config/pbtxt.ts";
import { configToJson, configFromJson } from "../../../src/model-config/json.ts";
import { modelConfigType, fieldKind, mapKeyType, realOneof } from "../../../src/model-config/schema.ts";

type Obj = Record<string, unknown>;

/** Builds a value for every field of `type` (first member of each oneof), recursively. */
function everyField(type: protobuf.Type, seen: Set<string>, counter: { fields: number }): Obj {
  const out: Obj = {};
  const oneofTaken = new Set<string>();
  for (const field of type.fieldsArray) {
    const oneof = realOneof(field);
    if (oneof) {
      if (oneofTaken.has(oneof.name)) continue;
      oneofTaken.add(oneof.name);
    }
    counter.fields++;
    const kind = fieldKind(field);
    const sample = (): unknown => {
      switch (kind) {
        case "message": {
          const t = field.resolvedType as protobuf.Type;
          if (seen.has(t.fullName)) return {};
          return everyField(t, new Set([...seen, t.fullName]), counter);
        }
        case "enum": {
          const values = Object.keys((field.resolvedType as protobuf.Enum).values);
          return values[values.length - 1];
        }
        case "bool":
          return true;
        case "string":
          return `${field.name} "quoted" \\ é`;
        case "int":
          return -7;
        case "uint":
          return 7;
        case "float":
          return 0.5;
        default:
          throw new Error(kind);
      }
    };
    if (field.map) {
      const key = mapKeyType(field) === "string" ? "k1" : "3";
      out[field.name] = { [key]: sample() };
    } else if (field.repeated) {
      out[field.name] = [sample(), sample()];
    } else {
      out[field.name] = sample();
    }
  }
  return out;
}

describe("every field of inference.ModelConfig", () => {
  const counter = { fields: 0 };
  const full = everyField(modelConfigType(), new Set(["inference.ModelConfig"]), counter);

  it("covers the whole schema", () => {
    expect(counter.fields).toBeGreaterThan(150);
  });

  it("round-trips through print and parse", () => {
    const text = printPbtxt(full);
    expect(parsePbtxt(text)).toEqual(full);
  });

  it("round-trips through the /config JSON and back", () => {
    const json = JSON.parse(JSON.stringify(configToJson(full)));
    expect(configFromJson(json)).toMatchObject(full);
  });
});

describe("Triton-style configs", () => {
  it("parses lists, blocks, maps, comments, quoting and enum numbers", () => {
    const text = `
# an ensemble-ish config
name: 'ex\\'ample'
platform: "onnx" "runtime_onnx"   # adjacent strings join
max_batch_size: 8
input [
  { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1, 3 ] reshape: { shape: [ ] } },
  { name: "INPUT1", data_type: 8, dims: [ 16 ], optional: True }
]
output { name: "OUT" data_type: TYPE_STRING dims: 1 dims: 2 }
dynamic_batching <
  preferred_batch_size: [ 4, 8 ]
  max_queue_delay_microseconds: 100
  priority_levels: 2
  default_priority_level: 1
  priority_queue_policy { key: 1 value: { max_queue_size: 3 timeout_action: DELAY default_timeout_microseconds: 1000 } }
  priority_queue_policy [ { key: 2, value { allow_timeout_override: t } } ]
>
parameters { key: "intra_op_thread_count" value: { string_value: "1" } }
parameters [ { key: "run_mode", value: { string_value: "sync" } } ]
model_warmup [ { name: "w" batch_size: 2 inputs { key: "INPUT0" value: { data_type: TYPE_FP32 dims: [ 3 ] zero_data: true } } } ]
optimization { graph { level: -1 } cuda { graphs: 1 } }
model_metrics { metric_control [ { metric_identifier { family: "nv_inference_first_response_histogram_ms" } histogram_options { buckets: [ 1e-3, 2.5, inf ] } } ] }
version_policy: { specific: { versions: [1, 3] } }
`;
    expect(parsePbtxt(text)).toEqual({
      name: "ex'ample",
      platform: "onnxruntime_onnx",
      max_batch_size: 8,
      input: [
        { name: "INPUT0", data_type: "TYPE_FP32", dims: [-1, 3], reshape: { shape: [] } },
        { name: "INPUT1", data_type: "TYPE_INT32", dims: [16], optional: true },
      ],
      output: [{ name: "OUT", data_type: "TYPE_STRING", dims: [1, 2] }],
      dynamic_batching: {
        preferred_batch_size: [4, 8],
        max_queue_delay_microseconds: 100,
        priority_levels: 2,
        default_priority_level: 1,
        priority_queue_policy: {
          "1": { max_queue_size: 3, timeout_action: "DELAY", default_timeout_microseconds: 1000 },
          "2": { allow_timeout_override: true },
        },
      },
      parameters: { intra_op_thread_count: { string_value: "1" }, run_mode: { string_value: "sync" } },
      model_warmup: [{ name: "w", batch_size: 2, inputs: { INPUT0: { data_type: "TYPE_FP32", dims: [3], zero_data: true } } }],
      optimization: { graph: { level: -1 }, cuda: { graphs: true } },
      model_metrics: {
        metric_control: [
          { metric_identifier: { family: "nv_inference_first_response_histogram_ms" }, histogram_options: { buckets: [0.001, 2.5, Infinity] } },
        ],
      },
      version_policy: { specific: { versions: [1, 3] } },
    });
  });

  it("parses sequence batching with controls and implicit state", () => {
    const c = parsePbtxt(`
sequence_batching {
  max_sequence_idle_microseconds: 5000000
  oldest { max_candidate_sequences: 4 preferred_batch_size: [ 2 ] }
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START fp32_false_true: [ 0, 1 ] } ] },
    { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] }
  ]
  state [ { input_name: "h_in" output_name: "h_out" data_type: TYPE_FP32 dims: [ 2, 64 ]
            initial_state: { data_type: TYPE_FP32 dims: [ 2, 64 ] zero_data: true name: "zeros" } } ]
}`);
    expect(c.sequence_batching).toEqual({
      max_sequence_idle_microseconds: 5000000,
      oldest: { max_candidate_sequences: 4, preferred_batch_size: [2] },
      control_input: [
        { name: "START", control: [{ kind: "CONTROL_SEQUENCE_START", fp32_false_true: [0, 1] }] },
        { name: "CORRID", control: [{ kind: "CONTROL_SEQUENCE_CORRID", data_type: "TYPE_UINT64" }] },
      ],
      state: [
        {
          input_name: "h_in", output_name: "h_out", data_type: "TYPE_FP32", dims: [2, 64],
          initial_state: [{ data_type: "TYPE_FP32", dims: [2, 64], zero_data: true, name: "zeros" }],
        },
      ],
    });
  });

  it("prints readable text that parses back", () => {
    const config = { name: "m", max_batch_size: 4, input: [{ name: "X", data_type: "TYPE_FP32" as const, dims: [3] }], parameters: { a: { string_value: "b" } } };
    const text = printPbtxt(config);
    expect(text).toBe(
      'name: "m"\nmax_batch_size: 4\ninput {\n  name: "X"\n  data_type: TYPE_FP32\n  dims: [ 3 ]\n}\nparameters {\n  key: "a"\n  value {\n    string_value: "b"\n  }\n}\n',
    );
    expect(parsePbtxt(text)).toEqual(config);
  });
});

describe("syntax errors carry line and column", () => {
  const cases: [string, string][] = [
    ['name: "x"\n  max_batch_sizes: 3', "config.pbtxt:2:3: unknown field 'max_batch_sizes' in inference.ModelConfig"],
    ['input [ { name: "X" data_type: TYPE_NOPE } ]', "config.pbtxt:1:32: unknown value 'TYPE_NOPE' for enum inference.DataType"],
    ["max_batch_size 3", "config.pbtxt:1:16: expected ':' after 'max_batch_size'"],
    ['name: "abc', "config.pbtxt:1:7: unterminated string"],
    ["max_batch_size: 1\nmax_batch_size: 2", "config.pbtxt:2:1: non-repeated field 'max_batch_size' is specified more than once"],
    ["dynamic_batching { }\nsequence_batching { }", "config.pbtxt:2:1: field 'sequence_batching' is in oneof 'scheduling_choice' with 'dynamic_batching', which is already set"],
    ["input { name: \"x\"", "config.pbtxt:1:18: expected '}' before end of input"],
    ["max_batch_size: [ 1, 2 ]", "config.pbtxt:1:17: field 'max_batch_size' is not repeated and cannot take a list"],
    ["max_batch_size: 1.5", "config.pbtxt:1:17: expected an integer for 'max_batch_size', found '1.5'"],
    ["name: 3", "config.pbtxt:1:7: expected a string for 'name', found '3'"],
    ["version_policy { latest { num_versions: -1 } }", "config.pbtxt:1:41: expected a non-negative integer for 'num_versions', found -1"],
    ["name: \"a\" $", "config.pbtxt:1:11: unexpected character '$'"],
  ];
  for (const [text, message] of cases) {
    it(message, () => {
      let caught: unknown;
      try {
        parsePbtxt(text);
      } catch (e) {
        caught = e;
      }
      expect(caught).toMatchObject({ code: "INVALID_ARG", message });
    });
  }
});
