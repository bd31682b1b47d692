/**
 * @module Each text box cut out of the image and made into the classifier's and the
 * recogniser's inputs, as PaddleOCR's get_rotate_crop_image and resize_norm_img do: a
 * perspective warp of the quadrilateral to an upright rectangle (bilinear, edges
 * replicated), turned 90° counter-clockwise when it is at least 1.5 times taller than
 * wide (vertical text), then resized to 48 px high keeping the aspect ratio, normalised to
 * (v / 255 − 0.5) / 0.5 in BGR order and padded with zeros on the right.
 */
import type { RgbImage } from "../../ocr_pre/1/image.ts";
import { resizeToBgrPlanes } from "../../ocr_pre/1/resize.ts";
import type { Point, Quad } from "./db-postprocess.ts";

/** An RGB image with float samples (0..255), row-major [height, width, 3]. */
export interface FloatImage {
  width: number;
  height: number;
  data: Float32Array;
}

export const LINE_HEIGHT = 48;
export const CLS_WIDTH = 192;
/** The recogniser's narrowest input (PP-OCRv4 rec_image_shape 3,48,320). */
export const REC_MIN_WIDTH = 320;
const HALF = [0.5, 0.5, 0.5] as const;

/** Solves a·x = b (n×n, row-major) by Gaussian elimination with partial pivoting. */
function solve(a: number[][], b: number[]): number[] {
  const n = b.length;
  const m = a.map((row, i) => [...row, b[i]!]);
  for (let c = 0; c < n; c++) {
    let p = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(m[r]![c]!) > Math.abs(m[p]![c]!)) p = r;
    if (Math.abs(m[p]![c]!) < 1e-12) throw new RangeError("degenerate quadrilateral: the perspective transform has no solution");
    [m[c], m[p]] = [m[p]!, m[c]!];
    for (let r = 0; r < n; r++) {
      if (r === c) continue;
      const f = m[r]![c]! / m[c]![c]!;
      if (f === 0) continue;
      for (let k = c; k <= n; k++) m[r]![k]! -= f * m[c]![k]!;
    }
  }
  return m.map((row, i) => row[n]! / row[i]!);
}

/** The 3×3 homography (row-major, h[8] = 1) taking each `from[i]` to `to[i]` (OpenCV getPerspectiveTransform). */
export function perspectiveTransform(from: readonly Point[], to: readonly Point[]): number[] {
  const a: number[][] = [];
  const b: number[] = [];
  for (let i = 0; i < 4; i++) {
    const [x, y] = from[i]!;
    const [u, v] = to[i]!;
    a.push([x, y, 1, 0, 0, 0, -x * u, -y * u]);
    b.push(u);
    a.push([0, 0, 0, x, y, 1, -x * v, -y * v]);
    b.push(v);
  }
  return [...solve(a, b), 1];
}

/**
 * The box as an upright image: crop size from the longer of each pair of opposite sides
 * (truncated), each crop pixel (x, y) sampled at the source point the homography maps it to.
 */
export function cropQuad(img: RgbImage, quad: Quad): FloatImage {
  const dist = (p: Point, q: Point) => Math.hypot(p[0] - q[0], p[1] - q[1]);
  const width = Math.trunc(Math.max(dist(quad[0], quad[1]), dist(quad[2], quad[3])));
  const height = Math.trunc(Math.max(dist(quad[0], quad[3]), dist(quad[1], quad[2])));
  if (width < 1 || height < 1) throw new RangeError(`box ${JSON.stringify(quad)} is empty`);
  const h = perspectiveTransform(
    [
      [0, 0],
      [width, 0],
      [width, height],
      [0, height],
    ],
    quad,
  );
  const out = new Float32Array(width * height * 3);
  const { width: sw, height: sh, data: src } = img;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const w = h[6]! * x + h[7]! * y + h[8]!;
      const sx = (h[0]! * x + h[1]! * y + h[2]!) / w;
      const sy = (h[3]! * x + h[4]! * y + h[5]!) / w;
      const x0 = Math.floor(sx);
      const y0 = Math.floor(sy);
      const fx = sx - x0;
      const fy = sy - y0;
      const cx0 = Math.min(Math.max(x0, 0), sw - 1);
      const cx1 = Math.min(Math.max(x0 + 1, 0), sw - 1);
      const cy0 = Math.min(Math.max(y0, 0), sh - 1);
      const cy1 = Math.min(Math.max(y0 + 1, 0), sh - 1);
      const o = (y * width + x) * 3;
      for (let c = 0; c < 3; c++) {
        const a = src[(cy0 * sw + cx0) * 3 + c]!;
        const b = src[(cy0 * sw + cx1) * 3 + c]!;
        const p = src[(cy1 * sw + cx0) * 3 + c]!;
        const q = src[(cy1 * sw + cx1) * 3 + c]!;
        const top = a + (b - a) * fx;
        out[o + c] = top + (p + (q - p) * fx - top) * fy;
      }
    }
  }
  return { width, height, data: out };
}

/** numpy's rot90 (counter-clockwise): out[i][j] = in[j][W − 1 − i]. */
export function rotate90ccw(img: FloatImage): FloatImage {
  const { width: w, height: h, data } = img;
  const out = new Float32Array(data.length);
  for (let i = 0; i < w; i++) {
    for (let j = 0; j < h; j++) {
      const s = (j * w + (w - 1 - i)) * 3;
      const o = (i * h + j) * 3;
      out[o] = data[s]!;
      out[o + 1] = data[s + 1]!;
      out[o + 2] = data[s + 2]!;
    }
  }
  return { width: h, height: w, data: out };
}

/** The crop of each box, vertical ones turned upright. */
export function lineImages(img: RgbImage, quads: readonly Quad[]): FloatImage[] {
  return quads.map((q) => {
    const crop = cropQuad(img, q);
    return crop.height / crop.width >= 1.5 ? rotate90ccw(crop) : crop;
  });
}

/** Width after scaling to LINE_HEIGHT: ceil(48 × w / h), at most `maxWidth`. */
export const scaledWidth = (img: { width: number; height: number }, maxWidth: number) => Math.min(Math.ceil(LINE_HEIGHT * (img.width / img.height)), maxWidth);

/** The recogniser's common input width for these lines: 48 × the widest aspect ratio, at least 320. */
export function recWidth(lines: readonly { width: number; height: number }[]): number {
  let ratio = REC_MIN_WIDTH / LINE_HEIGHT;
  for (const l of lines) ratio = Math.max(ratio, l.width / l.height);
  return Math.trunc(LINE_HEIGHT * ratio);
}

/**
 * Lines → one tensor [rows, 3, 48, width] (rows ≥ lines; extra rows are all padding): each
 * line resized to 48 × scaledWidth, normalised, zero-padded on the right. Returns the
 * tensor and each line's scaled width.
 */
export function lineTensor(lines: readonly FloatImage[], width: number, rows = lines.length): { data: Float32Array; widths: Int32Array } {
  if (rows < lines.length) throw new RangeError(`lineTensor: ${lines.length} lines do not fit in ${rows} rows`);
  const per = 3 * LINE_HEIGHT * width;
  const data = new Float32Array(rows * per);
  const widths = new Int32Array(lines.length);
  lines.forEach((line, i) => {
    const w = scaledWidth(line, width);
    widths[i] = w;
    resizeToBgrPlanes(line.data, line.width, line.height, w, LINE_HEIGHT, HALF, HALF, data, i * per, width, LINE_HEIGHT);
  });
  return { data, widths };
}
