/**
 * @module The SageMaker frontend (`--allow-sagemaker`, port `--sagemaker-port`), as
 * Triton's sagemaker_server.cc serves a single-model endpoint: `GET /ping` is the
 * server's ready (or live, SAGEMAKER_TRITON_PING_MODE) check, `POST /invocations` infers
 * on SAGEMAKER_TRITON_DEFAULT_MODEL_NAME (infer, generate or generate_stream, by
 * SAGEMAKER_TRITON_INFERENCE_TYPE). A binary body is announced with the content type
 * `application/vnd.sagemaker-triton.binary+json;json-header-size=<n>` instead of the
 * Inference-Header-Content-Length header, and a binary answer carries it back. Both go
 * through the HTTP frontend's own routes (restricted APIs and the size limit included).
 *
 * Not served: the multi-model routes under /models, whose load request names a path on
 * the server for it to read (a network client never names a path here); they answer 501.
 */
import type { HttpHandler } from "./http/routes.ts";
import type { HttpRequest, HttpResponse } from "./http/types.ts";

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

const error = (status: number, message: string): HttpResponse => ({ status, headers: { "content-type": "application/json" }, body: JSON.stringify({ error: message }) });

/** The inference header length a SageMaker body declares in its content type, or undefined for a JSON body; throws the 400 Triton answers. */
function headerLength(contentType: string | undefined, contentLength: number): string | undefined {
  if (!contentType) return undefined;
  const at = contentType.indexOf(BINARY_MIME);
  if (at < 0) return undefined;
  if (at !== 0) throw error(400, `expect MIME type for binary data starts with '${BINARY_MIME}', got: ${contentType}`);
  const raw = contentType.slice(BINARY_MIME.length);
  if (!/^\s*[-+]?\d/.test(raw)) throw error(400, `Unable to parse inference header size, got: ${raw}`);
  const n = Number.parseInt(raw, 10);
  if (n < 0 || n > contentLength) throw error(400, `inference header size should be in range (0, ${contentLength}), got: ${raw}`);
  return String(n);
}

export function createSagemakerHandler(http: HttpHandler, o: SagemakerOptions): HttpHandler {
  const model = encodeURIComponent(o.model);
  return async (req: HttpRequest): Promise<HttpResponse> => {
    if (req.path === "/ping") return http({ ...req, path: `/v2/health/${o.pingMode}` });
    if (req.path === "/invocations") {
      let length: string | undefined;
      try {
        const declared = req.header("content-length");
        length = headerLength(req.header("content-type"), declared === undefined ? Number.MAX_SAFE_INTEGER : Number(declared));
      } catch (answer) {
        return answer as HttpResponse;
      }
      const header = (name: string) => (name.toLowerCase() === "inference-header-content-length" ? length : req.header(name));
      const path = o.inferenceType === "infer" ? `/v2/models/${model}/infer` : `/v2/models/${model}/${o.inferenceType}`;
      const r = await http({ ...req, path, header });
      const binary = r.headers["inference-header-content-length"];
      if (binary === undefined) return r;
      const { "inference-header-content-length": _, ...headers } = r.headers;
      return { ...r, headers: { ...headers, "content-type": BINARY_MIME + binary } };
    }
    if (MODELS.test(req.path)) {
      return error(501, "SageMaker multi-model endpoints (/models) are not served by Nereid: loading names a path on the server");
    }
    return { status: 400, headers: {} };
  };
}
