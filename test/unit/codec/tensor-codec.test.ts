/** P-06, P-07, P-11, P-12, P-13, §1.2, §2.1: HTTP JSON and binary tensor codec. */
import { describe, it, expect } from "vitest";
import { decodeInferRequest, encodeInferResponse, type DecodeContext } from "../../../src/frontends/http/tensor-codec.ts";
import type { InferenceRequest, InferenceResponse } from "../../../src/core/request.ts";
import { ServerError } from "../../../src/core/errors.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const ctx: DecodeContext = { modelName: "m", modelVersion: "1" };
const json = (v: unknown) => enc.encode(JSON.stringify(v));
const i32 = (...v: number[]) => new Uint8Array(Int32Array.from(v).buffer);
const f64 = (...v: number[]) => new Uint8Array(Float64Array.from(v).buffer);
const bytes = (...b: number[]) => new Uint8Array(b);

/** A JSON header followed by binary blobs, as a client sends it. */
function withBinary(header: unknown, ...blobs: Uint8Array[]): { body: Uint8Array; headerLength: number } {
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

function decodeError(body: Uint8Array, headerLength: number | undefined, c: DecodeContext = ctx): ServerError {
  try {
    decodeInferRequest(body, headerLength, c);
  } catch (e) {
    expect(e).toBeInstanceOf(ServerError);
    return e as ServerError;
  }
  throw new Error("no error");
}

describe("decodeInferRequest: JSON", () => {
  it("reads tensors, flat and nested, with id, parameters and outputs", () => {
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
        { name: "B", datatype: "BYTES", shape: [1], data: bytes(2, 0, 0, 0, 0x68, 0x69), parameters: { p: true } },
      ],
      outputs: [{ name: "Y", parameters: { binary_data: true, classification: 2 } }, { name: "Z" }],
    });
    // No `parameters` key on an input that gave none.
    expect(req.inputs[0]).not.toHaveProperty("parameters");
  });

  it("flattens deeply nested data row-major, for every JSON-capable type", () => {
    const req = decodeInferRequest(
      json({
        inputs: [
          { name: "I", shape: [2, 2, 2], datatype: "INT32", data: [[[1, 2], [3, 4]], [[5, 6], [7, 8]]] },
          { name: "B", shape: [2, 1], datatype: "BOOL", data: [[true], [false]] },
          { name: "D", shape: [1, 2], datatype: "FP64", data: [[0.5, -1]] },
          { name: "S", shape: [2, 1], datatype: "BYTES", data: [["a"], [""]] },
          { name: "U", shape: [1], datatype: "UINT64", data: [9007199254740991] },
        ],
      }),
      undefined,
      ctx,
    );
    expect(req.inputs.map((i) => [i.name, [...i.data]])).toEqual([
      ["I", [...i32(1, 2, 3, 4, 5, 6, 7, 8)]],
      ["B", [1, 0]],
      ["D", [...f64(0.5, -1)]],
      ["S", [1, 0, 0, 0, 0x61, 0, 0, 0, 0]],
      ["U", [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1f, 0]],
    ]);
  });

  it("takes scalar (shape []) and empty (shape [0]) tensors", () => {
    const req = decodeInferRequest(
      json({ inputs: [{ name: "S", shape: [], datatype: "INT32", data: [7] }, { name: "E", shape: [0, 3], datatype: "FP32", data: [] }] }),
      undefined,
      ctx,
    );
    expect(req.inputs).toEqual([
      { name: "S", datatype: "INT32", shape: [], data: i32(7) },
      { name: "E", datatype: "FP32", shape: [0, 3], data: new Uint8Array(0) },
    ]);
  });

  it("keeps an empty parameters object on an output, and an undefined version from the context", () => {
    const req = decodeInferRequest(json({ inputs: [], outputs: [{ name: "Y", parameters: {} }] }), undefined, { modelName: "m" });
    expect(req).toEqual({ modelName: "m", parameters: {}, inputs: [], outputs: [{ name: "Y", parameters: {} }] });
    expect(req.id).toBeUndefined();
  });

  it("reads a header length equal to the body as a JSON-only request", () => {
    const body = json({ id: "x", inputs: [{ name: "A", shape: [1], datatype: "INT32", data: [1] }] });
    expect(decodeInferRequest(body, body.byteLength, ctx).inputs[0]!.data).toEqual(i32(1));
  });
});

describe("decodeInferRequest: binary extension", () => {
  it("takes binary inputs in order of appearance, mixed with JSON inputs", () => {
    const { body, headerLength } = withBinary(
      {
        inputs: [
          { name: "A", shape: [2], datatype: "INT32", parameters: { binary_data_size: 8 } },
          { name: "B", shape: [1], datatype: "FP16", parameters: { binary_data_size: 2, note: "x" } },
          { name: "C", shape: [1], datatype: "INT32", data: [7] },
          { name: "D", shape: [0], datatype: "INT32", parameters: { binary_data_size: 0 } },
          { name: "E", shape: [1], datatype: "BYTES", parameters: { binary_data_size: 7 } },
        ],
      },
      i32(5, 6),
      bytes(0x00, 0x3c),
      bytes(3, 0, 0, 0, 0x61, 0x62, 0x63),
    );
    const req = decodeInferRequest(body, headerLength, ctx);
    expect(req.inputs.map((i) => [i.name, i.datatype, [...i.data]])).toEqual([
      ["A", "INT32", [...i32(5, 6)]],
      ["B", "FP16", [0x00, 0x3c]],
      ["C", "INT32", [...i32(7)]],
      ["D", "INT32", []],
      ["E", "BYTES", [3, 0, 0, 0, 0x61, 0x62, 0x63]],
    ]);
    // binary_data_size is consumed; other parameters stay.
    expect(req.inputs[0]!.parameters).toEqual({});
    expect(req.inputs[1]!.parameters).toEqual({ note: "x" });
    // Binary data is a view into the body, not a copy.
    expect(req.inputs[0]!.data.buffer).toBe(body.buffer);
    expect(req.inputs[0]!.data.byteOffset).toBe(headerLength);
  });

  it("treats Inference-Header-Content-Length 0 as a raw body for the single input", () => {
    const body = i32(1, 2, 3);
    const seen: number[] = [];
    const req = decodeInferRequest(body, 0, {
      ...ctx,
      rawInput: (n) => {
        seen.push(n);
        return { name: "X", datatype: "INT32", shape: [1, n / 4] };
      },
    });
    expect(seen).toEqual([12]);
    expect(req).toEqual({ modelName: "m", modelVersion: "1", parameters: { binary_data_output: true }, inputs: [{ name: "X", datatype: "INT32", shape: [1, 3], data: body }] });
    expect(req.inputs[0]!.data).toBe(body);
  });
});

describe("decodeInferRequest: errors", () => {
  it("malformed JSON: the parser's own message after Triton's prefix", () => {
    let parserMessage = "";
    try {
      JSON.parse("{ nope");
    } catch (e) {
      parserMessage = (e as Error).message;
    }
    expect(decodeError(enc.encode("{ nope"), undefined).message).toBe(`failed to parse the request JSON buffer: ${parserMessage}`);
    expect(decodeError(new Uint8Array(0), undefined).message).toMatch(/^failed to parse the request JSON buffer: ./);
  });

  it("JSON nesting: 100 levels pass, 101 fail", () => {
    const nested = (levels: number) => enc.encode('{"inputs":[],"a":' + '{"b":'.repeat(levels - 1) + "1" + "}".repeat(levels - 1) + "}");
    expect(decodeInferRequest(nested(100), undefined, ctx).inputs).toEqual([]);
    expect(decodeError(nested(101), undefined).message).toBe("failed to parse the request JSON buffer: nesting deeper than 100 levels");
    // Arrays count too: object, inputs, input, data and 98 more arrays = 102 levels.
    const deepData = enc.encode('{"inputs":[{"name":"A","datatype":"INT32","shape":[1],"data":' + "[".repeat(99) + "1" + "]".repeat(99) + "}]}");
    expect(decodeError(deepData, undefined).message).toBe("failed to parse the request JSON buffer: nesting deeper than 100 levels");
  });

  const cases: [string, () => { body: Uint8Array; headerLength?: number; ctx?: DecodeContext }, string][] = [
    ["not an object", () => ({ body: json([1]) }), "failed to parse the request JSON buffer: the request must be a JSON object"],
    ["header longer than body", () => ({ body: json({ inputs: [] }), headerLength: 999 }), "Inference-Header-Content-Length (999) exceeds the request body size (13 bytes)"],
    ["raw body without a raw input", () => ({ body: i32(1), headerLength: 0 }), "raw binary request (Inference-Header-Content-Length: 0) is not supported here"],
    ["a non-string id", () => ({ body: json({ id: 5, inputs: [] }) }), "request 'id' must be a string"],
    ["parameters not an object", () => ({ body: json({ parameters: [], inputs: [] }) }), "request: 'parameters' must be a JSON object"],
    ["an object parameter", () => ({ body: json({ parameters: { a: { b: 1 } }, inputs: [] }) }), "request: parameter 'a' must be a string, number or boolean"],
    ["a null parameter", () => ({ body: json({ parameters: { a: null }, inputs: [] }) }), "request: parameter 'a' must be a string, number or boolean"],
    ["a non-boolean binary_data_output", () => ({ body: json({ parameters: { binary_data_output: 1 }, inputs: [] }) }), "parameter 'binary_data_output' must be a boolean"],
    ["no inputs", () => ({ body: json({}) }), "request must contain an 'inputs' array"],
    ["inputs not an array", () => ({ body: json({ inputs: {} }) }), "request must contain an 'inputs' array"],
    ["an input that is not an object", () => ({ body: json({ inputs: [1] }) }), "each element of 'inputs' must be a JSON object"],
    ["an input without a name", () => ({ body: json({ inputs: [{ shape: [1], datatype: "INT32", data: [1] }] }) }), "input is missing a string 'name'"],
    ["an unknown datatype", () => ({ body: json({ inputs: [{ name: "A", shape: [1], datatype: "INT128", data: [1] }] }) }), 'input \'A\': unsupported datatype "INT128"'],
    ["no datatype", () => ({ body: json({ inputs: [{ name: "A", shape: [1], data: [1] }] }) }), "input 'A': unsupported datatype undefined"],
    ["a config-style datatype", () => ({ body: json({ inputs: [{ name: "A", shape: [1], datatype: "TYPE_FP32", data: [1] }] }) }), 'input \'A\': unsupported datatype "TYPE_FP32"'],
    ["a fractional dim", () => ({ body: json({ inputs: [{ name: "A", shape: [1.5], datatype: "INT32", data: [1] }] }) }), "input 'A': 'shape' must be an array of integers"],
    ["no shape", () => ({ body: json({ inputs: [{ name: "A", datatype: "INT32", data: [1] }] }) }), "input 'A': 'shape' must be an array of integers"],
    ["input parameters not an object", () => ({ body: json({ inputs: [{ name: "A", shape: [1], datatype: "INT32", data: [1], parameters: 3 }] }) }), "input 'A': 'parameters' must be a JSON object"],
    ["no data", () => ({ body: json({ inputs: [{ name: "A", shape: [1], datatype: "INT32" }] }) }), "input 'A' must have a 'data' array or a 'binary_data_size' parameter"],
    ["data not an array", () => ({ body: json({ inputs: [{ name: "A", shape: [1], datatype: "INT32", data: 5 }] }) }), "input 'A' must have a 'data' array or a 'binary_data_size' parameter"],
    ["too few elements", () => ({ body: json({ inputs: [{ name: "A", shape: [2, 2], datatype: "INT32", data: [1, 2, 3] }] }) }), "input 'A' has 3 elements in 'data' but its shape [2,2] needs 4"],
    ["too many nested elements", () => ({ body: json({ inputs: [{ name: "A", shape: [2], datatype: "INT32", data: [[1, 2], [3]] }] }) }), "input 'A' has 3 elements in 'data' but its shape [2] needs 2"],
    ["FP16 in JSON", () => ({ body: json({ inputs: [{ name: "A", shape: [1], datatype: "FP16", data: [1] }] }) }), "receiving FP16 data via JSON is not supported. Please use the binary data format for input 'A'"],
    ["BF16 in JSON", () => ({ body: json({ inputs: [{ name: "A", shape: [1], datatype: "BF16", data: [1] }] }) }), "receiving BF16 data via JSON is not supported. Please use the binary data format for input 'A'"],
    ["a string for INT32", () => ({ body: json({ inputs: [{ name: "A", shape: [1], datatype: "INT32", data: ["1"] }] }) }), "input 'A': element 0 of 'data' is \"1\", expected an integer in -2147483648..2147483647 for datatype INT32"],
    ["a number for BOOL", () => ({ body: json({ inputs: [{ name: "A", shape: [2], datatype: "BOOL", data: [true, 1] }] }) }), "input 'A': element 1 of 'data' is 1, expected true or false for datatype BOOL"],
    ["a number for BYTES", () => ({ body: json({ inputs: [{ name: "A", shape: [1], datatype: "BYTES", data: [1] }] }) }), "input 'A': element 0 of 'data' is 1, expected a string for datatype BYTES"],
    ["UINT8 out of range", () => ({ body: json({ inputs: [{ name: "A", shape: [2], datatype: "UINT8", data: [1, 256] }] }) }), "input 'A': element 1 of 'data' is 256, expected an integer in 0..255 for datatype UINT8"],
    ["a negative binary_data_size", () => ({ body: json({ inputs: [{ name: "A", shape: [1], datatype: "INT32", parameters: { binary_data_size: -1 } }] }) }), "input 'A': 'binary_data_size' must be a non-negative integer"],
    ["a string binary_data_size", () => ({ body: json({ inputs: [{ name: "A", shape: [1], datatype: "INT32", parameters: { binary_data_size: "4" } }] }) }), "input 'A': 'binary_data_size' must be a non-negative integer"],
    ["data and binary_data_size both", () => withBinary({ inputs: [{ name: "A", shape: [1], datatype: "INT32", data: [1], parameters: { binary_data_size: 4 } }] }, i32(1)), "input 'A' has both 'data' and 'binary_data_size'"],
    ["binary_data_size past the end", () => withBinary({ inputs: [{ name: "A", shape: [2], datatype: "INT32", parameters: { binary_data_size: 8 } }] }, i32(1)), "input 'A': binary_data_size 8 needs more data than the 4 binary bytes left in the request"],
    [
      "the second binary input past the end",
      () => withBinary({ inputs: [{ name: "A", shape: [1], datatype: "INT32", parameters: { binary_data_size: 4 } }, { name: "B", shape: [1], datatype: "INT32", parameters: { binary_data_size: 4 } }] }, i32(1), bytes(1, 2)),
      "input 'B': binary_data_size 4 needs more data than the 2 binary bytes left in the request",
    ],
    ["binary_data_size without binary data", () => ({ body: json({ inputs: [{ name: "A", shape: [1], datatype: "INT32", parameters: { binary_data_size: 4 } }] }) }), "input 'A': binary_data_size 4 needs more data than the 0 binary bytes left in the request"],
    ["bytes left over", () => withBinary({ inputs: [{ name: "A", shape: [1], datatype: "INT32", parameters: { binary_data_size: 4 } }] }, i32(1), bytes(9, 9)), "request has 2 bytes of binary data that no input claims (binary_data_size)"],
    ["binary data and no binary input", () => withBinary({ inputs: [{ name: "A", shape: [1], datatype: "INT32", data: [1] }] }, i32(1)), "request has 4 bytes of binary data that no input claims (binary_data_size)"],
    ["outputs not an array", () => ({ body: json({ inputs: [], outputs: {} }) }), "'outputs' must be an array"],
    ["an output without a name", () => ({ body: json({ inputs: [], outputs: [{}] }) }), "each requested output must be an object with a string 'name'"],
    ["an output parameter that is an object", () => ({ body: json({ inputs: [], outputs: [{ name: "Y", parameters: { x: {} } }] }) }), "output 'Y': parameter 'x' must be a string, number or boolean"],
    ["a non-boolean binary_data", () => ({ body: json({ inputs: [], outputs: [{ name: "Y", parameters: { binary_data: "yes" } }] }) }), "output 'Y': parameter 'binary_data' must be a boolean"],
    ["classification 0", () => ({ body: json({ inputs: [], outputs: [{ name: "Y", parameters: { classification: 0 } }] }) }), "output 'Y': parameter 'classification' must be a positive integer"],
    ["a fractional classification", () => ({ body: json({ inputs: [], outputs: [{ name: "Y", parameters: { classification: 1.5 } }] }) }), "output 'Y': parameter 'classification' must be a positive integer"],
    ["a string classification", () => ({ body: json({ inputs: [], outputs: [{ name: "Y", parameters: { classification: "2" } }] }) }), "output 'Y': parameter 'classification' must be a positive integer"],
  ];

  it.each(cases)("%s", (_, make, message) => {
    const { body, headerLength, ctx: c } = make();
    const err = decodeError(body, headerLength, c);
    expect(err.code).toBe("INVALID_ARG");
    expect(err.message).toBe(message);
  });
});

describe("encodeInferResponse", () => {
  const response: InferenceResponse = {
    modelName: "m",
    modelVersion: "1",
    outputs: [
      { name: "Y", datatype: "INT32", shape: [1, 2], data: i32(3, -4) },
      { name: "Z", datatype: "BOOL", shape: [1], data: bytes(1) },
    ],
  };
  const request = (extra: Partial<InferenceRequest> = {}): InferenceRequest => ({ modelName: "m", parameters: {}, inputs: [], ...extra });
  const PLAIN = '{"model_name":"m","model_version":"1","outputs":[{"name":"Y","datatype":"INT32","shape":[1,2],"data":[3,-4]},{"name":"Z","datatype":"BOOL","shape":[1],"data":[true]}]}';

  it("writes Triton's JSON in Triton's field order, with the id first only when given and non-empty", () => {
    const plain = encodeInferResponse(response, request());
    expect(plain.contentType).toBe("application/json");
    expect(plain.headerLength).toBeUndefined();
    expect(dec.decode(plain.body)).toBe(PLAIN);
    expect(dec.decode(encodeInferResponse(response, request({ id: "" })).body)).toBe(PLAIN);
    expect(dec.decode(encodeInferResponse(response, request({ id: 'q"1' })).body)).toBe('{"id":"q\\"1",' + PLAIN.slice(1));
  });

  it("writes response parameters after model_version only when there are some, bigints as numbers", () => {
    const withParams = encodeInferResponse({ ...response, outputs: [], parameters: { a: 1, b: 9007199254740993n, c: "x", d: true } }, request({ id: "r" }));
    expect(dec.decode(withParams.body)).toBe('{"id":"r","model_name":"m","model_version":"1","parameters":{"a":1,"b":9007199254740992,"c":"x","d":true},"outputs":[]}');
    expect(dec.decode(encodeInferResponse({ ...response, outputs: [], parameters: {} }, request()).body)).toBe('{"model_name":"m","model_version":"1","outputs":[]}');
  });

  it("writes flat data for every JSON datatype, NaN and Infinity as Python's json reads them", () => {
    const out = encodeInferResponse(
      {
        modelName: "m",
        modelVersion: "2",
        outputs: [
          { name: "S", datatype: "BYTES", shape: [2], data: bytes(1, 0, 0, 0, 0x22, 0, 0, 0, 0) },
          { name: "F", datatype: "FP32", shape: [2, 1], data: new Uint8Array(Float32Array.from([NaN, -Infinity]).buffer) },
          { name: "U", datatype: "UINT64", shape: [1], data: bytes(1, 0, 0, 0, 0, 0, 0x20, 0) },
        ],
      },
      request(),
    );
    expect(dec.decode(out.body)).toBe(
      '{"model_name":"m","model_version":"2","outputs":[' +
        '{"name":"S","datatype":"BYTES","shape":[2],"data":["\\"",""]},' +
        '{"name":"F","datatype":"FP32","shape":[2,1],"data":[NaN,-Infinity]},' +
        '{"name":"U","datatype":"UINT64","shape":[1],"data":[9007199254740993]}]}',
    );
  });

  it("sends every output binary under binary_data_output, a per-output binary_data: false overriding it", () => {
    const out = encodeInferResponse(response, request({ parameters: { binary_data_output: true }, outputs: [{ name: "Z", parameters: { binary_data: false } }] }));
    expect(out.contentType).toBe("application/octet-stream");
    const head = '{"model_name":"m","model_version":"1","outputs":[{"name":"Y","datatype":"INT32","shape":[1,2],"parameters":{"binary_data_size":8}},{"name":"Z","datatype":"BOOL","shape":[1],"data":[true]}]}';
    expect(out.headerLength).toBe(head.length);
    expect([...out.body]).toEqual([...enc.encode(head), ...i32(3, -4)]);
  });

  it("sends only the outputs asking for binary_data: true when there is no default", () => {
    const out = encodeInferResponse(response, request({ outputs: [{ name: "Z", parameters: { binary_data: true } }, { name: "Y" }] }));
    const head = '{"model_name":"m","model_version":"1","outputs":[{"name":"Y","datatype":"INT32","shape":[1,2],"data":[3,-4]},{"name":"Z","datatype":"BOOL","shape":[1],"parameters":{"binary_data_size":1}}]}';
    expect(out.contentType).toBe("application/octet-stream");
    expect(out.headerLength).toBe(head.length);
    expect([...out.body]).toEqual([...enc.encode(head), 1]);
  });

  it("writes binary outputs in output order and stays JSON when binary_data_output is false", () => {
    const all = encodeInferResponse(response, request({ parameters: { binary_data_output: true } }));
    expect([...all.body.subarray(all.headerLength)]).toEqual([...i32(3, -4), 1]);
    expect(JSON.parse(dec.decode(all.body.subarray(0, all.headerLength)))).toEqual({
      model_name: "m",
      model_version: "1",
      outputs: [
        { name: "Y", datatype: "INT32", shape: [1, 2], parameters: { binary_data_size: 8 } },
        { name: "Z", datatype: "BOOL", shape: [1], parameters: { binary_data_size: 1 } },
      ],
    });
    expect(dec.decode(encodeInferResponse(response, request({ parameters: { binary_data_output: false } })).body)).toBe(PLAIN);
  });

  it("counts Inference-Header-Content-Length in UTF-8 bytes of the JSON part", () => {
    const out = encodeInferResponse(
      { modelName: "modèle", modelVersion: "1", outputs: [{ name: "ÿ", datatype: "INT32", shape: [1], data: i32(9) }] },
      request({ id: "日本", parameters: { binary_data_output: true } }),
    );
    const head = '{"id":"日本","model_name":"modèle","model_version":"1","outputs":[{"name":"ÿ","datatype":"INT32","shape":[1],"parameters":{"binary_data_size":4}}]}';
    expect(out.headerLength).toBe(enc.encode(head).byteLength);
    expect(out.headerLength).toBeGreaterThan(head.length);
    expect(dec.decode(out.body.subarray(0, out.headerLength))).toBe(head);
    expect([...out.body.subarray(out.headerLength)]).toEqual([...i32(9)]);
  });

  it("sends a zero-length binary output", () => {
    const out = encodeInferResponse({ modelName: "m", modelVersion: "1", outputs: [{ name: "E", datatype: "FP32", shape: [0], data: new Uint8Array(0) }] }, request({ parameters: { binary_data_output: true } }));
    expect(out.contentType).toBe("application/octet-stream");
    expect(out.headerLength).toBe(out.body.byteLength);
    expect(dec.decode(out.body)).toContain('"parameters":{"binary_data_size":0}');
  });

  it("refuses FP16 and BF16 outputs in JSON, and sends them binary when asked", () => {
    for (const datatype of ["FP16", "BF16"] as const) {
      const half: InferenceResponse = { modelName: "m", modelVersion: "1", outputs: [{ name: "H", datatype, shape: [1], data: bytes(0x00, 0x3c) }] };
      expect(() => encodeInferResponse(half, request())).toThrow(
        new ServerError("INVALID_ARG", `output 'H' has datatype ${datatype}, which cannot be returned in JSON; request it with 'binary_data: true'`),
      );
      const bin = encodeInferResponse(half, request({ outputs: [{ name: "H", parameters: { binary_data: true } }] }));
      expect([...bin.body.subarray(bin.headerLength)]).toEqual([0x00, 0x3c]);
    }
  });

  it("round-trips: a request's binary outputs decode as the same bytes a client would send", () => {
    const out = encodeInferResponse(response, request({ parameters: { binary_data_output: true } }));
    const head = JSON.parse(dec.decode(out.body.subarray(0, out.headerLength))) as { outputs: { name: string; datatype: string; shape: number[]; parameters: Record<string, number> }[] };
    const asRequest = { inputs: head.outputs.map((o) => ({ name: o.name, datatype: o.datatype, shape: o.shape, parameters: o.parameters })) };
    const { body, headerLength } = withBinary(asRequest, out.body.subarray(out.headerLength));
    const req = decodeInferRequest(body, headerLength, ctx);
    expect(req.inputs.map((i) => [i.name, [...i.data]])).toEqual([
      ["Y", [...i32(3, -4)]],
      ["Z", [1]],
    ]);
  });
});
