/**
 * @module ocr_bls: the OCR pipeline as one TypeScript model calling the step models
 * through BLS (request.infer), the same steps as the `ocr` ensemble:
 *   ocr_pre → ocr_det → ocr_boxes → ocr_cls → ocr_rotate → ocr_rec → ocr_ctc.
 * Unlike the ensemble it stops after ocr_boxes when no text was found.
 *   in  image  BYTES [1]
 *   out text   BYTES [n], boxes FP32 [n, 4, 2], scores FP32 [n]
 */
import type { BlsResponse, InferenceRequest, InferenceResponse, Tensor, TritonCode, TritonModel } from "../../../src/backends/typescript/api.ts";

/** The output `name` of a BLS answer, renamed to `as` for the next call. */
function take(res: BlsResponse, name: string, as = name): Tensor {
  const t = res.output(name);
  if (!t) throw Object.assign(new Error(`ocr_bls: '${res.model}' gave no output '${name}'`), { code: "INTERNAL" });
  return { ...t, name: as };
}

const CODES = new Set(["INVALID_ARG", "NOT_FOUND", "UNAVAILABLE", "UNSUPPORTED", "INTERNAL", "ALREADY_EXISTS", "CANCELLED"]);

export default class OcrBls implements TritonModel {
  /** Requests run side by side; a step's error fails its own request, with the step's code. */
  async execute(requests: InferenceRequest[]): Promise<InferenceResponse[]> {
    return Promise.all(
      requests.map((r) =>
        this.#one(r).catch((err: unknown): InferenceResponse => {
          const code = (err as { code?: unknown }).code;
          const message = err instanceof Error ? err.message : String(err);
          return { error: typeof code === "string" && CODES.has(code) ? { message, code: code as TritonCode } : message };
        }),
      ),
    );
  }

  async #one(request: InferenceRequest): Promise<InferenceResponse> {
    const image = request.input("image")!;
    const call = (model: string, inputs: Tensor[], outputs?: string[]) => request.infer({ model, inputs, outputs });
    const pre = await call("ocr_pre", [image]);
    const det = await call("ocr_det", [take(pre, "x")]);
    const boxes = await call("ocr_boxes", [take(det, "sigmoid_0.tmp_0", "prob"), take(pre, "rgb")]);
    const lines = take(boxes, "boxes");
    if (lines.shape[0] === 0) {
      return {
        outputs: [
          { name: "text", datatype: "BYTES", shape: [0], data: [] },
          { name: "boxes", datatype: "FP32", shape: [0, 4, 2], data: new Float32Array(0) },
          { name: "scores", datatype: "FP32", shape: [0], data: new Float32Array(0) },
        ],
      };
    }
    const cls = await call("ocr_cls", [take(boxes, "cls_x", "x")]);
    const rotated = await call("ocr_rotate", [take(boxes, "rec_x"), take(boxes, "rec_widths"), take(cls, "softmax_0.tmp_0", "cls_prob")], ["x"]);
    const rec = await call("ocr_rec", [take(rotated, "x")]);
    const ctc = await call("ocr_ctc", [take(rec, "softmax_11.tmp_0", "probs"), lines]);
    return { outputs: [take(ctc, "text"), take(ctc, "boxes"), take(ctc, "scores")] };
  }
}
