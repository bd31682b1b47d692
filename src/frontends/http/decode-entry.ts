/**
 * @module The decode thread's entry (decode-thread.ts): one large JSON infer body in, the
 * request out, decoded as the main thread and the HTTP worker threads decode it, with the
 * tensors' buffers transferred back. Bundled into the compiled binary as an entry point of
 * its own (scripts/build.ts).
 */
import { decodeInferRequestAsync } from "./tensor-codec.ts";
import { serveThread } from "../../core/threads/serve.ts";
import { inputBuffers } from "../../core/threads/transfer.ts";
import { wireError } from "../../core/threads/wire-error.ts";
import type { FromDecode, ToDecode } from "./decode-thread.ts";

const { post } = serveThread<ToDecode, FromDecode>(async ({ id, body, headerLength, ctx }) => {
  try {
    const request = await decodeInferRequestAsync(new Uint8Array(body), headerLength, {
      ...ctx,
      rawInput: () => {
        throw new Error("a raw binary request is decoded on the main thread");
      },
    });
    post({ t: "decoded", id, request }, inputBuffers(request));
  } catch (err) {
    post({ t: "failed", id, error: wireError(err) });
  }
});
