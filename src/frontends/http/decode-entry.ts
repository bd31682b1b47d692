/**
 * @module The decode thread's entry (decode-thread.ts): one large JSON infer body in, the
 * request out, decoded as the main thread and the HTTP worker threads decode it, with the
 * tensors' buffers transferred back. Bundled into the compiled binary as an entry point of
 * its own (scripts/build.ts).
 */
import { decodeInferRequestAsync } from "./tensor-codec.ts";
import { inputBuffers, wireError } from "../worker-threads.ts";
import type { DecodeReply, DecodeJob } from "./decode-thread.ts";

declare const self: { onmessage: ((e: MessageEvent<DecodeJob>) => void) | null; postMessage(m: DecodeReply, transfer?: ArrayBuffer[]): void };

self.onmessage = async (e) => {
  const { id, body, headerLength, ctx } = e.data;
  try {
    const request = await decodeInferRequestAsync(new Uint8Array(body), headerLength, {
      ...ctx,
      rawInput: () => {
        throw new Error("a raw binary request is decoded on the main thread");
      },
    });
    self.postMessage({ id, request }, inputBuffers(request));
  } catch (err) {
    self.postMessage({ id, error: wireError(err) });
  }
};
