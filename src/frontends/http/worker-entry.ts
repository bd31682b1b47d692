/**
 * @module One HTTP frontend worker thread (see worker-protocol.ts): Bun.serve on the
 * shared port (SO_REUSEPORT), inference bodies decoded and answers encoded here, the
 * rest posted to the main thread. Started by workers.ts from a URL, and bundled into the
 * compiled binary as an entry point of its own (scripts/build.ts).
 */
import { fromWebRequest, toWebResponse, holdingOpen, NO_BODY_LIMIT, IDLE_TIMEOUT_SECS } from "./fetch.ts";
import { readBody, compressFor } from "./body.ts";
import { inferTarget } from "./infer-path.ts";
import { httpStatus } from "./status.ts";
import { decodeInferRequestAsync, encodeInferResponseAsync, parseInferenceHeaderLength, type EncodedResponse } from "./tensor-codec.ts";
import { compileHeaderForwardPattern, forwardHeaders } from "../header-forward.ts";
import type { InferenceRequest, InferenceResponse } from "../../core/request.ts";
import type { FromWorker, ToWorker, WorkerConfig } from "./worker-protocol.ts";
import { workerDirectRunner } from "../worker-threads.ts";
import { serveThread } from "../../core/threads/serve.ts";
import { inputBuffers } from "../../core/threads/transfer.ts";
import { wireError, type WireError } from "../../core/threads/wire-error.ts";
import { isRetired } from "../../server/direct-runner.ts";

declare const Bun: typeof import("bun");
const { post } = serveThread<ToWorker, FromWorker>(receive, { batch: true });

type Answer =
  | { t: "response"; response: InferenceResponse }
  | { t: "failed"; error: WireError }
  | { t: "reply"; status: number; headers: Record<string, string>; body?: Uint8Array | string }
  | { t: "head"; status: number; headers: Record<string, string> };

interface Pending {
  answer(a: Answer): void;
  /** A streamed body's chunks, once its head has come. */
  chunk?(data: string): void;
  end?(): void;
}

const pending = new Map<number, Pending>();
const direct = workerDirectRunner(post, (model) => `POST /v2/models/${model}/infer`);
let nextId = 0;
let config: WorkerConfig;
let headerForward: RegExp | undefined;
let server: ReturnType<typeof Bun.serve> | undefined;

const errorResponse = (e: WireError) =>
  new Response(JSON.stringify({ error: e.message }), { status: httpStatus(e.code), headers: { "content-type": "application/json" } });

function receive(m: ToWorker): void {
  switch (m.t) {
    case "start":
      start(m.config);
      return;
    case "stop":
      void stop();
      return;
    case "models":
    case "flush":
    case "port":
    case "batch":
      direct.receive(m);
      return;
    case "chunk":
      pending.get(m.id)?.chunk?.(m.data);
      return;
    case "end": {
      const p = pending.get(m.id);
      pending.delete(m.id);
      p?.end?.();
      return;
    }
    default: {
      const p = pending.get(m.id);
      if (m.t !== "head") pending.delete(m.id);
      p?.answer(m);
    }
  }
}

function start(c: WorkerConfig): void {
  config = c;
  try {
    headerForward = compileHeaderForwardPattern("http-header-forward-pattern", c.headerForwardPattern);
    server = Bun.serve({
      hostname: c.address,
      port: c.port,
      reusePort: true,
      maxRequestBodySize: NO_BODY_LIMIT,
      idleTimeout: IDLE_TIMEOUT_SECS,
      fetch: holdingOpen(handle),
      error: (err: Error) => errorResponse({ code: "INTERNAL", message: err.message }),
    });
    post({ t: "listening", port: server.port ?? c.port });
  } catch (err) {
    post({ t: "startFailed", message: (err as Error).message });
  }
}

async function stop(): Promise<void> {
  if (server) {
    await Promise.race([server.stop(false), new Promise((r) => setTimeout(r, 2000))]);
    await server.stop(true);
  }
  post({ t: "stopped" });
}

/** Posts `m` (given its id) and waits for the main thread's answer. */
function ask(id: number, m: FromWorker, transfer?: ArrayBuffer[]): Promise<Answer> {
  return new Promise((resolve) => {
    pending.set(id, { answer: resolve });
    post(m, transfer);
  });
}

async function handle(request: Request, onBodyRead?: () => void): Promise<Response> {
  const controller = new AbortController();
  const id = nextId++;
  const cancel = () => {
    controller.abort();
    post({ t: "cancel", id });
  };
  request.signal?.addEventListener("abort", cancel, { once: true });
  const req = fromWebRequest(request, controller.signal, onBodyRead);
  let raw: Uint8Array | undefined;
  let bodyError: WireError | undefined;
  if (req.method !== "GET" && req.method !== "HEAD") {
    try {
      raw = await req.body(config.maxInputSize);
    } catch (err) {
      bodyError = wireError(err);
    }
  }
  const infer = config.decodeInfer && raw && req.method === "POST" ? inferTarget(req.path) : undefined;
  if (infer && req.header("inference-header-content-length") !== "0") {
    const decoded = await decode(req, raw!).catch(() => undefined);
    if (decoded) {
      decoded.signal = controller.signal;
      const here = direct.runner.run(infer.model, infer.version, decoded);
      if (here) {
        try {
          const response = await here;
          request.signal?.removeEventListener("abort", cancel);
          return encode(req.header("accept-encoding"), response, decoded);
        } catch (err) {
          if (!isRetired(err)) {
            request.signal?.removeEventListener("abort", cancel);
            return errorResponse(wireError(err));
          }
        }
      }
      delete decoded.signal;
      const answer = await ask(
        id,
        { t: "infer", id, model: infer.model, ...(infer.version !== undefined ? { version: infer.version } : {}), request: decoded },
        inputBuffers(decoded),
      );
      request.signal?.removeEventListener("abort", cancel);
      if (answer.t === "failed") return errorResponse(answer.error);
      if (answer.t !== "response") throw new Error(`unexpected answer '${answer.t}' to an inference request`);
      return encode(req.header("accept-encoding"), answer.response, decoded);
    }
    // The main thread decodes it again and answers its errors in Triton's order (an unknown model first).
  }
  return forward(id, req, raw, bodyError, request.signal, cancel);
}

async function decode(req: ReturnType<typeof fromWebRequest>, raw: Uint8Array): Promise<InferenceRequest> {
  const body = await readBody({ method: req.method, path: req.path, header: (name) => req.header(name), body: async () => raw }, config.maxInputSize);
  const request = await decodeInferRequestAsync(body, parseInferenceHeaderLength(req.header("inference-header-content-length")), {
    modelName: "",
    maxInputSize: config.maxInputSize,
    rawInput: () => {
      throw new Error("a raw binary request goes to the main thread");
    },
  });
  if (headerForward && req.headers) forwardHeaders(headerForward, req.headers(), request.parameters);
  return request;
}

/** The answer to an inference; a promise only when a large JSON output is written in slices. Errors in Triton's shape. */
function encode(acceptEncoding: string | undefined, response: InferenceResponse, request: InferenceRequest): Response | Promise<Response> {
  try {
    const pending = encodeInferResponseAsync(response, request, config.maxInputSize);
    if (pending instanceof Promise)
      return pending.then(
        (e) => respond(acceptEncoding, e),
        (err: unknown) => errorResponse(wireError(err)),
      );
    return respond(acceptEncoding, pending);
  } catch (err) {
    return errorResponse(wireError(err));
  }
}

function respond(acceptEncoding: string | undefined, encoded: EncodedResponse): Response {
  const headers: Record<string, string> = { "content-type": encoded.contentType };
  if (encoded.headerLength !== undefined) headers["inference-header-content-length"] = String(encoded.headerLength);
  const compressed = compressFor(acceptEncoding, encoded.body);
  if (compressed.encoding) headers["content-encoding"] = compressed.encoding;
  return new Response(compressed.body, { status: 200, headers });
}

function forward(
  id: number,
  req: ReturnType<typeof fromWebRequest>,
  raw: Uint8Array | undefined,
  bodyError: WireError | undefined,
  signal: AbortSignal | undefined,
  cancel: () => void,
): Promise<Response> {
  const headers = req.headers ? [...req.headers()].map(([k, v]): [string, string] => [k, v]) : [];
  const message: FromWorker = {
    t: "http",
    id,
    method: req.method,
    path: req.path,
    headers,
    ...(raw ? { body: raw } : {}),
    ...(bodyError ? { bodyError } : {}),
  };
  return new Promise((resolve) => {
    const p: Pending = {
      answer: (a) => {
        if (a.t === "reply") {
          signal?.removeEventListener("abort", cancel);
          resolve(new Response(a.body ?? null, { status: a.status, headers: a.headers }));
        } else if (a.t === "head") {
          // A streamed body (SSE). Its chunks may come in the same batch as the head, so
          // they are taken here, before the next message is read.
          const body = relayedBody(id, p);
          const gone = () => {
            pending.delete(id);
            body.close();
            cancel();
          };
          resolve(toWebResponse({ status: a.status, headers: a.headers, stream: body }, gone));
        } else {
          resolve(errorResponse({ code: "INTERNAL", message: `unexpected answer '${a.t}' to an HTTP request` }));
        }
      },
    };
    pending.set(id, p);
    post(message, raw ? [raw.buffer as ArrayBuffer] : undefined);
  });
}

/**
 * The chunks of request `id`'s streamed body as the main thread posts them, each
 * acknowledged as the response takes it: Bun pulls the next chunk only once the socket
 * has taken the last, so the main thread (SendWindow) holds back the stream's producer
 * while the client does not read.
 */
function relayedBody(id: number, p: Pending): AsyncIterable<string> & { close(): void } {
  const queue: string[] = [];
  let ended = false;
  // Resolves the iterator's wait for a chunk (a resolved promise ignores more calls).
  let wake = () => {};
  p.chunk = (data) => {
    queue.push(data);
    wake();
  };
  p.end = () => {
    ended = true;
    wake();
  };
  return {
    close: () => {
      queue.length = 0;
      p.end!();
    },
    async *[Symbol.asyncIterator]() {
      for (;;) {
        const data = queue.shift();
        if (data !== undefined) {
          post({ t: "ack", id, count: 1 });
          yield data;
        } else if (ended) return;
        else await new Promise<void>((resolve) => (wake = resolve));
      }
    },
  };
}
