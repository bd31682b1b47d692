/**
 * @module Large JSON infer bodies decoded off the main thread (#29): JSON.parse of a 10 MB
 * body (a million BYTES elements) runs in one piece for 100 ms or more, and every other
 * request waits meanwhile. A body whose JSON part is DECODE_THREAD_MIN_BYTES or more is
 * transferred to one worker thread, started on first use, which decodes it as the HTTP
 * worker threads do and transfers the request's tensors back. Under Bun (the binary) only;
 * elsewhere, for smaller bodies and for raw binary bodies the caller decodes in place.
 */
import { workerUrl } from "../../core/worker-url.ts";
import { ServerError } from "../../core/errors.ts";
import type { InferenceRequest } from "../../core/request.ts";
import type { DecodeContext } from "./tensor-codec.ts";
import { frontendWorkersSupported, type WireError } from "../worker-threads.ts";
import { getLogger } from "../../core/logger.ts";

const log = getLogger("src/frontends/http/decode-thread.ts");

/** The JSON part's size from which a body is decoded on the decode thread. */
export const DECODE_THREAD_MIN_BYTES = 4 * 1024 * 1024;

export interface DecodeJob {
  id: number;
  /** The body's bytes, transferred. */
  body: ArrayBuffer;
  headerLength: number | undefined;
  /** The model and version the path names, and --http-max-input-size (a DecodeContext without rawInput). */
  ctx: Omit<DecodeContext, "rawInput">;
}

export type DecodeReply = { id: number; request: InferenceRequest; error?: undefined } | { id: number; error: WireError; request?: undefined };

let worker: Worker | undefined;
let nextId = 0;
const waiting = new Map<number, { resolve: (r: InferenceRequest) => void; reject: (e: ServerError) => void }>();

function thread(): Worker {
  if (worker) return worker;
  const w = new Worker(workerUrl("src/frontends/http/decode-entry.ts", new URL("./decode-entry.ts", import.meta.url)));
  w.onmessage = (e: MessageEvent<DecodeReply>) => {
    const job = waiting.get(e.data.id);
    if (!job) return;
    waiting.delete(e.data.id);
    if (e.data.error) job.reject(new ServerError(e.data.error.code, e.data.error.message));
    else job.resolve(e.data.request!);
  };
  w.onerror = (e: ErrorEvent) => {
    // A thread that failed answers its waiting bodies with an error; the next body starts a new one.
    e.preventDefault?.();
    log.error(`the decode thread failed: ${e.message}`);
    for (const job of waiting.values()) job.reject(new ServerError("INTERNAL", `the request body could not be decoded: ${e.message}`));
    waiting.clear();
    w.terminate();
    if (worker === w) worker = undefined;
  };
  // An idle decode thread does not keep the process alive.
  (w as Worker & { unref?: () => void }).unref?.();
  log.verbose(1, `started the decode thread for JSON bodies of ${DECODE_THREAD_MIN_BYTES} bytes or more`);
  worker = w;
  return w;
}

/** Whether `body` goes to the decode thread: a JSON part of DECODE_THREAD_MIN_BYTES or more, where threads are supported. */
export function decodesOnThread(body: Uint8Array, headerLength: number | undefined): boolean {
  const json = headerLength ?? body.byteLength;
  return json >= DECODE_THREAD_MIN_BYTES && json <= body.byteLength && frontendWorkersSupported();
}

/**
 * Decodes `body` on the decode thread. The body's buffer is transferred: the caller must not
 * use it afterwards (a copy is made first when it views only part of its buffer).
 */
export function decodeOnThread(body: Uint8Array, headerLength: number | undefined, ctx: Omit<DecodeContext, "rawInput">): Promise<InferenceRequest> {
  const own = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength && body.buffer instanceof ArrayBuffer ? body.buffer : body.slice().buffer;
  const id = nextId++;
  return new Promise((resolve, reject) => {
    waiting.set(id, { resolve, reject });
    const job: DecodeJob = { id, body: own, headerLength, ctx };
    thread().postMessage(job, [own]);
  });
}
