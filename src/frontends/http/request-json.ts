/**
 * @module A parsed infer request object → InferenceRequest: Triton's structure and JSON-type
 * checks, in Triton's order and words (src/http_server.cc ParseJsonTriton*), JSON `data`
 * flattened row-major and encoded, binary_data_size inputs cut from the binary part as views.
 */
import { invalidArg } from "../../core/errors.ts";
import { ELEMENT_SIZE, isDataType, shapeToString } from "../../core/tensor.ts";
import { valuesToBytes } from "../../core/tensor-values.ts";
import { checkBytesElements } from "../../core/tensor-limits.ts";
import type { InferenceRequest, InputTensor, Parameters, ParameterValue, RequestedOutput } from "../../core/request.ts";
import type { JsonValue } from "./json-parse.ts";

/** Thrown (not an error) when JSON.parse may have rounded an integer: parse exactly and retry. */
export const NEEDS_EXACT = Symbol("needs exact integers");

const MAX_DEPTH = 100;
const NON_STRING = "attempt to access JSON non-string as string";
const NON_ARRAY = "attempt to access JSON non-array as array";
const NON_BOOL = "attempt to access JSON non-boolean as boolean";
const NON_UINT = "attempt to access JSON non-unsigned-integer as unsigned-integer";
const missing = (key: string) => `attempt to access non-existing object member '${key}'`;
const badType = (key: string, where = "") => `parameter '${key}'${where} has invalid type. It should be either 'int', 'bool', or 'string'.`;

type JsonObject = { [k: string]: JsonValue };

interface Decoding {
  /** True when integers beyond 2^53 arrive as bigint (exact parse), false after JSON.parse. */
  exact: boolean;
  modelName: string;
  binary: Uint8Array;
  offset: number;
  /** --http-max-input-size: the most bytes one JSON `data` input may decode to. */
  maxInputSize: number;
}

/** Triton's message for a JSON input whose decoded size is over --http-max-input-size. */
const inputTooLarge = (name: string, size: string, limit: number) =>
  invalidArg(
    `JSON input '${name}' has a byte_size (${size} bytes) that exceeds the maximum allowed value of ${limit} bytes. Use --http-max-input-size to increase the limit.`,
  );

function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

const has = (o: unknown, key: string): boolean => isObject(o) && Object.hasOwn(o, key);

function setKey(o: Parameters, key: string, v: ParameterValue): void {
  if (key === "__proto__") Object.defineProperty(o, key, { value: v, writable: true, enumerable: true, configurable: true });
  else o[key] = v;
}

/** An integer that JSON.parse may have rounded: ask for the exact parse. */
function checkExact(v: JsonValue, d: Decoding): void {
  if (!d.exact && typeof v === "number" && Number.isInteger(v) && !Number.isSafeInteger(v)) throw NEEDS_EXACT;
}

/**
 * rapidjson IsUint64, as far as JSON.parse lets us tell (1.0 counts as an integer). The
 * exact parse gives a bigint for every integer up to 2^64 − 1, so an integer beyond 2^53
 * still a number there is beyond uint64: a double to rapidjson, not a uint.
 */
function asUint(v: JsonValue | undefined, d: Decoding): number | bigint | undefined {
  if (typeof v === "bigint") return v >= 0n ? v : undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0) return undefined;
  checkExact(v, d);
  return Number.isSafeInteger(v) ? v : undefined;
}

function scalar(v: JsonValue | undefined, d: Decoding): ParameterValue | undefined {
  if (typeof v === "string" || typeof v === "boolean" || typeof v === "bigint") return v;
  if (typeof v !== "number") return undefined;
  checkExact(v, d);
  return v;
}

/** Request-level parameters, with Triton's checks of its reserved keys. */
function requestParameters(v: JsonValue | undefined, d: Decoding): Parameters {
  const out: Parameters = {};
  if (v === undefined) return out;
  if (!isObject(v)) throw invalidArg("failed to get request params.: attempt to get members for non-object");
  for (const [key, x] of Object.entries(v)) {
    let value: ParameterValue | undefined;
    switch (key) {
      case "sequence_id":
        value = typeof x === "string" ? x : asUint(x, d);
        if (value === undefined) throw invalidArg(`Unable to parse 'sequence_id': ${NON_STRING}`);
        break;
      case "sequence_start":
      case "sequence_end":
      case "binary_data_output":
        if (typeof x !== "boolean") throw invalidArg(`Unable to parse '${key}': ${NON_BOOL}`);
        value = x;
        break;
      case "priority":
      case "timeout":
        value = asUint(x, d);
        if (value === undefined) throw invalidArg(`Unable to parse '${key}': ${NON_UINT}`);
        break;
      default:
        if (key.startsWith("triton_")) {
          throw invalidArg("parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified.");
        }
        value = scalar(x, d);
        if (value === undefined) throw invalidArg(badType(key));
    }
    setKey(out, key, value);
  }
  return out;
}

/** An input's or output's `parameters`: an object of strings, numbers and booleans. */
function flatParameters(v: JsonValue, where: string, d: Decoding): Parameters {
  if (!isObject(v)) throw invalidArg(`Unable to parse 'parameters' for ${where}: attempt to access JSON non-object as object`);
  const out: Parameters = {};
  for (const [key, x] of Object.entries(v)) {
    const value = scalar(x, d);
    if (value === undefined) throw invalidArg(badType(key, ` of ${where}`));
    setKey(out, key, value);
  }
  return out;
}

function stringMember(o: JsonValue, key: string): string {
  if (!has(o, key)) throw invalidArg(`Unable to parse '${key}': ${missing(key)}`);
  const v = (o as JsonObject)[key];
  if (typeof v !== "string") throw invalidArg(`Unable to parse '${key}': ${NON_STRING}`);
  return v;
}

function shapeOf(raw: JsonObject, name: string): number[] {
  if (!Object.hasOwn(raw, "shape")) throw invalidArg(`Unable to parse 'shape': ${missing("shape")}`);
  const dims = raw.shape;
  if (!Array.isArray(dims)) throw invalidArg(`Unable to parse 'shape': ${NON_ARRAY}`);
  const shape: number[] = [];
  let count = 1;
  // A whole number written 1.0 or 1e0 reaches here as a DoubleLiteral from the exact parser
  // (decodeInferRequest sends such bodies there), and is refused as rapidjson's IsUint64 does.
  for (const x of dims) {
    const isUint = (typeof x === "number" && Number.isInteger(x) && x >= 0) || (typeof x === "bigint" && x >= 0n);
    if (!isUint) throw invalidArg(`Unable to parse 'shape': ${NON_UINT}`);
    shape.push(Number(x));
    count *= Number(x);
  }
  if (count > Number.MAX_SAFE_INTEGER || !shape.every(Number.isSafeInteger)) {
    throw invalidArg(
      `invalid shape for input '${name}': shape ${shapeToString(dims as (number | bigint)[])} causes total element count to exceed maximum size of 9223372036854775807`,
    );
  }
  return shape;
}

/** Row-major flatten of nested `data`; Triton's depth limit counts the data array as depth 0. */
function flatten(data: JsonValue[]): JsonValue[] {
  if (!data.some(Array.isArray)) return data;
  const out: JsonValue[] = [];
  const walk = (a: JsonValue[], depth: number) => {
    for (const x of a) {
      if (depth + 1 >= MAX_DEPTH) throw invalidArg(`Unable to parse 'data': JSON nesting depth exceeds maximum allowed limit (${MAX_DEPTH})`);
      if (Array.isArray(x)) walk(x, depth + 1);
      else out.push(x);
    }
  };
  walk(data, 0);
  return out;
}

function decodeInput(raw: JsonValue, d: Decoding): InputTensor {
  const params = isObject(raw) ? raw.parameters : undefined;
  const hasData = has(raw, "data");
  const hasBinary = has(params, "binary_data_size");
  const hasShm = has(params, "shared_memory_region");
  if (Number(hasData) + Number(hasBinary) + Number(hasShm) !== 1) {
    const set = [hasData && " 'data'", hasBinary && " 'binary_data_size'", hasShm && " 'shared_memory_region'"].filter(Boolean).join("");
    throw invalidArg(
      "Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', " +
        `'shared_memory_region' in 'parameters'. But${set ? ` set${set}` : " no field is set"}`,
    );
  }
  const input = raw as JsonObject;
  const name = stringMember(input, "name");
  const datatype = stringMember(input, "datatype");
  if (!isDataType(datatype)) throw invalidArg(`invalid datatype for input ${name}`);
  const shape = shapeOf(input, name);
  const count = shape.reduce((a, b) => a * b, 1);
  if (datatype === "BYTES") checkBytesElements(name, shape, count);
  const tensor: InputTensor = { name, datatype, shape, data: new Uint8Array(0) };
  if (params !== undefined) tensor.parameters = flatParameters(params, `input '${name}'`, d);

  if (hasShm) return tensor; // the core reads the bytes from the region named in the parameters
  if (hasBinary) {
    const size = asUint((params as JsonObject).binary_data_size, d);
    if (size === undefined) throw invalidArg(`Unable to parse 'binary_data_size': ${NON_UINT}`);
    const available = d.binary.byteLength - d.offset;
    if (size > available) {
      throw invalidArg(`unexpected size for input '${name}', expecting ${Number(size) - available} additional bytes for model '${d.modelName}'`);
    }
    tensor.data = d.binary.subarray(d.offset, d.offset + Number(size));
    d.offset += Number(size);
    delete tensor.parameters!.binary_data_size;
    return tensor;
  }

  if (count === 0) return tensor; // Triton reads no data for an empty tensor.
  const data = input.data;
  if (!Array.isArray(data)) throw invalidArg(`Unable to parse 'data': ${NON_ARRAY}`);
  // Triton's size check, before `data` is read: element count × size, and for BYTES at
  // least the 4-byte length prefix per element (the exact size is checked once encoded).
  if (datatype === "BYTES" ? count * 4 > d.maxInputSize : count * ELEMENT_SIZE[datatype] > d.maxInputSize) {
    const size = datatype === "BYTES" ? `at least ${count * 4}` : String(count * ELEMENT_SIZE[datatype]);
    throw inputTooLarge(name, size, d.maxInputSize);
  }
  if (datatype === "FP16" || datatype === "BF16") {
    throw invalidArg(`receiving ${datatype} data via JSON is not supported. Please use the binary data format for input ${name}`);
  }
  const flat = flatten(data);
  if (flat.length !== count) {
    throw invalidArg(
      `Unable to parse 'data': shape does not match true shape of 'data' field for input '${name}': ` +
        `shape ${shapeToString(shape)} has ${count} elements, 'data' has ${flat.length}`,
    );
  }
  if (datatype === "INT64" || datatype === "UINT64") for (const v of flat) checkExact(v, d);
  tensor.data = valuesToBytes(datatype, flat, `input '${name}'`);
  if (tensor.data.byteLength > d.maxInputSize) throw inputTooLarge(name, String(tensor.data.byteLength), d.maxInputSize);
  return tensor;
}

function decodeOutput(raw: JsonValue, d: Decoding): RequestedOutput {
  const params = isObject(raw) ? raw.parameters : undefined;
  if (has(params, "shared_memory_region")) {
    const p = params as JsonObject;
    if (Object.hasOwn(p, "classification")) throw invalidArg("Output can't set both 'shared_memory_region' and 'classification'");
    if (Object.hasOwn(p, "binary_data")) {
      if (typeof p.binary_data !== "boolean") throw invalidArg(`Unable to set 'binary_data': ${NON_BOOL}`);
      if (p.binary_data) throw invalidArg("Output can't set both 'shared_memory_region' and 'binary_data'");
    }
  }
  const name = stringMember(raw, "name");
  if (params === undefined) return { name };
  const parameters = flatParameters(params, `output '${name}'`, d);
  if (Object.hasOwn(parameters, "classification")) {
    const k = asUint((params as JsonObject).classification, d);
    if (k === undefined) throw invalidArg(`Unable to set 'classification': ${NON_UINT}`);
    if (k === 0 || k === 0n) delete parameters.classification; // 0 means no classification, as in Triton
  }
  if (Object.hasOwn(parameters, "binary_data") && typeof parameters.binary_data !== "boolean") {
    throw invalidArg(`Unable to parse 'binary_data': ${NON_BOOL}`);
  }
  return { name, parameters };
}

/**
 * Decodes the request object `doc`; inputs with binary_data_size take their bytes from
 * `binary` in order and must use all of it. Throws INVALID_ARG, UNSUPPORTED for shared
 * memory, or NEEDS_EXACT when `exact` is false and an integer may have been rounded.
 */
export function requestFromJson(
  doc: JsonValue,
  binary: Uint8Array,
  ctx: { modelName: string; modelVersion?: string; maxInputSize?: number },
  exact: boolean,
): InferenceRequest {
  const d: Decoding = { exact, modelName: ctx.modelName, binary, offset: 0, maxInputSize: ctx.maxInputSize ?? Infinity };
  const request: InferenceRequest = { modelName: ctx.modelName, modelVersion: ctx.modelVersion, parameters: {}, inputs: [] };
  if (has(doc, "id")) {
    const id = (doc as JsonObject).id;
    if (typeof id !== "string") throw invalidArg(`Unable to parse 'id': ${NON_STRING}`);
    request.id = id;
  }
  request.parameters = requestParameters(isObject(doc) ? doc.parameters : undefined, d);

  if (!has(doc, "inputs")) throw invalidArg(`Unable to parse 'inputs': ${missing("inputs")}`);
  const inputs = (doc as JsonObject).inputs;
  if (!Array.isArray(inputs)) throw invalidArg(`Unable to parse 'inputs': ${NON_ARRAY}`);
  for (const raw of inputs) request.inputs.push(decodeInput(raw, d));
  if (d.offset !== binary.byteLength) throw invalidArg(`unexpected additional input data for model '${ctx.modelName}'`);

  if (has(doc, "outputs")) {
    const outputs = (doc as JsonObject).outputs;
    if (!Array.isArray(outputs)) throw invalidArg(`Unable to parse 'outputs': ${NON_ARRAY}`);
    request.outputs = outputs.map((o) => decodeOutput(o, d));
  }
  return request;
}
