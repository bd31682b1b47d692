/**
 * @module ocr_pre: PNG/JPEG bytes → the detector's input and the decoded image.
 *   in  image BYTES [1]
 *   out x     FP32  [1, 3, H', W']  (H', W' multiples of 32, longer side ≤ limit_side_len)
 *       rgb   UINT8 [H, W, 3]       (the decoded image, for cropping the lines later)
 * Parameters: limit_side_len (960), max_pixels (40000000: larger images are refused with
 * INVALID_ARG before decoding).
 */
import type { InferenceRequest, InferenceResponse, InitializeArgs, TritonModel } from "../../../src/backends/typescript/api.ts";
import { decodeImage, ImageInputError } from "./image.ts";
import { detInput } from "./det-input.ts";

export default class OcrPre implements TritonModel {
  #limitSide = 960;
  #maxPixels = 40_000_000;

  initialize(args: InitializeArgs): void {
    const p = args.parameters;
    if (p.limit_side_len) this.#limitSide = Number(p.limit_side_len);
    if (p.max_pixels) this.#maxPixels = Number(p.max_pixels);
    if (!(this.#limitSide >= 32) || !(this.#maxPixels > 0))
      throw new Error(`ocr_pre: bad parameters limit_side_len=${p.limit_side_len} max_pixels=${p.max_pixels}`);
  }

  execute(requests: InferenceRequest[]): InferenceResponse[] {
    return requests.map((request) => {
      const image = request.input("image");
      const bytes = image?.datatype === "BYTES" ? (image.data as Uint8Array[])[0] : undefined;
      if (!bytes) return { error: { message: "ocr_pre: input 'image' must hold one BYTES element (a PNG or JPEG file)", code: "INVALID_ARG" } };
      try {
        const img = decodeImage(bytes, { maxPixels: this.#maxPixels });
        const det = detInput(img, this.#limitSide);
        return {
          outputs: [
            { name: "x", datatype: "FP32", shape: [1, 3, det.height, det.width], data: det.data },
            { name: "rgb", datatype: "UINT8", shape: [img.height, img.width, 3], data: img.data },
          ],
        };
      } catch (err) {
        if (err instanceof ImageInputError) return { error: { message: err.message, code: "INVALID_ARG" } };
        throw err;
      }
    });
  }
}
