/**
 * @module ocr_ctc: the recogniser's output → text, and the final filter of the lines.
 *   in  probs  FP32  [r, T, 6625]  (ocr_rec's softmax; r ≥ n, see ocr_boxes' padding row)
 *       boxes  FP32  [n, 4, 2]     (ocr_boxes' boxes, passed through; n = the number of lines)
 *   out text   BYTES [m]           (UTF-8)
 *       boxes  FP32  [m, 4, 2]
 *       scores FP32  [m]
 * Lines scoring below drop_score (0.5, PaddleOCR's default) are left out, so m ≤ n.
 * Parameters: drop_score, dictionary (file in this folder, default ppocr_keys_v1.txt),
 * space_threshold (0.01: a gap between two characters where the space class reaches it reads
 * as a space, see ctc.ts; 1 decodes as PaddleOCR's greedy CTCLabelDecode).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { InferenceRequest, InferenceResponse, InitializeArgs, TritonModel } from "../../../src/backends/typescript/api.ts";
import { SPACE_THRESHOLD, ctcCharacters, ctcDecode } from "./ctc.ts";

export default class OcrCtc implements TritonModel {
  #chars: string[] = [];
  #dropScore = 0.5;
  #spaceThreshold = SPACE_THRESHOLD;

  initialize(args: InitializeArgs): void {
    const p = args.parameters;
    if (p.drop_score !== undefined) this.#dropScore = Number(p.drop_score);
    if (p.space_threshold !== undefined) this.#spaceThreshold = Number(p.space_threshold);
    if (!(this.#spaceThreshold > 0 && this.#spaceThreshold <= 1))
      throw new Error(`ocr_ctc: space_threshold must be a number over 0 and at most 1, got '${p.space_threshold}'`);
    const file = join(args.repositoryPath, String(args.modelVersion), p.dictionary || "ppocr_keys_v1.txt");
    this.#chars = ctcCharacters(readFileSync(file, "utf8"));
  }

  execute(requests: InferenceRequest[]): InferenceResponse[] {
    return requests.map((request) => {
      const probs = request.input("probs")!;
      const boxes = request.input("boxes")!.data as Float32Array;
      const [rows, steps, classes] = probs.shape as [number, number, number];
      const n = boxes.length / 8;
      if (n > rows) return { error: { message: `ocr_ctc: ${n} boxes but only ${rows} recognised rows`, code: "INVALID_ARG" } };
      const lines = ctcDecode(probs.data as Float32Array, n, steps, classes, this.#chars, this.#spaceThreshold);
      const keep = lines.map((l, i) => ({ ...l, i })).filter((l) => l.score >= this.#dropScore);
      const outBoxes = new Float32Array(keep.length * 8);
      keep.forEach((l, k) => outBoxes.set(boxes.subarray(l.i * 8, l.i * 8 + 8), k * 8));
      return {
        outputs: [
          { name: "text", datatype: "BYTES", shape: [keep.length], data: keep.map((l) => l.text) },
          { name: "boxes", datatype: "FP32", shape: [keep.length, 4, 2], data: outBoxes },
          { name: "scores", datatype: "FP32", shape: [keep.length], data: Float32Array.from(keep, (l) => l.score) },
        ],
      };
    });
  }
}
