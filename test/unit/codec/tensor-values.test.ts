/** P-09, §4.10: datatype conversion for every type, FP16/BF16 bit patterns, BYTES framing. */
import { describe, it, expect } from "vitest";
import { fp16ToFloat, floatToFp16, bf16ToFloat, floatToBf16, valuesToBytes, bytesToJsonArray, readAsNumbers } from "../../../src/core/tensor-values.ts";
import { joinBytes, splitBytes, type DataType } from "../../../src/core/tensor.ts";

const bytes = (...b: number[]) => new Uint8Array(b);

describe("FP16", () => {
  it.each([
    [1.0, 0x3c00], [-2, 0xc000], [65504, 0x7bff], [2 ** -24, 0x0001], [2 ** -14, 0x0400], [0, 0x0000], [-0, 0x8000],
    [65520, 0x7c00], [Infinity, 0x7c00], [-Infinity, 0xfc00], [1 + 2 ** -11, 0x3c00], [1 + 3 * 2 ** -11, 0x3c02], [0.1, 0x2e66],
  ])("%d ↔ 0x%s", (value, bits) => {
    expect(floatToFp16(value)).toBe(bits);
    if (Math.abs(value) < 65520 && value !== 1 + 2 ** -11 && value !== 1 + 3 * 2 ** -11 && value !== 0.1) expect(fp16ToFloat(bits)).toBe(value);
  });
  it("NaN stays NaN", () => {
    expect(fp16ToFloat(floatToFp16(NaN))).toBeNaN();
    expect(floatToFp16(NaN) & 0x7c00).toBe(0x7c00);
  });
  it("decodes subnormals and 0.1", () => {
    expect(fp16ToFloat(0x0003)).toBe(3 * 2 ** -24);
    expect(fp16ToFloat(0x2e66)).toBeCloseTo(0.0999755859375, 12);
  });
});

describe("BF16", () => {
  it.each([[1.0, 0x3f80], [-2, 0xc000], [0.5, 0x3f00], [Infinity, 0x7f80], [1 + 2 ** -8, 0x3f80], [1 + 3 * 2 ** -8, 0x3f82]])("%d → 0x%s", (v, b) => {
    expect(floatToBf16(v)).toBe(b);
  });
  it("decodes", () => {
    expect(bf16ToFloat(0x3f80)).toBe(1);
    expect(bf16ToFloat(0xc040)).toBe(-3);
    expect(bf16ToFloat(floatToBf16(NaN))).toBeNaN();
  });
});

describe("JSON values → bytes", () => {
  const cases: [DataType, unknown[], Uint8Array][] = [
    ["BOOL", [true, false, true], bytes(1, 0, 1)],
    ["UINT8", [0, 255], bytes(0, 255)],
    ["INT8", [-128, 127], bytes(0x80, 0x7f)],
    ["UINT16", [65535, 1], bytes(0xff, 0xff, 1, 0)],
    ["INT16", [-2], bytes(0xfe, 0xff)],
    ["UINT32", [4294967295], bytes(0xff, 0xff, 0xff, 0xff)],
    ["INT32", [-1, 256], bytes(0xff, 0xff, 0xff, 0xff, 0, 1, 0, 0)],
    ["INT64", [-2], bytes(0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)],
    ["UINT64", [2 ** 53], bytes(0, 0, 0, 0, 0, 0, 0x20, 0)],
    ["FP32", [1.5], bytes(0, 0, 0xc0, 0x3f)],
    ["FP64", [-0.5], bytes(0, 0, 0, 0, 0, 0, 0xe0, 0xbf)],
    ["BYTES", ["ab", "", "é"], bytes(2, 0, 0, 0, 0x61, 0x62, 0, 0, 0, 0, 2, 0, 0, 0, 0xc3, 0xa9)],
  ];
  it.each(cases)("%s", (dt, values, expected) => {
    expect(valuesToBytes(dt, values, "input 'X'")).toEqual(expected);
  });

  it.each([
    ["INT8", [128], "input 'X': element 0 of 'data' is 128, expected an integer in -128..127 for datatype INT8"],
    ["UINT32", [-1], "input 'X': element 0 of 'data' is -1, expected an integer in 0..4294967295 for datatype UINT32"],
    ["INT32", [1, 1.5], "input 'X': element 1 of 'data' is 1.5, expected an integer in -2147483648..2147483647 for datatype INT32"],
    ["INT32", ["1"], "input 'X': element 0 of 'data' is \"1\", expected an integer in -2147483648..2147483647 for datatype INT32"],
    ["BOOL", [1], "input 'X': element 0 of 'data' is 1, expected true or false for datatype BOOL"],
    ["BYTES", [5], "input 'X': element 0 of 'data' is 5, expected a string for datatype BYTES"],
    ["FP32", [null], "input 'X': element 0 of 'data' is null, expected a number for datatype FP32"],
    ["INT64", [0.5], "input 'X': element 0 of 'data' is 0.5, expected an integer for datatype INT64"],
    ["FP16", [1], "input 'X': datatype FP16 cannot be sent in JSON; use the binary data format"],
  ] as [DataType, unknown[], string][])("rejects %s %j", (dt, values, message) => {
    expect(() => valuesToBytes(dt, values, "input 'X'")).toThrow(message);
  });
});

describe("bytes → JSON text", () => {
  it.each([
    ["BOOL", bytes(1, 0, 2), "[true,false,true]"],
    ["INT8", bytes(0xff, 1), "[-1,1]"],
    ["UINT16", bytes(0xff, 0xff), "[65535]"],
    ["INT32", bytes(0xfe, 0xff, 0xff, 0xff), "[-2]"],
    ["INT64", bytes(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f), "[9223372036854775807]"],
    ["UINT64", bytes(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), "[18446744073709551615]"],
    ["FP32", bytes(0, 0, 0xc0, 0x3f, 0, 0, 0x80, 0x7f, 0, 0, 0xc0, 0x7f), "[1.5,Infinity,NaN]"],
    ["FP64", bytes(0, 0, 0, 0, 0, 0, 0xe0, 0xbf), "[-0.5]"],
    ["FP16", bytes(0x00, 0x3c, 0x00, 0xc0), "[1,-2]"],
    ["BF16", bytes(0x80, 0x3f), "[1]"],
    ["BYTES", joinBytes([new TextEncoder().encode("hi"), new Uint8Array(0)]), '["hi",""]'],
  ] as [DataType, Uint8Array, string][])("%s", (dt, data, text) => {
    expect(bytesToJsonArray(dt, data)).toBe(text);
  });

  it("reads unaligned views", () => {
    const buf = new Uint8Array(9);
    buf.set([0xff, 0xff, 0xff, 0x7f], 1);
    expect(bytesToJsonArray("INT32", buf.subarray(1, 5))).toBe("[2147483647]");
  });
});

describe("readAsNumbers and BYTES framing", () => {
  it("reads every numeric type as numbers", () => {
    expect(readAsNumbers({ name: "t", datatype: "FP16", shape: [2], data: bytes(0x00, 0x3c, 0x00, 0x40) })).toEqual([1, 2]);
    expect(readAsNumbers({ name: "t", datatype: "UINT64", shape: [1], data: bytes(5, 0, 0, 0, 0, 0, 0, 0) })).toEqual([5]);
    expect(readAsNumbers({ name: "t", datatype: "BOOL", shape: [2], data: bytes(0, 1) })).toEqual([0, 1]);
    expect(() => readAsNumbers({ name: "t", datatype: "BYTES", shape: [1], data: bytes() })).toThrow("classification is not supported for BYTES output 't'");
  });

  it("splits and joins length-prefixed elements", () => {
    const joined = joinBytes([bytes(1, 2), bytes(), bytes(3)]);
    expect(joined).toEqual(bytes(2, 0, 0, 0, 1, 2, 0, 0, 0, 0, 1, 0, 0, 0, 3));
    expect(splitBytes(joined)).toEqual([bytes(1, 2), bytes(), bytes(3)]);
    expect(() => splitBytes(bytes(1, 0, 0))).toThrow("BYTES tensor: incomplete string length prefix at byte 0");
    expect(() => splitBytes(bytes(5, 0, 0, 0, 1))).toThrow("BYTES tensor: string element of length 5 at byte 0 runs past the end of the data");
  });
});
