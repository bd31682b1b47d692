/**
 * ocr_ctc's greedy CTC decoding on hand-made probabilities (with the spaces it reads in a
 * gap between characters), and the dictionary's class layout (blank first, space last)
 * against the recogniser's 6625 classes.
 */
import { describe, it, expect } from "vitest";
import { readFileSync } from "node:fs";
import { ctcCharacters, ctcDecode } from "../../../model_repository/ocr_ctc/1/ctc.ts";

const CHARS = ["", "a", "b", " "];

/** One [steps, 4] probability row per step from the winning class and its probability. */
function probs(steps: [cls: number, p: number][]): number[] {
  return steps.flatMap(([cls, p]) => CHARS.map((_, c) => (c === cls ? p : (1 - p) / 3)));
}

describe("ctcDecode", () => {
  it("merges repeats, drops blanks and averages the kept steps' probabilities", () => {
    // a a _ a b b  →  "aab"; kept steps: 0 (0.9), 3 (0.7), 4 (0.8).
    const p = probs([
      [1, 0.9],
      [1, 0.6],
      [0, 0.99],
      [1, 0.7],
      [2, 0.8],
      [2, 0.5],
    ]);
    const [line] = ctcDecode(p, 1, 6, 4, CHARS);
    expect(line!.text).toBe("aab");
    expect(line!.score).toBeCloseTo((0.9 + 0.7 + 0.8) / 3, 12);
  });

  it("decodes each line of a batch on its own, the space class included", () => {
    const p = [
      ...probs([
        [1, 0.8],
        [3, 0.6],
        [2, 0.7],
      ]),
      ...probs([
        [0, 0.9],
        [0, 0.9],
        [0, 0.9],
      ]),
    ];
    expect(ctcDecode(Float32Array.from(p), 2, 3, 4, CHARS).map((l) => ({ text: l.text, score: Math.round(l.score * 1e6) / 1e6 }))).toEqual([
      { text: "a b", score: 0.7 },
      { text: "", score: 0 },
    ]);
  });

  it("takes the first class on a tie", () => {
    expect(ctcDecode([0.1, 0.4, 0.4, 0.1], 1, 1, 4, CHARS)[0]!.text).toBe("a");
  });

  describe("spaces in a gap (#33 item 5)", () => {
    /** Steps as [blank, a, b, space] probabilities. */
    const rows = (...steps: [number, number, number, number][]) => steps.flat();
    const A: [number, number, number, number] = [0.01, 0.98, 0.005, 0.005];
    const B: [number, number, number, number] = [0.01, 0.005, 0.98, 0.005];
    const gap = (space: number): [number, number, number, number] => [1 - space - 0.0002, 0.0001, 0.0001, space];
    const decode = (p: number[], threshold?: number) => ctcDecode(p, 1, p.length / 4, 4, CHARS, threshold)[0]!;

    it("reads a blank run where the space class reaches the threshold as a space, and leaves the score alone", () => {
      const p = rows(A, gap(0.0005), gap(0.04), gap(0.002), B);
      const line = decode(p);
      expect(line.text).toBe("a b");
      expect(line.score).toBeCloseTo(0.98, 6);
      expect(decode(p, 0.05).text).toBe("ab");
    });

    it("takes 0.01 by default: 0.0099 is no space, 0.01 is", () => {
      expect(decode(rows(A, gap(0.0099), B)).text).toBe("ab");
      expect(decode(rows(A, gap(0.01), B)).text).toBe("a b");
    });

    it("adds no space before the first or after the last character, nor a second one", () => {
      expect(decode(rows(gap(0.3), A, gap(0.2), B, gap(0.3))).text).toBe("a b");
      // The space class winning a step (greedy's own space) is not doubled.
      expect(decode(rows(A, gap(0.3), [0.1, 0, 0, 0.9], gap(0.3), B)).text).toBe("a b");
      // Repeats of one character are merged, blank runs between them still count.
      expect(decode(rows(A, A, gap(0.02), A)).text).toBe("a a");
      expect(decode(rows(A, A, gap(0.002), A)).text).toBe("aa");
    });

    it("with a threshold of 1, decodes as greedy CTC alone (PaddleOCR's CTCLabelDecode)", () => {
      expect(decode(rows(A, gap(0.4), B), 1).text).toBe("ab");
      expect(decode(rows(A, [0.4, 0, 0, 0.6], B), 1).text).toBe("a b");
    });
  });

  it("refuses a dictionary that does not match the classes", () => {
    expect(() => ctcDecode([], 0, 0, 5, CHARS)).toThrow("the recogniser gives 5 classes but the dictionary has 4 (blank + characters + space)");
  });
});

describe("ctcCharacters", () => {
  it("puts the blank first and a space last, one character per line", () => {
    expect(ctcCharacters("x\ny\n")).toEqual(["", "x", "y", " "]);
    expect(ctcCharacters("x\r\ny")).toEqual(["", "x", "y", " "]);
  });

  it("gives PP-OCRv4's 6625 classes for ppocr_keys_v1.txt", () => {
    const chars = ctcCharacters(readFileSync(new URL("../../../model_repository/ocr_ctc/1/ppocr_keys_v1.txt", import.meta.url), "utf8"));
    expect(chars.length).toBe(6625);
    expect(chars.slice(0, 4)).toEqual(["", "'", "疗", "绚"]);
    expect(chars.indexOf("N")).toBeGreaterThan(0);
  });
});
