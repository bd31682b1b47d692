/**
 * @module POST /v2/models/{m}[/versions/{v}]/infer: body → InferenceRequest (codec),
 * the core's inferAsync, InferenceResponse → body (codec).
 */
import { invalidArg } from "../../core/errors.ts";
import { ELEMENT_SIZE } from "../../core/tensor.ts";
import { decodeInferRequestAsync, encodeInferResponseAsync, parseInferenceHeaderLength } from "./tensor-codec.ts";
import { readBody } from "./body.ts";
import { inferAnswer } from "./infer-answer.ts";
import { decodeOnThread, decodesOnThread } from "./decode-thread.ts";
import { forwardHeaders } from "../header-forward.ts";
import type { InferenceServer } from "../../server/server.ts";
import type { ModelSignature } from "../../core/signature.ts";
import type { HttpRequest, HttpResponse } from "./types.ts";

export async function handleInfer(
  server: InferenceServer,
  req: HttpRequest,
  model: string,
  version: string | undefined,
  maxInputSize: number,
  headerForward?: RegExp,
): Promise<HttpResponse> {
  // As in Triton, an unknown or unavailable model is reported before the body is parsed
  // (whether a stopping server still takes the request depends on its sequence parameters).
  const resolved = server.resolve(model, version, { unary: "HTTP end point doesn't support models with decoupled transaction policy" });
  const body = await readBody(req, maxInputSize);
  const headerLength = parseInferenceHeaderLength(req.header("inference-header-content-length"));
  const decoding = decodesOnThread(body, headerLength)
    ? decodeOnThread(body, headerLength, { modelName: model, modelVersion: version, maxInputSize })
    : decodeInferRequestAsync(body, headerLength, {
        modelName: model,
        modelVersion: version,
        maxInputSize,
        rawInput: (byteLength) => rawInputShape(resolved.signature(), model, byteLength),
      });
  const request = decoding instanceof Promise ? await decoding : decoding;
  if (headerForward && req.headers) forwardHeaders(headerForward, req.headers(), request.parameters);
  // The client going away cancels the inference (S-20; beyond Triton, whose HTTP has no cancellation).
  const signal = req.answerSignal ?? req.signal;
  if (signal) request.signal = signal;
  const response = await server.inferAsync(request, resolved);
  const pending = encodeInferResponseAsync(response, request, maxInputSize);
  return inferAnswer(pending instanceof Promise ? await pending : pending, req.header("accept-encoding"));
}

/** Triton's raw binary request: the whole body is the single input's data. */
function rawInputShape(sig: ModelSignature, model: string, byteLength: number) {
  if (sig.inputs.size !== 1) {
    throw invalidArg(`Raw binary request (Inference-Header-Content-Length: 0) requires model '${model}' to have exactly 1 input, it has ${sig.inputs.size}`);
  }
  const [config] = sig.inputs.values();
  const name = config!.name!;
  const datatype = sig.inputTypes.get(name)!;
  const dims = [...(config!.dims ?? [])];
  const batch = sig.maxBatchSize > 0 ? [1] : [];
  if (datatype === "BYTES") {
    if (dims.length !== 1 || (dims[0] !== 1 && dims[0] !== -1)) {
      throw invalidArg(`Raw binary request for BYTES input '${name}' of model '${model}' requires the input shape [1]`);
    }
    return { name, datatype, shape: [...batch, 1] };
  }
  const variable = dims.filter((d) => d === -1).length;
  if (variable > 1) {
    throw invalidArg(`Raw binary request for input '${name}' of model '${model}' allows at most one variable-size dimension, it has ${variable}`);
  }
  const fixed = dims.reduce((n, d) => (d === -1 ? n : n * d), 1) * ELEMENT_SIZE[datatype];
  if (variable === 1) {
    if (fixed === 0 || byteLength % fixed !== 0) {
      throw invalidArg(`Raw binary request for input '${name}' of model '${model}': ${byteLength} bytes is not a whole number of elements`);
    }
    const idx = dims.indexOf(-1);
    dims[idx] = byteLength / fixed;
  }
  return { name, datatype, shape: [...batch, ...dims] };
}
