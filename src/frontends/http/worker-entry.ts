/**
 * @module One HTTP frontend worker thread (see worker-protocol.ts): Bun.serve on the
 * shared port (SO_REUSEPORT), inference bodies decoded and answers encoded here, health
 * probes answered here, the rest posted to the main thread. Started by workers.ts from a
 * URL, and bundled into the compiled binary as an entry point of its own (scripts/build.ts).
 */
import { toWebResponse, serveWeb, NO_BODY_LIMIT, IDLE_TIMEOUT_SECS, type WebHttpRequest } from "./fetch.ts";
import { decodedBody } from "./body.ts";
import { inferAnswer } from "./infer-answer.ts";
import { inferTarget } from "./infer-path.ts";
import { httpStatus } from "./status.ts";
import { decodeInferRequestAsync, encodeInferResponseAsync, parseInferenceHeaderLength } from "./tensor-codec.ts";
import { compileHeaderForwardPattern, forwardHeaders } from "../header-forward.ts";
import type { InferenceRequest, InferenceResponse } from "../../core/request.ts";
import type { FromWorker, ToWorker, WorkerConfig } from "./worker-protocol.ts";
import { workerDirectRunner } from "../worker-threads.ts";
import { serveThread } from "../../core/threads/serve.ts";
import { inputBuffers } from "../../core/threads/transfer.ts";
import { wireError, type WireError } from "../../core/threads/wire-error.ts";
import { isRetired } from "../../server/direct-runner.ts";
import { SharedHealth } from "../../server/shared-health.ts";
import { healthAnswer, healthProbe } from "./health-route.ts";

declare const Bun: typeof import("bun");
const { post, postNow } = serveThread<ToWorker, FromWorker>(receive, { batch: true });

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
/** The server's health when this worker answers the health probes itself (WorkerConfig.health). */
let health: SharedHealth | undefined;
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
    case "recordBatches":
    case "flush":
    case "port":
    case "ended":
    case "batch":
    case "stepped":
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
  health = c.health ? new SharedHealth(c.health) : undefined;
  try {
    headerForward = compileHeaderForwardPattern("http-header-forward-pattern", c.headerForwardPattern);
    server = Bun.serve({
      hostname: c.address,
      port: c.port,
      reusePort: true,
      maxRequestBodySize: NO_BODY_LIMIT,
      idleTimeout: IDLE_TIMEOUT_SECS,
      fetch: serveWeb(handle),
      error: (err: Error) => errorResponse({ code: "INTERNAL", message: err.message }),
    });
    postNow({ t: "listening", port: server.port ?? c.port });
  } catch (err) {
    postNow({ t: "startFailed", message: (err as Error).message });
  }
}

async function stop(): Promise<void> {
  if (server) {
    await Promise.race([server.stop(false), new Promise((r) => setTimeout(r, 2000))]);
    await server.stop(true);
  }
  postNow({ t: "stopped" });
}

/** Posts `m` (given its id) and waits for the main thread's answer. */
function ask(id: number, m: FromWorker, transfer?: ArrayBuffer[]): Promise<Answer> {
  return new Promise((resolve) => {
    pending.set(id, { answer: resolve });
    post(m, transfer);
  });
}

/**
 * One request. A health probe, and an inference on a model this worker runs, are answered
 * here without a message to the main thread (#30); the client going away cancels such an
 * inference through the request's own signal. Anything else goes to the main thread, with
 * a "cancel" when the client goes away first.
 */
async function handle(req: WebHttpRequest, request: Request): Promise<Response> {
  const probe = health && healthProbe(req.method, req.path);
  if (probe) return toWebResponse(healthAnswer(probe, health!.read())!);
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
    let decoded: InferenceRequest | undefined;
    try {
      const d = decode(req, raw!);
      decoded = d instanceof Promise ? await d : d;
    } catch {
      // The main thread decodes it again and answers its errors in Triton's order (an unknown model first).
    }
    if (decoded) {
      const signal = req.answerSignal;
      if (signal) decoded.signal = signal;
      const here = direct.runner.run(infer.model, infer.version, decoded);
      if (here) {
        try {
          return encode(req.header("accept-encoding"), await here, decoded);
        } catch (err) {
          if (!isRetired(err)) return errorResponse(wireError(err));
        }
      }
      delete decoded.signal;
      const id = nextId++;
      const forget = cancelling(id, request.signal);
      const answer = await ask(
        id,
        { t: "infer", id, model: infer.model, ...(infer.version !== undefined ? { version: infer.version } : {}), request: decoded },
        inputBuffers(decoded),
      );
      forget();
      if (answer.t === "failed") return errorResponse(answer.error);
      if (answer.t !== "response") throw new Error(`unexpected answer '${answer.t}' to an inference request`);
      return encode(req.header("accept-encoding"), answer.response, decoded);
    }
  }
  return forward(nextId++, req, raw, bodyError, request.signal);
}

/**
 * Posts "cancel" for request `id` when `signal` aborts (the client went away), or at once
 * when it already has; returns the function that stops listening once the answer came.
 */
function cancelling(id: number, signal: AbortSignal | undefined): () => void {
  if (!signal) return () => {};
  const cancel = () => post({ t: "cancel", id });
  if (signal.aborted) {
    queueMicrotask(cancel);
    return () => {};
  }
  signal.addEventListener("abort", cancel, { once: true });
  return () => signal.removeEventListener("abort", cancel);
}

/** The request's body decoded; a promise only when it is compressed or needs the exact parser. */
function decode(req: WebHttpRequest, raw: Uint8Array): InferenceRequest | Promise<InferenceRequest> {
  const body = decodedBody(raw, req.header("content-encoding"), config.maxInputSize);
  if (body instanceof Promise) return body.then((b) => decodeBody(req, b));
  return decodeBody(req, body);
}

function decodeBody(req: WebHttpRequest, body: Uint8Array): InferenceRequest | Promise<InferenceRequest> {
  const decoding = decodeInferRequestAsync(body, parseInferenceHeaderLength(req.header("inference-header-content-length")), {
    modelName: "",
    maxInputSize: config.maxInputSize,
    rawInput: () => {
      throw new Error("a raw binary request goes to the main thread");
    },
  });
  if (!headerForward) return decoding;
  const forwarded = (request: InferenceRequest) => {
    forwardHeaders(headerForward!, req.headers(), request.parameters);
    return request;
  };
  return decoding instanceof Promise ? decoding.then(forwarded) : forwarded(decoding);
}

/** The answer to an inference; a promise only when a large JSON output is written in slices. Errors in Triton's shape. */
function encode(acceptEncoding: string | undefined, response: InferenceResponse, request: InferenceRequest): Response | Promise<Response> {
  try {
    const pending = encodeInferResponseAsync(response, request, config.maxInputSize);
    if (pending instanceof Promise)
      return pending.then(
        (e) => toWebResponse(inferAnswer(e, acceptEncoding)),
        (err: unknown) => errorResponse(wireError(err)),
      );
    return toWebResponse(inferAnswer(pending, acceptEncoding));
  } catch (err) {
    return errorResponse(wireError(err));
  }
}

function forward(
  id: number,
  req: WebHttpRequest,
  raw: Uint8Array | undefined,
  bodyError: WireError | undefined,
  signal: AbortSignal | undefined,
): Promise<Response> {
  const headers = [...req.headers()].map(([k, v]): [string, string] => [k, v]);
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
          forget();
          resolve(new Response(a.body ?? null, { status: a.status, headers: a.headers }));
        } else if (a.t === "head") {
          // A streamed body (SSE). Its chunks may come in the same batch as the head, so
          // they are taken here, before the next message is read.
          const body = relayedBody(id, p);
          // A stream that ends stops listening for the client going away.
          const ended = p.end!;
          p.end = () => {
            forget();
            ended();
          };
          const gone = () => {
            pending.delete(id);
            body.close();
            forget();
            post({ t: "cancel", id });
          };
          resolve(toWebResponse({ status: a.status, headers: a.headers, stream: body }, gone));
        } else {
          resolve(errorResponse({ code: "INTERNAL", message: `unexpected answer '${a.t}' to an HTTP request` }));
        }
      },
    };
    pending.set(id, p);
    post(message, raw ? [raw.buffer as ArrayBuffer] : undefined);
    const forget = cancelling(id, signal);
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
