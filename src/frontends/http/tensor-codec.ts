/**
 * @module KServe V2 JSON and Triton's binary tensor extension: HTTP body bytes ↔
 * InferenceRequest / InferenceResponse, with the Inference-Header-Content-Length split and
 * the raw binary request. Checks the wire format only; the core checks against the model.
 */
import { invalidArg } from "../../core/errors.ts";
import type { DataType, Tensor } from "../../core/tensor.ts";
import type { InferenceRequest, InferenceResponse, OutputTensor } from "../../core/request.ts";
import { checkJsonDepth, jsonText, parseJsonExact, parseJsonExactAsync, parseJsonFast, shapeMayHoldDouble } from "./json-parse.ts";
import { checkJsonOutputSize, JSON_SLICE_BYTES, parametersJson, tensorDataJson, tensorDataJsonAsync } from "./json-write.ts";
import { NEEDS_EXACT, requestFromJson } from "./request-json.ts";

export interface DecodeContext {
  modelName: string;
  modelVersion?: string;
  /** --http-max-input-size: the most bytes one JSON `data` input may decode to (no limit when absent). */
  maxInputSize?: number;
  /**
   * For a raw binary body (Inference-Header-Content-Length: 0): the model's single input's
   * name, type and shape for a body of `byteLength` bytes; throws if the model can't take one.
   */
  rawInput?: (byteLength: number) => { name: string; datatype: DataType; shape: number[] };
}

const HEADER = "Inference-Header-Content-Length";

/**
 * The Inference-Header-Content-Length header value as Triton reads it (std::stoi: leading
 * whitespace, a sign and digits, anything after ignored); undefined when absent. The range
 * against the body is checked by decodeInferRequest.
 */
export function parseInferenceHeaderLength(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const m = /^[ \t\n\v\f\r]*([+-]?\d+)/.exec(value);
  if (!m) throw invalidArg(`Unable to parse ${HEADER}, got: ${value}`);
  const n = Number(m[1]);
  if (n < -2147483648 || n > 2147483647) {
    throw invalidArg(`Unable to parse ${HEADER}, value is out of range [ -2147483648, 2147483647 ], got: ${value}`);
  }
  return n;
}

/**
 * Decodes an infer request body. `headerLength` is Inference-Header-Content-Length: the JSON
 * part is body[0:headerLength] (the whole body when undefined) and the rest is binary tensor
 * data; 0 makes the whole body the data of the model's single input. Binary inputs are
 * views into `body`, not copies. Throws INVALID_ARG with Triton's messages.
 */
export function decodeInferRequest(body: Uint8Array, headerLength: number | undefined, ctx: DecodeContext): InferenceRequest {
  const parts = splitBody(body, headerLength, ctx);
  if (!("json" in parts)) return parts;
  return decodeFast(parts, ctx) ?? requestFromJson(parseJsonExact(parts.json), parts.binary, ctx, true);
}

/**
 * decodeInferRequest for the server: when the byte-level parser is needed (JSON.parse
 * refused the body, an integer may have been rounded, or a shape may hold `1.0`), it runs
 * in slices that let other requests through. JSON.parse itself runs in one piece (about
 * 10 ns a byte): sending large bodies to the sliced parser instead was measured and
 * dropped, as it is 10-20 times slower (a 32 MB body of 8M strings took 15 s on a loaded
 * machine, past Bun's idle timeout). With --http-thread-count, decoding runs on the
 * frontend worker threads instead. A promise only when the exact parser runs.
 */
export function decodeInferRequestAsync(body: Uint8Array, headerLength: number | undefined, ctx: DecodeContext): InferenceRequest | Promise<InferenceRequest> {
  const parts = splitBody(body, headerLength, ctx);
  if (!("json" in parts)) return parts;
  // The common body is decoded here and now, without a promise.
  return decodeFast(parts, ctx) ?? parseJsonExactAsync(parts.json).then((doc) => requestFromJson(doc, parts.binary, ctx, true));
}

/** The JSON and binary parts of a body, or the whole request when it is a raw binary one. */
function splitBody(body: Uint8Array, headerLength: number | undefined, ctx: DecodeContext): { json: Uint8Array; binary: Uint8Array } | InferenceRequest {
  if (headerLength !== undefined && !(Number.isInteger(headerLength) && headerLength >= 0 && headerLength <= body.byteLength)) {
    throw invalidArg(`inference header size should be in range (0, ${body.byteLength}), got: ${headerLength}`);
  }
  // As in Triton, an empty body without the header counts as a raw binary request too.
  if ((headerLength ?? body.byteLength) === 0) {
    if (!ctx.rawInput) throw invalidArg(`raw binary request (${HEADER}: 0) is not supported here`);
    const input = ctx.rawInput(body.byteLength);
    return {
      modelName: ctx.modelName,
      modelVersion: ctx.modelVersion,
      parameters: { binary_data_output: true },
      inputs: [{ ...input, data: body }],
    };
  }
  const jsonEnd = headerLength ?? body.byteLength;
  const json = body.subarray(0, jsonEnd);
  checkJsonDepth(json);
  return { json, binary: body.subarray(jsonEnd) };
}

/** The request from JSON.parse's document, or undefined when the exact parser must decide. */
function decodeFast(parts: { json: Uint8Array; binary: Uint8Array }, ctx: DecodeContext): InferenceRequest | undefined {
  const text = jsonText(parts.json);
  const doc = parseJsonFast(text);
  if (doc === undefined || shapeMayHoldDouble(text)) return undefined;
  try {
    return requestFromJson(doc, parts.binary, ctx, false);
  } catch (err) {
    if (err !== NEEDS_EXACT) throw err;
    return undefined;
  }
}

export interface EncodedResponse {
  /** The JSON text when the body is JSON alone (the HTTP server writes it as UTF-8); bytes when binary data follows. */
  body: Uint8Array | string;
  contentType: string;
  /** Byte length of the JSON part, for Inference-Header-Content-Length, when binary data follows it. */
  headerLength?: number;
}

const encoder = new TextEncoder();

/** JSON string literals of model and output names, which repeat from response to response. */
const QUOTED = new Map<string, string>();
const QUOTED_MAX = 1024;

function quoted(name: string): string {
  let q = QUOTED.get(name);
  if (q === undefined) {
    if (QUOTED.size >= QUOTED_MAX) QUOTED.clear();
    q = JSON.stringify(name);
    QUOTED.set(name, q);
  }
  return q;
}

/**
 * Which outputs go binary, as Triton's HTTP frontend decides it: an output named in the
 * request's `outputs` is binary only with `binary_data: true` (one listed without the
 * parameter is JSON, whatever the request says); an output not listed follows the
 * request-level `binary_data_output`.
 */
const ALL_BINARY = () => true;
const NONE_BINARY = () => false;

function binaryChooser(request: InferenceRequest): (name: string) => boolean {
  const fallback = request.parameters.binary_data_output === true;
  if (!request.outputs?.length) return fallback ? ALL_BINARY : NONE_BINARY;
  const listed = new Map<string, boolean>();
  for (const o of request.outputs ?? []) listed.set(o.name, o.parameters?.binary_data === true);
  return (name) => listed.get(name) ?? fallback;
}

/**
 * Encodes a response in Triton's field order: id (only when the request had a non-empty
 * one), model_name, model_version, parameters (when there are any), outputs. When any
 * binary output has bytes, the body is the JSON followed by those bytes in output order,
 * with contentType application/octet-stream and headerLength the JSON's byte length;
 * otherwise the body is the JSON text. An output written as JSON may hold at most
 * `maxJsonOutput` bytes (--http-max-input-size); `written` has the `data` text of outputs
 * already written (by encodeInferResponseAsync).
 */
export function encodeInferResponse(
  response: InferenceResponse,
  request: InferenceRequest,
  maxJsonOutput = Infinity,
  written?: ReadonlyMap<Tensor, string>,
): EncodedResponse {
  const isBinary = binaryChooser(request);
  const blobs: Uint8Array[] = [];
  let json = "{";
  if (request.id) json += `"id":${JSON.stringify(request.id)},`;
  json += `"model_name":${quoted(response.modelName)},"model_version":${quoted(response.modelVersion)}`;
  if (response.parameters && Object.keys(response.parameters).length > 0) json += `,"parameters":${parametersJson(response.parameters)}`;
  json += `,"outputs":[`;
  for (let i = 0; i < response.outputs.length; i++) {
    const t = response.outputs[i]!;
    json += `${i > 0 ? "," : ""}{"name":${quoted(t.name)},"datatype":"${t.datatype}","shape":[${t.shape.join(",")}]`;
    if (t.sharedMemory) {
      // Name, datatype and shape alone, as Triton's HTTP frontend writes an output it put in
      // shared memory (tritonclient's C++ HTTP client refuses one with other parameters).
      json += "}";
    } else if (isBinary(t.name)) {
      json += `,"parameters":{"binary_data_size":${t.data.byteLength}}}`;
      if (t.data.byteLength > 0) blobs.push(t.data);
    } else {
      checkJsonOutputSize(t, response.modelName, maxJsonOutput);
      json += `,"data":${written?.get(t) ?? tensorDataJson(t)}}`;
    }
  }
  json += "]}";
  // Triton sends JSON (no header) when every binary output is empty.
  if (blobs.length === 0) return { body: json, contentType: "application/json" };
  const head = encoder.encode(json);
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

/**
 * encodeInferResponse for the server: JSON outputs over JSON_SLICE_BYTES are written in
 * slices that let other requests through (tensorDataJsonAsync), and the answer is then a
 * promise; without such outputs it is the encoded response itself, with no promise made
 * (a small request pays nothing for the slicing).
 */
export function encodeInferResponseAsync(
  response: InferenceResponse,
  request: InferenceRequest,
  maxJsonOutput = Infinity,
): EncodedResponse | Promise<EncodedResponse> {
  const isBinary = binaryChooser(request);
  const isLarge = (t: OutputTensor) => !t.sharedMemory && t.data.byteLength > JSON_SLICE_BYTES && !isBinary(t.name);
  if (!response.outputs.some(isLarge)) return encodeInferResponse(response, request, maxJsonOutput);
  const large = response.outputs.filter(isLarge);
  return (async () => {
    const written = new Map<Tensor, string>();
    for (const t of large) {
      checkJsonOutputSize(t, response.modelName, maxJsonOutput);
      written.set(t, await tensorDataJsonAsync(t));
    }
    return encodeInferResponse(response, request, maxJsonOutput, written);
  })();
}
