/**
 * C-01, C-02: config.pbtxt (protobuf text format) parse and print.
 *
 * The shared fixtures (fixtures.ts) together set every field of inference.ModelConfig and
 * of every message reachable from it; the reflected schema checks that claim. Then:
 * Triton's own example configs, syntax variants, the printer's exact text, and every
 * syntax error with its exact `file:line:col: message`.
 */
import { describe, it, expect } from "vitest";
import { parsePbtxt, printPbtxt } from "../../../src/model-config/pbtxt.ts";
import { modelConfigType } from "../../../src/model-config/schema.ts";
import { ServerError } from "../../../src/core/errors.ts";
import type { ModelConfig } from "../../../src/core/model-config-types.ts";
import { FIXTURES, TRITON_EXAMPLES, schemaFields, setFields } from "./fixtures.ts";

type Obj = Record<string, unknown>;

describe("every field of inference.ModelConfig", () => {
  it("the schema reaches every message of model_config.proto", () => {
    const fields = schemaFields();
    const types = new Set([...fields].map((f) => f.slice(0, f.lastIndexOf("."))));
    // All 45 message types that have fields (ModelVersionPolicy.All has none), 164 fields.
    expect(types.size).toBe(45);
    expect(fields.size).toBe(164);
    expect(fields).toContain("inference.ModelOptimizationPolicy.Cuda.GraphSpec.LowerBound.input");
    expect(fields).toContain("inference.ModelSequenceBatching.InitialState.data_file");
  });

  it("the four fixtures together set every field of every reachable message", () => {
    const covered = new Set<string>();
    for (const [, , config] of FIXTURES) setFields(modelConfigType(), config as Obj, covered);
    const missing = [...schemaFields()].filter((f) => !covered.has(f));
    expect(missing).toEqual([]);
  });

  it.each(FIXTURES)("%s: parses to the exact object", (_, text, config) => {
    expect(parsePbtxt(text)).toEqual(config);
  });

  it.each(FIXTURES)("%s: parse → print → parse gives the same object", (_, text) => {
    const parsed = parsePbtxt(text);
    const printed = printPbtxt(parsed);
    expect(parsePbtxt(printed)).toEqual(parsed);
    // Printing is deterministic: printing the reparsed object gives the same text.
    expect(printPbtxt(parsePbtxt(printed))).toBe(printed);
  });
});

describe("Triton's example configs", () => {
  it.each(TRITON_EXAMPLES)("%s: parses to the exact object and round-trips through print", (_, text, config) => {
    expect(parsePbtxt(text)).toEqual(config);
    expect(parsePbtxt(printPbtxt(config))).toEqual(config);
  });
});

// ------------------------------------------------------------------------ syntax forms

function bucketsOf(c: ModelConfig): number[] {
  return (c.model_metrics as { metric_control: { histogram_options: { buckets: number[] } }[] }).metric_control[0]!.histogram_options.buckets;
}

describe("protobuf text syntax as Triton configs use it", () => {
  it("an empty file, or one with only comments, is an empty config", () => {
    expect(parsePbtxt("")).toEqual({});
    expect(parsePbtxt("# nothing\n   # here\n")).toEqual({});
  });

  it("skips comments, but not a '#' inside a string", () => {
    expect(parsePbtxt('# leading\nname: "a#b" # trailing\n# last')).toEqual({ name: "a#b" });
  });

  it("decodes single- and double-quoted strings with every escape", () => {
    const c = parsePbtxt(String.raw`name: 'it\'s \"q\" \\ \n\t\r\a\b\f\v\? \x41\x4a \101\60 \303\251' platform: "say 'hi'"`);
    expect(c.name).toBe('it\'s "q" \\ \n\t\r\x07\b\f\v? AJ A0 é');
    expect(c.platform).toBe("say 'hi'");
  });

  it("decodes \\u and \\U escapes to UTF-8 text", () => {
    expect(parsePbtxt(String.raw`name: "caf\u00e9 \U0001F600"`).name).toBe("café 😀");
  });

  it("keeps non-ASCII text as UTF-8", () => {
    expect(parsePbtxt('name: "modèle_日本"').name).toBe("modèle_日本");
  });

  it("decodes runs of plain text between escapes, and escapes at the very end of a string (#29 item 9)", () => {
    expect(parsePbtxt(String.raw`name: "ab\x41cd\303\251ef\u00e9" platform: "\x4" backend: "x\101"`)).toEqual({
      name: "abAcdéefé",
      platform: "\x04",
      backend: "xA",
    });
  });

  it("reads the largest configs the repository allows: a million dims in one list, a 1 MiB string (#29 item 9)", () => {
    const dims = parsePbtxt(`input [ { name: "i" dims: [ ${"1, ".repeat(999_999)}2 ] } ]`).input![0]!.dims!;
    expect(dims.length).toBe(1_000_000);
    expect(dims[999_999]).toBe(2);
    expect(parsePbtxt(`name: "${"n".repeat(1 << 20)}"`).name!.length).toBe(1 << 20);
  });

  it("joins adjacent strings, mixing quote styles and lines", () => {
    expect(parsePbtxt(`platform: "onnxruntime" '_'\n  "onnx"`).platform).toBe("onnxruntime_onnx");
    expect(parsePbtxt(`parameters { key: "a" "b" value { string_value: "x" 'y' } }`).parameters).toEqual({ ab: { string_value: "xy" } });
  });

  it("takes enum values by name or by number", () => {
    const c = parsePbtxt(`
      input { name: "X" data_type: 11 format: 2 }
      instance_group { kind: 2 }
      dynamic_batching { default_queue_policy { timeout_action: 1 } }`);
    expect(c.input).toEqual([{ name: "X", data_type: "TYPE_FP32", format: "FORMAT_NCHW" }]);
    expect(c.instance_group).toEqual([{ kind: "KIND_CPU" }]);
    expect(c.dynamic_batching).toEqual({ default_queue_policy: { timeout_action: "DELAY" } });
    expect(parsePbtxt("input { data_type: 0 }").input).toEqual([{ data_type: "TYPE_INVALID" }]);
  });

  it("reads 0-prefixed integers as octal, as protobuf does", () => {
    expect(parsePbtxt("max_batch_size: 010 input { dims: [ -017, 0 ] }")).toEqual({ max_batch_size: 8, input: [{ dims: [-15, 0] }] });
  });

  it("reads negative, hexadecimal and zero integers", () => {
    const c = parsePbtxt("input { dims: [ -1, 0x10, 0, -0x2 ] } optimization { graph { level: -1 } } max_batch_size: 0X8");
    expect(c.input).toEqual([{ dims: [-1, 16, 0, -2] }]);
    expect(c.optimization).toEqual({ graph: { level: -1 } });
    expect(c.max_batch_size).toBe(8);
  });

  // Found by the fuzz suite (#14): -0 read back as 0 after printing.
  it("reads -0 as 0 in integer fields, and keeps -0 in float fields through print → parse", () => {
    const c = parsePbtxt(
      "max_batch_size: -0 dynamic_batching { max_queue_delay_microseconds: -0 } model_metrics { metric_control { histogram_options { buckets: [ -0, -0.0 ] } } }",
    );
    expect(Object.is(c.max_batch_size, 0)).toBe(true);
    expect(Object.is(c.dynamic_batching!.max_queue_delay_microseconds, 0)).toBe(true);
    expect(bucketsOf(c).map((b) => Object.is(b, -0))).toEqual([true, true]);
    expect(printPbtxt(c)).toContain("buckets: [ -0, -0 ]");
    expect(parsePbtxt(printPbtxt(c))).toStrictEqual(c);
  });

  it("reads floats with exponents, suffixes, infinities and NaN", () => {
    const c = parsePbtxt(
      "model_metrics { metric_control { histogram_options { buckets: [ 1e-3, .5, 2.5E1, 1.5f, 2F, 7, -2, -0.25, inf, infinity, -Infinity, INF ] } } }",
    );
    expect(bucketsOf(c)).toEqual([0.001, 0.5, 25, 1.5, 2, 7, -2, -0.25, Infinity, Infinity, -Infinity, Infinity]);
    expect(bucketsOf(parsePbtxt("model_metrics { metric_control { histogram_options { buckets: [ nan, NaN, -nan ] } } }"))).toEqual([NaN, NaN, NaN]);
    expect(parsePbtxt("sequence_batching { direct { minimum_slot_utilization: 1e0 } }").sequence_batching).toEqual({ direct: { minimum_slot_utilization: 1 } });
  });

  // "-inf" is one number token; the float suffix must not eat its "f".
  it("reads -inf and -INF as -Infinity", () => {
    expect(bucketsOf(parsePbtxt("model_metrics { metric_control { histogram_options { buckets: [ -inf, -INF ] } } }"))).toEqual([-Infinity, -Infinity]);
  });

  it("reads booleans as true/True/t/1 and false/False/f/0", () => {
    const c = parsePbtxt(`
      input [ { optional: true is_shape_tensor: True allow_ragged_batch: t is_non_linear_format_io: 1 },
              { optional: false is_shape_tensor: False allow_ragged_batch: f is_non_linear_format_io: 0 } ]`);
    expect(c.input).toEqual([
      { optional: true, is_shape_tensor: true, allow_ragged_batch: true, is_non_linear_format_io: true },
      { optional: false, is_shape_tensor: false, allow_ragged_batch: false, is_non_linear_format_io: false },
    ]);
  });

  it("accepts messages as `f { }`, `f: { }`, `f < >` and `f: < >`, and empty ones", () => {
    const c = parsePbtxt(`
      response_cache { enable: true }
      model_transaction_policy: { decoupled: true }
      version_policy < all < > >
      optimization: < input_pinned_memory { } >
      dynamic_batching: { }`);
    expect(c).toEqual({
      response_cache: { enable: true },
      model_transaction_policy: { decoupled: true },
      version_policy: { all: {} },
      optimization: { input_pinned_memory: {} },
      dynamic_batching: {},
    });
  });

  it("allows ',' and ';' after any field", () => {
    expect(parsePbtxt('name: "a"; platform: "b", max_batch_size: 1 input { name: "x", dims: 1; }')).toEqual({
      name: "a",
      platform: "b",
      max_batch_size: 1,
      input: [{ name: "x", dims: [1] }],
    });
  });

  it("appends repeated fields given once per item, as lists, or both", () => {
    const c = parsePbtxt(`
      input { name: "A" dims: 1 dims: [ 2, 3 ] dims: 4 dims: [ ] }
      input [ { name: "B" }, { name: "C" } ]
      input: { name: "D" }
      input [ ]`);
    expect(c.input).toEqual([{ name: "A", dims: [1, 2, 3, 4] }, { name: "B" }, { name: "C" }, { name: "D" }]);
    expect(parsePbtxt("input [ ]")).toEqual({ input: [] });
  });

  it("reads maps as repeated entries, as lists, with '<>' and with missing values", () => {
    const c = parsePbtxt(`
      parameters { key: "a" value: { string_value: "1" } }
      parameters [ { key: "b", value: { string_value: "2" } }, { key: "c" value { } } ]
      parameters < key: "d" >
      parameters { value { string_value: "5" } key: "e" }
      parameters { key: "a" value { string_value: "last wins" } }
      cc_model_filenames { key: "7.5" }
      metric_tags: [ { key: "x" value: "y" } ]`);
    expect(c.parameters).toEqual({
      a: { string_value: "last wins" },
      b: { string_value: "2" },
      c: {},
      d: {},
      e: { string_value: "5" },
    });
    expect(c.cc_model_filenames).toEqual({ "7.5": "" });
    expect(c.metric_tags).toEqual({ x: "y" });
  });

  it("keys priority_queue_policy (map<uint64, ...>) by the decimal text of the number", () => {
    const c = parsePbtxt(`
      dynamic_batching {
        priority_levels: 20
        priority_queue_policy { key: 1 value { max_queue_size: 1 } }
        priority_queue_policy { key: 0x10 value { max_queue_size: 16 } }
        priority_queue_policy [ { key: 2 value { timeout_action: DELAY } } ]
      }`);
    expect(c.dynamic_batching).toEqual({
      priority_levels: 20,
      priority_queue_policy: { "1": { max_queue_size: 1 }, "16": { max_queue_size: 16 }, "2": { timeout_action: "DELAY" } },
    });
  });

  it("parses Triton's ensemble and sequence examples line for line", () => {
    const c = parsePbtxt(`
name: "ensemble_model"
platform: "ensemble"
max_batch_size: 1
input [
  {
    name: "IMAGE"
    data_type: TYPE_STRING
    dims: [ 1 ]
  }
]
output [
  {
    name: "CLASSIFICATION"
    data_type: TYPE_FP32
    dims: [ 1000 ]
  },
  {
    name: "SEGMENTATION"
    data_type: TYPE_FP32
    dims: [ 3, 224, 224 ]
  }
]
ensemble_scheduling {
  step [
    {
      model_name: "image_preprocess_model"
      model_version: -1
      input_map {
        key: "RAW_IMAGE"
        value: "IMAGE"
      }
      output_map {
        key: "PREPROCESSED_OUTPUT"
        value: "preprocessed_image"
      }
    },
    {
      model_name: "classification_model"
      model_version: -1
      input_map {
        key: "FORMATTED_IMAGE"
        value: "preprocessed_image"
      }
      output_map {
        key: "CLASSIFICATION_OUTPUT"
        value: "CLASSIFICATION"
      }
    }
  ]
}`);
    expect(c.ensemble_scheduling).toEqual({
      step: [
        {
          model_name: "image_preprocess_model",
          model_version: -1,
          input_map: { RAW_IMAGE: "IMAGE" },
          output_map: { PREPROCESSED_OUTPUT: "preprocessed_image" },
        },
        {
          model_name: "classification_model",
          model_version: -1,
          input_map: { FORMATTED_IMAGE: "preprocessed_image" },
          output_map: { CLASSIFICATION_OUTPUT: "CLASSIFICATION" },
        },
      ],
    });
    expect(c.output).toEqual([
      { name: "CLASSIFICATION", data_type: "TYPE_FP32", dims: [1000] },
      { name: "SEGMENTATION", data_type: "TYPE_FP32", dims: [3, 224, 224] },
    ]);

    const s = parsePbtxt(`
sequence_batching {
  max_sequence_idle_microseconds: 5000000
  control_input [
    {
      name: "START"
      control [
        {
          kind: CONTROL_SEQUENCE_START
          fp32_false_true: [ 0, 1 ]
        }
      ]
    }
  ]
  state [
    {
      input_name: "INPUT_STATE"
      output_name: "OUTPUT_STATE"
      data_type: TYPE_INT32
      dims: [ -1 ]
      initial_state: {
        data_type: TYPE_INT32
        dims: [ 1 ]
        zero_data: true
        name: "initial state"
      }
    }
  ]
}`);
    expect(s.sequence_batching).toEqual({
      max_sequence_idle_microseconds: 5000000,
      control_input: [{ name: "START", control: [{ kind: "CONTROL_SEQUENCE_START", fp32_false_true: [0, 1] }] }],
      state: [
        {
          input_name: "INPUT_STATE",
          output_name: "OUTPUT_STATE",
          data_type: "TYPE_INT32",
          dims: [-1],
          initial_state: [{ data_type: "TYPE_INT32", dims: [1], zero_data: true, name: "initial state" }],
        },
      ],
    });
  });
});

// ----------------------------------------------------------------------------- printer

describe("printPbtxt", () => {
  it("prints fields in schema order with 2-space indent, lists for repeated scalars and blocks for messages", () => {
    const config: ModelConfig = {
      max_batch_size: 4,
      name: "m",
      input: [{ name: "X", data_type: "TYPE_FP32", dims: [3] }],
      parameters: { a: { string_value: "b" } },
    };
    const text = printPbtxt(config);
    expect(text).toBe(
      'name: "m"\nmax_batch_size: 4\ninput {\n  name: "X"\n  data_type: TYPE_FP32\n  dims: [ 3 ]\n}\nparameters {\n  key: "a"\n  value {\n    string_value: "b"\n  }\n}\n',
    );
    expect(parsePbtxt(text)).toEqual(config);
  });

  it("prints uint64 map keys bare, string keys quoted, scalar map values inline, oneofs and booleans", () => {
    const config: ModelConfig = {
      version_policy: { all: {} },
      dynamic_batching: { preserve_ordering: false, priority_queue_policy: { "2": { timeout_action: "DELAY" } } },
      cc_model_filenames: { "7.5": "a.plan" },
    };
    expect(printPbtxt(config)).toBe(
      [
        "version_policy {",
        "  all {",
        "  }",
        "}",
        "dynamic_batching {",
        "  preserve_ordering: false",
        "  priority_queue_policy {",
        "    key: 2",
        "    value {",
        "      timeout_action: DELAY",
        "    }",
        "  }",
        "}",
        "cc_model_filenames {",
        '  key: "7.5"',
        '  value: "a.plan"',
        "}",
        "",
      ].join("\n"),
    );
  });

  it("escapes quotes, backslashes and control characters, and non-ASCII bytes as octal", () => {
    const name = 'é"\\\n\t\r\u0001~';
    const text = printPbtxt({ name });
    expect(text).toBe('name: "\\303\\251\\"\\\\\\n\\t\\r\\001~"\n');
    expect(parsePbtxt(text)).toEqual({ name });
  });

  it("prints non-finite and tiny/huge floats as protobuf text", () => {
    const config = { model_metrics: { metric_control: [{ histogram_options: { buckets: [NaN, Infinity, -Infinity, 1e-7, 1e21, -0.5] } }] } };
    expect(printPbtxt(config)).toContain("buckets: [ nan, inf, -inf, 1e-7, 1e+21, -0.5 ]\n");
    const finite = { model_metrics: { metric_control: [{ histogram_options: { buckets: [NaN, Infinity, 1e-7, 1e21, -0.5] } }] } };
    expect(parsePbtxt(printPbtxt(finite))).toEqual(finite);
  });

  it("-Infinity survives print → parse", () => {
    const config = { model_metrics: { metric_control: [{ histogram_options: { buckets: [-Infinity] } }] } };
    expect(parsePbtxt(printPbtxt(config))).toEqual(config);
  });

  it("prints an empty config as a lone newline, and empty lists and maps as [] so they read back", () => {
    expect(printPbtxt({})).toBe("\n");
    const empties: ModelConfig = { input: [{ dims: [] }], output: [], parameters: {}, dynamic_batching: { priority_queue_policy: {} } };
    const text = printPbtxt(empties);
    expect(text).toBe("input {\n  dims: []\n}\noutput: []\ndynamic_batching {\n  priority_queue_policy: []\n}\nparameters: []\n");
    expect(parsePbtxt(text)).toEqual(empties);
  });

  it("keeps map keys such as __proto__ as plain own keys", () => {
    const c = parsePbtxt('metric_tags { key: "__proto__" value: "p" } metric_tags { key: "constructor" value: "c" }');
    expect(Object.keys(c.metric_tags!)).toEqual(["__proto__", "constructor"]);
    // biome-ignore lint/suspicious/noProto: the key a hostile config uses, read back as data
    expect(c.metric_tags!["__proto__"]).toBe("p");
    expect(Object.getPrototypeOf(c.metric_tags)).toBe(Object.prototype);
    expect(parsePbtxt(printPbtxt(c))).toEqual(c);
  });
});

// ------------------------------------------------------------------------------ errors

function errorOf(text: string, file?: string): ServerError {
  try {
    parsePbtxt(text, file);
  } catch (e) {
    expect(e).toBeInstanceOf(ServerError);
    return e as ServerError;
  }
  throw new Error(`no error for ${JSON.stringify(text)}`);
}

describe("syntax errors carry file, line and column", () => {
  const cases: [string, string, string][] = [
    // unknown fields
    ["unknown field", 'name: "x"\n  max_batch_sizes: 3', "config.pbtxt:2:3: unknown field 'max_batch_sizes' in inference.ModelConfig"],
    ["unknown nested field", 'input {\n  name: "x"\n  dim: [ 1 ]\n}', "config.pbtxt:3:3: unknown field 'dim' in inference.ModelInput"],
    [
      "unknown field deep inside",
      "sequence_batching { control_input { control { knd: CONTROL_SEQUENCE_START } } }",
      "config.pbtxt:1:47: unknown field 'knd' in inference.ModelSequenceBatching.Control",
    ],
    // enums
    ["unknown enum value", 'input [ { name: "X" data_type: TYPE_NOPE } ]', "config.pbtxt:1:32: unknown value 'TYPE_NOPE' for enum inference.DataType"],
    [
      "unknown nested enum value",
      "instance_group { kind: KIND_TPU }",
      "config.pbtxt:1:24: unknown value 'KIND_TPU' for enum inference.ModelInstanceGroup.Kind",
    ],
    ["unknown enum number", "input { data_type: 99 }", "config.pbtxt:1:20: unknown value 99 for enum inference.DataType"],
    ["enum given as a string", 'input { data_type: "TYPE_FP32" }', 'config.pbtxt:1:20: expected an enum value, found string "TYPE_FP32"'],
    ["enum given as a float", "input { data_type: 1.5 }", "config.pbtxt:1:20: expected an enum value, found '1.5'"],
    // ':' and '{'
    ["missing ':' before a number", "max_batch_size 3", "config.pbtxt:1:16: expected ':' after 'max_batch_size'"],
    ["missing ':' before a list of scalars", "input { dims [ 1 ] }", "config.pbtxt:1:14: expected ':' after 'dims'"],
    ["missing ':' in a scalar map entry", 'cc_model_filenames { key: "7.5" value "a" }', "config.pbtxt:1:39: expected ':' after 'value'"],
    ["missing ':' after a map key", 'parameters { key "a" }', "config.pbtxt:1:18: expected ':' after 'key'"],
    ["a scalar where a message belongs", "input: 3", "config.pbtxt:1:8: expected '{', found '3'"],
    ["a scalar where a map entry belongs", "parameters: 3", "config.pbtxt:1:13: expected '{', found '3'"],
    // strings
    ["unterminated string", 'name: "abc', "config.pbtxt:1:7: unterminated string"],
    ["string broken by a newline", "name: 'abc\ndef'", "config.pbtxt:1:7: unterminated string"],
    ["string ending in a backslash", 'name: "abc\\', "config.pbtxt:1:7: unterminated string"],
    ["invalid escape", "input { name: 'a\\q' }", "config.pbtxt:1:17: invalid escape '\\q'"],
    ["\\x without hex digits", "input { name: 'a\\x' }", "config.pbtxt:1:17: invalid \\x escape"],
    ["\\u with too few hex digits", "input { name: 'a\\u12' }", "config.pbtxt:1:17: invalid \\u escape"],
    ["\\U beyond Unicode", "input { name: 'a\\U00110000' }", "config.pbtxt:1:17: invalid \\U escape"],
    // repeated / oneof
    ["non-repeated field twice", "max_batch_size: 1\nmax_batch_size: 2", "config.pbtxt:2:1: non-repeated field 'max_batch_size' is specified more than once"],
    ["non-repeated message twice", "optimization { }\n  optimization { }", "config.pbtxt:2:3: non-repeated field 'optimization' is specified more than once"],
    [
      "two members of scheduling_choice",
      "dynamic_batching { }\nsequence_batching { }",
      "config.pbtxt:2:1: field 'sequence_batching' is in oneof 'scheduling_choice' with 'dynamic_batching', which is already set",
    ],
    [
      "two members of policy_choice",
      "version_policy { latest { } all { } }",
      "config.pbtxt:1:29: field 'all' is in oneof 'policy_choice' with 'latest', which is already set",
    ],
    [
      "two members of InitialState.state_data",
      'sequence_batching { state { initial_state { zero_data: true data_file: "f" } } }',
      "config.pbtxt:1:61: field 'data_file' is in oneof 'state_data' with 'zero_data', which is already set",
    ],
    ["list on a non-repeated scalar", "max_batch_size: [ 1, 2 ]", "config.pbtxt:1:17: field 'max_batch_size' is not repeated and cannot take a list"],
    ["list on a non-repeated message", "optimization [ { } ]", "config.pbtxt:1:14: field 'optimization' is not repeated and cannot take a list"],
    ["trailing comma in a list", "input { dims: [ 1, ] }", "config.pbtxt:1:20: expected an integer for 'dims', found ']'"],
    ["missing comma in a list", "input { dims: [ 1 2 ] }", "config.pbtxt:1:19: expected ']', found '2'"],
    // end of input
    ["end of input inside a message", 'input { name: "x"', "config.pbtxt:1:18: expected '}' before end of input"],
    ["end of input inside '<'", "input < name: 'x'\n", "config.pbtxt:2:1: expected '>' before end of input"],
    ["end of input after a field name", "name", "config.pbtxt:1:5: expected ':' after 'name'"],
    ["end of input after ':'", "name:", "config.pbtxt:1:6: expected a string for 'name', found end of input"],
    ["end of input inside a list", "input [ { } ", "config.pbtxt:1:13: expected ']', found end of input"],
    ["end of input inside a map entry", 'parameters { key: "a"', "config.pbtxt:1:22: expected 'key' or 'value' in map 'parameters', found end of input"],
    // mismatched brackets and stray tokens
    ["'{' closed by '>'", 'input { name: "x" >', "config.pbtxt:1:19: expected a field name, found '>'"],
    ["'<' closed by '}'", 'input < name: "x" }', "config.pbtxt:1:19: expected a field name, found '}'"],
    ["a stray '}' at top level", "name: 'a' }", "config.pbtxt:1:11: expected a field name, found '}'"],
    ["a stray ','", ",", "config.pbtxt:1:1: expected a field name, found ','"],
    ["a string where a field name belongs", '"name": "a"', 'config.pbtxt:1:1: expected a field name, found string "name"'],
    ["unexpected character", 'name: "a" $', "config.pbtxt:1:11: unexpected character '$'"],
    ["a lone minus sign", "- 3", "config.pbtxt:1:1: unexpected character '-'"],
    // maps
    ["map entry without a key", 'parameters { value { string_value: "x" } }', "config.pbtxt:1:12: map entry of 'parameters' has no key"],
    ["unknown name in a map entry", 'parameters { key: "a" foo: 1 }', "config.pbtxt:1:23: expected 'key' or 'value' in map 'parameters', found 'foo'"],
    [
      "negative uint64 map key",
      "dynamic_batching { priority_queue_policy { key: -1 } }",
      "config.pbtxt:1:49: expected a non-negative integer for 'priority_queue_policy.key', found -1",
    ],
    [
      "string uint64 map key",
      'dynamic_batching { priority_queue_policy { key: "1" } }',
      "config.pbtxt:1:49: expected an integer for 'priority_queue_policy.key', found string \"1\"",
    ],
    ["number as a string map key", "parameters { key: 1 }", "config.pbtxt:1:19: expected a string for 'parameters.key', found '1'"],
    // scalar types
    ["float for an integer", "max_batch_size: 1.5", "config.pbtxt:1:17: expected an integer for 'max_batch_size', found '1.5'"],
    ["exponent for an integer", "max_batch_size: 1e3", "config.pbtxt:1:17: expected an integer for 'max_batch_size', found '1e3'"],
    ["identifier for an integer", "max_batch_size: four", "config.pbtxt:1:17: expected an integer for 'max_batch_size', found 'four'"],
    ["number for a string", "name: 3", "config.pbtxt:1:7: expected a string for 'name', found '3'"],
    ["identifier for a string", "name: abc", "config.pbtxt:1:7: expected a string for 'name', found 'abc'"],
    ["negative uint32", "version_policy { latest { num_versions: -1 } }", "config.pbtxt:1:41: expected a non-negative integer for 'num_versions', found -1"],
    ["integer beyond 2^53", "max_batch_size: 9007199254740993", "config.pbtxt:1:17: integer 9007199254740993 for 'max_batch_size' is out of range"],
    ["bool as a word", "input { optional: yes }", "config.pbtxt:1:19: expected true or false for 'optional', found 'yes'"],
    ["bool as 2", "input { optional: 2 }", "config.pbtxt:1:19: expected true or false for 'optional', found '2'"],
    ["bool as a string", 'input { optional: "true" }', "config.pbtxt:1:19: expected true or false for 'optional', found string \"true\""],
    [
      "string for a float",
      'model_metrics { metric_control { histogram_options { buckets: [ "1" ] } } }',
      "config.pbtxt:1:65: expected a number for 'buckets', found string \"1\"",
    ],
    [
      "identifier for a float",
      "sequence_batching { direct { minimum_slot_utilization: half } }",
      "config.pbtxt:1:56: expected a number for 'minimum_slot_utilization', found 'half'",
    ],
  ];

  it.each(cases)("%s", (_, text, message) => {
    const err = errorOf(text);
    expect(err.code).toBe("INVALID_ARG");
    expect(err.message).toBe(message);
  });

  it("counts lines across CRLF and columns in UTF-16 units, a tab being one column", () => {
    expect(errorOf('name: "x"\r\n\tbogus: 1').message).toBe("config.pbtxt:2:2: unknown field 'bogus' in inference.ModelConfig");
    expect(errorOf('name: "é" bogus: 1').message).toBe("config.pbtxt:1:11: unknown field 'bogus' in inference.ModelConfig");
    expect(errorOf("# c\n\n   # c\n  nope: 1").message).toBe("config.pbtxt:4:3: unknown field 'nope' in inference.ModelConfig");
  });

  // Found by the fuzz suite (#14): these names reached Object.prototype and threw a TypeError-like Error, not a ServerError.
  it("treats Object.prototype member names as unknown fields and enum values", () => {
    expect(errorOf("constructor: 1").message).toBe("config.pbtxt:1:1: unknown field 'constructor' in inference.ModelConfig");
    expect(errorOf("__proto__ { }").message).toBe("config.pbtxt:1:1: unknown field '__proto__' in inference.ModelConfig");
    expect(errorOf('input { name: "x" toString: 1 }').message).toBe("config.pbtxt:1:19: unknown field 'toString' in inference.ModelInput");
    expect(errorOf("input { data_type: hasOwnProperty }").message).toBe("config.pbtxt:1:20: unknown value 'hasOwnProperty' for enum inference.DataType");
  });

  it("names the file it was given", () => {
    expect(errorOf("max_batch_size 3", "models/m/config.pbtxt").message).toBe("models/m/config.pbtxt:1:16: expected ':' after 'max_batch_size'");
  });

  it("rejects values outside the 32-bit range of int32 and uint32 fields, as protobuf's parser does", () => {
    expect(errorOf("max_batch_size: 2147483648").message).toBe("config.pbtxt:1:17: integer 2147483648 for 'max_batch_size' is out of range");
    expect(errorOf("optimization { graph { level: -2147483649 } }").message).toBe("config.pbtxt:1:31: integer -2147483649 for 'level' is out of range");
    expect(errorOf("version_policy { latest { num_versions: 4294967296 } }").message).toBe(
      "config.pbtxt:1:41: integer 4294967296 for 'num_versions' is out of range",
    );
    // The ends of the ranges are fine.
    expect(parsePbtxt("max_batch_size: 2147483647 optimization { graph { level: -2147483648 } }")).toEqual({
      max_batch_size: 2147483647,
      optimization: { graph: { level: -2147483648 } },
    });
    expect(parsePbtxt("version_policy { latest { num_versions: 4294967295 } }")).toEqual({ version_policy: { latest: { num_versions: 4294967295 } } });
  });
});
