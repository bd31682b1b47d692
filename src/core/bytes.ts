/**
 * @module Byte buffers for small tensors. Each `new ArrayBuffer` costs JSC a malloc'd
 * backing store and GC bookkeeping (~200 ns, more under load), several times per
 * request; small tensors are instead carved, 8-byte aligned, from shared 8 KiB slabs
 * (a view costs ~60 ns). A slab lives while any view into it does, so code that keeps
 * tensor bytes beyond the request (the response cache, sequence state) copies them.
 */

/** Tensors up to this many bytes come from a slab; larger ones get their own buffer. */
export const SMALL_BYTES_MAX = 1024;
const SLAB_BYTES = 8192;

let slab = new ArrayBuffer(SLAB_BYTES);
let used = 0;

/** `n` zeroed bytes, 8-byte aligned: a view into a shared slab when n ≤ SMALL_BYTES_MAX. */
export function allocBytes(n: number): Uint8Array<ArrayBuffer> {
  if (n > SMALL_BYTES_MAX) return new Uint8Array(new ArrayBuffer(n));
  if (used + n > SLAB_BYTES) {
    slab = new ArrayBuffer(SLAB_BYTES);
    used = 0;
  }
  const out = new Uint8Array(slab, used, n);
  used = (used + n + 7) & ~7;
  return out;
}

/**
 * A copy of `src` from allocBytes (ORT outputs, which ORT may overwrite). Not `slice()`:
 * that gives a JSC "fast" typed array, whose first `.buffer` read allocates again.
 */
export function copyBytes(src: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = allocBytes(src.byteLength);
  out.set(src);
  return out;
}
