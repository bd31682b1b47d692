/**
 * @module The SageMaker frontend (`--allow-sagemaker`, port `--sagemaker-port`), as
 * Triton's sagemaker_server.cc serves a single-model endpoint: `GET /ping` is the
 * server's ready (or live, SAGEMAKER_TRITON_PING_MODE) check, `POST /invocations` infers
 * on SAGEMAKER_TRITON_DEFAULT_MODEL_NAME (infer, generate or generate_stream, by
 * SAGEMAKER_TRITON_INFERENCE_TYPE). A binary body is announced with the content type
 * `application/vnd.sagemaker-triton.binary+json;json-header-size=<n>` instead of the
 * Inference-Header-Content-Length header, and a binary answer carries it back. Both go
 * through the HTTP frontend's own routes (restricted APIs and the size limit included).
 * As Triton's SageMaker server fixes identity compression both ways, Content-Encoding and
 * Accept-Encoding are not read: a compressed body is parsed as it is, and no answer is
 * compressed.
 *
 * Not served: the multi-model routes under /models, whose load request names a path on
 * the server for it to read (a network client never names a path here); they answer 501.
 */
import type { HttpHandler } from "./http/routes.ts";
import { rewrittenRequest, type HttpRequest, type HttpResponse } from "./http/types.ts";
import { inferWithBinaryContentType } from "./binary-content-type.ts";

export interface SagemakerOptions {
  /** SAGEMAKER_TRITON_DEFAULT_MODEL_NAME (Triton's default: "unspecified_SAGEMAKER_TRITON_DEFAULT_MODEL_NAME"). */
  model: string;
  /** SAGEMAKER_TRITON_PING_MODE: "ready" (default) or "live". */
  pingMode: "ready" | "live";
  /** SAGEMAKER_TRITON_INFERENCE_TYPE: "infer" (default), "generate" or "generate_stream". */
  inferenceType: "infer" | "generate" | "generate_stream";
}

const BINARY_MIME = "application/vnd.sagemaker-triton.binary+json;json-header-size=";
const MODELS = /^\/models(?:\/)?([^/]+)?(\/invoke)?$/;

const error = (status: number, message: string): HttpResponse => ({
  status,
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ error: message }),
});

/** The headers Triton's SageMaker server does not read (its compression type is always identity). */
const IGNORED = new Set(["content-encoding", "accept-encoding"]);

export function createSagemakerHandler(http: HttpHandler, o: SagemakerOptions): HttpHandler {
  const model = encodeURIComponent(o.model);
  return async (sent: HttpRequest): Promise<HttpResponse> => {
    const req = rewrittenRequest(sent, { header: (name) => (IGNORED.has(name.toLowerCase()) ? undefined : sent.header(name)) });
    if (req.path === "/ping") return http(rewrittenRequest(req, { path: `/v2/health/${o.pingMode}` }));
    if (req.path === "/invocations") {
      const path = o.inferenceType === "infer" ? `/v2/models/${model}/infer` : `/v2/models/${model}/${o.inferenceType}`;
      const res = await inferWithBinaryContentType(http, req, path, BINARY_MIME);
      // Triton's SageMaker server answers every error that comes in the inference response
      // (after queueing) 400, whatever its code, "as it may not fit their SLA"; a refusal
      // before queueing keeps the HTTP frontend's status. (Its 507 is for out-of-memory
      // in multi-model endpoints, which Nereid does not serve.)
      return res.inResponse ? { ...res, status: 400 } : res;
    }
    if (MODELS.test(req.path)) {
      return error(501, "SageMaker multi-model endpoints (/models) are not served by Nereid: loading names a path on the server");
    }
    return { status: 400, headers: {} };
  };
}
