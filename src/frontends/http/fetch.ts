/**
 * @module The HTTP handler in the web-standard form, `fetch(Request) → Response`: what
 * Bun.serve calls for each request, and what the in-process API (Nereid.fetch) calls with
 * no socket at all.
 */
import { tooLarge } from "./body.ts";
import type { HttpHandler } from "./routes.ts";
import type { HttpRequest, HttpResponse } from "./types.ts";

/** A web Request as the handler reads it: method, path (no query string), headers and a body under a limit. */
export function fromWebRequest(request: Request, signal?: AbortSignal): HttpRequest {
  const url = request.url;
  const pathStart = url.indexOf("/", url.indexOf("//") + 2);
  const q = url.indexOf("?", pathStart);
  return {
    method: request.method,
    path: pathStart < 0 ? "/" : q < 0 ? url.slice(pathStart) : url.slice(pathStart, q),
    header: (name) => request.headers.get(name) ?? undefined,
    headers: () => request.headers.entries(),
    body: async (limit) => {
      const buf = new Uint8Array(await request.arrayBuffer());
      if (buf.byteLength > limit) throw tooLarge(buf.byteLength, limit);
      return buf;
    },
    // Bun.serve aborts request.signal when the client disconnects.
    signal: signal ?? request.signal,
  };
}

/** `r` as a web Response; a streamed body ends its source when the client cancels it, and calls `onCancel`. */
export function toWebResponse(r: HttpResponse, onCancel?: () => void): Response {
  if (!r.stream) return new Response(r.body ?? null, { status: r.status, headers: r.headers });
  const it = r.stream[Symbol.asyncIterator]();
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await it.next();
      if (next.done) controller.close();
      else controller.enqueue(encoder.encode(next.value));
    },
    async cancel() {
      onCancel?.();
      await it.return?.();
    },
  });
  return new Response(body, { status: r.status, headers: r.headers });
}

/** `handler` as a web fetch handler. The handler answers every error itself (Triton's JSON error bodies). */
export function fetchHandler(handler: HttpHandler): (request: Request) => Promise<Response> {
  return async (request) => {
    // Aborted when the client goes away: while the request runs (Request.signal) or mid-stream (the body is cancelled).
    const controller = new AbortController();
    const abort = () => controller.abort();
    request.signal?.addEventListener("abort", abort, { once: true });
    const r = await handler(fromWebRequest(request, controller.signal));
    if (!r.stream) request.signal?.removeEventListener("abort", abort);
    return toWebResponse(r, abort);
  };
}
