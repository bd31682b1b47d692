/**
 * @module glibc's malloc_trim(3): hands memory that native libraries freed (an unloaded
 * ONNX Runtime session's weights and arenas) back to the kernel instead of keeping it
 * in malloc's free lists, so RSS falls after an unload. A no-op where the C library
 * has no malloc_trim (musl).
 */
import { loadLibrary, type KoffiFunc } from "../load.ts";

let trim: KoffiFunc<(pad: number) => number> | null | undefined;

/** Returns true when memory was released to the system. */
export function mallocTrim(): boolean {
  if (trim === undefined) {
    try {
      trim = loadLibrary("the C library", ["libc.so.6"]).lib.func("int malloc_trim(size_t pad)");
    } catch {
      trim = null;
    }
  }
  return trim ? trim(0) === 1 : false;
}
