/**
 * ocr_pre's detector input: PaddleOCR's size rule (longer side ≤ 960, sides rounded to
 * multiples of 32 with Python's rounding), OpenCV's bilinear geometry, and the BGR planes
 * normalised with ImageNet statistics.
 */
import { describe, it, expect } from "vitest";
import { detInput, detInputSize, roundHalfEven } from "../../../model_repository/ocr_pre/1/det-input.ts";
import { normalizeToBgrPlanes, resizeBilinear, resizeToBgrPlanes } from "../../../model_repository/ocr_pre/1/resize.ts";

describe("detInputSize", () => {
  it("scales the longer side down to the limit and rounds both sides to multiples of 32", () => {
    expect(detInputSize(1000, 500, 960)).toEqual({ width: 960, height: 480 });
    expect(detInputSize(2000, 3000, 960)).toEqual({ width: 640, height: 960 });
    expect(detInputSize(100, 50, 960)).toEqual({ width: 96, height: 64 }); // 3.125 → 3, 1.5625 → 2
    expect(detInputSize(80, 48, 960)).toEqual({ width: 64, height: 64 }); // 2.5 → 2 (half to even), 1.5 → 2
    expect(detInputSize(10, 10, 960)).toEqual({ width: 32, height: 32 }); // never below 32
    expect(detInputSize(640, 480, 960)).toEqual({ width: 640, height: 480 }); // not scaled up
  });

  it("rounds halves to even as Python does", () => {
    expect([0.5, 1.5, 2.5, 3.5, 2.4, 2.6, -0.5].map(roundHalfEven)).toEqual([0, 2, 2, 4, 2, 3, 0]);
  });
});

describe("resizeBilinear", () => {
  it("samples at pixel centres with clamped edges (OpenCV INTER_LINEAR)", () => {
    // 2x2 → 4x4: source positions −0.25 (clamped to 0), 0.25, 0.75, 1.25 (clamped to 1).
    const out = resizeBilinear([0, 100, 200, 255], 2, 2, 1, 4, 4);
    expect([...out]).toEqual([0, 25, 75, 100, 50, 72.1875, 116.5625, 138.75, 150, 166.5625, 199.6875, 216.25, 200, 213.75, 241.25, 255]);
  });

  it("keeps channels apart and is the identity at the same size", () => {
    const src = [1, 2, 3, 4, 5, 6];
    expect([...resizeBilinear(src, 2, 1, 3, 2, 1)]).toEqual(src);
    expect([...resizeBilinear(src, 2, 1, 3, 1, 1)]).toEqual([2.5, 3.5, 4.5]);
  });
});

describe("normalisation", () => {
  it("writes BGR planes as (v/255 − mean) / std", () => {
    const out = new Float32Array(6);
    normalizeToBgrPlanes(Float32Array.from([255, 0, 51, 0, 255, 102]), 2, 1, [0.5, 0.5, 0.5], [0.5, 0.5, 0.5], out);
    // B plane, G plane, R plane
    expect([...out].map((v) => Math.round(v * 1e6) / 1e6)).toEqual([-0.6, -0.2, -1, 1, 1, -1]);
  });

  it("makes the detector tensor [1, 3, H', W'] with ImageNet statistics", () => {
    const img = { width: 2, height: 1, data: Uint8Array.from([255, 128, 0, 0, 0, 0]) };
    const det = detInput(img, 960);
    expect([det.width, det.height, det.data.length]).toEqual([32, 32, 3 * 32 * 32]);
    expect([det.ratioW, det.ratioH]).toEqual([16, 32]);
    // Top-left sample is the first pixel (edges clamp): B=0, G=128, R=255.
    expect(det.data[0]).toBeCloseTo((0 - 0.485) / 0.229, 6);
    expect(det.data[32 * 32]).toBeCloseTo((128 / 255 - 0.456) / 0.224, 6);
    expect(det.data[2 * 32 * 32]).toBeCloseTo((1 - 0.406) / 0.225, 6);
    // Bottom-right is the second pixel, black.
    expect(det.data[32 * 32 - 1]).toBeCloseTo(-0.485 / 0.229, 6);
  });
});

describe("resizeToBgrPlanes", () => {
  it("equals resizeBilinear then normalizeToBgrPlanes, into a wider padded row", () => {
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 255;
    const src = Uint8Array.from({ length: 7 * 5 * 3 }, rnd);
    const mean = [0.485, 0.456, 0.406] as const;
    const std = [0.229, 0.224, 0.225] as const;
    const want = new Float32Array(3 * 11 * 9);
    normalizeToBgrPlanes(resizeBilinear(src, 7, 5, 3, 11, 9), 11, 9, mean, std, want);
    const got = new Float32Array(3 * 9 * 13).fill(42);
    resizeToBgrPlanes(src, 7, 5, 11, 9, mean, std, got, 0, 13, 9);
    for (let c = 0; c < 3; c++) {
      for (let y = 0; y < 9; y++) {
        for (let x = 0; x < 13; x++) {
          const v = got[(c * 9 + y) * 13 + x]!;
          if (x < 11) expect(v).toBeCloseTo(want[(c * 9 + y) * 11 + x]!, 5);
          else expect(v).toBe(42); // beyond the line's width: untouched
        }
      }
    }
  });
});
