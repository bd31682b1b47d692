/**
 * @module ocr_stream: a decoupled model (issue #16) streaming an image's text line by line.
 * ocr_pre → ocr_det → ocr_boxes → ocr_cls → ocr_rotate for the whole image, as ocr_bls
 * does; then for each line, top to bottom, ocr_rec and ocr_ctc on that line alone, and
 * the line goes out at once (a line ocr_ctc drops, scoring under drop_score, sends
 * nothing). The final flag follows the last line; an image without text sends only it.
 *   in   image  BYTES [1]: the PNG or JPEG file, or its base64 text (what a JSON body
 *        can carry: generate and generate_stream)
 *   out  text BYTES [1], box FP32 [4, 2], score FP32 [1]   (one response per line)
 */
import type { BlsResponse, InferenceRequest, ResponseSender, Tensor, TritonCode, TritonModel } from "../../../src/backends/typescript/api.ts";

function take(res: BlsResponse, name: string, as = name): Tensor {
  const t = res.output(name);
  if (!t) throw Object.assign(new Error(`ocr_stream: '${res.model}' gave no output '${name}'`), { code: "INTERNAL" });
  return { ...t, name: as };
}

/** Line `i` of a [n, ...] FP32 tensor, as [1, ...]. */
function line(t: Tensor, i: number): Tensor {
  const data = t.data as Float32Array;
  const size = t.shape.slice(1).reduce((a, b) => a * b, 1);
  return { name: t.name, datatype: "FP32", shape: [1, ...t.shape.slice(1)], data: data.subarray(i * size, (i + 1) * size) };
}

/** The image bytes: a PNG or JPEG as sent, or decoded from base64 text. */
function imageBytes(t: Tensor): Tensor {
  const b = (t.data as Uint8Array[])[0]!;
  const png = b[0] === 0x89 && b[1] === 0x50;
  const jpeg = b[0] === 0xff && b[1] === 0xd8;
  const text = new TextDecoder().decode(b).trim();
  if (png || jpeg || !/^[A-Za-z0-9+/]+=*$/.test(text)) return t;
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return { ...t, data: [out] };
}

const CODES = new Set(["INVALID_ARG", "NOT_FOUND", "UNAVAILABLE", "UNSUPPORTED", "INTERNAL", "ALREADY_EXISTS", "CANCELLED"]);

export default class OcrStream implements TritonModel {
  /** Each request runs on after execute returns; its responses go through its sender. */
  execute(requests: InferenceRequest[]): void {
    for (const r of requests) {
      const sender = r.getResponseSender();
      this.#one(r, sender).then(
        () => sender.send(undefined, { final: true }),
        (err: unknown) => {
          const code = (err as { code?: unknown }).code;
          const message = err instanceof Error ? err.message : String(err);
          sender.send({ error: typeof code === "string" && CODES.has(code) ? { message, code: code as TritonCode } : message }, { final: true });
        },
      );
    }
  }

  async #one(request: InferenceRequest, sender: ResponseSender): Promise<void> {
    const call = (model: string, inputs: Tensor[], outputs?: string[]) => request.infer({ model, inputs, outputs });
    const pre = await call("ocr_pre", [imageBytes(request.input("image")!)]);
    const det = await call("ocr_det", [take(pre, "x")]);
    const boxes = await call("ocr_boxes", [take(det, "sigmoid_0.tmp_0", "prob"), take(pre, "rgb")]);
    const lines = take(boxes, "boxes");
    const n = lines.shape[0]!;
    if (n === 0) return;
    const cls = await call("ocr_cls", [take(boxes, "cls_x", "x")]);
    const rotated = take(await call("ocr_rotate", [take(boxes, "rec_x"), take(boxes, "rec_widths"), take(cls, "softmax_0.tmp_0", "cls_prob")], ["x"]), "x");
    for (let i = 0; i < n; i++) {
      const rec = await call("ocr_rec", [line(rotated, i)]);
      const ctc = await call("ocr_ctc", [take(rec, "softmax_11.tmp_0", "probs"), line(lines, i)]);
      const text = take(ctc, "text");
      if (text.shape[0] === 0) continue;
      const box = take(ctc, "boxes", "box");
      sender.send({
        outputs: [
          { name: "text", datatype: "BYTES", shape: [1], data: text.data as Uint8Array[] },
          { ...box, shape: [4, 2] },
          { ...take(ctc, "scores", "score"), shape: [1] },
        ],
      });
    }
  }
}
