/**
 * config.pbtxt and JSON model configs for the fuzzers (C-01, C-02, C-04, C-05, P-18):
 * texts written from the reflected ModelConfig schema with every spelling protobuf text
 * format allows (and some it does not), the repository's own configs and a few rich ones
 * as seeds, token-level mutation of both; and JSON configs for a load's `config` override.
 */
import { readdirSync, readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import type { Rng } from "./rng.ts";
import { modelConfigType, fieldKind, mapKeyType, realOneof, scalarKind, type Field, type MessageType, type EnumType } from "../../src/model-config/schema.ts";
import { Raw, cloneDoc, edgeValue, isObjectDoc, type Doc } from "./json-text.ts";
import { mutateTokens, tokens, paths, get } from "./mutate.ts";

const ROOT = join(import.meta.dirname, "..", "..");

const RICH_SEEDS = [
  `name: "ens"
platform: "ensemble"
max_batch_size: 8
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 16 ] } ]
ensemble_scheduling {
  step [
    { model_name: "simple" model_version: -1 input_map { key: "INPUT0" value: "IN" } input_map { key: "INPUT1" value: "IN" } output_map { key: "OUTPUT0" value: "mid" } },
    { model_name: "simple" model_version: 1 input_map [ { key: "INPUT0" value: "mid" }, { key: "INPUT1" value: "IN" } ] output_map { key: "OUTPUT0" value: "OUT" } }
  ]
}
`,
  `name: "dyn"
backend: "onnxruntime"
max_batch_size: 16
version_policy: { specific: { versions: [1, 3] } }
input { name: "X" data_type: TYPE_FP32 format: FORMAT_NCHW dims: [ 3, -1, -1 ] reshape: { shape: [ 3, -1, -1 ] } optional: true }
output < name: "Y" data_type: TYPE_FP32 dims: [ -1 ] label_filename: "labels.txt" >
dynamic_batching {
  preferred_batch_size: [ 4, 8 ]
  max_queue_delay_microseconds: 100
  priority_levels: 3
  default_priority_level: 2
  default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 1000 allow_timeout_override: true max_queue_size: 4 }
  priority_queue_policy { key: 1 value: { timeout_action: REJECT max_queue_size: 2 } }
}
instance_group [ { name: "g" kind: KIND_CPU count: 2 rate_limiter { resources [ { name: "r" global: true count: 2 } ] priority: 1 } } ]
parameters { key: "intra_op_thread_count" value: { string_value: "1" } }
parameters: { key: "x" value: { string_value: "\\x41\\101\\n" } }
response_cache { enable: true }
model_warmup [ { name: "w" batch_size: 2 count: 1 inputs { key: "X" value: { data_type: TYPE_FP32 dims: [ 3, 4, 4 ] random_data: true } } } ]
metric_tags { key: "team" value: "a" }
model_metrics { metric_control [ { metric_identifier { family: "nv_inference_request_duration" } histogram_options { buckets: [ 0.5, 1, inf ] } } ] }
optimization { graph { level: 1 } priority: PRIORITY_MAX cuda { graphs: true graph_spec [ { batch_size: 2 input { key: "X" value { dim: [ 3, 4, 4 ] } } graph_lower_bound { batch_size: 1 input { key: "X" value { dim: [ 3, 1, 1 ] } } } } ] } execution_accelerators { cpu_execution_accelerator [ { name: "openvino" parameters { key: "precision" value: "FP16" } } ] } input_pinned_memory { enable: false } gather_kernel_buffer_threshold: 4 eager_batching: true }
`,
  `name: "seq"
platform: "onnxruntime_onnx"
max_batch_size: 4
input [ { name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] }, { name: "READY" data_type: TYPE_BOOL dims: [ 1 ] } ]
output [ { name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
sequence_batching {
  max_sequence_idle_microseconds: 1000
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START fp32_false_true: [ 0, 1 ] } ] },
    { name: "END" control [ { kind: CONTROL_SEQUENCE_END bool_false_true: [ false, true ] } ] },
    { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] }
  ]
  state [ { input_name: "S_IN" output_name: "S_OUT" data_type: TYPE_FP32 dims: [ -1 ] initial_state [ { name: "i" data_type: TYPE_FP32 dims: [ 2 ] data_file: "init.bin" } ] use_same_buffer_for_input_output: true use_growable_memory: true } ]
  oldest { max_candidate_sequences: 4 preferred_batch_size: [ 2, 4 ] max_queue_delay_microseconds: 10 preserve_ordering: true }
  iterative_sequence: false
}
model_transaction_policy { decoupled: True }
batch_input [ { kind: BATCH_ACCUMULATED_ELEMENT_COUNT target_name: "ACC" data_type: TYPE_FP32 source_input: "INPUT" } ]
batch_output [ { target_name: [ "OUTPUT" ] kind: BATCH_SCATTER_WITH_INPUT_SHAPE source_input: [ "INPUT" ] } ]
default_model_filename: "model.onnx"
cc_model_filenames { key: "7.5" value: "m75.onnx" }
model_operations { op_library_filename: [ "libop.so" ] }
model_repository_agents { agents [ { name: "checksum" parameters { key: "MD5:1/model.onnx" value: "x" } } ] }
`,
];

/** The repository's config.pbtxt files and the rich seeds above. */
export function pbtxtSeeds(): string[] {
  const dir = join(ROOT, "model_repository");
  const own = existsSync(dir)
    ? readdirSync(dir)
        .map((m) => join(dir, m, "config.pbtxt"))
        .filter((f) => existsSync(f))
        .map((f) => readFileSync(f, "utf8"))
    : [];
  return [...own, ...RICH_SEEDS];
}

const TENSOR_NAMES = [
  "INPUT0",
  "INPUT1",
  "OUTPUT0",
  "OUTPUT1",
  "INPUT",
  "OUTPUT",
  "START",
  "END",
  "READY",
  "CORRID",
  "STATE_IN",
  "STATE_OUT",
  "X",
  "Y",
  "IN",
  "OUT",
  "mid",
];
const ODD_TEXT = [
  "",
  "x",
  "é",
  "a b",
  "../../../etc/passwd",
  "/etc/passwd",
  "..",
  ".",
  "a/../../b",
  "\\x00",
  "model.onnx",
  "1/model.onnx",
  "%zz",
  "x".repeat(300),
];
const INT_EDGES = [
  "0",
  "1",
  "-1",
  "2",
  "16",
  "2147483647",
  "2147483648",
  "-2147483648",
  "-2147483649",
  "4294967295",
  "4294967296",
  "9007199254740991",
  "9007199254740993",
  "9223372036854775807",
  "9223372036854775808",
  "18446744073709551615",
  "18446744073709551616",
  "0x10",
  "0X7fffffff",
  "010",
  "08",
  "00",
  "-0",
  "1.0",
  "1e0",
  "+1",
  "0x",
  "inf",
];
const FLOAT_EDGES = [
  "0",
  "0.5",
  "1",
  "-1",
  "1e39",
  "-1e39",
  "1e-50",
  "-0",
  "inf",
  "-inf",
  "nan",
  "infinity",
  "-Infinity",
  "NaN",
  "1.5f",
  ".5",
  "5.",
  "1e",
  "0x1",
  "1e400",
];
const BOOL_WORDS = ["true", "false", "True", "False", "t", "f", "1", "0", "yes", "TRUE"];

/**
 * How often the schema writer picks an odd spelling or value over a plain one; set per
 * text by genPbtxtFromSchema (0.02 for mostly-valid texts, 0.15 for rough ones).
 */
let oddRate = 0.1;
const odd = (r: Rng) => r.chance(oddRate);

function quote(s: string, r: Rng): string {
  const body = s.replace(/\\/g, "\\\\").replace(/"/g, '\\"');
  if (!odd(r)) return r.chance(0.9) ? `"${body}"` : `'${body.replace(/'/g, "\\'")}'`;
  return r.pick([
    `"${body.slice(0, body.length >> 1)}" "${body.slice(body.length >> 1)}"`, // adjacent strings concatenate
    '"\\x41\\101\\u00e9"',
    '"\\777"',
    '"\\xZZ"',
    '"\\"',
    '"unterminated',
    '"\\U0001F600"',
    '"\\ud800"',
    "'mixed\"",
    '"a\nb"',
  ]);
}

function scalarText(field: Field, kind: string, r: Rng): string {
  const name = field.name;
  switch (kind) {
    case "bool":
      return odd(r) ? r.pick(BOOL_WORDS) : r.pick(["true", "false"]);
    case "enum": {
      const e = field.resolvedType as EnumType;
      if (!odd(r)) return r.pick(Object.keys(e.values));
      return r.chance(0.5) ? String(r.pick([0, 1, 2, 13, 99, -1])) : r.pick(["TYPE_FOO", "kind_cpu", '"KIND_CPU"', "KIND_CPU.x", "constructor"]);
    }
    case "int":
    case "uint":
      if (odd(r)) return r.pick(INT_EDGES);
      if (name === "dims" || name === "shape" || name === "dim") return r.pick(["1", "2", "16", "-1", "3", "0"]);
      if (/batch_size|count|level|num_versions|versions|key|priority/.test(name)) return r.pick(["0", "1", "2", "4", "8", "16", "3"]);
      return r.pick(["0", "1", "100", "1000", "2147483647"]);
    case "float":
      return odd(r) ? r.pick(FLOAT_EDGES) : r.pick(["0", "0.5", "1", "2.5", "inf"]);
    default: {
      let s: string;
      if (/name$|^target_name$|^source_input$|input_name|output_name|^key$|^value$/.test(name) && !odd(r)) s = r.pick(TENSOR_NAMES);
      else if (name === "platform" && !odd(r)) s = r.pick(["onnxruntime_onnx", "ensemble", "tensorrt_plan", "openvino", "pytorch_libtorch", ""]);
      else if (name === "backend" && !odd(r)) s = r.pick(["onnxruntime", "openvino", "tensorrt", "python", ""]);
      else s = r.pick(ODD_TEXT);
      return quote(s, r);
    }
  }
}

function pickFields(type: MessageType, r: Rng, depth: number): Field[] {
  const p = depth === 0 ? 0.35 : 0.5;
  const out: Field[] = [];
  const oneofUsed = new Set<string>();
  for (const f of r.chance(0.1) ? [...type.fieldsArray].reverse() : type.fieldsArray) {
    if (!r.chance(p)) continue;
    const o = realOneof(f);
    if (o && oneofUsed.has(o.name) && r.chance(0.9)) continue;
    if (o) oneofUsed.add(o.name);
    out.push(f);
  }
  return out;
}

const sep = (r: Rng) => (odd(r) ? r.pick([", ", "; ", " # c\n", "\t", "\r\n"]) : r.pick([" ", "\n"]));

function messageBody(type: MessageType, r: Rng, depth: number): string {
  if (depth > 6) return "";
  return pickFields(type, r, depth)
    .map((f) => fieldText(f, r, depth))
    .join(sep(r));
}

function block(type: MessageType, r: Rng, depth: number): string {
  const [open, close] = odd(r)
    ? r.pick([
        ["<", ">"],
        ["{", ">"],
        ["[", "]"],
      ] as const)
    : ["{", "}"];
  return `${open} ${messageBody(type, r, depth + 1)} ${close}`;
}

function fieldText(f: Field, r: Rng, depth: number): string {
  const kind = fieldKind(f);
  const colon = kind === "message" ? r.pick(["", ": "]) : odd(r) ? " " : ": ";
  if (f.map) {
    const keyKind = scalarKind(mapKeyType(f));
    const entry = () => {
      const key =
        keyKind === "string"
          ? quote(r.pick([...TENSOR_NAMES, ...ODD_TEXT.slice(0, 6)]), r)
          : odd(r)
            ? r.pick(["-1", "18446744073709551615", "x", "1.5"])
            : r.pick(["0", "1", "2", "3"]);
      const value = kind === "message" ? `value ${block(f.resolvedType as MessageType, r, depth)}` : `value: ${scalarText(f, kind, r)}`;
      return `{ key: ${key} ${value} }`;
    };
    const n = r.count(3);
    if (r.chance(0.3)) return `${f.name}${colon}[ ${Array.from({ length: n }, entry).join(", ")} ]`;
    return Array.from({ length: Math.max(1, n) }, () => `${f.name} ${entry()}`).join(sep(r));
  }
  const one = () => (kind === "message" ? block(f.resolvedType as MessageType, r, depth) : scalarText(f, kind, r));
  if (f.repeated) {
    const n = r.count(4);
    if (r.chance(0.6)) return `${f.name}${kind === "message" ? colon : ": "}[ ${Array.from({ length: n }, one).join(odd(r) ? " " : ", ")} ]`;
    return Array.from({ length: Math.max(1, n) }, () => `${f.name}${colon}${one()}`).join(sep(r));
  }
  return `${f.name}${colon}${one()}`;
}

/** A config.pbtxt text from the schema alone; mostly plain spellings, or (rough) more odd ones. */
export function genPbtxtFromSchema(r: Rng, rough = r.chance(0.3)): string {
  oddRate = rough ? 0.15 : 0.01;
  return messageBody(modelConfigType(), r, 0);
}

/** Field and enum names of the schema: the words token mutation puts in. */
export function schemaWords(): string[] {
  const words = new Set<string>();
  const walk = (t: MessageType, seen: Set<MessageType>) => {
    if (seen.has(t)) return;
    seen.add(t);
    for (const f of t.fieldsArray) {
      words.add(f.name);
      if (f.resolvedType?.kind === "message") walk(f.resolvedType, seen);
      else if (f.resolvedType?.kind === "enum") for (const n of Object.keys(f.resolvedType.values)) words.add(n);
    }
  };
  walk(modelConfigType(), new Set());
  return [...words];
}

let seedCache: string[] | undefined;
let wordCache: string[] | undefined;

/** A seed with one of its number, string or word tokens replaced by another of the same kind. */
function respell(text: string, r: Rng): string {
  const ts = tokens(text);
  const at = (test: (t: string) => boolean) => {
    const idx = ts.flatMap((t, i) => (test(t) ? [i] : []));
    return idx.length > 0 ? r.pick(idx) : -1;
  };
  switch (r.int(3)) {
    case 0: {
      const i = at((t) => /^-?(0x)?[0-9.]/.test(t));
      if (i >= 0) ts[i] = r.chance(0.7) ? r.pick(["0", "1", "2", "-1", "3", "8", "16", "1000"]) : r.pick(INT_EDGES);
      break;
    }
    case 1: {
      const i = at((t) => t.startsWith('"'));
      if (i >= 0) ts[i] = JSON.stringify(r.pick([...TENSOR_NAMES, ...ODD_TEXT]));
      break;
    }
    default: {
      const i = at((t) => /^[A-Z][A-Z0-9_]+$|^(true|false)$/.test(t));
      if (i >= 0) ts[i] = r.pick(wordCache!.filter((w) => /^[A-Z]/.test(w)).concat("true", "false"));
    }
  }
  return ts.join("");
}

/** One config.pbtxt case: a seed or a schema-written text, then respelled values or token mutations. */
export function genPbtxtCase(r: Rng): string {
  seedCache ??= pbtxtSeeds();
  wordCache ??= schemaWords();
  let text = r.weighted([
    [5, () => r.pick(seedCache!)],
    [3, () => genPbtxtFromSchema(r)],
    [2, () => `${r.pick(seedCache!)}\n${genPbtxtFromSchema(r, false)}`],
  ] as const)();
  for (
    let i = r.weighted([
      [2, 0],
      [3, 1],
      [2, 2],
      [1, 4],
    ] as const);
    i > 0;
    i--
  )
    text = respell(text, r);
  for (
    let i = r.weighted([
      [6, 0],
      [3, 1],
      [1, r.range(2, 6)],
    ] as const);
    i > 0;
    i--
  )
    text = mutateTokens(text, r, wordCache);
  return text;
}

// ----------------------------------------------------------------------- JSON configs

/** A valid config for `name` (the `simple` model's I/O) with some optional sections added. */
export function genConfigDoc(r: Rng, name: string): Doc {
  const t = (n: string, dims: Doc[] = [16]) => ({ name: n, data_type: "TYPE_INT32", dims });
  const c: Record<string, Doc> = {
    name: r.chance(0.9) ? name : r.pick(["", "other", "../../x"]),
    platform: r.pick(["onnxruntime_onnx", "onnxruntime_onnx", "ensemble", "tensorrt_plan", ""]),
    max_batch_size: r.pick([8, 0, 1, 4]),
    input: [t("INPUT0"), t("INPUT1")],
    output: [t("OUTPUT0"), t("OUTPUT1")],
  };
  const extras: (() => void)[] = [
    () =>
      (c.dynamic_batching = {
        preferred_batch_size: [r.pick([1, 2, 4, 8, 9, 0])],
        max_queue_delay_microseconds: r.pick([0, 100, "18446744073709551615"]),
        priority_levels: r.pick([0, 2]),
        default_priority_level: r.pick([0, 1, 3]),
      }),
    () =>
      (c.sequence_batching = {
        max_sequence_idle_microseconds: r.pick([1000, 0]),
        control_input: [{ name: "START", control: [{ kind: r.pick(["CONTROL_SEQUENCE_START", "CONTROL_SEQUENCE_CORRID"]), int32_false_true: [0, 1] }] }],
      }),
    () =>
      (c.instance_group = [
        { kind: r.pick(["KIND_CPU", "KIND_GPU", "KIND_AUTO", "KIND_MODEL"]), count: r.pick([1, 2, 0, -1]), gpus: r.chance(0.2) ? [0, 7] : [] },
      ]),
    () => (c.version_policy = r.pick<Doc>([{ latest: { num_versions: r.pick([1, 0, 2]) } }, { all: {} }, { specific: { versions: [1, -1, 2] } }])),
    () =>
      (c.parameters = {
        x: { string_value: "1" },
        [r.pick(["intra_op_thread_count", "inter_op_thread_count", "execution_mode", "__x"])]: { string_value: r.pick(["1", "-1", "x", "99999999999"]) },
      }),
    () => (c.default_model_filename = r.pick(["model.onnx", "../../../etc/passwd", "/etc/passwd", "", "sub/model.onnx", "..", "a\u0000b"])),
    () => (c.cc_model_filenames = { "7.5": r.pick(["m.onnx", "../x"]) }),
    () => ((c.output as Record<string, Doc>[])[0]!.label_filename = r.pick(["labels.txt", "../../etc/passwd", ""])),
    () => (c.response_cache = { enable: r.chance(0.5) }),
    () => (c.model_transaction_policy = { decoupled: r.chance(0.5) }),
    () => (c.optimization = { input_pinned_memory: { enable: false }, graph: { level: r.pick([0, 1, -1]) } }),
    () => (c.metric_tags = { team: "x" }),
    () => ((c.input as Record<string, Doc>[])[0]!.dims = r.pick<Doc>([[-1], [0], [16, 1], [], ["16"], [2 ** 53], [-2]])),
    () => ((c.input as Record<string, Doc>[])[0]!.reshape = { shape: r.pick<Doc>([[16], [4, 4], [], [17]]) }),
    () => (c.batch_input = [{ kind: "BATCH_ELEMENT_COUNT", target_name: ["N"], data_type: "TYPE_FP32", source_input: ["INPUT0"] }]),
    () =>
      (c.ensemble_scheduling = {
        step: [
          {
            model_name: r.pick(["simple", name, ""]),
            model_version: -1,
            input_map: { INPUT0: "INPUT0", INPUT1: "INPUT1" },
            output_map: { OUTPUT0: "OUTPUT0" },
          },
        ],
      }),
    () => (c.model_warmup = [{ name: "w", batch_size: 1, inputs: { INPUT0: { data_type: "TYPE_INT32", dims: [16], zero_data: true } } }]),
  ];
  for (let i = r.count(4); i > 0; i--) r.pick(extras)();
  return c;
}

/**
 * One change to a copy of JSON config `doc` that keeps its shape: a number, string or
 * boolean replaced by another of its kind (edge values included), an array element
 * dropped or repeated, a member dropped, or an optional section added.
 */
export function mutateConfigDoc(doc: Doc, r: Rng): Doc {
  const root = { root: cloneDoc(doc) } as Record<string, Doc>;
  const path = r.pick(paths(root.root!, ["root"]));
  const key = path[path.length - 1]!;
  const parent = get(root, path.slice(0, -1)) as Record<string | number, Doc>;
  const node = parent[key]!;
  if (typeof node === "number")
    parent[key] = r.chance(0.6) ? r.pick([0, 1, 2, -1, 3, 4, 8, 16, 1000]) : r.pick([-2, 2 ** 31 - 1, 2 ** 31, -(2 ** 31), 2 ** 32, 2 ** 53, 0.5, -0]);
  else if (typeof node === "string")
    parent[key] = r.pick([...TENSOR_NAMES, ...ODD_TEXT, "TYPE_INT32", "TYPE_FP32", "TYPE_STRING", "KIND_GPU", "CONTROL_SEQUENCE_END", "1", "-1"]);
  else if (typeof node === "boolean") parent[key] = !node;
  else if (Array.isArray(node) && node.length > 0 && r.chance(0.7)) {
    if (r.chance(0.5)) node.splice(r.int(node.length), 1);
    else node.push(cloneDoc(r.pick(node)));
  } else if (isObjectDoc(node) && Object.keys(node).length > 0 && r.chance(0.5)) delete node[r.pick(Object.keys(node))];
  else if (path.length === 1 && isObjectDoc(node)) {
    const extra = genConfigDoc(r, typeof node.name === "string" ? node.name : "fz") as Record<string, Doc>;
    for (const [k, v] of Object.entries(extra)) if (!(k in node)) node[k] = v;
  } else parent[key] = edgeValue(r);
  return root.root!;
}

/**
 * Keeps a client config from asking the server for more than a fuzz run can give: at
 * most 2 instances per group and no warmup (a config's resources are the operator's
 * concern; the fuzzer looks for wrong answers, not for how much a valid config may cost).
 */
export function tameConfigDoc(doc: Doc): Doc {
  if (!isObjectDoc(doc)) return doc;
  delete doc.model_warmup;
  delete doc.modelWarmup;
  for (const key of ["instance_group", "instanceGroup"]) {
    const groups = doc[key];
    if (!Array.isArray(groups)) continue;
    if (groups.length > 4) groups.length = 4;
    for (const g of groups) {
      if (!isObjectDoc(g)) continue;
      if (Number(g.count instanceof Raw ? g.count.text : g.count) > 2) g.count = 1;
    }
  }
  return doc;
}

/** tameConfigDoc for a config already written as text (after token mutation). */
export function tameConfigText(text: string): string {
  return text.replace(/("count"\s*:\s*)([^,}\]\s]+)/g, (all, key: string, v: string) =>
    Number(v.replace(/"/g, "")) > 2 || /e|inf/i.test(v) ? `${key}1` : all,
  );
}
