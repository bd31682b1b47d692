/**
 * @module An encoded inference response as the HTTP answer, the same on the main thread
 * (infer.ts) and in an HTTP worker thread (worker-entry.ts).
 */
import { compressFor } from "./body.ts";
import type { EncodedResponse } from "./tensor-codec.ts";
import type { HttpResponse } from "./types.ts";

const JSON_TYPE = "application/json";
/** The headers of every uncompressed JSON answer: one frozen object (see toWebResponse). */
const JSON_HEADERS: Readonly<Record<string, string>> = Object.freeze({ "content-type": JSON_TYPE });

/** `encoded` compressed when the client accepts it, with Triton's headers. */
export function inferAnswer(encoded: EncodedResponse, acceptEncoding: string | undefined): HttpResponse {
  const compressed = compressFor(acceptEncoding, encoded.body);
  if (encoded.headerLength === undefined && !compressed.encoding && encoded.contentType === JSON_TYPE)
    return { status: 200, headers: JSON_HEADERS, body: compressed.body };
  const headers: Record<string, string> = { "content-type": encoded.contentType };
  if (encoded.headerLength !== undefined) headers["inference-header-content-length"] = String(encoded.headerLength);
  if (compressed.encoding) headers["content-encoding"] = compressed.encoding;
  return { status: 200, headers, body: compressed.body };
}
