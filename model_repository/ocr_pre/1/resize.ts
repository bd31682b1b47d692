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

/**
 * resizeBilinear then normalizeToBgrPlanes in one pass, for 3-channel RGB input (bytes or
 * floats): the same values without the intermediate image. The detector and line tensors
 * are built with this.
 */
export function resizeToBgrPlanes(
  src: Uint8Array | Float32Array,
  sw: number,
  sh: number,
  dw: number,
  dh: number,
  mean: readonly [number, number, number],
  std: readonly [number, number, number],
  out: Float32Array,
  offset = 0,
  stride = dw,
  rows = dh,
): void {
  if (sw <= 0 || sh <= 0 || dw <= 0 || dh <= 0) throw new RangeError(`resize ${sw}x${sh} → ${dw}x${dh}: sizes must be positive`);
  const { i0: xi0, i1: xi1, w: xw } = axis(sw, dw);
  const { i0: yi0, i1: yi1, w: yw } = axis(sh, dh);
  const plane = stride * rows;
  // (v / 255 − mean) / std as v · k − o, per output plane (B, G, R).
  const kb = 1 / (255 * std[0]),
    ob = mean[0] / std[0];
  const kg = 1 / (255 * std[1]),
    og = mean[1] / std[1];
  const kr = 1 / (255 * std[2]),
    or = mean[2] / std[2];
  for (let y = 0; y < dh; y++) {
    const r0 = yi0[y]! * sw * 3;
    const r1 = yi1[y]! * sw * 3;
    const fy = yw[y]!;
    const gy = 1 - fy;
    const bRow = offset + y * stride;
    const gRow = bRow + plane;
    const rRow = gRow + plane;
    for (let x = 0; x < dw; x++) {
      const fx = xw[x]!;
      const gx = 1 - fx;
      const a = r0 + xi0[x]! * 3;
      const b = r0 + xi1[x]! * 3;
      const p = r1 + xi0[x]! * 3;
      const q = r1 + xi1[x]! * 3;
      const wa = gx * gy,
        wb = fx * gy,
        wp = gx * fy,
        wq = fx * fy;
      const red = src[a]! * wa + src[b]! * wb + src[p]! * wp + src[q]! * wq;
      const green = src[a + 1]! * wa + src[b + 1]! * wb + src[p + 1]! * wp + src[q + 1]! * wq;
      const blue = src[a + 2]! * wa + src[b + 2]! * wb + src[p + 2]! * wp + src[q + 2]! * wq;
      out[bRow + x] = blue * kb - ob;
      out[gRow + x] = green * kg - og;
      out[rRow + x] = red * kr - or;
    }
  }
}
