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
import { frontendWorkersSupported } from "../worker-support.ts";
import { Thread } from "../../core/threads/thread.ts";
import { ownBuffer } from "../../core/threads/transfer.ts";
import { fromWireError, type WireError } from "../../core/threads/wire-error.ts";
import { getLogger } from "../../core/logger.ts";

const log = getLogger("src/frontends/http/decode-thread.ts");

/** The JSON part's size from which a body is decoded on the decode thread. */
export const DECODE_THREAD_MIN_BYTES = 4 * 1024 * 1024;

/** A body to decode, to the decode thread. */
export interface ToDecode {
  t: "decode";
  id: number;
  /** The body's bytes, transferred. */
  body: ArrayBuffer;
  headerLength: number | undefined;
  /** The model and version the path names, and --http-max-input-size (a DecodeContext without rawInput). */
  ctx: Omit<DecodeContext, "rawInput">;
}

/** The decode thread's answer: the request (its large tensors' buffers transferred), or why not. */
export type FromDecode = { t: "decoded"; id: number; request: InferenceRequest } | { t: "failed"; id: number; error: WireError };

let thread: Thread<ToDecode, FromDecode> | undefined;
let nextId = 0;
const waiting = new Map<number, { resolve: (r: InferenceRequest) => void; reject: (e: ServerError) => void }>();

function decodeThread(): Thread<ToDecode, FromDecode> {
  if (thread) return thread;
  const t: Thread<ToDecode, FromDecode> = new Thread<ToDecode, FromDecode>(
    workerUrl("src/frontends/http/decode-entry.ts", new URL("./decode-entry.ts", import.meta.url)),
    {
      message: (m) => {
        const job = waiting.get(m.id);
        if (!job) return;
        waiting.delete(m.id);
        if (m.t === "failed") job.reject(fromWireError(m.error));
        else job.resolve(m.request);
      },
      error: (message) => {
        // A thread that failed answers its waiting bodies with an error; the next body starts a new one.
        log.error(`the decode thread failed: ${message}`);
        for (const job of waiting.values()) job.reject(new ServerError("INTERNAL", `the request body could not be decoded: ${message}`));
        waiting.clear();
        t.terminate();
        if (thread === t) thread = undefined;
      },
    },
    // An idle decode thread does not keep the process alive.
    { unref: true },
  );
  log.verbose(1, `started the decode thread for JSON bodies of ${DECODE_THREAD_MIN_BYTES} bytes or more`);
  thread = t;
  return t;
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
  const own = ownBuffer(body);
  const id = nextId++;
  return new Promise((resolve, reject) => {
    waiting.set(id, { resolve, reject });
    decodeThread().send({ t: "decode", id, body: own, headerLength, ctx }, [own]);
  });
}
