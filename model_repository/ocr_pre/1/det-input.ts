/**
 * @module The detector's input, as PaddleOCR's DetResizeForTest (limit_type "max") and
 * NormalizeImage make it: the longer side scaled down to at most `limitSide` (never up),
 * each side then rounded to a multiple of 32 (at least 32), bilinear resize, BGR planes
 * normalised with ImageNet's mean and standard deviation.
 */
import type { RgbImage } from "./image.ts";
import { resizeToBgrPlanes } from "./resize.ts";

/** ImageNet statistics in the BGR order the tensor's planes have. */
export const DET_MEAN = [0.485, 0.456, 0.406] as const;
export const DET_STD = [0.229, 0.224, 0.225] as const;

/** Python's round(): halves go to the even neighbour. */
export function roundHalfEven(v: number): number {
  const f = Math.floor(v);
  const d = v - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

/** The detector's input size for an image of `width` x `height`. */
export function detInputSize(width: number, height: number, limitSide: number): { width: number; height: number } {
  const ratio = Math.max(width, height) > limitSide ? limitSide / Math.max(width, height) : 1;
  const to32 = (v: number) => Math.max(roundHalfEven(Math.trunc(v * ratio) / 32) * 32, 32);
  return { width: to32(width), height: to32(height) };
}

export interface DetInput {
  /** [1, 3, height, width], BGR planes, normalised. */
  data: Float32Array;
  width: number;
  height: number;
  /** resized / original, per axis: [ratio_h, ratio_w] as PaddleOCR's shape_list. */
  ratioH: number;
  ratioW: number;
}

export function detInput(img: RgbImage, limitSide: number): DetInput {
  const { width, height } = detInputSize(img.width, img.height, limitSide);
  const data = new Float32Array(3 * width * height);
  resizeToBgrPlanes(img.data, img.width, img.height, width, height, DET_MEAN, DET_STD, data);
  return { data, width, height, ratioH: height / img.height, ratioW: width / img.width };
}
