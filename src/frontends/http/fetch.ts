/**
 * @module The HTTP handler in the web-standard form, `fetch(Request) → Response`: what
 * Bun.serve calls for each request, and what the in-process API (Nereid.fetch) calls with
 * no socket at all.
 */
import { tooLarge } from "./body.ts";
import type { HttpHandler } from "./routes.ts";
import type { HttpRequest, HttpResponse } from "./types.ts";

/** Bun.serve's maxRequestBodySize: out of reach, so that the handler's limit answers (readLimited). */
export const NO_BODY_LIMIT = Number.MAX_SAFE_INTEGER;

/**
 * The request's body, refused (Triton's 400 "Request JSON size ... exceeds") when it
 * declares more than `limit` bytes, or as soon as more than that have come: a chunked body
 * is never held whole past the limit.
 * Bun.serve's own limit is set out of reach, because Bun answers it with an empty 413.
 */
async function readLimited(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null) {
    // A declared length bounds the body; it is read whole with arrayBuffer(), even when
    // empty: in an HTTP worker thread, a body left unread or read through a stream reader
    // left Bun closing the keep-alive connection under the client's next request.
    if (Number(declared) > limit) throw tooLarge(declared, limit);
    return new Uint8Array(await request.arrayBuffer());
  }
  // A body of its own, never a shared constant: what reads it may transfer it to another thread.
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(`more than ${limit}`, limit);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/**
 * A web Request as the handler reads it: method, path (no query string), headers and a
 * body under a limit; `onBodyRead` is called once the body has come whole. One object of
 * a class per request (no closures made per request). `signal` aborts when `request.signal`
 * does, or when abort() is called (a streamed body cancelled); its AbortController and
 * listener are made only when a handler reads it. `answerSignal` is the request's own
 * signal, for an answer that is not streamed. With `signal` given, that is the signal.
 */
export class WebHttpRequest implements HttpRequest {
  readonly method: string;
  readonly path: string;
  readonly #request: Request;
  readonly #onBodyRead: (() => void) | undefined;
  readonly #idle: IdleTimeoutControl | undefined;
  #given: AbortSignal | undefined;
  #controller: AbortController | undefined;
  #listening = false;

  /** With `idle` (Bun.serve's server), the request's idle timeout is turned off once the body has come whole. */
  constructor(request: Request, signal?: AbortSignal, onBodyRead?: () => void, idle?: IdleTimeoutControl) {
    this.#request = request;
    this.#idle = idle;
    this.#given = signal;
    this.#onBodyRead = onBodyRead;
    this.method = request.method;
    const url = request.url;
    // Bun gives an absolute URL, except for a request without a Host header (HTTP/1.0, as
    // HAProxy's httpchk sends one), whose URL is the request target itself: "/v2/...".
    const pathStart = url.charCodeAt(0) === 47 ? 0 : url.indexOf("/", url.indexOf("//") + 2);
    const q = url.indexOf("?", pathStart);
    this.path = pathStart < 0 ? "/" : q < 0 ? url.slice(pathStart) : url.slice(pathStart, q);
  }

  header(name: string): string | undefined {
    return this.#request.headers.get(name) ?? undefined;
  }

  headers(): Iterable<readonly [string, string]> {
    return this.#request.headers.entries();
  }

  async body(limit: number): Promise<Uint8Array> {
    const buf = await readLimited(this.#request, limit);
    this.#onBodyRead?.();
    if (this.#idle) setIdleTimeout(this.#idle, this.#request, 0);
    return buf;
  }

  // Bun.serve aborts request.signal when the client disconnects.
  get signal(): AbortSignal {
    if (this.#given) return this.#given;
    if (!this.#controller) {
      this.#controller = new AbortController();
      const own = this.#request.signal;
      if (own) {
        own.addEventListener("abort", this, { once: true });
        this.#listening = true;
      }
    }
    return this.#controller.signal;
  }

  get answerSignal(): AbortSignal | undefined {
    return this.#given ?? this.#request.signal ?? undefined;
  }

  /** The request's own signal aborted (an EventListener object: no closure per request). */
  handleEvent(): void {
    this.#listening = false;
    this.#controller?.abort();
  }

  /** Aborts `signal` (a streamed body was cancelled). */
  abort(): void {
    this.#controller?.abort();
  }

  /** The answer is written (not streamed): `signal` follows the request's own no longer. */
  settled(): void {
    if (!this.#listening) return;
    this.#listening = false;
    this.#request.signal?.removeEventListener("abort", this);
  }
}

/**
 * Web Headers of frozen header objects (shared by many responses, such as a JSON answer's
 * content type): a Response copies a Headers faster than it reads a plain object.
 */
const WEB_HEADERS = new WeakMap<Record<string, string>, Headers>();

function webHeaders(headers: Record<string, string>): Record<string, string> | Headers {
  if (!Object.isFrozen(headers)) return headers;
  let h = WEB_HEADERS.get(headers);
  if (h === undefined) WEB_HEADERS.set(headers, (h = new Headers(headers)));
  return h;
}

/** `r` as a web Response; a streamed body ends its source when the client cancels it, and calls `onCancel`. */
export function toWebResponse(r: HttpResponse, onCancel?: () => void): Response {
  if (!r.stream) return new Response(r.body ?? null, { status: r.status, headers: webHeaders(r.headers) });
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

/**
 * Bun.serve's idle timeout in seconds (its default): a connection with no bytes moving for
 * this long is closed. It is set again after each answer, for the keep-alive wait.
 */
export const IDLE_TIMEOUT_SECS = 10;

/** What Bun.serve hands its fetch beside the request: the per-request idle timeout. */
export interface IdleTimeoutControl {
  timeout(request: Request, seconds: number): void;
}

function setIdleTimeout(server: IdleTimeoutControl | undefined, request: Request, seconds: number): void {
  try {
    server?.timeout(request, seconds);
  } catch {
    // The client has gone: nothing is left to time out.
  }
}

/** `handler` as a web fetch handler. The handler answers every error itself (Triton's JSON error bodies). */
export function fetchHandler(handler: HttpHandler): (request: Request, onBodyRead?: () => void) => Promise<Response> {
  // Aborted when the client goes away: while the request runs (Request.signal) or mid-stream (the body is cancelled).
  return (request, onBodyRead) => answered(handler, new WebHttpRequest(request, undefined, onBodyRead));
}

async function answered(handler: HttpHandler, req: WebHttpRequest): Promise<Response> {
  const r = await handler(req);
  if (r.stream) return toWebResponse(r, () => req.abort());
  req.settled();
  return toWebResponse(r);
}

/**
 * A Bun.serve fetch whose request is not cut by the idle timeout while the server works on
 * it (#29 finding 10: a load, unload or inference over 10 s lost its answer): the timeout
 * is off from when the body has come whole (a client still sending keeps it) until the
 * answer is ready, then back to IDLE_TIMEOUT_SECS. `handle` gets the request as the
 * handler reads it (WebHttpRequest) beside the web Request.
 */
export function serveWeb(
  handle: (req: WebHttpRequest, request: Request) => Promise<Response>,
): (request: Request, server: IdleTimeoutControl) => Promise<Response> {
  return async (request, server) => {
    try {
      // Not held to the turn's end (answer-turn.ts): Bun closes a connection that pipelines a
      // request while the answer before it is pending, so held answers lost pipelined requests.
      return await handle(new WebHttpRequest(request, undefined, undefined, server), request);
    } finally {
      setIdleTimeout(server, request, IDLE_TIMEOUT_SECS);
    }
  };
}

/** fetchHandler for Bun.serve, through serveWeb. */
export function serveFetch(handler: HttpHandler): (request: Request, server: IdleTimeoutControl) => Promise<Response> {
  return serveWeb((req) => answered(handler, req));
}
