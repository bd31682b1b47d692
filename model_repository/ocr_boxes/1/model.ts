/**
 * @module ocr_boxes: the detector's probability map and the decoded image → the text boxes
 * and the line crops for the angle classifier and the recogniser.
 *   in  prob       FP32  [1, 1, H', W']  (ocr_det's sigmoid_0.tmp_0)
 *       rgb        UINT8 [H, W, 3]
 *   out boxes      FP32  [n, 4, 2]        (corners TL, TR, BR, BL in image pixels, sorted)
 *       cls_x      FP32  [n, 3, 48, 192]  (ocr_cls input)
 *       rec_x      FP32  [n, 3, 48, Wr]   (ocr_rec input, Wr = 48 × widest line ratio, ≥ 320)
 *       rec_widths INT32 [n]              (columns of rec_x each line fills; the rest is padding)
 * With no text (n = 0), cls_x and rec_x still hold one all-padding row: ONNX Runtime cannot
 * run these models on a batch of 0, and an ensemble cannot skip a step. The steps after
 * take the number of lines from rec_widths / boxes and ignore the extra row.
 * Parameters: det_db_thresh (0.3), det_db_box_thresh (0.6), det_db_unclip_ratio (1.5),
 * max_candidates (1000).
 */
import type { InferenceRequest, InferenceResponse, InitializeArgs, TritonModel } from "../../../src/backends/typescript/api.ts";
import { DB_DEFAULTS, detectBoxes, type DbOptions } from "./db-postprocess.ts";
import { CLS_WIDTH, LINE_HEIGHT, lineImages, lineTensor, recWidth } from "./crop.ts";

export default class OcrBoxes implements TritonModel {
  #db: DbOptions = { ...DB_DEFAULTS };

  initialize(args: InitializeArgs): void {
    const p = args.parameters;
    const num = (key: string, fallback: number) => (p[key] === undefined ? fallback : Number(p[key]));
    this.#db = {
      thresh: num("det_db_thresh", DB_DEFAULTS.thresh),
      boxThresh: num("det_db_box_thresh", DB_DEFAULTS.boxThresh),
      unclipRatio: num("det_db_unclip_ratio", DB_DEFAULTS.unclipRatio),
      minSize: DB_DEFAULTS.minSize,
      maxCandidates: num("max_candidates", DB_DEFAULTS.maxCandidates),
    };
    if (Object.values(this.#db).some((v) => !Number.isFinite(v))) throw new Error(`ocr_boxes: bad parameters ${JSON.stringify(p)}`);
  }

  execute(requests: InferenceRequest[]): InferenceResponse[] {
    return requests.map((request) => {
      const prob = request.input("prob")!;
      const rgb = request.input("rgb")!;
      const [mapH, mapW] = prob.shape.slice(-2) as [number, number];
      const [height, width] = rgb.shape as [number, number, number];
      if (prob.shape.length !== 4 || prob.shape[0] !== 1 || prob.shape[1] !== 1) {
        return { error: { message: `ocr_boxes: 'prob' must be [1, 1, H, W], got [${prob.shape.join(", ")}]`, code: "INVALID_ARG" } };
      }
      if (width === 0 || height === 0 || mapW === 0 || mapH === 0) {
        return { error: { message: `ocr_boxes: empty image [${rgb.shape.join(", ")}] or map [${prob.shape.join(", ")}]`, code: "INVALID_ARG" } };
      }
      const image = { width, height, data: rgb.data as Uint8Array };
      const quads = detectBoxes(prob.data as Float32Array, mapW, mapH, width, height, this.#db);
      const lines = lineImages(image, quads);
      const n = quads.length;
      const rows = Math.max(n, 1);
      const cls = lineTensor(lines, CLS_WIDTH, rows);
      const wr = recWidth(lines);
      const rec = lineTensor(lines, wr, rows);
      return {
        outputs: [
          { name: "boxes", datatype: "FP32", shape: [n, 4, 2], data: Float32Array.from(quads.flat(2)) },
          { name: "cls_x", datatype: "FP32", shape: [rows, 3, LINE_HEIGHT, CLS_WIDTH], data: cls.data },
          { name: "rec_x", datatype: "FP32", shape: [rows, 3, LINE_HEIGHT, wr], data: rec.data },
          { name: "rec_widths", datatype: "INT32", shape: [n], data: rec.widths },
        ],
      };
    });
  }
}
