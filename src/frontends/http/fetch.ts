/**
 * @module The HTTP handler in the web-standard form, `fetch(Request) → Response`: what
 * Bun.serve calls for each request, and what the in-process API (Nereid.fetch) calls with
 * no socket at all.
 */
import { tooLarge } from "./body.ts";
import type { HttpHandler } from "./routes.ts";
import type { HttpRequest, HttpResponse } from "./types.ts";

/** A web Request as the handler reads it: method, path (no query string), headers and a body under a limit. */
export function fromWebRequest(request: Request): HttpRequest {
  const url = request.url;
  const pathStart = url.indexOf("/", url.indexOf("//") + 2);
  const q = url.indexOf("?", pathStart);
  return {
    method: request.method,
    path: pathStart < 0 ? "/" : q < 0 ? url.slice(pathStart) : url.slice(pathStart, q),
    header: (name) => request.headers.get(name) ?? undefined,
    // Bun.serve aborts it when the client disconnects.
    signal: request.signal,
    body: async (limit) => {
      const buf = new Uint8Array(await request.arrayBuffer());
      if (buf.byteLength > limit) throw tooLarge(buf.byteLength, limit);
      return buf;
    },
  };
}

export function toWebResponse(r: HttpResponse): Response {
  return new Response(r.body ?? null, { status: r.status, headers: r.headers });
}

/** `handler` as a web fetch handler. The handler answers every error itself (Triton's JSON error bodies). */
export function fetchHandler(handler: HttpHandler): (request: Request) => Promise<Response> {
  return async (request) => toWebResponse(await handler(fromWebRequest(request)));
}
