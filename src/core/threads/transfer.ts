/**
 * @module Transfer lists (the worker-thread kit, ./thread.ts): which buffers go to the other
 * thread by transfer instead of a copy. A transferred buffer is gone from the sender.
 */
import type { InferenceRequest } from "../request.ts";

/** Tensors at least this large move to the other thread by transfer instead of a copy. */
export const TRANSFER_MIN_BYTES = 64 * 1024;

/**
 * The buffers behind a decoded request's large input tensors, to transfer with it: they
 * were made for this request alone (a received message or body, or a decoded JSON array)
 * and the worker does not read them again. Small tensors may sit in shared slabs and are
 * copied; so are responses, whose buffers the main thread may still hold (the response
 * cache hands out its own).
 */
export function inputBuffers(request: InferenceRequest): ArrayBuffer[] {
  const out = new Set<ArrayBuffer>();
  for (const t of request.inputs) {
    const b = t.data.buffer;
    if (b instanceof ArrayBuffer && b.byteLength >= TRANSFER_MIN_BYTES) out.add(b);
  }
  return [...out];
}

/**
 * A buffer holding exactly `bytes`, to transfer: their own when they view the whole of an
 * ArrayBuffer, else a copy (so that a transfer never takes bytes that others view).
 */
export function ownBuffer(bytes: Uint8Array): ArrayBuffer {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer ? bytes.buffer : bytes.slice().buffer;
}
