/**
 * @module Upside-down lines turned back, from the angle classifier's answer (PaddleOCR's
 * TextClassifier): a line whose most likely label is "180" with a probability above
 * `thresh` (0.9) is rotated by 180°. The rotation works on the recogniser's input itself:
 * each line occupies the first `widths[i]` columns of its [3, 48, W] slot (the rest is
 * padding), and turning that region over equals resizing the turned crop, since the
 * bilinear resize samples symmetrically.
 */

/** Which lines the classifier says are upside down: probs [n, 2] for labels ["0", "180"]. */
export function upsideDown(probs: ArrayLike<number>, n: number, thresh: number): boolean[] {
  return Array.from({ length: n }, (_, i) => probs[i * 2 + 1]! > probs[i * 2]! && probs[i * 2 + 1]! > thresh);
}

/**
 * Rotates, in place, the line regions `flip` marks in `data` [n, channels, height, width]:
 * in each line, the first widths[i] columns of every plane turn by 180°.
 */
export function rotateLines(
  data: Float32Array,
  n: number,
  channels: number,
  height: number,
  width: number,
  widths: ArrayLike<number>,
  flip: readonly boolean[],
): void {
  for (let i = 0; i < n; i++) {
    if (!flip[i]) continue;
    const w = widths[i]!;
    for (let c = 0; c < channels; c++) {
      const plane = (i * channels + c) * height * width;
      // Swap pixel (y, x) with (height−1−y, w−1−x) over the first half of the region.
      const total = height * w;
      for (let k = 0; k < total >> 1; k++) {
        const y = Math.floor(k / w);
        const x = k - y * w;
        const a = plane + y * width + x;
        const b = plane + (height - 1 - y) * width + (w - 1 - x);
        const t = data[a]!;
        data[a] = data[b]!;
        data[b] = t;
      }
    }
  }
}
