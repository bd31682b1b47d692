/** S-01: request validation against the model config, with Triton's messages. */
import { describe, it, expect } from "vitest";
import { prepareForInference } from "../../../src/core/request-validate.ts";
import { signatureOf } from "../../../src/core/signature.ts";
import { joinBytes } from "../../../src/core/tensor.ts";
import type { InferenceRequest, InputTensor } from "../../../src/core/request.ts";

const enc = new TextEncoder();
const sig = signatureOf({
  name: "m",
  max_batch_size: 4,
  input: [
    { name: "A", data_type: "TYPE_FP32", dims: [-1, 3] },
    { name: "S", data_type: "TYPE_STRING", dims: [2] },
    { name: "R", data_type: "TYPE_INT32", dims: [1], reshape: { shape: [] } },
    { name: "O", data_type: "TYPE_INT8", dims: [1], optional: true },
  ],
  output: [
    { name: "Y", data_type: "TYPE_FP32", dims: [3] },
    { name: "Z", data_type: "TYPE_INT64", dims: [1] },
  ],
});

const fp32 = (n: number) => new Uint8Array(n * 4);
const strings = (...s: string[]) => joinBytes(s.map((x) => enc.encode(x)));

function request(inputs: InputTensor[], extra: Partial<InferenceRequest> = {}): InferenceRequest {
  return { modelName: "m", parameters: {}, inputs, ...extra };
}

const good = (batch = 2): InputTensor[] => [
  { name: "A", datatype: "FP32", shape: [batch, 5, 3], data: fp32(batch * 15) },
  { name: "S", datatype: "BYTES", shape: [batch, 2], data: strings(...Array(batch * 2).fill("ab")) },
  { name: "R", datatype: "INT32", shape: [batch, 1], data: new Uint8Array(batch * 4) },
];

describe("prepareForInference", () => {
  it("accepts a valid batch, applies reshape and defaults outputs to all", () => {
    const p = prepareForInference(request(good()), sig);
    expect(p.batchSize).toBe(2);
    expect(p.inputs.map((i) => i.shape)).toEqual([[2, 5, 3], [2, 2], [2]]);
    expect(p.outputNames).toEqual(["Y", "Z"]);
  });

  it("keeps the requested output order and reads classification counts", () => {
    const p = prepareForInference(request(good(), { outputs: [{ name: "Z" }, { name: "Y", parameters: { classification: 2 } }] }), sig);
    expect(p.outputNames).toEqual(["Z", "Y"]);
    expect([...p.classification]).toEqual([["Y", 2]]);
  });

  const cases: [string, () => InferenceRequest, string | RegExp][] = [
    [
      "unknown input",
      () => request([...good(), { name: "Q", datatype: "FP32", shape: [2, 1], data: fp32(2) }]),
      "unexpected inference input 'Q' for model 'm'",
    ],
    ["unknown output", () => request(good(), { outputs: [{ name: "W" }] }), "unexpected inference output 'W' for model 'm'"],
    ["duplicate output", () => request(good(), { outputs: [{ name: "Y" }, { name: "Y" }] }), "output 'Y' already requested"],
    [
      "missing input",
      () => request(good().slice(0, 2)),
      "expected 3 inputs but got 2 inputs for model 'm'. Got input(s) ['A','S'], but missing required input(s) ['R']. Please provide all required input(s).",
    ],
    ["batch mismatch", () => request([good(2)[0]!, good(3)[1]!, good(2)[2]!]), "input 'S' batch size does not match other inputs for 'm'"],
    // Found by the fuzz suite (#14): a first input of batch 0 let a later batch 1 through, and the backend refused the tensor.
    ["batch 0 then 2", () => request([good(0)[0]!, good(2)[1]!, good(2)[2]!]), "input 'S' batch size does not match other inputs for 'm'"],
    ["batch too large", () => request(good(5)), "inference request batch-size must be <= 4 for 'm'"],
    ["batch zero", () => request(good(0)), "inference request batch-size must be >= 1 for 'm'"],
    ["no shape", () => request([{ ...good()[0]!, shape: [] }, ...good().slice(1)]), "input 'A' has no shape but model requires batch dimension for 'm'"],
    [
      "datatype",
      () => request([{ ...good()[0]!, datatype: "FP64" }, ...good().slice(1)]),
      "inference input 'A' data-type is 'FP64', but model 'm' expects 'FP32'",
    ],
    [
      "shape",
      () => request([{ ...good()[0]!, shape: [2, 5, 4], data: fp32(40) }, ...good().slice(1)]),
      /^unexpected shape for input 'A' for model 'm'\. Expected \[-1,-1,3\], got \[2,5,4\]\. NOTE: Setting a non-zero max_batch_size/,
    ],
    ["negative dim", () => request([{ ...good()[0]!, shape: [2, -1, 3] }, ...good().slice(1)]), /^unexpected shape for input 'A'/],
    [
      "a 20k-dim shape, quoted cut short",
      () => request([{ ...good()[0]!, shape: [2, ...Array(19_999).fill(1)] }, ...good().slice(1)]),
      /^unexpected shape for input 'A' for model 'm'\. Expected \[-1,-1,3\], got \[2,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,\.\.\.\] \(20000 dims\)\. NOTE: .{0,400}$/,
    ],
    [
      "string framing in the last prefix",
      () => request([good()[0]!, { ...good()[1]!, data: new Uint8Array([0, 0, 0, 0, 1, 0]) }, good()[2]!]),
      "input 'S' for model 'm': incomplete string length prefix at byte 4",
    ],
    [
      "byte size",
      () => request([{ ...good()[0]!, data: fp32(29) }, ...good().slice(1)]),
      "input byte size mismatch for input 'A' for model 'm'. Expected 120, got 116",
    ],
    [
      "string count",
      () => request([good()[0]!, { ...good()[1]!, data: strings("a", "b", "c") }, good()[2]!]),
      "expected 4 string elements for inference input 'S' for model 'm', got 3",
    ],
    ["string framing", () => request([good()[0]!, { ...good()[1]!, data: new Uint8Array([9, 0, 0, 0, 1]) }, good()[2]!]), /runs past the end of the data/],
    [
      "bad classification",
      () => request(good(), { outputs: [{ name: "Y", parameters: { classification: 0 } }] }),
      "classification count for output 'Y' must be a positive integer",
    ],
  ];
  for (const [name, make, message] of cases) {
    it(`rejects: ${name}`, () => {
      let caught: unknown;
      try {
        prepareForInference(make(), sig);
      } catch (e) {
        caught = e;
      }
      expect(caught).toMatchObject({ code: "INVALID_ARG" });
      if (typeof message === "string") expect((caught as Error).message).toBe(message);
      else expect((caught as Error).message).toMatch(message);
    });
  }

  it("treats non-batching models as batch 1 with full shapes", () => {
    const s = signatureOf({
      name: "n",
      max_batch_size: 0,
      input: [{ name: "X", data_type: "TYPE_UINT8", dims: [2, 2] }],
      output: [{ name: "Y", data_type: "TYPE_UINT8", dims: [2, 2] }],
    });
    const p = prepareForInference(request([{ name: "X", datatype: "UINT8", shape: [2, 2], data: new Uint8Array(4) }]), s);
    expect(p.batchSize).toBe(1);
    expect(p.inputs[0]!.shape).toEqual([2, 2]);
    expect(() => prepareForInference(request([{ name: "X", datatype: "UINT8", shape: [1, 2, 2], data: new Uint8Array(4) }]), s)).toThrow(
      "unexpected shape for input 'X' for model 'm'. Expected [2,2], got [1,2,2]".replace("model 'm'", "model 'n'"),
    );
  });
});
