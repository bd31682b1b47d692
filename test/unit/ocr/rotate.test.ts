/**
 * ocr_rotate: which lines the angle classifier calls upside down, and the 180° turn of
 * a line's region inside the padded recogniser tensor.
 */
import { describe, it, expect } from "vitest";
import { rotateLines, upsideDown } from "../../../model_repository/ocr_rotate/1/rotate.ts";

describe("upsideDown", () => {
  it("flips only lines labelled 180 with probability above the threshold", () => {
    expect(upsideDown([0.95, 0.05, 0.05, 0.95, 0.15, 0.85, 0.5, 0.5], 4, 0.9)).toEqual([false, true, false, false]);
  });
});

describe("rotateLines", () => {
  it("turns the first widths[i] columns of every plane by 180° and leaves padding and other lines alone", () => {
    // n=2, 1 channel, 2 x 4 per line; line 0 fills 3 columns, line 1 is not flipped.
    const data = Float32Array.from([1, 2, 3, 0, 4, 5, 6, 0, 7, 8, 9, 9, 7, 8, 9, 9]);
    rotateLines(data, 2, 1, 2, 4, [3, 4], [true, false]);
    expect([...data]).toEqual([6, 5, 4, 0, 3, 2, 1, 0, 7, 8, 9, 9, 7, 8, 9, 9]);
  });

  it("keeps the middle of an odd-sized region in place", () => {
    const data = Float32Array.from([1, 2, 3]); // 1 x 3
    rotateLines(data, 1, 1, 1, 3, [3], [true]);
    expect([...data]).toEqual([3, 2, 1]);
  });
});
