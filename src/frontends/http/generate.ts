/**
 * @module The generate extension (P-31): POST /v2/models/{m}[/versions/{v}]/generate and
 * /generate_stream. A flat JSON object: `id` is the request id; every other key (and each
 * key of an optional `parameters` object) is an input when the model has an input of that
 * name, otherwise a request parameter. Each response is a JSON object with `id`,
 * `model_name`, `model_version`, every output as a field named after it (one element as a
 * scalar, more as a flat array) and the response parameters. /generate answers exactly one
 * response; /generate_stream answers `text/event-stream`, one `data: <json>\n\n` event per
 * response, later errors as `data: {"error": ...}` events.
 */
import { ServerError, invalidArg } from "../../core/errors.ts";
import { valuesToBytes } from "../../core/tensor-values.ts";
import { elementCount } from "../../core/tensor.ts";
import { checkJsonDepth } from "./json-parse.ts";
import { tensorDataJson, parametersJson } from "./json-write.ts";
import { forwardHeaders } from "../header-forward.ts";
import { tooLarge } from "./body.ts";
import type { InferenceServer } from "../../server/server.ts";
import type { ModelSignature } from "../../core/signature.ts";
import type { InferenceRequest, InferenceResponse, InputTensor, Parameters, StreamedResponse } from "../../core/request.ts";
import type { HttpRequest, HttpResponse } from "./types.ts";

const SSE_HEADERS = { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" };

export async function handleGenerate(
  server: InferenceServer,
  req: HttpRequest,
  model: string,
  version: string | undefined,
  maxInputSize: number,
  streaming: boolean,
  headerForward?: RegExp,
): Promise<HttpResponse> {
  const resolved = server.resolve(model, version);
  const encoding = (req.header("content-encoding") ?? "identity").trim().toLowerCase();
  if (encoding !== "identity" && encoding !== "") throw invalidArg(`Unsupported Content-Encoding '${encoding}' for generate: only identity is accepted`);
  const declared = req.header("content-length");
  if (declared !== undefined && Number(declared) > maxInputSize) throw tooLarge(declared, maxInputSize);
  const body = await req.body(maxInputSize);
  const request = generateRequest(body, model, version, resolved.signature());
  // Beyond Triton, whose generate endpoints forward no headers: --http-header-forward-pattern applies here as on /infer (P-30).
  if (headerForward && req.headers) forwardHeaders(headerForward, req.headers(), request.parameters);
  request.signal = req.signal;
  const events = server.inferStream(request, resolved);
  if (!streaming) return single(events);
  // Errors before the first response keep their status; later ones become events.
  const first = await events.next();
  if (!first.done && first.value.error) throw first.value.error;
  return { status: 200, headers: SSE_HEADERS, stream: sse(first, events) };
}

/** /generate: exactly one response (a decoupled model's flag-only final does not count). */
async function single(events: AsyncGenerator<StreamedResponse>): Promise<HttpResponse> {
  const responses: InferenceResponse[] = [];
  for await (const r of events) {
    if (r.error) throw r.error;
    if (r.response) responses.push(r.response);
  }
  if (responses.length !== 1) {
    throw invalidArg(
      `generate expects the model to produce exactly one response, it produced ${responses.length}; use generate_stream for models producing 0 or several responses`,
    );
  }
  return { status: 200, headers: { "content-type": "application/json" }, body: responseJson(responses[0]!) };
}

async function* sse(first: IteratorResult<StreamedResponse>, events: AsyncGenerator<StreamedResponse>): AsyncGenerator<string> {
  if (first.done) return;
  const event = (r: StreamedResponse): string | undefined => {
    if (r.error) return `data: ${JSON.stringify({ error: r.error.message })}\n\n`;
    if (!r.response) return undefined;
    try {
      return `data: ${responseJson(r.response)}\n\n`;
    } catch (err) {
      return `data: ${JSON.stringify({ error: ServerError.from(err).message })}\n\n`;
    }
  };
  const e = event(first.value);
  if (e) yield e;
  for await (const r of events) {
    const s = event(r);
    if (s) yield s;
  }
}

/** One response as the generate extension writes it. */
export function responseJson(r: InferenceResponse): string {
  let s = "{";
  if (r.id) s += `"id":${JSON.stringify(r.id)},`;
  s += `"model_name":${JSON.stringify(r.modelName)},"model_version":${JSON.stringify(r.modelVersion)}`;
  for (const t of r.outputs) {
    const data = tensorDataJson(t);
    s += `,${JSON.stringify(t.name)}:${elementCount(t.shape) === 1 ? data.slice(1, -1) : data}`;
  }
  if (r.parameters && Object.keys(r.parameters).length > 0) {
    const p = parametersJson(r.parameters);
    if (p.length > 2) s += "," + p.slice(1, -1);
  }
  return s + "}";
}

/** The body's fields as the model's inputs and the request's parameters. */
export function generateRequest(body: Uint8Array, model: string, version: string | undefined, sig: ModelSignature): InferenceRequest {
  checkJsonDepth(body);
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder().decode(body));
  } catch (err) {
    throw invalidArg(`failed to parse the request JSON buffer: ${(err as Error).message}`);
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) throw invalidArg("the generate request must be a JSON object");
  const fields: Record<string, unknown> = { ...(doc as Record<string, unknown>) };
  const nested = fields.parameters;
  delete fields.parameters;
  if (nested !== undefined) {
    if (typeof nested !== "object" || nested === null || Array.isArray(nested)) throw invalidArg("'parameters' must be a JSON object");
    Object.assign(fields, nested);
  }
  let id: string | undefined;
  if (fields.id !== undefined) {
    if (typeof fields.id !== "string") throw invalidArg("'id' must be a string");
    id = fields.id;
    delete fields.id;
  }
  const inputs: InputTensor[] = [];
  const parameters: Parameters = {};
  for (const [key, value] of Object.entries(fields)) {
    if (sig.inputs.has(key)) {
      inputs.push(inputTensor(sig, key, value));
      continue;
    }
    if (key.startsWith("triton_")) throw invalidArg("parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified.");
    if (typeof value !== "string" && typeof value !== "number" && typeof value !== "boolean") {
      throw invalidArg(`generate: field '${key}' is not an input of model '${model}', and as a parameter it must be a string, number or boolean`);
    }
    parameters[key] = value;
  }
  const request: InferenceRequest = { modelName: model, modelVersion: version, parameters, inputs };
  if (id) request.id = id;
  return request;
}

/**
 * A field as input `name`: a scalar or (nested) array, flattened, spread over the
 * input's dims: the fixed dims as declared, the element count left over in the
 * innermost variable dim, other variable dims 1, a batch dim of 1 for batching models.
 * `context` starts the error message (the OpenAI frontend names its own fields).
 */
export function inputTensor(sig: ModelSignature, name: string, value: unknown, context = "generate: field"): InputTensor {
  const datatype = sig.inputTypes.get(name)!;
  const dims = (sig.inputs.get(name)!.dims ?? []).map(Number);
  const values = Array.isArray(value) ? (value as unknown[]).flat(Infinity) : [value];
  const fixed = dims.reduce((n, d) => (d === -1 ? n : n * d), 1);
  const innermost = dims.lastIndexOf(-1);
  const shape = dims.map((d, i) => (d !== -1 ? d : i === innermost ? (fixed === 0 ? 0 : values.length / fixed) : 1));
  if (elementCount(shape) !== values.length || !Number.isInteger(shape[innermost] ?? 0)) {
    throw invalidArg(`${context} '${name}' has ${values.length} element(s), which do not fit input '${name}' with dims [${dims.join(",")}]`);
  }
  const batched = sig.maxBatchSize > 0;
  return { name, datatype, shape: batched ? [1, ...shape] : shape, data: valuesToBytes(datatype, values, `input '${name}'`) };
}
