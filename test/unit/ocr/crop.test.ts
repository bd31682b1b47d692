/**
 * ocr_boxes' line crops: the perspective transform, exact copies for axis-aligned boxes,
 * vertical lines turned upright, and the classifier/recogniser tensors (48 px high,
 * normalised, zero-padded on the right, common width 48 × the widest ratio, ≥ 320).
 */
import { describe, it, expect } from "vitest";
import { cropQuad, lineImages, lineTensor, perspectiveTransform, recWidth, rotate90ccw, scaledWidth } from "../../../model_repository/ocr_boxes/1/crop.ts";

/** A 10 x 6 image whose pixel (x, y) is (x, 10·y, 100 + x + y). */
function gradient() {
  const w = 10;
  const h = 6;
  const data = new Uint8Array(w * h * 3);
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) data.set([x, 10 * y, 100 + x + y], (y * w + x) * 3);
  return { width: w, height: h, data };
}

const apply = (m: number[], x: number, y: number) => {
  const w = m[6]! * x + m[7]! * y + m[8]!;
  return [(m[0]! * x + m[1]! * y + m[2]!) / w, (m[3]! * x + m[4]! * y + m[5]!) / w];
};

describe("perspective crop", () => {
  it("maps the four corners onto the four targets", () => {
    const from: [number, number][] = [
      [0, 0],
      [8, 0],
      [8, 2],
      [0, 2],
    ];
    const to: [number, number][] = [
      [3, 1],
      [12, 2],
      [11, 6],
      [2, 4],
    ];
    const m = perspectiveTransform(from, to);
    from.forEach(([x, y], i) => {
      const [u, v] = apply(m, x, y);
      expect(u).toBeCloseTo(to[i]![0], 9);
      expect(v).toBeCloseTo(to[i]![1], 9);
    });
  });

  it("copies an axis-aligned box exactly", () => {
    const crop = cropQuad(gradient(), [
      [2, 1],
      [6, 1],
      [6, 4],
      [2, 4],
    ]);
    expect([crop.width, crop.height]).toEqual([4, 3]);
    const px = (x: number, y: number) => [...crop.data.subarray((y * 4 + x) * 3, (y * 4 + x) * 3 + 3)].map((v) => Math.round(v * 1e6) / 1e6);
    expect(px(0, 0)).toEqual([2, 10, 103]);
    expect(px(3, 2)).toEqual([5, 30, 108]);
  });

  it("replicates the edge outside the image", () => {
    const crop = cropQuad(gradient(), [
      [8, 4],
      [12, 4],
      [12, 8],
      [8, 8],
    ]);
    const px = (x: number, y: number) => [...crop.data.subarray((y * 4 + x) * 3, (y * 4 + x) * 3 + 3)].map((v) => Math.round(v * 1e6) / 1e6);
    expect(px(3, 3)).toEqual([9, 50, 114]); // (11, 7) → clamped to (9, 5)
  });

  it("turns a tall crop (h/w ≥ 1.5) counter-clockwise so the text runs left to right", () => {
    const img = { width: 2, height: 3, data: Float32Array.from([1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6]) };
    const r = rotate90ccw(img);
    expect([r.width, r.height]).toEqual([3, 2]);
    expect([...r.data].filter((_, i) => i % 3 === 0)).toEqual([2, 4, 6, 1, 3, 5]);
    const lines = lineImages(gradient(), [
      [
        [1, 0],
        [3, 0],
        [3, 5],
        [1, 5],
      ],
    ]);
    expect([lines[0]!.width, lines[0]!.height]).toEqual([5, 2]);
  });
});

describe("line tensors", () => {
  it("scales each line to 48 px high, at most the tensor's width", () => {
    expect(scaledWidth({ width: 100, height: 20 }, 320)).toBe(240);
    expect(scaledWidth({ width: 101, height: 20 }, 320)).toBe(243); // ceil(242.4)
    expect(scaledWidth({ width: 400, height: 20 }, 192)).toBe(192);
  });

  it("sizes the recogniser input for the widest line, never under 320", () => {
    expect(recWidth([])).toBe(320);
    expect(recWidth([{ width: 100, height: 20 }])).toBe(320);
    expect(
      recWidth([
        { width: 100, height: 20 },
        { width: 300, height: 30 },
        { width: 700, height: 50 },
      ]),
    ).toBe(672);
  });

  it("normalises to (v/255 − 0.5)/0.5 in BGR planes and pads with zeros", () => {
    // One white-and-red line 2 x 1 → 96 x 48, in a tensor 100 wide.
    const line = { width: 2, height: 1, data: Float32Array.from([255, 255, 255, 255, 0, 0]) };
    const { data, widths } = lineTensor([line], 100);
    expect([...widths]).toEqual([96]);
    expect(data.length).toBe(3 * 48 * 100);
    const at = (c: number, y: number, x: number) => data[(c * 48 + y) * 100 + x]!;
    expect([at(0, 0, 0), at(1, 0, 0), at(2, 0, 0)]).toEqual([1, 1, 1]); // white
    expect([at(0, 47, 95), at(1, 47, 95), at(2, 47, 95)]).toEqual([-1, -1, 1]); // red: B, G low, R high
    expect([at(0, 10, 96), at(2, 47, 99)]).toEqual([0, 0]); // padding
  });
});
