/**
 * @module Greedy CTC decoding of the recogniser's output, as PaddleOCR's CTCLabelDecode:
 * per time step the most likely class (first one on a tie), repeats merged, the blank
 * (class 0) dropped; the line's score is the mean probability of the kept steps (0 when
 * none is kept). Classes map to the dictionary with the blank in front and a space at the
 * end (use_space_char).
 *
 * One addition: a run of blank steps between two characters becomes a space when the space
 * class reaches `spaceThreshold` at one of its steps. PP-OCRv4's general (Chinese and
 * English) recogniser seldom lets the space class win a step over the blank (a known
 * defect of that model, PaddleX#3519): on eleven DejaVu Sans lines at 12 to 80 px it won
 * at 233 of 398 word gaps, yet the space class reached 0.01 at 377 of them, and at 1 of
 * 1358 gaps inside words (docs/quickstart.md). A threshold of 1 decodes exactly as
 * CTCLabelDecode. The added spaces take no part in the score.
 */

/** ocr_ctc's default space_threshold: see the module's comment. */
export const SPACE_THRESHOLD = 0.01;

export interface DecodedLine {
  text: string;
  score: number;
}

/** Dictionary file text (one character per line) → class index → character. */
export function ctcCharacters(dictionary: string): string[] {
  const lines = dictionary.split("\n").map((l) => (l.endsWith("\r") ? l.slice(0, -1) : l));
  if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop(); // the final newline
  return ["", ...lines, " "];
}

/**
 * Decodes `probs` [n, steps, classes] (row-major) with `chars` (index 0 = blank, the
 * space last). `classes` must equal chars.length.
 */
export function ctcDecode(
  probs: ArrayLike<number>,
  n: number,
  steps: number,
  classes: number,
  chars: readonly string[],
  spaceThreshold = SPACE_THRESHOLD,
): DecodedLine[] {
  if (classes !== chars.length)
    throw new RangeError(`the recogniser gives ${classes} classes but the dictionary has ${chars.length} (blank + characters + space)`);
  const space = classes - 1;
  const out: DecodedLine[] = [];
  for (let i = 0; i < n; i++) {
    let text = "";
    let sum = 0;
    let kept = 0;
    let prev = -1;
    // Whether the blank steps since the last character held a likely space.
    let gapSpace = false;
    for (let t = 0; t < steps; t++) {
      const base = (i * steps + t) * classes;
      let best = 0;
      let bestP = probs[base]!;
      for (let c = 1; c < classes; c++) {
        const p = probs[base + c]!;
        if (p > bestP) {
          bestP = p;
          best = c;
        }
      }
      if (best === 0) {
        if (probs[base + space]! >= spaceThreshold) gapSpace = true;
      } else if (best !== prev) {
        if (gapSpace && best !== space && text !== "" && !text.endsWith(" ")) text += " ";
        gapSpace = false;
        text += chars[best];
        sum += bestP;
        kept++;
      }
      prev = best;
    }
    out.push({ text, score: kept === 0 ? 0 : sum / kept });
  }
  return out;
}
