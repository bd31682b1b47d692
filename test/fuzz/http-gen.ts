/**
 * HTTP cases from a grammar of KServe v2 infer requests (P-06, P-11, P-14, P-27..P-29):
 * mostly well-formed requests for the fuzz repository's models with edge values in every
 * slot (datatypes, shapes with 0 / -1 / huge / float-literal dims, flat and nested data,
 * reserved and odd parameters, sequence ids near 2^53 and 2^64, the binary extension with
 * consistent and inconsistent sizes, gzip / deflate bodies), then mutated at the
 * structure, token or byte level. Also other /v2 routes with odd paths and bodies, and
 * explicit-mode loads with a config override (P-18).
 */
import { gzipSync, deflateSync } from "node:zlib";
import type { Rng } from "./rng.ts";
import { MODELS, LOAD_TARGET, type ModelSpec, type TensorSpec } from "./models.ts";
import { raw, setMember, toJsonText, edgeValue, ODD_NUMBERS, ODD_STRINGS, type Doc } from "./json-text.ts";
import { mutateStructure, mutateTokens, mutateBytes, concat } from "./mutate.ts";
import { genConfigDoc, mutateConfigDoc, tameConfigDoc, tameConfigText } from "./pbtxt-gen.ts";

export interface HttpCase {
  method: string;
  /** Sent as is (no normalization): may hold malformed % escapes. */
  path: string;
  headers: Record<string, string>;
  body: Uint8Array;
}

const utf8 = new TextEncoder();

const SIZE: Record<string, number> = {
  BOOL: 1,
  UINT8: 1,
  INT8: 1,
  UINT16: 2,
  INT16: 2,
  FP16: 2,
  BF16: 2,
  UINT32: 4,
  INT32: 4,
  FP32: 4,
  UINT64: 8,
  INT64: 8,
  FP64: 8,
};
const DATATYPES = ["BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64", "FP16", "FP32", "FP64", "BYTES", "BF16"];
const WORDS = [
  "inputs",
  "outputs",
  "name",
  "shape",
  "datatype",
  "data",
  "parameters",
  "id",
  "binary_data_size",
  "binary_data",
  "binary_data_output",
  "classification",
  "sequence_id",
  "sequence_start",
  "sequence_end",
  "priority",
  "timeout",
  "shared_memory_region",
  "INPUT0",
  "OUTPUT0",
  "INT32",
  "BYTES",
];

/** A value of `datatype` for JSON `data`; with `edge`, one at or past the type's limits. */
function value(datatype: string, r: Rng, edge: boolean): Doc {
  if (edge) {
    switch (datatype) {
      case "INT64":
        return r.pick<Doc>([
          raw("9007199254740993"),
          2n ** 63n - 1n,
          -(2n ** 63n),
          raw("9223372036854775808"),
          raw("18446744073709551616"),
          1.5,
          "1",
          raw("1e0"),
        ]);
      case "UINT64":
        return r.pick<Doc>([2n ** 64n - 1n, raw("18446744073709551616"), -1, raw("9007199254740993"), 1.5]);
      case "BYTES":
        return r.chance(0.6) ? raw(r.pick(ODD_STRINGS)) : r.pick<Doc>([1, null, true, [], "x".repeat(r.pick([0, 1, 1000, 70000]))]);
      case "BOOL":
        return r.pick<Doc>([0, 1, "true", null, raw("True")]);
      case "FP32":
      case "FP64":
      case "FP16":
      case "BF16":
        return r.pick<Doc>([raw("NaN"), raw("Infinity"), raw("-Infinity"), raw("1e39"), raw("1e400"), raw("-0"), raw("4.9e-324"), "1.5", true]);
      default:
        return r.chance(0.5) ? raw(r.pick(ODD_NUMBERS)) : edgeValue(r);
    }
  }
  switch (datatype) {
    case "BOOL":
      return r.chance(0.5);
    case "BYTES":
      return r.pick(["", "a", "hello", "é", "\u{1F600}", "0123456789abcdef", "\0"]);
    case "FP32":
    case "FP64":
    case "FP16":
    case "BF16":
      return Math.round((r.next() - 0.5) * 2000) / 8;
    case "INT64":
      return r.chance(0.2) ? BigInt(r.pick(["9007199254740993", "-9223372036854775808", "9223372036854775807", "123456789012345678"])) : r.int(2001) - 1000;
    case "UINT64":
      return r.chance(0.2) ? 18446744073709551615n : r.int(1000);
    case "UINT8":
    case "UINT16":
    case "UINT32":
      return r.int(256);
    default:
      return r.int(255) - 127;
  }
}

/** Row-major nesting of `flat` by `shape` (when the sizes agree; flat for long shapes). */
function nestData(flat: Doc[], shape: number[]): Doc[] {
  if (shape.length <= 1 || shape.length > 8) return flat;
  const [, ...rest] = shape;
  const inner = rest.reduce((a, b) => a * b, 1);
  if (!(inner >= 1 && Number.isSafeInteger(inner))) return flat; // 0, -1 or huge dims: no nesting to follow
  const out: Doc[] = [];
  for (let i = 0; i < flat.length; i += inner) out.push(nestData(flat.slice(i, i + inner), rest));
  return out;
}

/** The bytes of `count` elements for the binary extension (BYTES: 4-byte length prefixes). */
function binaryBytes(datatype: string, count: number, r: Rng): Uint8Array {
  if (datatype !== "BYTES") return r.bytes(count * (SIZE[datatype] ?? 4));
  const parts: Uint8Array[] = [];
  for (let i = 0; i < count; i++) {
    const s = r.bytes(r.int(6));
    const len = new Uint8Array(4);
    new DataView(len.buffer).setUint32(0, r.chance(0.05) ? r.pick([0xffffffff, 1 << 20, s.length + 1]) : s.length, true);
    parts.push(len, s);
  }
  return concat(...parts);
}

/** A dim at an edge: 0, -1, 2^31, 2^53, 2^64, or a float spelling of 1. */
function edgeDim(r: Rng): Doc {
  return r.pick<Doc>([
    0,
    -1,
    2 ** 31,
    2 ** 32,
    2 ** 53,
    raw("18446744073709551616"),
    raw("9223372036854775807"),
    raw("1e0"),
    raw("1.0"),
    raw("16.0"),
    1.5,
    "1",
    null,
  ]);
}

interface Draft {
  model: string;
  version?: string;
  doc: Doc;
  binary: Uint8Array[];
}

function tensorDoc(t: TensorSpec, m: ModelSpec, batch: number, r: Rng, binary: Uint8Array[]): Doc {
  const datatype = r.chance(0.05) ? r.pick([...DATATYPES, "int32", "", "TYPE_INT32", "STRING"]) : t.datatype;
  let shape: number[] = [
    ...(m.maxBatch > 0 ? [r.chance(0.97) ? batch : r.range(0, m.maxBatch + 1)] : []),
    ...t.dims.map((d) =>
      d === -1
        ? r.weighted([
            [6, r.range(1, 4)],
            [1, 0],
            [0.2, r.range(100, 3000)],
          ] as const)
        : d,
    ),
  ];
  let shapeDoc: Doc[] = shape;
  if (r.chance(0.07)) {
    shapeDoc = [...shape];
    switch (r.int(4)) {
      case 0:
        shapeDoc[r.int(shapeDoc.length)] = edgeDim(r);
        break;
      case 1:
        shapeDoc.push(r.pick([1, 0, 2]));
        break;
      case 2:
        shapeDoc.splice(0, 1);
        break;
      default:
        shapeDoc = r.chance(0.3) ? Array(r.pick([100, 1000, 20000])).fill(r.pick([1, 2])) : [];
    }
    shape = shapeDoc.map((d) => (typeof d === "number" ? d : 1));
  }
  const count = shape.reduce((a, b) => a * Math.max(0, b), 1);
  const doc: Record<string, Doc> = { name: r.chance(0.04) ? r.pick(["INPUT9", "", "input0", raw('"\\ud800"')]) : t.name, shape: shapeDoc, datatype };
  const n = Math.min(count, 4096) + (r.chance(0.05) ? r.pick([-1, 1]) : 0);
  const mode = r.weighted([
    [7, "json"],
    [3, "binary"],
    [0.2, "both"],
    [0.2, "shm"],
    [0.1, "none"],
  ] as const);
  if (mode === "json" || mode === "both") {
    const flat: Doc[] = Array.from({ length: Math.max(0, n) }, () => value(datatype, r, false));
    if (flat.length > 0 && r.chance(0.1)) flat[r.int(flat.length)] = value(datatype, r, true);
    doc.data = r.chance(0.3) ? nestData(flat, shape) : flat;
  }
  if (mode === "binary" || mode === "both") {
    const bytes = binaryBytes(datatype, Math.max(0, n), r);
    const declared = r.chance(0.85) ? bytes.length : r.pick<Doc>([bytes.length + 1, Math.max(0, bytes.length - 1), 0, -1, 2 ** 53, raw("1e0"), "4"]);
    doc.parameters = { binary_data_size: declared };
    binary.push(bytes);
  }
  if (mode === "shm")
    doc.parameters = {
      shared_memory_region: r.pick(["r0", "", "%zz"]),
      shared_memory_byte_size: r.pick([64, 0, -1]),
      ...(r.chance(0.5) ? { shared_memory_offset: r.pick([0, 8, 2 ** 53]) } : {}),
    };
  if (r.chance(0.05)) {
    const p = (doc.parameters ??= {}) as Record<string, Doc>;
    setMember(p, r.pick(["x", "triton_x", "binary_data", "__proto__"]), edgeValue(r));
  }
  return doc;
}

const SEQUENCE_IDS: Doc[] = [
  1,
  2,
  3,
  0,
  "seq-a",
  "",
  2 ** 53,
  raw("9007199254740993"),
  raw("1234567890123456789"),
  raw("1234567890123456790"),
  2n ** 63n,
  2n ** 64n - 1n,
  raw("18446744073709551616"),
  -1,
  1.5,
  raw("1e0"),
  true,
];

function requestParameters(m: ModelSpec, r: Rng): Doc | undefined {
  const p: Record<string, Doc> = {};
  if (m.sequence || r.chance(0.05)) {
    p.sequence_id = r.chance(0.8) ? r.int(4) + 1 : r.pick(SEQUENCE_IDS);
    // Sequences are closed in the same request, mostly: an open one holds a slot until it idles out.
    p.sequence_start = r.chance(0.9) ? true : r.pick<Doc>([false, 1, "true"]);
    p.sequence_end = r.chance(0.95) ? true : r.pick<Doc>([false, 0, null]);
  }
  if (r.chance(0.1)) p.priority = r.pick<Doc>([0, 1, 2, -5, -1, 2 ** 32, 2n ** 64n - 1n, raw("18446744073709551616"), 1.5, "1"]);
  if (r.chance(0.1)) p.timeout = r.pick<Doc>([0, 1, 1000, -1, 2n ** 63n, 2n ** 64n - 1n, 1.5, "10"]);
  if (r.chance(0.1)) p.binary_data_output = r.pick<Doc>([true, false, 1]);
  if (r.chance(0.05)) setMember(p, r.pick(["triton_x", "triton_enable_empty_final_response", "custom", "__proto__", "", "headers"]), edgeValue(r));
  if (Object.keys(p).length === 0 && r.chance(0.9)) return undefined;
  return p;
}

function inferDraft(r: Rng): Draft {
  const m = r.weighted(MODELS.map((x) => [x.name === "simple" ? 4 : 2, x] as const));
  const binary: Uint8Array[] = [];
  const batch = r.weighted([
    [8, 1],
    [2, 2],
    [1, 0],
    [0.5, m.maxBatch],
    [0.3, m.maxBatch + 1],
  ] as const);
  const inputs = m.inputs.map((t) => tensorDoc(t, m, batch, r, binary));
  if (r.chance(0.03)) inputs.push(inputs[0]!);
  if (r.chance(0.03)) inputs.pop();
  const doc: Record<string, Doc> = {};
  if (r.chance(0.3)) doc.id = r.chance(0.9) ? r.pick(["x", "", "id-\u{1F600}", "a".repeat(300)]) : r.pick<Doc>([raw('"\\ud800"'), 5, null]);
  const params = requestParameters(m, r);
  if (params !== undefined) doc.parameters = params;
  doc.inputs = inputs;
  if (r.chance(0.3)) {
    doc.outputs = m.outputs
      .filter(() => r.chance(0.7))
      .map((name) => {
        const o: Record<string, Doc> = { name: r.chance(0.05) ? r.pick(["OUTPUT9", "", "INPUT0"]) : name };
        if (r.chance(0.5)) {
          const p: Record<string, Doc> = {};
          if (r.chance(0.6)) p.binary_data = r.chance(0.9) ? r.chance(0.5) : r.pick<Doc>([1, "true"]);
          if (r.chance(0.2)) p.classification = r.pick<Doc>([0, 1, 3, 16, 17, -1, 2 ** 53, "2"]);
          if (r.chance(0.05)) p.shared_memory_region = "r0";
          o.parameters = p;
        }
        return o;
      });
  }
  return {
    model: m.name,
    version: r.weighted([
      [9, undefined],
      [1, "1"],
      [0.3, "2"],
      [0.2, "0"],
    ] as const),
    doc,
    binary,
  };
}

/** Compresses `body` as `Content-Encoding` says (or, sometimes, says wrongly). */
function encodeBody(body: Uint8Array, r: Rng, headers: Record<string, string>): Uint8Array {
  const choice = r.weighted([
    [85, "none"],
    [6, "gzip"],
    [4, "deflate"],
    [1, "gzip-lie"],
    [1, "odd"],
    [2, "gzip-corrupt"],
  ] as const);
  switch (choice) {
    case "none":
      return body;
    case "gzip":
      headers["content-encoding"] = r.pick(["gzip", "GZIP", " gzip "]);
      return gzipSync(body);
    case "deflate":
      headers["content-encoding"] = "deflate";
      return deflateSync(body);
    case "gzip-lie":
      headers["content-encoding"] = "gzip";
      return body;
    case "odd":
      headers["content-encoding"] = r.pick(["br", "gzip, deflate", "identity", "x-gzip", "compress", ""]);
      return body;
    default:
      headers["content-encoding"] = "gzip";
      return mutateBytes(gzipSync(body), r);
  }
}

/** The JSON (and binary part) of a draft, mutated at the level the Rng picks, as an HTTP case. */
function render(d: Draft, r: Rng): HttpCase {
  let doc = d.doc;
  for (let i = r.chance(0.2) ? r.range(1, 3) : 0; i > 0; i--) doc = mutateStructure(doc, r);
  let text = toJsonText(doc, r.chance(0.1));
  if (r.chance(0.1)) for (let i = r.range(1, 3); i > 0; i--) text = mutateTokens(text, r, WORDS);
  let json: Uint8Array = utf8.encode((r.chance(0.02) ? "\ufeff" : "") + text);
  if (r.chance(0.08)) json = mutateBytes(json, r);
  const bin = concat(...d.binary);
  const headers: Record<string, string> = {};
  if (bin.length > 0 || r.chance(0.03)) {
    headers["inference-header-content-length"] = r.chance(0.85)
      ? String(json.length)
      : r.pick([String(json.length + 1), String(json.length - 1), "0", "-1", "", " 12", "2147483648", "1e3", "abc", String(json.length + bin.length)]);
  }
  let body = concat(json, bin);
  if (bin.length > 0 && r.chance(0.05)) body = mutateBytes(body, r);
  if (r.chance(0.05)) headers["accept-encoding"] = r.pick(["gzip", "deflate", "br", "*"]);
  body = encodeBody(body, r, headers);
  const path = `/v2/models/${d.model}${d.version !== undefined ? `/versions/${d.version}` : ""}/infer`;
  return { method: "POST", path, headers, body };
}

/** An infer request case (the bulk of the HTTP target). */
export function genInferCase(r: Rng): HttpCase {
  return render(inferDraft(r), r);
}

const SEGMENTS = [
  "simple",
  "nope",
  "%zz",
  "%",
  "%2",
  "%2f",
  "%00",
  "%c0%af",
  "%ff",
  "%e2%82",
  "a%20b",
  "..%2f..%2fx",
  "%2e%2e",
  "x".repeat(300),
  "%C3%A9",
  "%F0%9F%98%80",
];

/** Another /v2 route: metadata, config, stats, ready, repository, shared memory, trace, with odd segments. */
export function genRouteCase(r: Rng): HttpCase {
  const seg = () => (r.chance(0.5) ? r.pick(SEGMENTS) : r.pick(MODELS).name);
  const region = () => r.pick(["r0", "%zz", "%", "%00", "a%2fb", "x".repeat(200), "%ed%a0%80"]);
  const route = r.pick([
    () => ["GET", `/v2/models/${seg()}`],
    () => ["GET", `/v2/models/${seg()}/versions/${r.pick(["1", "0", "99", "x", "%zz", "18446744073709551616"])}`],
    () => ["GET", `/v2/models/${seg()}/config`],
    () => ["GET", `/v2/models/${seg()}/ready`],
    () => ["GET", `/v2/models/${seg()}/stats`],
    () => ["GET", `/v2/models/${seg()}/versions/1/stats`],
    () => ["POST", "/v2/repository/index"],
    () => [
      "POST",
      `/v2/repository/models/${r.pick(["nope", LOAD_TARGET, "%zz", "%", "..%2f..%2fx", "a%2fb", "%00", "x".repeat(300)])}/${r.pick(["load", "unload"])}`,
    ],
    () => ["POST", `/v2/repository/${seg()}/models/x/load`],
    () => ["GET", `/v2/systemsharedmemory/region/${region()}/status`],
    () => ["GET", "/v2/systemsharedmemory/status"],
    () => ["POST", `/v2/systemsharedmemory/region/${region()}/register`],
    () => ["POST", `/v2/systemsharedmemory/region/${region()}/unregister`],
    () => ["GET", `/v2/cudasharedmemory/region/${region()}/status`],
    () => ["POST", `/v2/cudasharedmemory/region/${region()}/register`],
    () => ["POST", "/v2/trace/setting"],
    () => ["POST", `/v2/models/${seg()}/trace/setting`],
    () => ["GET", "/v2/trace/setting"],
    () => ["GET", "/v2/logging"],
    () => ["GET", "/v2"],
    () => ["GET", `/v2/${seg()}`],
  ] as const)();
  let [method, path] = route as unknown as [string, string];
  if (r.chance(0.05)) method = r.pick(["PUT", "DELETE", "PATCH", "OPTIONS", "GET", "POST"]);
  const bodyDoc: Doc = r.pick<() => Doc>([
    () => ({}),
    () => ({ ready: r.pick<Doc>([true, false, 1, null]) }),
    () => ({
      key: r.pick(["/nereid-fuzz-missing", "", "../x", "/dev/shm/../etc"]),
      offset: r.pick<Doc>([0, -1, 2 ** 53, raw("1e0")]),
      byte_size: r.pick<Doc>([64, 0, -1, 2 ** 64, "8"]),
    }),
    () => ({ raw_handle: { b64: r.pick(["", "AAAA", "%%%", "x".repeat(100)]) }, device_id: r.pick<Doc>([0, -1, 99]), byte_size: 64 }),
    () =>
      Object.fromEntries(
        Array.from({ length: r.range(1, 3) }, () => [
          r.pick(["trace_file", "trace_level", "trace_rate", "trace_count", "log_frequency", "trace_mode", "x"]),
          r.pick<Doc>([raw('"/tmp/nereid-fuzz-trace.json"'), "../../x", ["TIMESTAMPS"], ["OFF"], ["x"], "1000", "-1", "0", "x", 5, null, []]),
        ]),
      ),
    () => ({ parameters: { unload_dependents: r.pick<Doc>([true, "x", 1]) } }),
    () => edgeValue(r),
  ])();
  let body: Uint8Array = method === "GET" && r.chance(0.8) ? new Uint8Array(0) : utf8.encode(toJsonText(bodyDoc));
  if (r.chance(0.1)) body = mutateBytes(body, r);
  const headers: Record<string, string> = {};
  body = encodeBody(body, r, headers);
  return { method, path, headers, body };
}

/** A base64 model file for load overrides (the `simple` model's bytes, given by the caller). */
export interface LoadFiles {
  modelBase64: string;
}

/** An explicit-mode load of LOAD_TARGET with a (mutated) JSON config override and, mostly, the model file. */
export function genLoadCase(r: Rng, files: LoadFiles): HttpCase {
  let config = genConfigDoc(r, LOAD_TARGET);
  for (
    let i = r.weighted([
      [1, 0],
      [3, 1],
      [2, 2],
      [1, 4],
    ] as const);
    i > 0;
    i--
  )
    config = mutateConfigDoc(config, r);
  if (r.chance(0.2)) config = mutateStructure(config, r);
  config = tameConfigDoc(config);
  let configText = toJsonText(config);
  if (r.chance(0.15))
    configText = tameConfigText(mutateTokens(configText, r, ["input", "output", "dims", "data_type", "max_batch_size", "TYPE_INT32", "instance_group"]));
  const params: Record<string, Doc> = { config: configText };
  if (r.chance(0.85)) params["file:1/model.onnx"] = files.modelBase64;
  if (r.chance(0.05)) params[r.pick(["file:../x", "file:1/../../x", "file:", "file:/abs", "file:2/model.onnx"])] = r.pick([files.modelBase64, "%%%", ""]);
  let doc: Doc = { parameters: params };
  if (r.chance(0.1)) doc = mutateStructure(doc, r);
  let body: Uint8Array = utf8.encode(toJsonText(doc));
  if (r.chance(0.05)) body = mutateBytes(body, r);
  const name = r.chance(0.95) ? LOAD_TARGET : r.pick(["..%2f..%2fx", "%zz", ".", "a%2fb", "%00"]);
  const headers: Record<string, string> = {};
  body = encodeBody(body, r, headers);
  return { method: "POST", path: `/v2/repository/models/${name}/${r.chance(0.9) ? "load" : "unload"}`, headers, body };
}

/** The models the known-good request goes to in turn: `simple` on each path a request can take (models.ts). */
export const KNOWN_GOOD_MODELS = ["simple", "simple_batched", "ts_add_sub", "py_add_sub"] as const;

/** The request the oracle sends every few cases (to `simple`, or another of KNOWN_GOOD_MODELS), and the exact answer it must keep getting. */
export const KNOWN_GOOD = {
  body: JSON.stringify({
    id: "known-good",
    inputs: [
      { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: Array.from({ length: 16 }, (_, i) => i) },
      { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: Array(16).fill(1) },
    ],
    outputs: [{ name: "OUTPUT0" }],
  }),
  /** OUTPUT0 = INPUT0 + INPUT1 */
  output: Array.from({ length: 16 }, (_, i) => i + 1),
};
