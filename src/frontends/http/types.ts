/**
 * @module The HTTP request/response shapes the handler works on, independent of the
 * server library (Bun.serve or node:http) that carries them.
 */

export interface HttpRequest {
  method: string;
  /** Path without the query string. */
  path: string;
  /** Lower-case header lookup. */
  header(name: string): string | undefined;
  /** Every header, names in lower case (for header forwarding). */
  headers?(): Iterable<readonly [string, string]>;
  /** The raw (possibly compressed) body; rejects (tooLarge) if it exceeds `limit` bytes, a declared Content-Length past it before reading. */
  body(limit: number): Promise<Uint8Array>;
  /** Aborts when the client goes away before its answer is written (S-20: the inference is cancelled). */
  signal?: AbortSignal;
  /**
   * Aborts when the client goes away before an answer that is not streamed is written:
   * where the server gives one cheaper than `signal` (Bun's Request.signal). Read
   * `signal` instead for a streamed answer.
   */
  answerSignal?: AbortSignal;
}

export interface HttpResponse {
  status: number;
  headers: Record<string, string>;
  body?: Uint8Array | string;
  /** An error that came in the inference response, after queueing (ServerError.inResponse); not sent. */
  inResponse?: boolean;
  /** A streamed body (Server-Sent Events), written chunk by chunk; `body` is then unused. */
  stream?: AsyncIterable<string>;
}

/**
 * `req` with some fields replaced (a path, a method, a header lookup), its other fields and
 * methods still read from `req` itself: a request may be an object of a class
 * (WebHttpRequest), whose methods an object spread would drop.
 */
export function rewrittenRequest(req: HttpRequest, over: Partial<Pick<HttpRequest, "method" | "path" | "header">>): HttpRequest {
  return {
    method: over.method ?? req.method,
    path: over.path ?? req.path,
    header: over.header ?? ((name) => req.header(name)),
    headers: req.headers ? () => req.headers!() : undefined,
    body: (limit) => req.body(limit),
    get signal() {
      return req.signal;
    },
    get answerSignal() {
      return req.answerSignal;
    },
  };
}
