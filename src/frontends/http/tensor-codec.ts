/**
 * @module KServe V2 JSON and Triton's binary tensor extension: HTTP body bytes ↔
 * InferenceRequest / InferenceResponse. Checks the wire format only; the core checks the
 * request against the model.
 */
import { invalidArg } from "../../core/errors.ts";
import { isDataType, type DataType } from "../../core/tensor.ts";
import { valuesToBytes, bytesToJsonArray } from "../../core/tensor-values.ts";
import type { InferenceRequest, InferenceResponse, InputTensor, Parameters, ParameterValue, RequestedOutput } from "../../core/request.ts";

export interface DecodeContext {
  modelName: string;
  modelVersion?: string;
  /** For raw binary bodies (Inference-Header-Content-Length: 0): the single input's name, type and shape. */
  rawInput?: (byteLength: number) => { name: string; datatype: DataType; shape: number[] };
}

const MAX_DEPTH = 100;
const decoder = new TextDecoder();
const encoder = new TextEncoder();

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function isObject(v: unknown): v is Record<string, Json> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function depthOk(v: unknown, depth: number): boolean {
  if (depth > MAX_DEPTH) return false;
  if (Array.isArray(v)) {
    // Tensor data is usually a flat array of numbers: skip the walk when it is.
    for (const x of v) if (typeof x === "object" && x !== null && !depthOk(x, depth + 1)) return false;
    return true;
  }
  if (isObject(v)) {
    for (const k in v) if (typeof v[k] === "object" && v[k] !== null && !depthOk(v[k], depth + 1)) return false;
  }
  return true;
}

function parseJson(bytes: Uint8Array): unknown {
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(bytes));
  } catch (err) {
    throw invalidArg(`failed to parse the request JSON buffer: ${(err as Error).message}`);
  }
  if (!depthOk(value, 1)) throw invalidArg(`failed to parse the request JSON buffer: nesting deeper than ${MAX_DEPTH} levels`);
  return value;
}

function parameters(v: unknown, where: string): Parameters {
  if (v === undefined) return {};
  if (!isObject(v)) throw invalidArg(`${where}: 'parameters' must be a JSON object`);
  const out: Parameters = {};
  for (const [k, x] of Object.entries(v)) {
    if (typeof x !== "string" && typeof x !== "number" && typeof x !== "boolean") {
      throw invalidArg(`${where}: parameter '${k}' must be a string, number or boolean`);
    }
    out[k] = x as ParameterValue;
  }
  return out;
}

/** Row-major flatten of nested arrays. */
function flatten(data: Json[]): unknown[] {
  if (!data.some(Array.isArray)) return data;
  const out: unknown[] = [];
  const walk = (a: Json[]) => {
    for (const x of a) Array.isArray(x) ? walk(x) : out.push(x);
  };
  walk(data);
  return out;
}

function shapeOf(v: unknown, name: string): number[] {
  if (!Array.isArray(v) || !v.every((d) => typeof d === "number" && Number.isInteger(d))) {
    throw invalidArg(`input '${name}': 'shape' must be an array of integers`);
  }
  return v as number[];
}

/** Decodes an infer request body; `headerLength` is Inference-Header-Content-Length. */
export function decodeInferRequest(body: Uint8Array, headerLength: number | undefined, ctx: DecodeContext): InferenceRequest {
  if (headerLength !== undefined && headerLength > body.byteLength) {
    throw invalidArg(
      `Inference-Header-Content-Length (${headerLength}) exceeds the request body size (${body.byteLength} bytes)`,
    );
  }
  if (headerLength === 0) {
    if (!ctx.rawInput) throw invalidArg("raw binary request (Inference-Header-Content-Length: 0) is not supported here");
    const input = ctx.rawInput(body.byteLength);
    return {
      modelName: ctx.modelName,
      modelVersion: ctx.modelVersion,
      parameters: { binary_data_output: true },
      inputs: [{ ...input, data: body }],
    };
  }
  const jsonEnd = headerLength ?? body.byteLength;
  const doc = parseJson(body.subarray(0, jsonEnd));
  if (!isObject(doc)) throw invalidArg("failed to parse the request JSON buffer: the request must be a JSON object");
  const binary = body.subarray(jsonEnd);
  let offset = 0;

  const request: InferenceRequest = {
    modelName: ctx.modelName,
    modelVersion: ctx.modelVersion,
    parameters: parameters(doc.parameters, "request"),
    inputs: [],
  };
  if (doc.id !== undefined) {
    if (typeof doc.id !== "string") throw invalidArg("request 'id' must be a string");
    request.id = doc.id;
  }
  const bdo = request.parameters.binary_data_output;
  if (bdo !== undefined && typeof bdo !== "boolean") throw invalidArg("parameter 'binary_data_output' must be a boolean");

  if (!Array.isArray(doc.inputs)) throw invalidArg("request must contain an 'inputs' array");
  for (const raw of doc.inputs) {
    if (!isObject(raw)) throw invalidArg("each element of 'inputs' must be a JSON object");
    const name = raw.name;
    if (typeof name !== "string") throw invalidArg("input is missing a string 'name'");
    const datatype = raw.datatype;
    if (typeof datatype !== "string" || !isDataType(datatype)) {
      throw invalidArg(`input '${name}': unsupported datatype ${JSON.stringify(datatype)}`);
    }
    const shape = shapeOf(raw.shape, name);
    const params = parameters(raw.parameters, `input '${name}'`);
    const input: InputTensor = { name, datatype, shape, data: new Uint8Array(0) };
    if (raw.parameters !== undefined) input.parameters = params;
    const binarySize = params.binary_data_size;
    if (binarySize !== undefined) {
      if (typeof binarySize !== "number" || !Number.isInteger(binarySize) || binarySize < 0) {
        throw invalidArg(`input '${name}': 'binary_data_size' must be a non-negative integer`);
      }
      if (raw.data !== undefined) throw invalidArg(`input '${name}' has both 'data' and 'binary_data_size'`);
      if (offset + binarySize > binary.byteLength) {
        throw invalidArg(
          `input '${name}': binary_data_size ${binarySize} needs more data than the ${binary.byteLength - offset} binary bytes left in the request`,
        );
      }
      input.data = binary.subarray(offset, offset + binarySize);
      offset += binarySize;
      delete input.parameters!.binary_data_size;
    } else {
      if (!Array.isArray(raw.data)) throw invalidArg(`input '${name}' must have a 'data' array or a 'binary_data_size' parameter`);
      if (datatype === "FP16" || datatype === "BF16") {
        throw invalidArg(`receiving ${datatype} data via JSON is not supported. Please use the binary data format for input '${name}'`);
      }
      const flat = flatten(raw.data);
      const expected = shape.reduce((a, b) => a * b, 1);
      if (flat.length !== expected) {
        throw invalidArg(`input '${name}' has ${flat.length} elements in 'data' but its shape [${shape.join(",")}] needs ${expected}`);
      }
      input.data = valuesToBytes(datatype, flat, `input '${name}'`);
    }
    request.inputs.push(input);
  }
  if (offset !== binary.byteLength) {
    throw invalidArg(`request has ${binary.byteLength - offset} bytes of binary data that no input claims (binary_data_size)`);
  }

  if (doc.outputs !== undefined) {
    if (!Array.isArray(doc.outputs)) throw invalidArg("'outputs' must be an array");
    request.outputs = doc.outputs.map((o): RequestedOutput => {
      if (!isObject(o) || typeof o.name !== "string") throw invalidArg("each requested output must be an object with a string 'name'");
      const params = parameters(o.parameters, `output '${o.name}'`);
      if (params.binary_data !== undefined && typeof params.binary_data !== "boolean") {
        throw invalidArg(`output '${o.name}': parameter 'binary_data' must be a boolean`);
      }
      const c = params.classification;
      if (c !== undefined && (typeof c !== "number" || !Number.isInteger(c) || c < 1)) {
        throw invalidArg(`output '${o.name}': parameter 'classification' must be a positive integer`);
      }
      return o.parameters === undefined ? { name: o.name } : { name: o.name, parameters: params };
    });
  }
  return request;
}

export interface EncodedResponse {
  body: Uint8Array;
  contentType: string;
  /** Length of the JSON part when binary outputs follow it. */
  headerLength?: number;
}

/** Encodes a response; outputs go binary where the request asked for it. */
export function encodeInferResponse(response: InferenceResponse, request: InferenceRequest): EncodedResponse {
  const defaultBinary = request.parameters.binary_data_output === true;
  const wantsBinary = new Map<string, boolean>();
  for (const o of request.outputs ?? []) {
    const b = o.parameters?.binary_data;
    if (typeof b === "boolean") wantsBinary.set(o.name, b);
  }
  const blobs: Uint8Array[] = [];
  let json = "{";
  if (request.id) json += `"id":${JSON.stringify(request.id)},`;
  json += `"model_name":${JSON.stringify(response.modelName)},"model_version":${JSON.stringify(response.modelVersion)}`;
  if (response.parameters && Object.keys(response.parameters).length > 0) {
    json += `,"parameters":${JSON.stringify(response.parameters, (_, v) => (typeof v === "bigint" ? Number(v) : v))}`;
  }
  json += `,"outputs":[`;
  response.outputs.forEach((t, i) => {
    if (i > 0) json += ",";
    json += `{"name":${JSON.stringify(t.name)},"datatype":"${t.datatype}","shape":[${t.shape.join(",")}]`;
    if (wantsBinary.get(t.name) ?? defaultBinary) {
      json += `,"parameters":{"binary_data_size":${t.data.byteLength}}}`;
      blobs.push(t.data);
    } else {
      if (t.datatype === "FP16" || t.datatype === "BF16") {
        throw invalidArg(`output '${t.name}' has datatype ${t.datatype}, which cannot be returned in JSON; request it with 'binary_data: true'`);
      }
      json += `,"data":${bytesToJsonArray(t.datatype, t.data)}}`;
    }
  });
  json += "]}";
  const head = encoder.encode(json);
  if (blobs.length === 0) return { body: head, contentType: "application/json" };
  let total = head.byteLength;
  for (const b of blobs) total += b.byteLength;
  const body = new Uint8Array(total);
  body.set(head, 0);
  let off = head.byteLength;
  for (const b of blobs) {
    body.set(b, off);
    off += b.byteLength;
  }
  return { body, contentType: "application/octet-stream", headerLength: head.byteLength };
}
