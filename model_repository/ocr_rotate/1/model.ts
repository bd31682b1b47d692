/**
 * @module ocr_rotate: turns the lines the angle classifier finds upside down.
 *   in  rec_x      FP32  [r, 3, 48, W]  (ocr_boxes' recogniser input, r ≥ n rows)
 *       rec_widths INT32 [n]            (n: the number of lines)
 *       cls_prob   FP32  [r, 2]         (ocr_cls' softmax over labels "0", "180")
 *   out x          FP32  [r, 3, 48, W]  (the same rows, upside-down lines turned by 180°)
 *       rotated    BOOL  [n]
 * r = max(n, 1): with no text ocr_boxes sends one padding row, passed on untouched.
 * Parameter: cls_thresh (0.9).
 */
import type { InferenceRequest, InferenceResponse, InitializeArgs, TritonModel } from "../../../src/backends/typescript/api.ts";
import { rotateLines, upsideDown } from "./rotate.ts";

export default class OcrRotate implements TritonModel {
  #thresh = 0.9;

  initialize(args: InitializeArgs): void {
    if (args.parameters.cls_thresh !== undefined) this.#thresh = Number(args.parameters.cls_thresh);
  }

  execute(requests: InferenceRequest[]): InferenceResponse[] {
    return requests.map((request) => {
      const rec = request.input("rec_x")!;
      const widths = request.input("rec_widths")!.data as Int32Array;
      const probs = request.input("cls_prob")!;
      const [rows, channels, height, width] = rec.shape as [number, number, number, number];
      const n = widths.length;
      if (probs.shape[0] !== rows || n > rows || widths.some((w) => w < 0 || w > width)) {
        return {
          error: {
            message: `ocr_rotate: ${rows} rows in rec_x (width ${width}), ${probs.shape[0]} in cls_prob, line widths [${[...widths].join(", ")}]`,
            code: "INVALID_ARG",
          },
        };
      }
      const flip = upsideDown(probs.data as Float32Array, n, this.#thresh);
      const data = (rec.data as Float32Array).slice(); // the input stays as it was
      rotateLines(data, n, channels, height, width, widths, flip);
      return {
        outputs: [
          { name: "x", datatype: "FP32", shape: rec.shape.slice(), data },
          { name: "rotated", datatype: "BOOL", shape: [n], data: Uint8Array.from(flip, (f) => (f ? 1 : 0)) },
        ],
      };
    });
  }
}
