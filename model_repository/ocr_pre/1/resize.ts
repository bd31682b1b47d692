/**
 * @module Bilinear resampling with OpenCV's INTER_LINEAR geometry (pixel centres at +0.5,
 * edges clamped), the resize PaddleOCR applies before detection and recognition. Works on
 * interleaved channels (HWC) and returns floats, unrounded, for the normalisation after it.
 */

/** For each destination index: the two source indices and the weight of the second. */
function axis(src: number, dst: number): { i0: Int32Array; i1: Int32Array; w: Float32Array } {
  const scale = src / dst;
  const i0 = new Int32Array(dst);
  const i1 = new Int32Array(dst);
  const w = new Float32Array(dst);
  for (let d = 0; d < dst; d++) {
    let f = (d + 0.5) * scale - 0.5;
    let s = Math.floor(f);
    f -= s;
    if (s < 0) {
      s = 0;
      f = 0;
    }
    if (s >= src - 1) {
      s = src - 1;
      f = 0;
    }
    i0[d] = s;
    i1[d] = Math.min(s + 1, src - 1);
    w[d] = f;
  }
  return { i0, i1, w };
}

/**
 * Resizes `src` ([sh, sw, channels], row-major) to [dh, dw, channels]. Returns floats in the
 * source's range (0..255 for bytes).
 */
export function resizeBilinear(src: ArrayLike<number>, sw: number, sh: number, channels: number, dw: number, dh: number): Float32Array {
  if (sw <= 0 || sh <= 0 || dw <= 0 || dh <= 0) throw new RangeError(`resize ${sw}x${sh} → ${dw}x${dh}: sizes must be positive`);
  const out = new Float32Array(dw * dh * channels);
  const xs = axis(sw, dw);
  const ys = axis(sh, dh);
  for (let y = 0; y < dh; y++) {
    const r0 = ys.i0[y]! * sw;
    const r1 = ys.i1[y]! * sw;
    const fy = ys.w[y]!;
    for (let x = 0; x < dw; x++) {
      const c0 = xs.i0[x]!;
      const c1 = xs.i1[x]!;
      const fx = xs.w[x]!;
      const o = (y * dw + x) * channels;
      for (let c = 0; c < channels; c++) {
        const a = src[(r0 + c0) * channels + c]!;
        const b = src[(r0 + c1) * channels + c]!;
        const p = src[(r1 + c0) * channels + c]!;
        const q = src[(r1 + c1) * channels + c]!;
        const top = a + (b - a) * fx;
        const bottom = p + (q - p) * fx;
        out[o + c] = top + (bottom - top) * fy;
      }
    }
  }
  return out;
}

/**
 * RGB floats [h, w, 3] (0..255) → planar [3, h, w] in BGR order (PaddleOCR's models were
 * trained on OpenCV's BGR), each plane as (v / 255 − mean[c]) / std[c], written into
 * `out` at `offset` with `stride` floats per row (stride ≥ w; the rest of a row untouched).
 */
export function normalizeToBgrPlanes(
  rgb: Float32Array,
  w: number,
  h: number,
  mean: readonly [number, number, number],
  std: readonly [number, number, number],
  out: Float32Array,
  offset = 0,
  stride = w,
  rows = h,
): void {
  const plane = stride * rows;
  for (let c = 0; c < 3; c++) {
    const from = 2 - c; // BGR plane c reads RGB channel 2 − c
    const m = mean[c]!;
    const s = std[c]!;
    const base = offset + c * plane;
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) out[base + y * stride + x] = (rgb[(y * w + x) * 3 + from]! / 255 - m) / s;
    }
  }
}
