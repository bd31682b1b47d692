/**
 * The OCR step models' classes (model.ts), called directly with hand-made requests as the
 * typescript backend would call them: output names, shapes and datatypes against their
 * configs, one response per request with per-request errors, the padding row when an
 * image has no text, and the order of ocr_bls' BLS calls.
 */
import { describe, it, expect } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { encode as encodePng } from "fast-png";
import type { BlsRequest, BlsResponse, InferenceRequest, InferenceResponse, InitializeArgs, Tensor } from "../../../src/backends/typescript/api.ts";
import { parsePbtxt } from "../../../src/model-config/pbtxt.ts";
import OcrPre from "../../../model_repository/ocr_pre/1/model.ts";
import OcrBoxes from "../../../model_repository/ocr_boxes/1/model.ts";
import OcrRotate from "../../../model_repository/ocr_rotate/1/model.ts";
import OcrCtc from "../../../model_repository/ocr_ctc/1/model.ts";
import OcrBls from "../../../model_repository/ocr_bls/1/model.ts";

const REPO = join(import.meta.dirname, "../../../model_repository");

/** InitializeArgs for `model` with its config's parameters, as the backend gives them. */
function initArgs(model: string): InitializeArgs {
  const config = parsePbtxt(readFileSync(join(REPO, model, "config.pbtxt"), "utf8"), "config.pbtxt") as {
    parameters?: Record<string, { string_value: string }>;
  };
  const parameters = Object.fromEntries(Object.entries(config.parameters ?? {}).map(([k, v]) => [k, v.string_value]));
  const log = () => {};
  return {
    modelConfig: config,
    modelName: model,
    modelVersion: 1,
    instanceName: `${model}_0`,
    instanceKind: "KIND_CPU",
    deviceId: 0,
    repositoryPath: join(REPO, model),
    parameters,
    logger: { info: log, warn: log, error: log, verbose: log },
    metrics: { family: () => Promise.reject(new Error("the OCR models make no metrics")) },
  };
}

function request(inputs: Tensor[], infer?: (call: BlsRequest) => Promise<BlsResponse>): InferenceRequest {
  return {
    id: "",
    inputs,
    input: (name) => inputs.find((t) => t.name === name),
    requestedOutputNames: [],
    parameters: {},
    correlationId: undefined,
    flags: { sequenceStart: false, sequenceEnd: false },
    isCancelled: () => false,
    signal: new AbortController().signal,
    infer: infer ?? (() => Promise.reject(new Error("no BLS here"))),
    stream: () => {
      throw new Error("no BLS streaming here");
    },
    getResponseSender: () => {
      throw new Error("not decoupled");
    },
  };
}

function outputs(res: InferenceResponse): Record<string, Tensor> {
  if (!("outputs" in res)) throw new Error(`error response: ${JSON.stringify(res.error)}`);
  return Object.fromEntries(res.outputs.map((t) => [t.name, t]));
}

const shapes = (res: InferenceResponse) => Object.fromEntries(Object.entries(outputs(res)).map(([n, t]) => [n, [t.datatype, t.shape]]));

describe("ocr_pre", () => {
  it("answers each request on its own: the detector input and the image, or INVALID_ARG", () => {
    const model = new OcrPre();
    model.initialize(initArgs("ocr_pre"));
    const png = encodePng({ width: 3, height: 2, data: new Uint8Array(18).fill(200), channels: 3, depth: 8 });
    const [ok, bad] = model.execute([
      request([{ name: "image", datatype: "BYTES", shape: [1], data: [png] }]),
      request([{ name: "image", datatype: "BYTES", shape: [1], data: [new TextEncoder().encode("GIF89a")] }]),
    ]);
    expect(shapes(ok!)).toEqual({ x: ["FP32", [1, 3, 32, 32]], rgb: ["UINT8", [2, 3, 3]] });
    expect([...(outputs(ok!).rgb!.data as Uint8Array)]).toEqual(Array(18).fill(200));
    expect(bad).toEqual({ error: { message: "unsupported image format GIF: send PNG or JPEG", code: "INVALID_ARG" } });
  });
});

describe("ocr_boxes", () => {
  const model = new OcrBoxes();
  model.initialize(initArgs("ocr_boxes"));
  const rgb = (w: number, h: number): Tensor => ({ name: "rgb", datatype: "UINT8", shape: [h, w, 3], data: new Uint8Array(w * h * 3).fill(255) });

  it("gives the boxes and both crop tensors", () => {
    const prob = new Float32Array(64 * 32);
    for (let y = 5; y <= 14; y++) for (let x = 10; x <= 29; x++) prob[y * 64 + x] = 0.9;
    const [res] = model.execute([request([{ name: "prob", datatype: "FP32", shape: [1, 1, 32, 64], data: prob }, rgb(128, 64)])]);
    expect(shapes(res!)).toEqual({
      boxes: ["FP32", [1, 4, 2]],
      cls_x: ["FP32", [1, 3, 48, 192]],
      rec_x: ["FP32", [1, 3, 48, 320]],
      rec_widths: ["INT32", [1]],
    });
    expect([...(outputs(res!).boxes!.data as Float32Array)]).toEqual([11, 1, 67, 1, 67, 37, 11, 37]);
    expect([...(outputs(res!).rec_widths!.data as Int32Array)]).toEqual([Math.ceil((48 * 56) / 36)]);
  });

  it("with no text, sends one padding row to the ONNX steps and zero lines", () => {
    const [res] = model.execute([request([{ name: "prob", datatype: "FP32", shape: [1, 1, 32, 32], data: new Float32Array(32 * 32) }, rgb(32, 32)])]);
    expect(shapes(res!)).toEqual({
      boxes: ["FP32", [0, 4, 2]],
      cls_x: ["FP32", [1, 3, 48, 192]],
      rec_x: ["FP32", [1, 3, 48, 320]],
      rec_widths: ["INT32", [0]],
    });
    expect((outputs(res!).rec_x!.data as Float32Array).every((v) => v === 0)).toBe(true);
  });
});

describe("ocr_rotate", () => {
  it("turns the lines labelled 180 and leaves its input alone", () => {
    const model = new OcrRotate();
    model.initialize(initArgs("ocr_rotate"));
    const data = Float32Array.from({ length: 2 * 3 * 48 * 4 }, (_, i) => i);
    const [res] = model.execute([
      request([
        { name: "rec_x", datatype: "FP32", shape: [2, 3, 48, 4], data },
        { name: "rec_widths", datatype: "INT32", shape: [2], data: Int32Array.of(4, 4) },
        { name: "cls_prob", datatype: "FP32", shape: [2, 2], data: Float32Array.of(0.05, 0.95, 0.99, 0.01) },
      ]),
    ]);
    const out = outputs(res!);
    expect([...(out.rotated!.data as Uint8Array)]).toEqual([1, 0]);
    const x = out.x!.data as Float32Array;
    expect([x[0], x[48 * 4 - 1], x[3 * 48 * 4]]).toEqual([48 * 4 - 1, 0, 3 * 48 * 4]);
    expect(data[0]).toBe(0);
  });
});

describe("ocr_ctc", () => {
  const model = new OcrCtc();
  model.initialize(initArgs("ocr_ctc"));
  const chars = readFileSync(join(REPO, "ocr_ctc/1/ppocr_keys_v1.txt"), "utf8").split("\n");
  const cls = (ch: string) => chars.indexOf(ch) + 1;
  const C = 6625;

  it("decodes with the dictionary and drops lines under drop_score", () => {
    const probs = new Float32Array(2 * 3 * C);
    const put = (line: number, t: number, c: number, p: number) => (probs[(line * 3 + t) * C + c] = p);
    put(0, 0, cls("O"), 0.99);
    put(0, 1, cls("K"), 0.97);
    put(0, 2, C - 1, 0.95); // space
    put(1, 0, cls("X"), 0.3);
    put(1, 1, 0, 0.9);
    put(1, 2, 0, 0.9);
    const boxes = Float32Array.from({ length: 16 }, (_, i) => i);
    const [res] = model.execute([
      request([
        { name: "probs", datatype: "FP32", shape: [2, 3, C], data: probs },
        { name: "boxes", datatype: "FP32", shape: [2, 4, 2], data: boxes },
      ]),
    ]);
    const out = outputs(res!);
    expect(out.text!.data).toEqual(["OK "]);
    expect(out.boxes!.shape).toEqual([1, 4, 2]);
    expect([...(out.boxes!.data as Float32Array)]).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect((out.scores!.data as Float32Array)[0]).toBeCloseTo((0.99 + 0.97 + 0.95) / 3, 6);
  });

  it("refuses a space_threshold that is not over 0 and at most 1", () => {
    for (const bad of ["0", "1.5", "x"]) {
      const args = initArgs("ocr_ctc");
      args.parameters.space_threshold = bad;
      expect(() => new OcrCtc().initialize(args)).toThrow(`ocr_ctc: space_threshold must be a number over 0 and at most 1, got '${bad}'`);
    }
  });

  it("ignores the padding row when there are no boxes", () => {
    const [res] = model.execute([
      request([
        { name: "probs", datatype: "FP32", shape: [1, 3, C], data: new Float32Array(3 * C) },
        { name: "boxes", datatype: "FP32", shape: [0, 4, 2], data: new Float32Array(0) },
      ]),
    ]);
    expect(shapes(res!)).toEqual({ text: ["BYTES", [0]], boxes: ["FP32", [0, 4, 2]], scores: ["FP32", [0]] });
  });
});

describe("ocr_bls", () => {
  /** A fake server: canned outputs per model, every call recorded. */
  function fakeInfer(lines: number) {
    const calls: string[] = [];
    const t = (name: string, shape: number[]): Tensor => ({ name, datatype: "FP32", shape, data: new Float32Array(shape.reduce((a, b) => a * b, 1)) });
    const canned: Record<string, Tensor[]> = {
      ocr_pre: [t("x", [1, 3, 32, 32]), { name: "rgb", datatype: "UINT8", shape: [32, 32, 3], data: new Uint8Array(32 * 32 * 3) }],
      ocr_det: [t("sigmoid_0.tmp_0", [1, 1, 32, 32])],
      ocr_boxes: [
        t("boxes", [lines, 4, 2]),
        t("cls_x", [1, 3, 48, 192]),
        t("rec_x", [1, 3, 48, 320]),
        { name: "rec_widths", datatype: "INT32", shape: [lines], data: new Int32Array(lines) },
      ],
      ocr_cls: [t("softmax_0.tmp_0", [1, 2])],
      ocr_rotate: [t("x", [1, 3, 48, 320])],
      ocr_rec: [t("softmax_11.tmp_0", [1, 40, 6625])],
      ocr_ctc: [{ name: "text", datatype: "BYTES", shape: [1], data: ["HI"] }, t("boxes", [1, 4, 2]), t("scores", [1])],
    };
    const infer = async (call: BlsRequest): Promise<BlsResponse> => {
      calls.push(`${call.model}(${call.inputs.map((i) => i.name).join(",")})`);
      const outs = canned[call.model]!;
      return { model: call.model, version: 1, outputs: outs, output: (n) => outs.find((o) => o.name === n), parameters: {} };
    };
    return { calls, infer };
  }
  const image: Tensor = { name: "image", datatype: "BYTES", shape: [1], data: [new Uint8Array(1)] };

  it("calls the seven steps in order with the tensors renamed to each step's inputs", async () => {
    const { calls, infer } = fakeInfer(1);
    const [res] = await new OcrBls().execute([request([image], infer)]);
    expect(calls).toEqual([
      "ocr_pre(image)",
      "ocr_det(x)",
      "ocr_boxes(prob,rgb)",
      "ocr_cls(x)",
      "ocr_rotate(rec_x,rec_widths,cls_prob)",
      "ocr_rec(x)",
      "ocr_ctc(probs,boxes)",
    ]);
    expect(outputs(res!).text!.data).toEqual(["HI"]);
  });

  it("stops after ocr_boxes when there is no text", async () => {
    const { calls, infer } = fakeInfer(0);
    const [res] = await new OcrBls().execute([request([image], infer)]);
    expect(calls).toEqual(["ocr_pre(image)", "ocr_det(x)", "ocr_boxes(prob,rgb)"]);
    expect(shapes(res!)).toEqual({ text: ["BYTES", [0]], boxes: ["FP32", [0, 4, 2]], scores: ["FP32", [0]] });
  });

  it("fails only the request whose step failed, with the step's code", async () => {
    const gif = () => Promise.reject(Object.assign(new Error("unsupported image format GIF: send PNG or JPEG"), { code: "INVALID_ARG" }));
    const { infer } = fakeInfer(1);
    const [bad, good] = await new OcrBls().execute([request([image], gif), request([image], infer)]);
    expect(bad).toEqual({ error: { message: "unsupported image format GIF: send PNG or JPEG", code: "INVALID_ARG" } });
    expect(outputs(good!).text!.data).toEqual(["HI"]);
  });
});
