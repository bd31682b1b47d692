/**
 * ocr_boxes' DB post-processing on synthetic probability maps, with box coordinates
 * worked out by hand: threshold, 8-connected regions, minimum-area rectangles, the mean
 * score filter, unclip by area × 1.5 / perimeter, scaling to the image and line order.
 */
import { describe, it, expect } from "vitest";
import {
  boxScore,
  detectBoxes,
  growRect,
  minAreaRect,
  orderClockwise,
  regionOutlines,
  sortBoxes,
  type Point,
  type Quad,
} from "../../../model_repository/ocr_boxes/1/db-postprocess.ts";

function map(w: number, h: number, fills: [x0: number, y0: number, x1: number, y1: number, p: number][]): Float32Array {
  const m = new Float32Array(w * h);
  for (const [x0, y0, x1, y1, p] of fills) for (let y = y0; y <= y1; y++) for (let x = x0; x <= x1; x++) m[y * w + x] = p;
  return m;
}

describe("detectBoxes", () => {
  // 64 x 32 map: two text lines, a speck (too small) and a faint region (score 0.5 < 0.6).
  const prob = map(64, 32, [
    [10, 5, 29, 14, 0.9],
    [8, 20, 40, 25, 0.8],
    [50, 2, 51, 3, 0.95],
    [45, 20, 60, 27, 0.5],
  ]);

  it("finds the two lines, grown and in map coordinates when the image is the map's size", () => {
    // Line 1: rectangle (10,5)-(29,14), 19 x 9, grown by 19·9·1.5 / 56 = 4.5804 → (5.42, 0.42)-(33.58, 18.58).
    // Line 2: (8,20)-(40,25), 32 x 5, grown by 32·5·1.5 / 74 = 3.2432 → (4.76, 16.76)-(43.24, 28.24).
    expect(detectBoxes(prob, 64, 32, 64, 32)).toEqual([
      [
        [5, 0],
        [34, 0],
        [34, 19],
        [5, 19],
      ],
      [
        [5, 17],
        [43, 17],
        [43, 28],
        [5, 28],
      ],
    ]);
  });

  it("scales to the original image: a 128 x 64 image whose map is 64 x 32", () => {
    expect(detectBoxes(prob, 64, 32, 128, 64)).toEqual([
      [
        [11, 1],
        [67, 1],
        [67, 37],
        [11, 37],
      ],
      [
        [10, 34],
        [86, 34],
        [86, 56],
        [10, 56],
      ],
    ]);
  });

  it("finds nothing in an empty map", () => {
    expect(detectBoxes(new Float32Array(32 * 32), 32, 32, 100, 100)).toEqual([]);
  });

  it("clips boxes to the image", () => {
    // A line touching the left and top edges grows past them.
    expect(detectBoxes(map(40, 20, [[0, 0, 19, 9, 0.9]]), 40, 20, 40, 20)).toEqual([
      [
        [0, 0],
        [24, 0],
        [24, 14],
        [0, 14],
      ],
    ]);
  });
});

describe("regions and rectangles", () => {
  it("joins diagonal neighbours (8-connectivity) and keeps each row's two ends", () => {
    const mask = Uint8Array.from([1, 0, 0, 0, 1, 0, 0, 0, 1]); // 3x3: a diagonal
    expect(regionOutlines(mask, 3, 3)).toEqual([
      [
        [0, 0],
        [1, 1],
        [2, 2],
      ],
    ]);
    const two = Uint8Array.from([1, 1, 0, 1, 1, 1, 0, 0, 0, 0]); // 5x2: x 0-1 and x 3-4 on row 0, x 0 on row 1
    expect(regionOutlines(two, 5, 2)).toEqual([
      [
        [0, 0],
        [1, 0],
        [0, 1],
      ],
      [
        [3, 0],
        [4, 0],
      ],
    ]);
  });

  it("fits the minimum-area rectangle of a rotated rectangle, corners in get_mini_boxes order", () => {
    // A 5 x 10 rectangle turned by atan(3/4), plus an inner point.
    const rect = minAreaRect([
      [0, 3],
      [4, 0],
      [10, 8],
      [6, 11],
      [5, 5],
    ])!;
    const want: Point[] = [
      [4, 0],
      [10, 8],
      [6, 11],
      [0, 3],
    ];
    rect.corners.forEach((p, i) => {
      expect(p[0]).toBeCloseTo(want[i]![0], 9);
      expect(p[1]).toBeCloseTo(want[i]![1], 9);
    });
    expect([rect.width, rect.height].sort((a, b) => a - b).map((v) => Math.round(v * 1e9) / 1e9)).toEqual([5, 10]);
  });

  it("has no rectangle for collinear points", () => {
    expect(
      minAreaRect([
        [0, 0],
        [1, 1],
        [2, 2],
      ]),
    ).toBeUndefined();
    expect(minAreaRect([[3, 4]])).toBeUndefined();
  });

  it("grows a rectangle by the same distance on every side", () => {
    const grown = growRect(
      minAreaRect([
        [0, 0],
        [10, 0],
        [10, 4],
        [0, 4],
      ])!,
      2,
    );
    expect(grown.corners).toEqual([
      [-2, -2],
      [12, -2],
      [12, 6],
      [-2, 6],
    ]);
    expect([grown.width, grown.height]).toEqual([14, 8]);
  });

  it("scores a box by the mean probability of the pixels inside it", () => {
    const w = 6;
    const prob = Float32Array.from({ length: w * 4 }, (_, i) => (i % w) / 8); // value = x / 8
    expect(
      boxScore(prob, w, 4, [
        [1, 1],
        [3, 1],
        [3, 2],
        [1, 2],
      ]),
    ).toBe(0.25); // x 1..3 → mean 2/8
    // A triangle-ish quad: row 0 covers x 0..4, row 2 only x 0..2 (edge from (4,0) to (2,2)).
    expect(
      boxScore(prob, w, 4, [
        [0, 0],
        [4, 0],
        [2, 2],
        [0, 2],
      ]),
    ).toBe((10 + 6 + 3) / 8 / 12);
  });
});

describe("ordering", () => {
  it("orders corners clockwise from the top-left", () => {
    expect(
      orderClockwise([
        [10, 8],
        [0, 3],
        [6, 11],
        [4, 0],
      ]),
    ).toEqual([
      [0, 3],
      [4, 0],
      [10, 8],
      [6, 11],
    ]);
  });

  it("sorts top to bottom, and left to right when tops are within 10 px", () => {
    const box = (x: number, y: number): Quad => [
      [x, y],
      [x + 5, y],
      [x + 5, y + 5],
      [x, y + 5],
    ];
    expect(sortBoxes([box(50, 10), box(0, 40), box(5, 15), box(80, 41)])).toEqual([box(5, 15), box(50, 10), box(0, 40), box(80, 41)]);
  });
});
