/** P-06, P-07, P-11, P-12, P-13: HTTP JSON and binary tensor codec. */
import { describe, it, expect } from "vitest";
import { decodeInferRequest, encodeInferResponse } from "../../../src/frontends/http/tensor-codec.ts";
import type { InferenceRequest, InferenceResponse } from "../../../src/core/request.ts";

const enc = new TextEncoder();
const ctx = { modelName: "m", modelVersion: "1" };
const json = (v: unknown) => enc.encode(JSON.stringify(v));
const i32 = (...v: number[]) => new Uint8Array(Int32Array.from(v).buffer);

function withBinary(header: unknown, ...blobs: Uint8Array[]) {
  const h = json(header);
  const body = new Uint8Array(h.byteLength + blobs.reduce((n, b) => n + b.byteLength, 0));
  body.set(h);
  let off = h.byteLength;
  for (const b of blobs) {
    body.set(b, off);
    off += b.byteLength;
  }
  return { body, headerLength: h.byteLength };
}

describe("decodeInferRequest", () => {
  it("reads JSON tensors, flat and nested, with id, parameters and outputs", () => {
    const req = decodeInferRequest(
      json({
        id: "r1",
        parameters: { binary_data_output: false, custom: "x", n: 3 },
        inputs: [
          { name: "A", shape: [2, 2], datatype: "INT32", data: [[1, 2], [3, 4]] },
          { name: "B", shape: [1], datatype: "BYTES", data: ["hi"], parameters: { p: true } },
        ],
        outputs: [{ name: "Y", parameters: { binary_data: true, classification: 2 } }, { name: "Z" }],
      }),
      undefined,
      ctx,
    );
    expect(req).toEqual({
      modelName: "m",
      modelVersion: "1",
      id: "r1",
      parameters: { binary_data_output: false, custom: "x", n: 3 },
      inputs: [
        { name: "A", datatype: "INT32", shape: [2, 2], data: i32(1, 2, 3, 4) },
        { name: "B", datatype: "BYTES", shape: [1], data: new Uint8Array([2, 0, 0, 0, 0x68, 0x69]), parameters: { p: true } },
      ],
      outputs: [{ name: "Y", parameters: { binary_data: true, classification: 2 } }, { name: "Z" }],
    });
  });

  it("takes binary inputs in order of appearance", () => {
    const { body, headerLength } = withBinary(
      {
        inputs: [
          { name: "A", shape: [2], datatype: "INT32", parameters: { binary_data_size: 8 } },
          { name: "B", shape: [1], datatype: "FP16", parameters: { binary_data_size: 2 } },
          { name: "C", shape: [1], datatype: "INT32", data: [7] },
        ],
      },
      i32(5, 6),
      new Uint8Array([0x00, 0x3c]),
    );
    const req = decodeInferRequest(body, headerLength, ctx);
    expect(req.inputs.map((i) => [i.name, [...i.data]])).toEqual([
      ["A", [...i32(5, 6)]],
      ["B", [0x00, 0x3c]],
      ["C", [...i32(7)]],
    ]);
    expect(req.inputs[0]!.parameters).toEqual({});
  });

  it("treats Inference-Header-Content-Length 0 as a raw body for the single input", () => {
    const body = i32(1, 2, 3);
    const req = decodeInferRequest(body, 0, { ...ctx, rawInput: (n) => ({ name: "X", datatype: "INT32", shape: [1, n / 4] }) });
    expect(req.inputs).toEqual([{ name: "X", datatype: "INT32", shape: [1, 3], data: body }]);
    expect(req.parameters).toEqual({ binary_data_output: true });
  });

  const errors: [string, () => unknown, string | RegExp][] = [
    ["malformed JSON", () => decodeInferRequest(enc.encode("{ nope"), undefined, ctx), /^failed to parse the request JSON buffer: /],
    ["not an object", () => decodeInferRequest(json([1]), undefined, ctx), "failed to parse the request JSON buffer: the request must be a JSON object"],
    ["too deep", () => decodeInferRequest(enc.encode('{"inputs":' + "[".repeat(101) + "]".repeat(101) + "}"), undefined, ctx), "failed to parse the request JSON buffer: nesting deeper than 100 levels"],
    ["header longer than body", () => decodeInferRequest(json({ inputs: [] }), 999, ctx), "Inference-Header-Content-Length (999) exceeds the request body size (13 bytes)"],
    ["no inputs", () => decodeInferRequest(json({}), undefined, ctx), "request must contain an 'inputs' array"],
    ["bad datatype", () => decodeInferRequest(json({ inputs: [{ name: "A", shape: [1], datatype: "INT128", data: [1] }] }), undefined, ctx), 'input \'A\': unsupported datatype "INT128"'],
    ["bad shape", () => decodeInferRequest(json({ inputs: [{ name: "A", shape: [1.5], datatype: "INT32", data: [1] }] }), undefined, ctx), "input 'A': 'shape' must be an array of integers"],
    ["no data", () => decodeInferRequest(json({ inputs: [{ name: "A", shape: [1], datatype: "INT32" }] }), undefined, ctx), "input 'A' must have a 'data' array or a 'binary_data_size' parameter"],
    ["count mismatch", () => decodeInferRequest(json({ inputs: [{ name: "A", shape: [2, 2], datatype: "INT32", data: [1, 2, 3] }] }), undefined, ctx), "input 'A' has 3 elements in 'data' but its shape [2,2] needs 4"],
    ["FP16 in JSON", () => decodeInferRequest(json({ inputs: [{ name: "A", shape: [1], datatype: "FP16", data: [1] }] }), undefined, ctx), "receiving FP16 data via JSON is not supported. Please use the binary data format for input 'A'"],
    [
      "data and binary_data_size",
      () => decodeInferRequest(...(Object.values(withBinary({ inputs: [{ name: "A", shape: [1], datatype: "INT32", data: [1], parameters: { binary_data_size: 4 } }] }, i32(1))) as [Uint8Array, number]), ctx),
      "input 'A' has both 'data' and 'binary_data_size'",
    ],
    [
      "binary_data_size past the end",
      () => decodeInferRequest(...(Object.values(withBinary({ inputs: [{ name: "A", shape: [2], datatype: "INT32", parameters: { binary_data_size: 8 } }] }, i32(1))) as [Uint8Array, number]), ctx),
      "input 'A': binary_data_size 8 needs more data than the 4 binary bytes left in the request",
    ],
    [
      "unclaimed binary bytes",
      () => decodeInferRequest(...(Object.values(withBinary({ inputs: [{ name: "A", shape: [1], datatype: "INT32", parameters: { binary_data_size: 4 } }] }, i32(1, 2))) as [Uint8Array, number]), ctx),
      "request has 4 bytes of binary data that no input claims (binary_data_size)",
    ],
    ["non-bool binary_data_output", () => decodeInferRequest(json({ parameters: { binary_data_output: 1 }, inputs: [] }), undefined, ctx), "parameter 'binary_data_output' must be a boolean"],
    ["nested parameter", () => decodeInferRequest(json({ parameters: { a: { b: 1 } }, inputs: [] }), undefined, ctx), "request: parameter 'a' must be a string, number or boolean"],
    ["bad classification", () => decodeInferRequest(json({ inputs: [], outputs: [{ name: "Y", parameters: { classification: 0 } }] }), undefined, ctx), "output 'Y': parameter 'classification' must be a positive integer"],
    ["id not a string", () => decodeInferRequest(json({ id: 5, inputs: [] }), undefined, ctx), "request 'id' must be a string"],
  ];
  for (const [name, run, message] of errors) {
    it(`rejects ${name}`, () => {
      let caught: unknown;
      try {
        run();
      } catch (e) {
        caught = e;
      }
      expect(caught).toMatchObject({ code: "INVALID_ARG" });
      if (typeof message === "string") expect((caught as Error).message).toBe(message);
      else expect((caught as Error).message).toMatch(message);
    });
  }
});

describe("encodeInferResponse", () => {
  const response: InferenceResponse = {
    modelName: "m",
    modelVersion: "1",
    outputs: [
      { name: "Y", datatype: "INT32", shape: [1, 2], data: i32(3, -4) },
      { name: "Z", datatype: "BOOL", shape: [1], data: new Uint8Array([1]) },
    ],
  };
  const request = (extra: Partial<InferenceRequest> = {}): InferenceRequest => ({ modelName: "m", parameters: {}, inputs: [], ...extra });

  it("writes Triton's JSON with the id first only when given", () => {
    const plain = encodeInferResponse(response, request());
    expect(plain.contentType).toBe("application/json");
    expect(new TextDecoder().decode(plain.body)).toBe(
      '{"model_name":"m","model_version":"1","outputs":[{"name":"Y","datatype":"INT32","shape":[1,2],"data":[3,-4]},{"name":"Z","datatype":"BOOL","shape":[1],"data":[true]}]}',
    );
    const withId = encodeInferResponse(response, request({ id: "q" }));
    expect(new TextDecoder().decode(withId.body).startsWith('{"id":"q","model_name":"m"')).toBe(true);
  });

  it("sends binary outputs after the JSON part, per-output flags overriding the default", () => {
    const out = encodeInferResponse(response, request({ parameters: { binary_data_output: true }, outputs: [{ name: "Z", parameters: { binary_data: false } }] }));
    expect(out.contentType).toBe("application/octet-stream");
    const head = '{"model_name":"m","model_version":"1","outputs":[{"name":"Y","datatype":"INT32","shape":[1,2],"parameters":{"binary_data_size":8}},{"name":"Z","datatype":"BOOL","shape":[1],"data":[true]}]}';
    expect(out.headerLength).toBe(head.length);
    expect(new TextDecoder().decode(out.body.subarray(0, out.headerLength))).toBe(head);
    expect([...out.body.subarray(out.headerLength!)]).toEqual([...i32(3, -4)]);
  });

  it("refuses FP16 outputs in JSON", () => {
    const half: InferenceResponse = { modelName: "m", modelVersion: "1", outputs: [{ name: "H", datatype: "FP16", shape: [1], data: new Uint8Array(2) }] };
    expect(() => encodeInferResponse(half, request())).toThrow("output 'H' has datatype FP16, which cannot be returned in JSON; request it with 'binary_data: true'");
    expect(encodeInferResponse(half, request({ parameters: { binary_data_output: true } })).headerLength).toBeGreaterThan(0);
  });
});
