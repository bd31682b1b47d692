/** P-06, P-07, P-11, P-12, P-13, §1.2, §2.1: HTTP JSON and binary tensor codec, Triton's words. */
import { describe, it, expect } from "vitest";
import {
  decodeInferRequest,
  decodeInferRequestAsync,
  encodeInferResponse,
  encodeInferResponseAsync,
  parseInferenceHeaderLength,
  type DecodeContext,
} from "../../../src/frontends/http/tensor-codec.ts";
import { joinBytes } from "../../../src/core/tensor.ts";
import { requestFromJson } from "../../../src/frontends/http/request-json.ts";
import { parseJsonExactAsync } from "../../../src/frontends/http/json-parse.ts";
import type { InferenceRequest, InferenceResponse } from "../../../src/core/request.ts";
import { ServerError } from "../../../src/core/errors.ts";
import type { DataType } from "../../../src/core/tensor.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const ctx: DecodeContext = { modelName: "m", modelVersion: "1" };
const json = (v: unknown) => enc.encode(JSON.stringify(v));
const i32 = (...v: number[]) => new Uint8Array(Int32Array.from(v).buffer);
const f32 = (...v: number[]) => new Uint8Array(Float32Array.from(v).buffer);
const f64 = (...v: number[]) => new Uint8Array(Float64Array.from(v).buffer);
const i64 = (...v: bigint[]) => new Uint8Array(BigInt64Array.from(v).buffer);
const bytes = (...b: number[]) => new Uint8Array(b);

/** A JSON header followed by binary blobs, as a client sends it. */
function withBinary(header: unknown, ...blobs: Uint8Array[]): { body: Uint8Array; headerLength: number } {
  const h = typeof header === "string" ? enc.encode(header) : json(header);
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

const input = (name: string, datatype: string, shape: unknown, extra: Record<string, unknown> = {}) => ({ name, datatype, shape, ...extra });

describe("decodeInferRequest: JSON", () => {
  it("reads tensors, flat and nested, with id, parameters and outputs", () => {
    const req = decodeInferRequest(
      json({
        id: "r1",
        parameters: { binary_data_output: false, custom: "x", n: 3, d: 0.5 },
        inputs: [
          input("A", "INT32", [2, 2], {
            data: [
              [1, 2],
              [3, 4],
            ],
          }),
          input("B", "BYTES", [1], { data: ["hi"], parameters: { p: true } }),
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
      parameters: { binary_data_output: false, custom: "x", n: 3, d: 0.5 },
      inputs: [
        { name: "A", datatype: "INT32", shape: [2, 2], data: i32(1, 2, 3, 4) },
        { name: "B", datatype: "BYTES", shape: [1], data: bytes(2, 0, 0, 0, 0x68, 0x69), parameters: { p: true } },
      ],
      outputs: [{ name: "Y", parameters: { binary_data: true, classification: 2 } }, { name: "Z" }],
    });
    expect(req.inputs[0]).not.toHaveProperty("parameters");
    expect(req.outputs![1]).not.toHaveProperty("parameters");
  });

  it("flattens nested data row-major, for every JSON-capable type", () => {
    const req = decodeInferRequest(
      json({
        inputs: [
          input("I", "INT32", [2, 2, 2], {
            data: [
              [
                [1, 2],
                [3, 4],
              ],
              [
                [5, 6],
                [7, 8],
              ],
            ],
          }),
          input("B", "BOOL", [2, 1], { data: [[true], [false]] }),
          input("D", "FP64", [1, 2], { data: [[0.5, -1]] }),
          input("S", "BYTES", [2, 1], { data: [["a"], [""]] }),
          input("U", "UINT64", [1], { data: [9007199254740991] }),
          input("M", "INT8", [3], { data: [[1], 2, [[3]]] }),
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
      ["M", [1, 2, 3]],
    ]);
  });

  it("keeps INT64 and UINT64 values beyond 2^53 exact", () => {
    const body = enc.encode(
      '{"inputs":[{"name":"A","datatype":"INT64","shape":[3],"data":[9007199254740993,-9223372036854775808,9223372036854775807]},' +
        '{"name":"B","datatype":"UINT64","shape":[1],"data":[18446744073709551615]}]}',
    );
    const req = decodeInferRequest(body, undefined, ctx);
    expect([...new BigInt64Array(req.inputs[0]!.data.slice().buffer)]).toEqual([2n ** 53n + 1n, -(2n ** 63n), 2n ** 63n - 1n]);
    expect([...new BigUint64Array(req.inputs[1]!.data.slice().buffer)]).toEqual([2n ** 64n - 1n]);
  });

  it("keeps integer parameters beyond 2^53 exact, as bigint", () => {
    const req = decodeInferRequest(enc.encode('{"parameters":{"sequence_id":1152921504606846977,"big":-9007199254740993},"inputs":[]}'), undefined, ctx);
    expect(req.parameters).toEqual({ sequence_id: 2n ** 60n + 1n, big: -(2n ** 53n) - 1n });
  });

  it("accepts NaN, Infinity and -Infinity in float data, as rapidjson does", () => {
    const req = decodeInferRequest(enc.encode('{"inputs":[{"name":"F","datatype":"FP32","shape":[3],"data":[NaN,Infinity,-Inf]}]}'), undefined, ctx);
    const [nan, inf, ninf] = new Float32Array(req.inputs[0]!.data.slice().buffer);
    expect([Number.isNaN(nan), inf, ninf]).toEqual([true, Infinity, -Infinity]);
  });

  it("takes scalar (shape []) and empty tensors; an empty tensor ignores its data, as in Triton", () => {
    const req = decodeInferRequest(
      json({
        inputs: [
          input("S", "INT32", [], { data: [7] }),
          input("E", "FP32", [0, 3], { data: [] }),
          input("X", "INT32", [2, 0], { data: [1, 2, 3] }),
          input("H", "FP16", [0], { data: [1] }),
        ],
      }),
      undefined,
      ctx,
    );
    expect(req.inputs).toEqual([
      { name: "S", datatype: "INT32", shape: [], data: i32(7) },
      { name: "E", datatype: "FP32", shape: [0, 3], data: new Uint8Array(0) },
      { name: "X", datatype: "INT32", shape: [2, 0], data: new Uint8Array(0) },
      { name: "H", datatype: "FP16", shape: [0], data: new Uint8Array(0) },
    ]);
  });

  it("keeps Triton's reserved request parameters and any other scalar", () => {
    const parameters = { sequence_id: "corr-1", sequence_start: true, sequence_end: false, priority: 2, timeout: 100, s: "x", f: -1.5, b: false };
    expect(decodeInferRequest(json({ parameters, inputs: [] }), undefined, ctx).parameters).toEqual(parameters);
    expect(decodeInferRequest(json({ parameters: { sequence_id: 7 }, inputs: [] }), undefined, ctx).parameters).toEqual({ sequence_id: 7 });
  });

  it("drops classification 0 (Triton: no classification) and keeps an empty parameters object", () => {
    const req = decodeInferRequest(
      json({
        inputs: [],
        outputs: [
          { name: "Y", parameters: { classification: 0 } },
          { name: "Z", parameters: {} },
        ],
      }),
      undefined,
      { modelName: "m" },
    );
    expect(req).toEqual({
      modelName: "m",
      parameters: {},
      inputs: [],
      outputs: [
        { name: "Y", parameters: {} },
        { name: "Z", parameters: {} },
      ],
    });
    expect(req.id).toBeUndefined();
  });

  it("keeps an empty id (it is not echoed back)", () => {
    expect(decodeInferRequest(json({ id: "", inputs: [] }), undefined, ctx).id).toBe("");
  });

  it("reads a header length equal to the body as a JSON-only request", () => {
    const body = json({ id: "x", inputs: [input("A", "INT32", [1], { data: [1] })] });
    expect(decodeInferRequest(body, body.byteLength, ctx).inputs[0]!.data).toEqual(i32(1));
  });

  it("keeps a __proto__ parameter as data", () => {
    const req = decodeInferRequest(enc.encode('{"parameters":{"__proto__":"x"},"inputs":[]}'), undefined, ctx);
    expect(Object.keys(req.parameters)).toEqual(["__proto__"]);
    expect(Object.getPrototypeOf(req.parameters)).toBe(Object.prototype);
  });
});

describe("decodeInferRequest: binary extension", () => {
  it("takes binary inputs in order of appearance, mixed with JSON inputs, as views into the body", () => {
    const { body, headerLength } = withBinary(
      {
        inputs: [
          input("A", "INT32", [2], { parameters: { binary_data_size: 8 } }),
          input("B", "FP16", [1], { parameters: { binary_data_size: 2, note: "x" } }),
          input("C", "INT32", [1], { data: [7] }),
          input("D", "INT32", [0], { parameters: { binary_data_size: 0 } }),
          input("E", "BYTES", [1], { parameters: { binary_data_size: 7 } }),
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
    expect(req.inputs[0]!.data.buffer).toBe(body.buffer);
    expect(req.inputs[0]!.data.byteOffset).toBe(headerLength);
    expect(req.inputs[4]!.data.byteOffset).toBe(headerLength + 10);
  });

  it("treats Inference-Header-Content-Length 0 as a raw body for the single input, all outputs binary", () => {
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
    expect(req).toEqual({
      modelName: "m",
      modelVersion: "1",
      parameters: { binary_data_output: true },
      inputs: [{ name: "X", datatype: "INT32", shape: [1, 3], data: body }],
    });
    expect(req.inputs[0]!.data).toBe(body);
  });

  it("treats an empty body without the header as a raw request too (Triton: header length defaults to the body size)", () => {
    const req = decodeInferRequest(new Uint8Array(0), undefined, { ...ctx, rawInput: () => ({ name: "X", datatype: "FP32", shape: [0] }) });
    expect(req.inputs).toEqual([{ name: "X", datatype: "FP32", shape: [0], data: new Uint8Array(0) }]);
  });
});

describe("decodeInferRequest: errors, in Triton's words where Triton has them", () => {
  it("malformed JSON: rapidjson's reason and byte offset after Triton's prefix", () => {
    expect(decodeError(enc.encode("{ nope"), undefined).message).toBe("failed to parse the request JSON buffer: Missing a name for object member. at 2");
    expect(decodeError(enc.encode('{"inputs":[1,]}'), undefined).message).toBe("failed to parse the request JSON buffer: Invalid value. at 13");
    const { body, headerLength } = withBinary('{"inputs":[]', i32(1));
    expect(decodeError(body, headerLength).message).toBe("failed to parse the request JSON buffer: Missing a comma or '}' after an object member. at 12");
  });

  it("data nesting: 99 levels below the data array pass, 100 fail (Triton's limit)", () => {
    const nested = (levels: number) =>
      enc.encode('{"inputs":[{"name":"A","datatype":"INT32","shape":[1],"data":' + "[".repeat(levels) + "1" + "]".repeat(levels) + "}]}");
    expect(decodeInferRequest(nested(99), undefined, ctx).inputs[0]!.data).toEqual(i32(1));
    expect(decodeError(nested(100), undefined).message).toBe("Unable to parse 'data': JSON nesting depth exceeds maximum allowed limit (100)");
    // Deep nesting elsewhere is parsed and ignored, as in Triton.
    expect(decodeInferRequest(enc.encode('{"inputs":[],"x":' + "[".repeat(5000) + "]".repeat(5000) + "}"), undefined, ctx).inputs).toEqual([]);
  });

  it("data nesting between Triton's 100 and the structural 10000 gets Triton's message; beyond, the body is refused unparsed", () => {
    const nested = (levels: number) =>
      enc.encode('{"inputs":[{"name":"A","datatype":"INT32","shape":[1],"data":' + "[".repeat(levels) + "1" + "]".repeat(levels) + "}]}");
    expect(decodeError(nested(9000), undefined).message).toBe("Unable to parse 'data': JSON nesting depth exceeds maximum allowed limit (100)");
    // '{', '[', '{' are 3 levels, so the data array's 9998th '[' (at byte 61 + 9997) opens the 10001st.
    expect(decodeError(nested(9997), undefined).message).toBe("Unable to parse 'data': JSON nesting depth exceeds maximum allowed limit (100)");
    expect(decodeError(nested(9998), undefined).message).toBe(
      `failed to parse the request JSON buffer: JSON nesting depth exceeds maximum allowed limit (10000) at ${61 + 9997}`,
    );
    // Also when JSON.parse would refuse the body (NaN) and the byte parser is used.
    const withNaN = enc.encode('{"inputs":[{"name":"A","datatype":"FP32","shape":[1],"data":' + "[".repeat(9998) + "NaN" + "]".repeat(9998) + "}]}");
    expect(decodeError(withNaN, undefined).message).toContain("JSON nesting depth exceeds maximum allowed limit (10000)");
  });

  const A = (extra: Record<string, unknown>, datatype = "INT32", shape: unknown = [1]) => ({ inputs: [input("A", datatype, shape, extra)] });
  const B = { name: "B", datatype: "INT32", shape: [1], parameters: { binary_data_size: 4 } };
  const ONE_OF = "Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', 'shared_memory_region' in 'parameters'. But";
  const cases: [string, () => { body: Uint8Array; headerLength?: number; ctx?: DecodeContext }, string][] = [
    ["header longer than body", () => ({ body: json({ inputs: [] }), headerLength: 999 }), "inference header size should be in range (0, 13), got: 999"],
    ["negative header", () => ({ body: json({ inputs: [] }), headerLength: -1 }), "inference header size should be in range (0, 13), got: -1"],
    ["fractional header", () => ({ body: json({ inputs: [] }), headerLength: 1.5 }), "inference header size should be in range (0, 13), got: 1.5"],
    [
      "raw body without a raw input",
      () => ({ body: i32(1), headerLength: 0 }),
      "raw binary request (Inference-Header-Content-Length: 0) is not supported here",
    ],
    ["not an object", () => ({ body: json([1]) }), "Unable to parse 'inputs': attempt to access non-existing object member 'inputs'"],
    ["no inputs", () => ({ body: json({}) }), "Unable to parse 'inputs': attempt to access non-existing object member 'inputs'"],
    ["inputs not an array", () => ({ body: json({ inputs: {} }) }), "Unable to parse 'inputs': attempt to access JSON non-array as array"],
    ["a non-string id", () => ({ body: json({ id: 5, inputs: [] }) }), "Unable to parse 'id': attempt to access JSON non-string as string"],
    ["a null id", () => ({ body: json({ id: null, inputs: [] }) }), "Unable to parse 'id': attempt to access JSON non-string as string"],
    [
      "parameters not an object",
      () => ({ body: json({ parameters: [], inputs: [] }) }),
      "failed to get request params.: attempt to get members for non-object",
    ],
    [
      "an object parameter",
      () => ({ body: json({ parameters: { a: { b: 1 } }, inputs: [] }) }),
      "parameter 'a' has invalid type. It should be either 'int', 'bool', or 'string'.",
    ],
    [
      "a null parameter",
      () => ({ body: json({ parameters: { a: null }, inputs: [] }) }),
      "parameter 'a' has invalid type. It should be either 'int', 'bool', or 'string'.",
    ],
    [
      "a non-boolean binary_data_output",
      () => ({ body: json({ parameters: { binary_data_output: 1 }, inputs: [] }) }),
      "Unable to parse 'binary_data_output': attempt to access JSON non-boolean as boolean",
    ],
    [
      "a non-boolean sequence_start",
      () => ({ body: json({ parameters: { sequence_start: "yes" }, inputs: [] }) }),
      "Unable to parse 'sequence_start': attempt to access JSON non-boolean as boolean",
    ],
    [
      "a negative sequence_id",
      () => ({ body: json({ parameters: { sequence_id: -1 }, inputs: [] }) }),
      "Unable to parse 'sequence_id': attempt to access JSON non-string as string",
    ],
    [
      "a fractional priority",
      () => ({ body: json({ parameters: { priority: 1.5 }, inputs: [] }) }),
      "Unable to parse 'priority': attempt to access JSON non-unsigned-integer as unsigned-integer",
    ],
    [
      "a string timeout",
      () => ({ body: json({ parameters: { timeout: "5" }, inputs: [] }) }),
      "Unable to parse 'timeout': attempt to access JSON non-unsigned-integer as unsigned-integer",
    ],
    [
      "a triton_ parameter",
      () => ({ body: json({ parameters: { triton_x: 1 }, inputs: [] }) }),
      "parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified.",
    ],
    ["an input that is not an object", () => ({ body: json({ inputs: [1] }) }), `${ONE_OF} no field is set`],
    ["no data", () => ({ body: json(A({})) }), `${ONE_OF} no field is set`],
    [
      "data and binary_data_size both",
      () => withBinary(A({ data: [1], parameters: { binary_data_size: 4 } }), i32(1)),
      `${ONE_OF} set 'data' 'binary_data_size'`,
    ],
    [
      "binary and shared memory both",
      () => ({ body: json(A({ parameters: { binary_data_size: 4, shared_memory_region: "r" } })) }),
      `${ONE_OF} set 'binary_data_size' 'shared_memory_region'`,
    ],
    [
      "an input without a name",
      () => ({ body: json({ inputs: [{ shape: [1], datatype: "INT32", data: [1] }] }) }),
      "Unable to parse 'name': attempt to access non-existing object member 'name'",
    ],
    [
      "a numeric input name",
      () => ({ body: json({ inputs: [{ name: 1, shape: [1], datatype: "INT32", data: [1] }] }) }),
      "Unable to parse 'name': attempt to access JSON non-string as string",
    ],
    [
      "no datatype",
      () => ({ body: json({ inputs: [{ name: "A", shape: [1], data: [1] }] }) }),
      "Unable to parse 'datatype': attempt to access non-existing object member 'datatype'",
    ],
    ["an unknown datatype", () => ({ body: json(A({ data: [1] }, "INT128")) }), "invalid datatype for input A"],
    ["a config-style datatype", () => ({ body: json(A({ data: [1] }, "TYPE_FP32")) }), "invalid datatype for input A"],
    [
      "no shape",
      () => ({ body: json({ inputs: [{ name: "A", datatype: "INT32", data: [1] }] }) }),
      "Unable to parse 'shape': attempt to access non-existing object member 'shape'",
    ],
    ["shape not an array", () => ({ body: json(A({ data: [1] }, "INT32", 1)) }), "Unable to parse 'shape': attempt to access JSON non-array as array"],
    [
      "a fractional dim",
      () => ({ body: json(A({ data: [1] }, "INT32", [1.5])) }),
      "Unable to parse 'shape': attempt to access JSON non-unsigned-integer as unsigned-integer",
    ],
    [
      "a negative dim",
      () => ({ body: json(A({ data: [1] }, "INT32", [-1])) }),
      "Unable to parse 'shape': attempt to access JSON non-unsigned-integer as unsigned-integer",
    ],
    [
      "a dim written 1.0",
      () => ({ body: enc.encode('{"inputs":[{"name":"A","datatype":"INT32","shape":[1.0],"data":[1]}]}') }),
      "Unable to parse 'shape': attempt to access JSON non-unsigned-integer as unsigned-integer",
    ],
    [
      "a dim written 1e0",
      () => ({ body: enc.encode('{"inputs":[{"name":"A","datatype":"INT32","shape" : [ 2, 1e0 ],"data":[1,2]}]}') }),
      "Unable to parse 'shape': attempt to access JSON non-unsigned-integer as unsigned-integer",
    ],
    [
      "a dim written 1E+0 next to NaN data (the exact parser's path anyway)",
      () => ({ body: enc.encode('{"inputs":[{"name":"A","datatype":"FP32","shape":[1E+0],"data":[NaN]}]}') }),
      "Unable to parse 'shape': attempt to access JSON non-unsigned-integer as unsigned-integer",
    ],
    [
      "a 20k-dim shape whose count overflows, quoted cut short",
      () => ({ body: json(A({ data: [1] }, "INT32", Array(20_000).fill(2))) }),
      "invalid shape for input 'A': shape [2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,...] (20000 dims) causes total element count to exceed maximum size of 9223372036854775807",
    ],
    [
      "a 20k-dim shape in a count mismatch, quoted cut short",
      () => ({ body: json(A({ data: [1, 2] }, "INT32", Array(20_000).fill(1))) }),
      "Unable to parse 'data': shape does not match true shape of 'data' field for input 'A': shape [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,...] (20000 dims) has 1 elements, 'data' has 2",
    ],
    [
      "more BYTES elements than one input may have (JSON)",
      () => ({ body: json(A({ data: ["a"] }, "BYTES", [1, 2 ** 20 + 1])) }),
      "input 'A' has 1048577 BYTES elements (shape [1,1048577]), more than the 1048576 one BYTES input may have",
    ],
    [
      "more BYTES elements than one input may have (binary)",
      () => withBinary(A({ parameters: { binary_data_size: 4 } }, "BYTES", [8_000_000]), i32(0)),
      "input 'A' has 8000000 BYTES elements (shape [8000000]), more than the 1048576 one BYTES input may have",
    ],
    [
      "more BYTES elements than one input may have (shared memory)",
      () => ({ body: json(A({ parameters: { shared_memory_region: "r", shared_memory_byte_size: 4 } }, "BYTES", [2 ** 21])) }),
      "input 'A' has 2097152 BYTES elements (shape [2097152]), more than the 1048576 one BYTES input may have",
    ],
    [
      "a JSON input over --http-max-input-size whose data is no array: Triton's array check comes first",
      () => ({ body: json(A({ data: "not read" }, "FP64", [3, 5])), ctx: { ...ctx, maxInputSize: 100 } }),
      "Unable to parse 'data': attempt to access JSON non-array as array",
    ],
    [
      "a JSON input over --http-max-input-size by its shape",
      () => ({ body: json(A({ data: [] }, "FP64", [3, 5])), ctx: { ...ctx, maxInputSize: 100 } }),
      "JSON input 'A' has a byte_size (120 bytes) that exceeds the maximum allowed value of 100 bytes. Use --http-max-input-size to increase the limit.",
    ],
    [
      "a BYTES JSON input over --http-max-input-size by its length prefixes",
      () => ({ body: json(A({ data: [] }, "BYTES", [26])), ctx: { ...ctx, maxInputSize: 100 } }),
      "JSON input 'A' has a byte_size (at least 104 bytes) that exceeds the maximum allowed value of 100 bytes. Use --http-max-input-size to increase the limit.",
    ],
    [
      "a BYTES JSON input over --http-max-input-size once encoded",
      () => ({ body: json(A({ data: ["x".repeat(50), "y".repeat(50)] }, "BYTES", [2])), ctx: { ...ctx, maxInputSize: 100 } }),
      "JSON input 'A' has a byte_size (108 bytes) that exceeds the maximum allowed value of 100 bytes. Use --http-max-input-size to increase the limit.",
    ],
    [
      "an element count past 2^53",
      () => ({ body: json(A({ data: [1] }, "INT32", [2 ** 30, 2 ** 30, 2 ** 30])) }),
      "invalid shape for input 'A': shape [1073741824,1073741824,1073741824] causes total element count to exceed maximum size of 9223372036854775807",
    ],
    [
      "input parameters not an object",
      () => ({ body: json(A({ data: [1], parameters: 3 })) }),
      "Unable to parse 'parameters' for input 'A': attempt to access JSON non-object as object",
    ],
    [
      "an object input parameter",
      () => ({ body: json(A({ data: [1], parameters: { x: [1] } })) }),
      "parameter 'x' of input 'A' has invalid type. It should be either 'int', 'bool', or 'string'.",
    ],
    ["data not an array", () => ({ body: json(A({ data: 5 })) }), "Unable to parse 'data': attempt to access JSON non-array as array"],
    [
      "too few elements",
      () => ({ body: json(A({ data: [1, 2, 3] }, "INT32", [2, 2])) }),
      "Unable to parse 'data': shape does not match true shape of 'data' field for input 'A': shape [2,2] has 4 elements, 'data' has 3",
    ],
    [
      "too many nested elements",
      () => ({ body: json(A({ data: [[1, 2], [3]] }, "INT32", [2])) }),
      "Unable to parse 'data': shape does not match true shape of 'data' field for input 'A': shape [2] has 2 elements, 'data' has 3",
    ],
    [
      "too many BYTES elements",
      () => ({ body: json(A({ data: ["a", "b"] }, "BYTES", [1])) }),
      "Unable to parse 'data': shape does not match true shape of 'data' field for input 'A': shape [1] has 1 elements, 'data' has 2",
    ],
    [
      "FP16 in JSON",
      () => ({ body: json(A({ data: [1] }, "FP16")) }),
      "receiving FP16 data via JSON is not supported. Please use the binary data format for input A",
    ],
    [
      "BF16 in JSON",
      () => ({ body: json(A({ data: [1] }, "BF16")) }),
      "receiving BF16 data via JSON is not supported. Please use the binary data format for input A",
    ],
    [
      "a string for INT32",
      () => ({ body: json(A({ data: ["1"] })) }),
      "input 'A': element 0 of 'data' is \"1\", expected an integer in -2147483648..2147483647 for datatype INT32",
    ],
    [
      "a non-integer for INT64",
      () => ({ body: json(A({ data: [1.5] }, "INT64")) }),
      "input 'A': element 0 of 'data' is 1.5, expected an integer for datatype INT64",
    ],
    [
      "INT64 past 2^63",
      () => ({ body: enc.encode('{"inputs":[{"name":"A","datatype":"INT64","shape":[1],"data":[9223372036854775808]}]}') }),
      "input 'A': element 0 of 'data' is 9223372036854775808, expected an integer in -9223372036854775808..9223372036854775807 for datatype INT64",
    ],
    [
      "a number for BOOL",
      () => ({ body: json(A({ data: [true, 1] }, "BOOL", [2])) }),
      "input 'A': element 1 of 'data' is 1, expected true or false for datatype BOOL",
    ],
    ["a number for BYTES", () => ({ body: json(A({ data: [1] }, "BYTES")) }), "input 'A': element 0 of 'data' is 1, expected a string for datatype BYTES"],
    [
      "UINT8 out of range",
      () => ({ body: json(A({ data: [1, 256] }, "UINT8", [2])) }),
      "input 'A': element 1 of 'data' is 256, expected an integer in 0..255 for datatype UINT8",
    ],
    [
      "a negative binary_data_size",
      () => ({ body: json(A({ parameters: { binary_data_size: -1 } })) }),
      "Unable to parse 'binary_data_size': attempt to access JSON non-unsigned-integer as unsigned-integer",
    ],
    [
      "a string binary_data_size",
      () => ({ body: json(A({ parameters: { binary_data_size: "4" } })) }),
      "Unable to parse 'binary_data_size': attempt to access JSON non-unsigned-integer as unsigned-integer",
    ],
    [
      "binary_data_size past the end",
      () => withBinary(A({ parameters: { binary_data_size: 8 } }, "INT32", [2]), i32(1)),
      "unexpected size for input 'A', expecting 4 additional bytes for model 'm'",
    ],
    [
      "the second binary input past the end",
      () => withBinary({ inputs: [{ ...B, name: "A" }, B] }, i32(1), bytes(1, 2)),
      "unexpected size for input 'B', expecting 2 additional bytes for model 'm'",
    ],
    [
      "binary_data_size without binary data",
      () => ({ body: json({ inputs: [B] }) }),
      "unexpected size for input 'B', expecting 4 additional bytes for model 'm'",
    ],
    ["bytes left over", () => withBinary({ inputs: [B] }, i32(1), bytes(9, 9)), "unexpected additional input data for model 'm'"],
    ["binary data and no binary input", () => withBinary(A({ data: [1] }), i32(1)), "unexpected additional input data for model 'm'"],
    ["outputs not an array", () => ({ body: json({ inputs: [], outputs: {} }) }), "Unable to parse 'outputs': attempt to access JSON non-array as array"],
    [
      "an output without a name",
      () => ({ body: json({ inputs: [], outputs: [{}] }) }),
      "Unable to parse 'name': attempt to access non-existing object member 'name'",
    ],
    [
      "an output that is not an object",
      () => ({ body: json({ inputs: [], outputs: ["Y"] }) }),
      "Unable to parse 'name': attempt to access non-existing object member 'name'",
    ],
    [
      "an output parameter that is an object",
      () => ({ body: json({ inputs: [], outputs: [{ name: "Y", parameters: { x: {} } }] }) }),
      "parameter 'x' of output 'Y' has invalid type. It should be either 'int', 'bool', or 'string'.",
    ],
    [
      "a non-boolean binary_data",
      () => ({ body: json({ inputs: [], outputs: [{ name: "Y", parameters: { binary_data: "yes" } }] }) }),
      "Unable to parse 'binary_data': attempt to access JSON non-boolean as boolean",
    ],
    [
      "a negative classification",
      () => ({ body: json({ inputs: [], outputs: [{ name: "Y", parameters: { classification: -1 } }] }) }),
      "Unable to set 'classification': attempt to access JSON non-unsigned-integer as unsigned-integer",
    ],
    [
      "a fractional classification",
      () => ({ body: json({ inputs: [], outputs: [{ name: "Y", parameters: { classification: 1.5 } }] }) }),
      "Unable to set 'classification': attempt to access JSON non-unsigned-integer as unsigned-integer",
    ],
    [
      "a string classification",
      () => ({ body: json({ inputs: [], outputs: [{ name: "Y", parameters: { classification: "2" } }] }) }),
      "Unable to set 'classification': attempt to access JSON non-unsigned-integer as unsigned-integer",
    ],
    [
      "shared memory with classification",
      () => ({ body: json({ inputs: [], outputs: [{ name: "Y", parameters: { shared_memory_region: "r", classification: 1 } }] }) }),
      "Output can't set both 'shared_memory_region' and 'classification'",
    ],
    [
      "shared memory with binary_data",
      () => ({ body: json({ inputs: [], outputs: [{ name: "Y", parameters: { shared_memory_region: "r", binary_data: true } }] }) }),
      "Output can't set both 'shared_memory_region' and 'binary_data'",
    ],
  ];

  it.each(cases)("%s", (_, make, message) => {
    const { body, headerLength, ctx: c } = make();
    const err = decodeError(body, headerLength, c);
    expect(err.message).toBe(message);
    expect(err.code).toBe("INVALID_ARG");
  });

  it("whole dims and integers elsewhere pass where '.', 'e' or 'E' appear outside shapes, or in shapes of unknown keys", () => {
    const body = enc.encode(
      '{"shape":[1.0],"parameters":{"x":1.5e0,"shape":"1.0"},"inputs":[{"name":"A","datatype":"FP32","shape":[1, 2] ,"data":[1.0,2e0]}]}',
    );
    const req = decodeInferRequest(body, undefined, { ...ctx, maxInputSize: 8 });
    expect(req.parameters).toEqual({ x: 1.5, shape: "1.0" });
    expect(req.inputs[0]!.shape).toEqual([1, 2]);
    expect(req.inputs[0]!.data).toEqual(f32(1, 2));
  });

  it("decodeInferRequestAsync gives what decodeInferRequest gives, on the JSON.parse path and the exact one", async () => {
    const bodies = [
      json({
        id: "x",
        inputs: [
          input("A", "INT32", [2, 2], {
            data: [
              [1, 2],
              [3, 4],
            ],
          }),
        ],
      }),
      enc.encode('{"inputs":[{"name":"F","datatype":"FP32","shape":[3],"data":[NaN,Infinity,-Inf]}],"parameters":{"big":9007199254740993}}'),
      // Over 1 MiB on the exact path (the big integer sends it there), so it is parsed in slices.
      enc.encode('{"parameters":{"big":9007199254740993},"inputs":[{"name":"B","datatype":"BYTES","shape":[2],"data":["' + "x".repeat(3_000_000) + '","y"]}]}'),
    ];
    // Tensor bytes compared as base64: toEqual walks a Uint8Array element by element.
    const comparable = (r: InferenceRequest) => ({ ...r, inputs: r.inputs.map((i) => ({ ...i, data: Buffer.from(i.data).toString("base64") })) });
    for (const body of bodies)
      expect(comparable(await decodeInferRequestAsync(body, undefined, ctx))).toEqual(comparable(decodeInferRequest(body, undefined, ctx)));
    const bad = enc.encode('{"inputs":[{"name":"A","datatype":"INT32","shape":[1.0],"data":[1]}]}');
    await expect(decodeInferRequestAsync(bad, undefined, ctx)).rejects.toThrow(
      "Unable to parse 'shape': attempt to access JSON non-unsigned-integer as unsigned-integer",
    );
  });

  it("passes shared-memory inputs and outputs through with their parameters (the core reads and writes the regions)", () => {
    const body = json({
      inputs: [{ name: "A", shape: [2], datatype: "INT32", parameters: { shared_memory_region: "r", shared_memory_byte_size: 8, shared_memory_offset: 16 } }],
      outputs: [{ name: "Y", parameters: { shared_memory_region: "o", shared_memory_byte_size: 8 } }],
    });
    const r = decodeInferRequest(body, undefined, { modelName: "m" });
    expect(r.inputs[0]).toMatchObject({
      name: "A",
      shape: [2],
      data: new Uint8Array(0),
      parameters: { shared_memory_region: "r", shared_memory_byte_size: 8, shared_memory_offset: 16 },
    });
    expect(r.outputs).toEqual([{ name: "Y", parameters: { shared_memory_region: "o", shared_memory_byte_size: 8 } }]);
  });
});

describe("parseInferenceHeaderLength (std::stoi, as Triton reads the header)", () => {
  it("reads leading digits and ignores what follows", () => {
    expect(parseInferenceHeaderLength(undefined)).toBeUndefined();
    expect(parseInferenceHeaderLength("42")).toBe(42);
    expect(parseInferenceHeaderLength(" 7xyz")).toBe(7);
    expect(parseInferenceHeaderLength("+0")).toBe(0);
    expect(parseInferenceHeaderLength("-3")).toBe(-3); // then out of range for decodeInferRequest
  });

  it("refuses text and out-of-range values in Triton's words", () => {
    expect(() => parseInferenceHeaderLength("abc")).toThrow(new ServerError("INVALID_ARG", "Unable to parse Inference-Header-Content-Length, got: abc"));
    expect(() => parseInferenceHeaderLength("")).toThrow("Unable to parse Inference-Header-Content-Length, got: ");
    expect(() => parseInferenceHeaderLength("2147483648")).toThrow(
      "Unable to parse Inference-Header-Content-Length, value is out of range [ -2147483648, 2147483647 ], got: 2147483648",
    );
  });
});

/** The body of a JSON-only response: the JSON text itself, not bytes. */
function jsonText(body: Uint8Array | string): string {
  expect(typeof body).toBe("string");
  return body as string;
}

/** The body of a response with binary data after the JSON. */
function binBody(body: Uint8Array | string): Uint8Array {
  expect(body).toBeInstanceOf(Uint8Array);
  return body as Uint8Array;
}

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
  const PLAIN =
    '{"model_name":"m","model_version":"1","outputs":[{"name":"Y","datatype":"INT32","shape":[1,2],"data":[3,-4]},{"name":"Z","datatype":"BOOL","shape":[1],"data":[true]}]}';
  const Y_BIN = '{"name":"Y","datatype":"INT32","shape":[1,2],"parameters":{"binary_data_size":8}}';
  const Z_BIN = '{"name":"Z","datatype":"BOOL","shape":[1],"parameters":{"binary_data_size":1}}';
  const Y_JSON = '{"name":"Y","datatype":"INT32","shape":[1,2],"data":[3,-4]}';
  const Z_JSON = '{"name":"Z","datatype":"BOOL","shape":[1],"data":[true]}';
  const head = (...outputs: string[]) => `{"model_name":"m","model_version":"1","outputs":[${outputs.join(",")}]}`;

  it("quotes model and output names as JSON, the same after more distinct names than it keeps quoted", () => {
    const odd = { ...response, modelName: 'm"\\é\n', outputs: [{ ...response.outputs[0]!, name: "Y\u2028<" }] };
    const expected = `{"model_name":${JSON.stringify(odd.modelName)},"model_version":"1","outputs":[{"name":${JSON.stringify("Y\u2028<")},"datatype":"INT32","shape":[1,2],"data":[3,-4]}]}`;
    expect(jsonText(encodeInferResponse(odd, request()).body)).toBe(expected);
    for (let i = 0; i < 1500; i++) {
      const name = `out_${i}`;
      const body = jsonText(encodeInferResponse({ ...response, modelName: `model_${i}`, outputs: [{ ...response.outputs[0]!, name }] }, request()).body);
      expect(body.startsWith(`{"model_name":"model_${i}","model_version":"1","outputs":[{"name":"${name}",`)).toBe(true);
    }
    expect(jsonText(encodeInferResponse(odd, request()).body)).toBe(expected);
  });

  it("writes Triton's JSON in Triton's field order, with the id first only when given and non-empty", () => {
    const plain = encodeInferResponse(response, request());
    expect(plain.contentType).toBe("application/json");
    expect(plain.headerLength).toBeUndefined();
    expect(jsonText(plain.body)).toBe(PLAIN);
    expect(jsonText(encodeInferResponse(response, request({ id: "" })).body)).toBe(PLAIN);
    expect(jsonText(encodeInferResponse(response, request({ id: 'q"1' })).body)).toBe('{"id":"q\\"1",' + PLAIN.slice(1));
  });

  it("writes response parameters after model_version only when there are some", () => {
    const withParams = encodeInferResponse(
      { ...response, outputs: [], parameters: { a: 1, b: 9007199254740993n, c: "x", d: true, e: 0.25 } },
      request({ id: "r" }),
    );
    expect(jsonText(withParams.body)).toBe(
      '{"id":"r","model_name":"m","model_version":"1","parameters":{"a":1,"b":9007199254740993,"c":"x","d":true,"e":0.25},"outputs":[]}',
    );
    expect(jsonText(encodeInferResponse({ ...response, outputs: [], parameters: {} }, request()).body)).toBe(
      '{"model_name":"m","model_version":"1","outputs":[]}',
    );
  });

  it("writes flat data for every JSON datatype: floats as rapidjson does, 64-bit integers with every digit", () => {
    const out = encodeInferResponse(
      {
        modelName: "m",
        modelVersion: "2",
        outputs: [
          { name: "S", datatype: "BYTES", shape: [2], data: bytes(1, 0, 0, 0, 0x22, 0, 0, 0, 0) },
          { name: "F", datatype: "FP32", shape: [2, 2], data: f32(NaN, -Infinity, 2, 0.5) },
          { name: "U", datatype: "UINT64", shape: [1], data: bytes(1, 0, 0, 0, 0, 0, 0x20, 0) },
          { name: "I", datatype: "INT64", shape: [2], data: i64(-(2n ** 63n), 2n ** 53n + 1n) },
        ],
      },
      request(),
    );
    expect(jsonText(out.body)).toBe(
      '{"model_name":"m","model_version":"2","outputs":[' +
        '{"name":"S","datatype":"BYTES","shape":[2],"data":["\\"",""]},' +
        '{"name":"F","datatype":"FP32","shape":[2,2],"data":[NaN,-Infinity,2.0,0.5]},' +
        '{"name":"U","datatype":"UINT64","shape":[1],"data":[9007199254740993]},' +
        '{"name":"I","datatype":"INT64","shape":[2],"data":[-9223372036854775808,9007199254740993]}]}',
    );
  });

  it("binary_data_output: every output not listed goes binary; exact bytes and header length", () => {
    const out = encodeInferResponse(response, request({ parameters: { binary_data_output: true } }));
    const h = head(Y_BIN, Z_BIN);
    expect(out.contentType).toBe("application/octet-stream");
    expect(out.headerLength).toBe(h.length);
    expect(out.headerLength).toBe(211);
    expect([...binBody(out.body)]).toEqual([...enc.encode(h), 3, 0, 0, 0, 0xfc, 0xff, 0xff, 0xff, 1]);
  });

  it("a listed output's binary_data decides for it, over binary_data_output", () => {
    const out = encodeInferResponse(
      response,
      request({ parameters: { binary_data_output: true }, outputs: [{ name: "Z", parameters: { binary_data: false } }] }),
    );
    expect(out.headerLength).toBe(head(Y_BIN, Z_JSON).length);
    expect([...binBody(out.body)]).toEqual([...enc.encode(head(Y_BIN, Z_JSON)), ...i32(3, -4)]);
    const noDefault = encodeInferResponse(response, request({ outputs: [{ name: "Z", parameters: { binary_data: true } }, { name: "Y" }] }));
    expect([...binBody(noDefault.body)]).toEqual([...enc.encode(head(Y_JSON, Z_BIN)), 1]);
  });

  it("a listed output without binary_data is JSON even under binary_data_output (Triton's http_server.cc)", () => {
    const out = encodeInferResponse(
      response,
      request({ parameters: { binary_data_output: true }, outputs: [{ name: "Y" }, { name: "Z", parameters: { classification: 1 } }] }),
    );
    expect(jsonText(out.body)).toBe(head(Y_JSON, Z_JSON));
    expect(out.contentType).toBe("application/json");
  });

  it("stays JSON when binary_data_output is false", () => {
    expect(jsonText(encodeInferResponse(response, request({ parameters: { binary_data_output: false } })).body)).toBe(PLAIN);
  });

  it("counts Inference-Header-Content-Length in UTF-8 bytes of the JSON part", () => {
    const out = encodeInferResponse(
      { modelName: "modèle", modelVersion: "1", outputs: [{ name: "ÿ", datatype: "INT32", shape: [1], data: i32(9) }] },
      request({ id: "日本", parameters: { binary_data_output: true } }),
    );
    const h =
      '{"id":"日本","model_name":"modèle","model_version":"1","outputs":[{"name":"ÿ","datatype":"INT32","shape":[1],"parameters":{"binary_data_size":4}}]}';
    expect(out.headerLength).toBe(enc.encode(h).byteLength);
    expect(out.headerLength).toBeGreaterThan(h.length);
    expect(dec.decode(binBody(out.body).subarray(0, out.headerLength))).toBe(h);
    expect([...binBody(out.body).subarray(out.headerLength)]).toEqual([...i32(9)]);
  });

  it("sends JSON without a header length when every binary output is empty, as Triton does", () => {
    const out = encodeInferResponse(
      { modelName: "m", modelVersion: "1", outputs: [{ name: "E", datatype: "FP32", shape: [0], data: new Uint8Array(0) }] },
      request({ parameters: { binary_data_output: true } }),
    );
    expect(out.contentType).toBe("application/json");
    expect(out.headerLength).toBeUndefined();
    expect(jsonText(out.body)).toBe(
      '{"model_name":"m","model_version":"1","outputs":[{"name":"E","datatype":"FP32","shape":[0],"parameters":{"binary_data_size":0}}]}',
    );
  });

  it("refuses FP16 and BF16 outputs in JSON, in Triton's words, and sends them binary when asked", () => {
    for (const datatype of ["FP16", "BF16"] as const) {
      const half: InferenceResponse = { modelName: "m", modelVersion: "1", outputs: [{ name: "H", datatype, shape: [1], data: bytes(0x00, 0x3c) }] };
      expect(() => encodeInferResponse(half, request())).toThrow(
        new ServerError("INVALID_ARG", `sending ${datatype} data via JSON is not supported. Please use the binary data format for output`),
      );
      const bin = encodeInferResponse(half, request({ outputs: [{ name: "H", parameters: { binary_data: true } }] }));
      expect([...binBody(bin.body).subarray(bin.headerLength)]).toEqual([0x00, 0x3c]);
    }
  });

  it("round-trips: binary outputs decode as the same bytes a client would send back", () => {
    const out = encodeInferResponse(response, request({ parameters: { binary_data_output: true } }));
    const h = JSON.parse(dec.decode(binBody(out.body).subarray(0, out.headerLength))) as {
      outputs: { name: string; datatype: string; shape: number[]; parameters: Record<string, number> }[];
    };
    const { body, headerLength } = withBinary({ inputs: h.outputs }, binBody(out.body).subarray(out.headerLength));
    const req = decodeInferRequest(body, headerLength, ctx);
    expect(req.inputs.map((i) => [i.name, [...i.data]])).toEqual([
      ["Y", [...i32(3, -4)]],
      ["Z", [1]],
    ]);
  });

  it("round-trips JSON → bytes → JSON for every JSON-capable datatype", () => {
    const data: [DataType, string][] = [
      ["BOOL", "[true,false]"],
      ["INT8", "[-128,127]"],
      ["UINT8", "[0,255]"],
      ["INT16", "[-32768,32767]"],
      ["UINT16", "[0,65535]"],
      ["INT32", "[-2147483648,2147483647]"],
      ["UINT32", "[0,4294967295]"],
      ["INT64", "[-9223372036854775808,9223372036854775807]"],
      ["UINT64", "[0,18446744073709551615]"],
      ["FP32", "[0.5,-1.25,3.0]"],
      ["FP64", "[0.1,-1e300,5e-324]"],
      ["BYTES", '["a","","日本"]'],
    ];
    const count = (d: string) => d.split(",").length;
    const body = enc.encode(`{"inputs":[${data.map(([dt, d]) => `{"name":"${dt}","datatype":"${dt}","shape":[${count(d)}],"data":${d}}`).join(",")}]}`);
    const req = decodeInferRequest(body, undefined, ctx);
    const out = jsonText(encodeInferResponse({ modelName: "m", modelVersion: "1", outputs: req.inputs }, request()).body);
    for (const [dt, d] of data) expect(out).toContain(`"datatype":"${dt}","shape":[${count(d)}],"data":${d}}`);
  });
});

describe("large tensors (#29): sliced decode and encode give the same values", () => {
  const n = 2 ** 20;
  const strings = Array.from({ length: n }, (_, i) => (i % 7 === 0 ? `é"${i}\n` : `s${i}`));
  const ctx: DecodeContext = { modelName: "m" };

  it("a 2^20-element BYTES body decodes to the same exact bytes through JSON.parse and the sliced byte parser", async () => {
    const json = new TextEncoder().encode(
      JSON.stringify({
        id: "big",
        inputs: [
          { name: "S", datatype: "BYTES", shape: [1, n], data: strings },
          { name: "I", datatype: "INT64", shape: [2], data: [1, 2] },
        ],
      }),
    );
    const fast = await decodeInferRequestAsync(json, undefined, ctx);
    const sliced = requestFromJson(await parseJsonExactAsync(json), new Uint8Array(0), ctx, true);
    expect(sliced.id).toBe("big");
    expect(sliced.inputs.map((i) => [i.name, i.shape])).toEqual([
      ["S", [1, n]],
      ["I", [2]],
    ]);
    expect(Buffer.compare(sliced.inputs[0]!.data, fast.inputs[0]!.data)).toBe(0);
    expect(Buffer.compare(sliced.inputs[1]!.data, fast.inputs[1]!.data)).toBe(0);
    const enc = new TextEncoder();
    expect(Buffer.compare(fast.inputs[0]!.data, joinBytes(strings.map((s) => enc.encode(s))))).toBe(0);
  });

  it("encodeInferResponseAsync writes a 2^20-element BYTES output in slices, the same text as encodeInferResponse", async () => {
    const enc = new TextEncoder();
    const response: InferenceResponse = {
      modelName: "m",
      modelVersion: "1",
      outputs: [{ name: "Y", datatype: "BYTES", shape: [1, n], data: joinBytes(strings.map((s) => enc.encode(s))) }],
    };
    const request: InferenceRequest = { modelName: "m", parameters: {}, inputs: [] };
    const sliced = await encodeInferResponseAsync(response, request);
    expect(sliced).toEqual(encodeInferResponse(response, request));
    expect((JSON.parse(sliced.body as string) as { outputs: { data: string[] }[] }).outputs[0]!.data).toEqual(strings);
  });

  it("an output over the JSON bound → INVALID_ARG naming it; the same output as binary data is sent", async () => {
    const response: InferenceResponse = {
      modelName: "m",
      modelVersion: "1",
      outputs: [{ name: "Y", datatype: "FP32", shape: [300_000], data: new Uint8Array(1_200_000) }],
    };
    const asJson: InferenceRequest = { modelName: "m", parameters: {}, inputs: [] };
    const message =
      "output 'Y' of model 'm' has 1200000 bytes of data, more than the 1048576 bytes one JSON output may have (--http-max-input-size); request it as binary data (binary_data: true) instead";
    await expect(encodeInferResponseAsync(response, asJson, 1 << 20)).rejects.toMatchObject({ code: "INVALID_ARG", message });
    expect(() => encodeInferResponse(response, asJson, 1 << 20)).toThrow(message);
    const binary = await encodeInferResponseAsync(response, { ...asJson, parameters: { binary_data_output: true } }, 1 << 20);
    expect((binary.body as Uint8Array).byteLength).toBe(binary.headerLength! + 1_200_000);
  });
});
