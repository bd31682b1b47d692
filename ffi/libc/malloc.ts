/**
 * @module glibc's malloc_trim(3): hands memory that native libraries freed (an unloaded
 * ONNX Runtime session's weights and arenas) back to the kernel instead of keeping it
 * in malloc's free lists, so RSS falls after an unload. A no-op where the C library
 * has no malloc_trim (musl).
 */
import { loadLibrary, type KoffiFunc } from "../load.ts";

let trim: KoffiFunc<(pad: number) => number> | null | undefined;

function trimFunc(): KoffiFunc<(pad: number) => number> | null {
  if (trim === undefined) {
    try {
      trim = loadLibrary("the C library", ["libc.so.6"]).lib.func("int malloc_trim(size_t pad)");
    } catch {
      trim = null;
    }
  }
  return trim;
}

/** Returns true when memory was released to the system. */
export function mallocTrim(): boolean {
  const t = trimFunc();
  return t ? t(0) === 1 : false;
}

/**
 * mallocTrim on koffi's worker thread, so that the caller's thread goes on meanwhile (a
 * trim walks every malloc arena: milliseconds after a model load); resolves as mallocTrim
 * returns, never rejects.
 */
export function mallocTrimInBackground(): Promise<boolean> {
  const t = trimFunc();
  if (!t) return Promise.resolve(false);
  return new Promise((resolve) => t.async(0, (err: unknown, released: number) => resolve(!err && released === 1)));
}
