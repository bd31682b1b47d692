/**
 * @module The binary body of Triton's SageMaker and Vertex AI frontends: instead of the
 * Inference-Header-Content-Length header, the content type
 * `<mime>;json-header-size=<n>` gives the JSON header's length, and a binary answer
 * carries it back the same way (sagemaker_server.cc, vertex_ai_server.cc).
 */
import type { HttpHandler } from "./http/routes.ts";
import { rewrittenRequest, type HttpRequest, type HttpResponse } from "./http/types.ts";

const error = (message: string): HttpResponse => ({ status: 400, headers: { "content-type": "application/json" }, body: JSON.stringify({ error: message }) });

/** The header length `mimePrefix` declares in the content type, undefined for a JSON body, or Triton's 400. */
function headerLength(mimePrefix: string, contentType: string | undefined, contentLength: number): string | undefined | HttpResponse {
  if (!contentType) return undefined;
  const at = contentType.indexOf(mimePrefix);
  if (at < 0) return undefined;
  if (at !== 0) return error(`expect MIME type for binary data starts with '${mimePrefix}', got: ${contentType}`);
  const raw = contentType.slice(mimePrefix.length);
  if (!/^\s*[-+]?\d/.test(raw)) return error(`Unable to parse inference header size, got: ${raw}`);
  const n = Number.parseInt(raw, 10);
  if (n < 0 || n > contentLength) return error(`inference header size should be in range (0, ${contentLength}), got: ${raw}`);
  return String(n);
}

/** Infers through `http` at `path`, translating the binary content type `mimePrefix` both ways. */
export async function inferWithBinaryContentType(http: HttpHandler, req: HttpRequest, path: string, mimePrefix: string): Promise<HttpResponse> {
  const declared = req.header("content-length");
  const length = headerLength(mimePrefix, req.header("content-type"), declared === undefined ? Number.MAX_SAFE_INTEGER : Number(declared));
  if (typeof length === "object") return length;
  const header = (name: string) => (name.toLowerCase() === "inference-header-content-length" ? length : req.header(name));
  const r = await http(rewrittenRequest(req, { path, header }));
  const binary = r.headers["inference-header-content-length"];
  if (binary === undefined) return r;
  const { "inference-header-content-length": _, ...headers } = r.headers;
  return { ...r, headers: { ...headers, "content-type": mimePrefix + binary } };
}
