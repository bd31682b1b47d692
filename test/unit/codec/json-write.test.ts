/** §1.2: response tensor data and parameters as Triton's rapidjson writer prints them. */
import { describe, it, expect } from "vitest";
import {
  checkJsonOutputSize,
  formatDouble,
  JSON_SLICE_BYTES,
  parametersJson,
  tensorDataJson,
  tensorDataJsonAsync,
} from "../../../src/frontends/http/json-write.ts";
import { ELEMENT_SIZE, joinBytes, type DataType, type Tensor } from "../../../src/core/tensor.ts";
import { ServerError } from "../../../src/core/errors.ts";

const bytes = (...b: number[]) => new Uint8Array(b);
const utf8 = (s: string) => new TextEncoder().encode(s);
const tensor = (datatype: DataType, data: Uint8Array, shape = [data.byteLength / (ELEMENT_SIZE[datatype] || 1)]): Tensor => ({
  name: "Y",
  datatype,
  shape,
  data,
});

describe("formatDouble (rapidjson Writer::Double with kWriteNanAndInfFlag)", () => {
  // Checked against rapidjson built from Tencent/rapidjson@24b5e7a8.
  const cases: [number, string][] = [
    [1, "1.0"],
    [-2, "-2.0"],
    [0, "0.0"],
    [-0, "-0.0"],
    [0.1, "0.1"],
    [-1.5, "-1.5"],
    [100, "100.0"],
    [123456789012345680000, "123456789012345680000.0"],
    [1e21, "1e21"],
    [-1.5e300, "-1.5e300"],
    [1.7976931348623157e308, "1.7976931348623157e308"],
    [0.000001, "0.000001"],
    [1e-7, "1e-7"],
    [1.25e-10, "1.25e-10"],
    [5e-324, "5e-324"],
    [Math.fround(0.1), "0.10000000149011612"],
    [NaN, "NaN"],
    [Infinity, "Infinity"],
    [-Infinity, "-Infinity"],
  ];
  it.each(cases)("%d → %s", (v, text) => {
    expect(formatDouble(v)).toBe(text);
  });
});

describe("tensorDataJson", () => {
  const cases: [DataType, Uint8Array, string][] = [
    ["BOOL", bytes(1, 0, 2), "[true,false,true]"],
    ["UINT8", bytes(0, 255), "[0,255]"],
    ["INT8", bytes(0xff, 1, 0x80), "[-1,1,-128]"],
    ["UINT16", bytes(0xff, 0xff, 1, 0), "[65535,1]"],
    ["INT16", bytes(0x00, 0x80), "[-32768]"],
    ["UINT32", bytes(0xff, 0xff, 0xff, 0xff), "[4294967295]"],
    ["INT32", bytes(0xfe, 0xff, 0xff, 0xff, 0, 1, 0, 0), "[-2,256]"],
    ["INT64", bytes(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f), "[9223372036854775807]"],
    ["INT64", bytes(1, 0, 0, 0, 0, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0x80), "[9007199254740993,-9223372036854775808]"],
    ["UINT64", bytes(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), "[18446744073709551615]"],
    ["UINT64", bytes(1, 0, 0, 0, 0, 0, 0x20, 0), "[9007199254740993]"],
    ["FP32", bytes(0, 0, 0xc0, 0x3f, 0xcd, 0xcc, 0xcc, 0x3d, 0, 0, 0, 0x80, 0, 0, 0x80, 0x3f), "[1.5,0.10000000149011612,-0.0,1.0]"],
    ["FP32", bytes(0, 0, 0x80, 0x7f, 0, 0, 0x80, 0xff, 0, 0, 0xc0, 0x7f, 0xff, 0xff, 0x7f, 0x7f), "[Infinity,-Infinity,NaN,3.4028234663852886e38]"],
    ["FP64", bytes(0, 0, 0, 0, 0, 0, 0xe0, 0xbf, 0x9a, 0x99, 0x99, 0x99, 0x99, 0x99, 0xb9, 0x3f), "[-0.5,0.1]"],
    ["FP64", bytes(0, 0, 0, 0, 0, 0, 0xf0, 0xff, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x59, 0x40), "[-Infinity,5e-324,100.0]"],
  ];

  it.each(cases)("%s", (dt, data, text) => {
    expect(tensorDataJson(tensor(dt, data))).toBe(text);
  });

  // Up to 1024 elements go through a plain array, larger ones are joined as typed arrays.
  it.each([1023, 1024, 1025, 3000])("writes %d INT32 and FP32 elements the same on both paths", (n) => {
    const ints = Int32Array.from({ length: n }, (_, i) => (i % 2 ? -i : i * 1000));
    const floats = Float32Array.from({ length: n }, (_, i) => i + 0.25);
    const bytesOf = (a: Int32Array | Float32Array) => new Uint8Array(a.buffer);
    expect(tensorDataJson(tensor("INT32", bytesOf(ints)))).toBe("[" + Array.from(ints, String).join(",") + "]");
    expect(tensorDataJson(tensor("FP32", bytesOf(floats)))).toBe("[" + Array.from(floats, String).join(",") + "]");
  });

  it("writes BYTES as JSON strings, invalid UTF-8 as U+FFFD, control characters escaped", () => {
    const data = joinBytes([utf8("hi"), new Uint8Array(0), utf8('q"\\é\n\u0001'), bytes(0xff)]);
    expect(tensorDataJson(tensor("BYTES", data, [2, 2]))).toBe('["hi","","q\\"\\\\é\\n\\u0001","\uFFFD"]');
  });

  it("writes BYTES exactly as JSON.stringify of each element decoded alone: every byte value, broken UTF-8 at element edges, escapes past the estimate", () => {
    const elements = [
      Uint8Array.from({ length: 256 }, (_, i) => i),
      bytes(0xe2, 0x82),
      bytes(0xac, 0x22),
      bytes(0xf0, 0x9f, 0x98),
      bytes(0x80, 0x5c, 0xc3),
      new Uint8Array(5000),
      utf8('€😀\u2028"\\'),
      new Uint8Array(0),
    ];
    const reference = "[" + elements.map((e) => JSON.stringify(new TextDecoder().decode(e))).join(",") + "]";
    expect(tensorDataJson(tensor("BYTES", joinBytes(elements), [elements.length]))).toBe(reference);
  });

  it("writes BYTES elements up to the shape's count, ignoring bytes after them", () => {
    expect(tensorDataJson(tensor("BYTES", joinBytes([utf8("a"), utf8("b")]), [1]))).toBe('["a"]');
  });

  it.each(["BOOL", "INT32", "UINT64", "FP32", "FP64", "BYTES"] as DataType[])("%s: an empty tensor gives []", (dt) => {
    expect(tensorDataJson(tensor(dt, new Uint8Array(0), [0, 4]))).toBe("[]");
  });

  it("reads views at unaligned offsets", () => {
    const buf = new Uint8Array(16);
    buf.set([0, 0, 0xc0, 0x3f], 1);
    buf.set([1, 0, 0, 0, 0, 0, 0x20, 0], 5);
    expect(tensorDataJson(tensor("FP32", buf.subarray(1, 5)))).toBe("[1.5]");
    expect(tensorDataJson(tensor("UINT64", buf.subarray(5, 13)))).toBe("[9007199254740993]");
  });

  it("refuses FP16 and BF16 in Triton's words", () => {
    for (const dt of ["FP16", "BF16"] as const) {
      expect(() => tensorDataJson(tensor(dt, bytes(0, 0x3c)))).toThrow(
        new ServerError("INVALID_ARG", `sending ${dt} data via JSON is not supported. Please use the binary data format for output`),
      );
    }
  });

  it("reports data that does not match the shape as INTERNAL, in Triton's words", () => {
    const err = (t: Tensor) => {
      try {
        tensorDataJson(t);
      } catch (e) {
        return e as ServerError;
      }
      throw new Error("no error");
    };
    expect(err(tensor("INT32", bytes(1, 0, 0, 0), [2]))).toMatchObject({
      code: "INTERNAL",
      message: "Failed to write 'data' field: output tensor shape does not match size of output for 'Y'",
    });
    expect(err(tensor("BYTES", joinBytes([utf8("a")]), [2]))).toMatchObject({
      code: "INTERNAL",
      message: "output tensor shape does not match size of output for 'Y'",
    });
    expect(err(tensor("BYTES", bytes(9, 0, 0, 0, 1), [1])).message).toBe("output tensor shape does not match size of output for 'Y'");
  });
});

describe("parametersJson", () => {
  it("writes bool, int64, double and string values in insertion order", () => {
    expect(parametersJson({ b: true, i: -3, big: 2n ** 63n - 1n, d: 0.5, whole: 2 ** 70, s: 'x"y' })).toBe(
      '{"b":true,"i":-3,"big":9223372036854775807,"d":0.5,"whole":1.1805916207174113e21,"s":"x\\"y"}',
    );
    expect(parametersJson({})).toBe("{}");
  });
});

describe("tensorDataJsonAsync: large outputs in slices (#29)", () => {
  const n = 200_000; // over JSON_SLICE_BYTES for every type below, three slices and a part
  const cases: [string, () => Tensor][] = [
    [
      "FP32 with integral, fractional and non-finite values",
      () => tensor("FP32", new Uint8Array(Float32Array.from({ length: n }, (_, i) => (i === 7 ? NaN : i === 9 ? -Infinity : (i % 1000) / 8)).buffer)),
    ],
    ["FP64 fractions only (the native join)", () => tensor("FP64", new Uint8Array(Float64Array.from({ length: n }, (_, i) => i + 0.25).buffer))],
    ["INT64 beyond 2^53", () => tensor("INT64", new Uint8Array(BigInt64Array.from({ length: n }, (_, i) => 2n ** 60n + BigInt(i)).buffer))],
    [
      "BOOL",
      () =>
        tensor(
          "BOOL",
          Uint8Array.from({ length: 300_000 }, (_, i) => i % 3),
        ),
    ],
    [
      "INT8",
      () =>
        tensor(
          "INT8",
          Uint8Array.from({ length: 300_000 }, (_, i) => i),
        ),
    ],
    [
      "BYTES with escapes, multi-byte text and invalid UTF-8",
      () => {
        const parts = Array.from({ length: n }, (_, i) => (i % 5 === 0 ? bytes(0xff, 0x22, 0x0a) : utf8(`é${i}\\"`)));
        return tensor("BYTES", joinBytes(parts), [n]);
      },
    ],
  ];
  it.each(cases)("%s: the same text as tensorDataJson", async (_, make) => {
    const t = make();
    expect(t.data.byteLength).toBeGreaterThan(JSON_SLICE_BYTES);
    const sliced = await tensorDataJsonAsync(t);
    expect(sliced).toBe(tensorDataJson(t));
    expect(sliced.length).toBeGreaterThan(n);
  });

  it("lets the event loop run between slices", async () => {
    let turns = 0;
    const timer = setInterval(() => turns++, 0);
    await tensorDataJsonAsync(tensor("FP32", new Uint8Array(new Float32Array(1_000_000).fill(0.5).buffer)));
    clearInterval(timer);
    expect(turns).toBeGreaterThan(0);
  });

  it("BYTES whose framing ends early → the same INTERNAL error as tensorDataJson", async () => {
    const t = tensor("BYTES", joinBytes(Array.from({ length: 100_000 }, () => utf8("abcd"))), [100_001]);
    await expect(tensorDataJsonAsync(t)).rejects.toThrow("output tensor shape does not match size of output for 'Y'");
  });
});

describe("checkJsonOutputSize", () => {
  it("allows up to the limit, refuses beyond it naming the output, the model and the way out", () => {
    const t = tensor("FP32", new Uint8Array(400));
    expect(() => checkJsonOutputSize(t, "m", 400)).not.toThrow();
    expect(() => checkJsonOutputSize(t, "m", 399)).toThrow(
      "output 'Y' of model 'm' has 400 bytes of data, more than the 399 bytes one JSON output may have (--http-max-input-size); request it as binary data (binary_data: true) instead",
    );
  });
});
