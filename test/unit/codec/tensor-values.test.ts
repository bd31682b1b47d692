/** P-09, §4.9, §4.10: datatype conversion for every type, FP16/BF16 bit patterns, BYTES framing. */
import { describe, it, expect } from "vitest";
import { fp16ToFloat, floatToFp16, bf16ToFloat, floatToBf16, valuesToBytes, bytesToJsonArray, readAsNumbers } from "../../../src/core/tensor-values.ts";
import { joinBytes, splitBytes, type DataType } from "../../../src/core/tensor.ts";
import { ServerError } from "../../../src/core/errors.ts";

const bytes = (...b: number[]) => new Uint8Array(b);
const utf8 = (s: string) => new TextEncoder().encode(s);
const hex = (n: number) => `0x${n.toString(16).padStart(4, "0")}`;

describe("FP16", () => {
  // [value, bits, exact]: exact = the bits decode back to exactly this value.
  const cases: [string, number, number, boolean][] = [
    ["1", 1, 0x3c00, true],
    ["-2", -2, 0xc000, true],
    ["0.5", 0.5, 0x3800, true],
    ["65504 (largest finite)", 65504, 0x7bff, true],
    ["2^-14 (smallest normal)", 2 ** -14, 0x0400, true],
    ["2^-24 (smallest subnormal)", 2 ** -24, 0x0001, true],
    ["1023 * 2^-24 (largest subnormal)", 1023 * 2 ** -24, 0x03ff, true],
    ["0", 0, 0x0000, true],
    ["-0", -0, 0x8000, true],
    ["Infinity", Infinity, 0x7c00, true],
    ["-Infinity", -Infinity, 0xfc00, true],
    ["65519 (rounds down to 65504)", 65519, 0x7bff, false],
    ["65520 (halfway to 2^16: overflows to inf)", 65520, 0x7c00, false],
    ["-65520", -65520, 0xfc00, false],
    ["1e6", 1e6, 0x7c00, false],
    ["1 + 2^-11 (tie, down to even)", 1 + 2 ** -11, 0x3c00, false],
    ["1 + 3 * 2^-11 (tie, up to even)", 1 + 3 * 2 ** -11, 0x3c02, false],
    ["1 + 2^-11 + 2^-20 (above the tie)", 1 + 2 ** -11 + 2 ** -20, 0x3c01, false],
    ["0.1", 0.1, 0x2e66, false],
    ["-0.1", -0.1, 0xae66, false],
    ["2^-25 (subnormal tie, down to 0)", 2 ** -25, 0x0000, false],
    ["1.5 * 2^-25 (rounds up to the smallest subnormal)", 1.5 * 2 ** -25, 0x0001, false],
    ["3 * 2^-25 (subnormal tie, up to even)", 3 * 2 ** -25, 0x0002, false],
    ["5 * 2^-25 (subnormal tie, down to even)", 5 * 2 ** -25, 0x0002, false],
    ["2^-14 - 2^-25 (rounds up into the normals)", 2 ** -14 - 2 ** -25, 0x0400, false],
    ["1e-8 (underflows)", 1e-8, 0x0000, false],
    ["-1e-8 (underflows to -0)", -1e-8, 0x8000, false],
  ];

  it.each(cases)("%s → bits", (_, value, bits, exact) => {
    expect(hex(floatToFp16(value))).toBe(hex(bits));
    if (exact) expect(Object.is(fp16ToFloat(bits), value)).toBe(true);
  });

  it("encodes NaN as the quiet NaN 0x7e00 and decodes every NaN pattern as NaN", () => {
    expect(hex(floatToFp16(NaN))).toBe("0x7e00");
    for (const bits of [0x7e00, 0x7c01, 0xfe00, 0x7fff]) expect(fp16ToFloat(bits)).toBeNaN();
  });

  it("decodes subnormals, negatives and 0.1", () => {
    expect(fp16ToFloat(0x0003)).toBe(3 * 2 ** -24);
    expect(fp16ToFloat(0x8001)).toBe(-(2 ** -24));
    expect(fp16ToFloat(0x2e66)).toBe(0.0999755859375);
    expect(fp16ToFloat(0x3555)).toBe(0.333251953125);
    expect(fp16ToFloat(0xfbff)).toBe(-65504);
  });

  it("round-trips every finite bit pattern", () => {
    for (let h = 0; h < 0x10000; h++) {
      if ((h & 0x7c00) === 0x7c00) continue;
      if (floatToFp16(fp16ToFloat(h)) !== h) throw new Error(`0x${h.toString(16)} does not round-trip`);
    }
  });

  // BUG (src/core/tensor-values.ts, floatToFp16): the number is first rounded to float32
  // (f32[0] = v) and then to half, a double rounding. 1 + 2^-11 + 2^-40 lies above the halfway
  // point between 0x3c00 and 0x3c01, so it must round up, but float32 rounds it to exactly
  // 1 + 2^-11 first, whose tie then goes down to even: result 0x3c00. (No caller in src/ today.)
  it.fails("rounds a value just above a tie up, without rounding to float32 first", () => {
    expect(hex(floatToFp16(1 + 2 ** -11 + 2 ** -40))).toBe("0x3c01");
  });
});

describe("BF16", () => {
  const cases: [string, number, number][] = [
    ["1", 1, 0x3f80],
    ["-2", -2, 0xc000],
    ["0.5", 0.5, 0x3f00],
    ["-3", -3, 0xc040],
    ["0", 0, 0x0000],
    ["-0", -0, 0x8000],
    ["Infinity", Infinity, 0x7f80],
    ["-Infinity", -Infinity, 0xff80],
    ["FLT_MAX (rounds to inf)", 3.4028234663852886e38, 0x7f80],
    ["1 + 2^-8 (tie, down to even)", 1 + 2 ** -8, 0x3f80],
    ["1 + 3 * 2^-8 (tie, up to even)", 1 + 3 * 2 ** -8, 0x3f82],
    ["1 + 2^-8 + 2^-16 (above the tie)", 1 + 2 ** -8 + 2 ** -16, 0x3f81],
    ["0.1", 0.1, 0x3dcd],
    ["1e-40 (float32 subnormal)", 1e-40, 0x0001],
  ];

  it.each(cases)("%s → bits", (_, value, bits) => {
    expect(hex(floatToBf16(value))).toBe(hex(bits));
  });

  it("keeps NaN a quiet NaN", () => {
    expect(hex(floatToBf16(NaN))).toBe("0x7fc0");
    expect(bf16ToFloat(0x7fc0)).toBeNaN();
    expect(bf16ToFloat(0xffc1)).toBeNaN();
  });

  it("decodes bit patterns", () => {
    expect(bf16ToFloat(0x3f80)).toBe(1);
    expect(bf16ToFloat(0xc040)).toBe(-3);
    expect(bf16ToFloat(0x3dcd)).toBe(0.10009765625);
    expect(bf16ToFloat(0x7f80)).toBe(Infinity);
    expect(bf16ToFloat(0xff80)).toBe(-Infinity);
    expect(Object.is(bf16ToFloat(0x8000), -0)).toBe(true);
    expect(bf16ToFloat(0x0001)).toBe(9.183549615799121e-41);
  });

  // BUG (src/core/tensor-values.ts, floatToBf16): the same double rounding as floatToFp16;
  // 1 + 2^-8 + 2^-30 rounds to float32 1 + 2^-8 first, a tie that goes down: 0x3f80, not 0x3f81.
  it.fails("rounds a value just above a tie up, without rounding to float32 first", () => {
    expect(hex(floatToBf16(1 + 2 ** -8 + 2 ** -30))).toBe("0x3f81");
  });
});

describe("valuesToBytes: JSON values → tensor bytes", () => {
  const cases: [DataType, unknown[], Uint8Array][] = [
    ["BOOL", [true, false, true], bytes(1, 0, 1)],
    ["UINT8", [0, 255], bytes(0, 255)],
    ["INT8", [-128, 127, -1], bytes(0x80, 0x7f, 0xff)],
    ["UINT16", [65535, 1], bytes(0xff, 0xff, 1, 0)],
    ["INT16", [-2, -32768, 32767], bytes(0xfe, 0xff, 0x00, 0x80, 0xff, 0x7f)],
    ["UINT32", [4294967295, 256], bytes(0xff, 0xff, 0xff, 0xff, 0, 1, 0, 0)],
    ["INT32", [-1, 256, -2147483648], bytes(0xff, 0xff, 0xff, 0xff, 0, 1, 0, 0, 0, 0, 0, 0x80)],
    ["INT64", [-2], bytes(0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)],
    ["INT64", [2 ** 53 + 2], bytes(2, 0, 0, 0, 0, 0, 0x20, 0)],
    ["INT64", [-(2n ** 63n), 2n ** 63n - 1n], bytes(0, 0, 0, 0, 0, 0, 0, 0x80, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f)],
    ["UINT64", [2 ** 53], bytes(0, 0, 0, 0, 0, 0, 0x20, 0)],
    ["UINT64", [2n ** 64n - 1n, 2n ** 53n + 1n], bytes(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 0, 0, 0x20, 0)],
    ["FP32", [1.5, -0, 0.1], bytes(0, 0, 0xc0, 0x3f, 0, 0, 0, 0x80, 0xcd, 0xcc, 0xcc, 0x3d)],
    ["FP32", [1e40, NaN], bytes(0, 0, 0x80, 0x7f, 0, 0, 0xc0, 0x7f)],
    ["FP64", [-0.5, 0.1], bytes(0, 0, 0, 0, 0, 0, 0xe0, 0xbf, 0x9a, 0x99, 0x99, 0x99, 0x99, 0x99, 0xb9, 0x3f)],
    ["BYTES", ["ab", "", "é"], bytes(2, 0, 0, 0, 0x61, 0x62, 0, 0, 0, 0, 2, 0, 0, 0, 0xc3, 0xa9)],
  ];

  it.each(cases)("%s, case %#", (dt, values, expected) => {
    const out = valuesToBytes(dt, values, "input 'X'");
    expect(out).toBeInstanceOf(Uint8Array);
    expect([...out]).toEqual([...expected]);
  });

  it.each(["BOOL", "UINT8", "INT16", "UINT32", "INT64", "UINT64", "FP32", "FP64", "BYTES"] as DataType[])("%s: no values give no bytes", (dt) => {
    expect(valuesToBytes(dt, [], "input 'X'").byteLength).toBe(0);
  });

  it("returns bytes that own their whole buffer", () => {
    const out = valuesToBytes("INT32", [1, 2], "input 'X'");
    expect(out.byteOffset).toBe(0);
    expect(out.buffer.byteLength).toBe(8);
  });

  const errors: [DataType, unknown[], string][] = [
    ["INT8", [128], "input 'X': element 0 of 'data' is 128, expected an integer in -128..127 for datatype INT8"],
    ["INT8", [NaN], "input 'X': element 0 of 'data' is null, expected an integer in -128..127 for datatype INT8"],
    ["UINT8", [1, 256], "input 'X': element 1 of 'data' is 256, expected an integer in 0..255 for datatype UINT8"],
    ["INT16", [32768], "input 'X': element 0 of 'data' is 32768, expected an integer in -32768..32767 for datatype INT16"],
    ["UINT16", [-1], "input 'X': element 0 of 'data' is -1, expected an integer in 0..65535 for datatype UINT16"],
    ["UINT32", [-1], "input 'X': element 0 of 'data' is -1, expected an integer in 0..4294967295 for datatype UINT32"],
    ["INT32", [1, 1.5], "input 'X': element 1 of 'data' is 1.5, expected an integer in -2147483648..2147483647 for datatype INT32"],
    ["INT32", ["1"], "input 'X': element 0 of 'data' is \"1\", expected an integer in -2147483648..2147483647 for datatype INT32"],
    ["INT32", [true], "input 'X': element 0 of 'data' is true, expected an integer in -2147483648..2147483647 for datatype INT32"],
    ["INT64", [0.5], "input 'X': element 0 of 'data' is 0.5, expected an integer for datatype INT64"],
    ["INT64", ["1"], "input 'X': element 0 of 'data' is \"1\", expected an integer for datatype INT64"],
    ["INT64", [Infinity], "input 'X': element 0 of 'data' is null, expected an integer for datatype INT64"],
    ["INT64", [2 ** 63], "input 'X': element 0 of 'data' is 9223372036854776000, expected an integer in -9223372036854775808..9223372036854775807 for datatype INT64"],
    ["UINT64", [-1], "input 'X': element 0 of 'data' is -1, expected an integer in 0..18446744073709551615 for datatype UINT64"],
    ["UINT64", [2 ** 64], "input 'X': element 0 of 'data' is 18446744073709552000, expected an integer in 0..18446744073709551615 for datatype UINT64"],
    ["BOOL", [1], "input 'X': element 0 of 'data' is 1, expected true or false for datatype BOOL"],
    ["BOOL", ["true"], "input 'X': element 0 of 'data' is \"true\", expected true or false for datatype BOOL"],
    ["BYTES", [5], "input 'X': element 0 of 'data' is 5, expected a string for datatype BYTES"],
    ["BYTES", ["a", null], "input 'X': element 1 of 'data' is null, expected a string for datatype BYTES"],
    ["FP32", [null], "input 'X': element 0 of 'data' is null, expected a number for datatype FP32"],
    ["FP64", [1, "2"], "input 'X': element 1 of 'data' is \"2\", expected a number for datatype FP64"],
    ["FP16", [1], "input 'X': datatype FP16 cannot be sent in JSON; use the binary data format"],
    ["BF16", [1], "input 'X': datatype BF16 cannot be sent in JSON; use the binary data format"],
  ];

  it.each(errors)("rejects %s %j", (dt, values, message) => {
    let caught: unknown;
    try {
      valuesToBytes(dt, values, "input 'X'");
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(ServerError);
    expect(caught).toMatchObject({ code: "INVALID_ARG", message });
  });

  // BUG (src/core/tensor-values.ts, valuesToBytes): INT64/UINT64 take bigint values, but an
  // out-of-range bigint makes the error text call JSON.stringify(bigint), which throws
  // "TypeError: Do not know how to serialize a BigInt" instead of INVALID_ARG.
  // (Not reachable from HTTP or gRPC today: both hand it numbers.)
  it("rejects an out-of-range bigint with INVALID_ARG", () => {
    expect(() => valuesToBytes("INT64", [2n ** 63n], "input 'X'")).toThrow(ServerError);
    expect(() => valuesToBytes("UINT64", [-1n], "input 'X'")).toThrow(ServerError);
  });
});

describe("bytesToJsonArray: tensor bytes → JSON text", () => {
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
    ["FP32", bytes(0, 0, 0xc0, 0x3f, 0xcd, 0xcc, 0xcc, 0x3d, 0, 0, 0, 0x80), "[1.5,0.10000000149011612,0]"],
    ["FP32", bytes(0, 0, 0x80, 0x7f, 0, 0, 0x80, 0xff, 0, 0, 0xc0, 0x7f, 0, 0, 0x80, 0x3f), "[Infinity,-Infinity,NaN,1]"],
    ["FP64", bytes(0, 0, 0, 0, 0, 0, 0xe0, 0xbf, 0x9a, 0x99, 0x99, 0x99, 0x99, 0x99, 0xb9, 0x3f), "[-0.5,0.1]"],
    ["FP64", bytes(0, 0, 0, 0, 0, 0, 0xf0, 0xff, 1, 0, 0, 0, 0, 0, 0, 0), "[-Infinity,5e-324]"],
    ["FP16", bytes(0x00, 0x3c, 0x00, 0xc0, 0x66, 0x2e, 0x01, 0x00), "[1,-2,0.0999755859375,5.960464477539063e-8]"],
    ["FP16", bytes(0x00, 0x7c, 0x00, 0xfc, 0x00, 0x7e), "[Infinity,-Infinity,NaN]"],
    ["BF16", bytes(0x80, 0x3f, 0xcd, 0x3d, 0x80, 0x7f, 0xc0, 0x7f), "[1,0.10009765625,Infinity,NaN]"],
    ["BYTES", joinBytes([utf8("hi"), new Uint8Array(0), utf8('q"\\é\n')]), '["hi","","q\\"\\\\é\\n"]'],
    ["BYTES", joinBytes([bytes(0xff)]), '["\uFFFD"]'],
  ];

  it.each(cases)("%s", (dt, data, text) => {
    expect(bytesToJsonArray(dt, data)).toBe(text);
  });

  it.each(["BOOL", "INT32", "UINT64", "FP32", "FP16", "BYTES"] as DataType[])("%s: no bytes give []", (dt) => {
    expect(bytesToJsonArray(dt, new Uint8Array(0))).toBe("[]");
  });

  it("reads views at unaligned offsets for every multi-byte type", () => {
    const at = (offset: number, b: number[]) => {
      const buf = new Uint8Array(offset + b.length + 3);
      buf.set(b, offset);
      return buf.subarray(offset, offset + b.length);
    };
    expect(bytesToJsonArray("INT32", at(1, [0xff, 0xff, 0xff, 0x7f]))).toBe("[2147483647]");
    expect(bytesToJsonArray("INT16", at(1, [0xfe, 0xff]))).toBe("[-2]");
    expect(bytesToJsonArray("UINT64", at(3, [1, 0, 0, 0, 0, 0, 0x20, 0]))).toBe("[9007199254740993]");
    expect(bytesToJsonArray("INT64", at(5, [0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]))).toBe("[-2]");
    expect(bytesToJsonArray("FP32", at(2, [0, 0, 0xc0, 0x3f]))).toBe("[1.5]");
    expect(bytesToJsonArray("FP64", at(4, [0, 0, 0, 0, 0, 0, 0xe0, 0xbf]))).toBe("[-0.5]");
    expect(bytesToJsonArray("FP16", at(1, [0x00, 0x3c]))).toBe("[1]");
    expect(bytesToJsonArray("BF16", at(1, [0x80, 0x3f]))).toBe("[1]");
    expect(bytesToJsonArray("UINT16", at(1, [0xff, 0xff]))).toBe("[65535]");
    expect(bytesToJsonArray("UINT32", at(1, [1, 0, 0, 0]))).toBe("[1]");
  });

  it("round-trips valuesToBytes for every JSON-capable type", () => {
    const values: [DataType, unknown[]][] = [
      ["BOOL", [true, false]],
      ["INT8", [-128, 127]],
      ["UINT8", [0, 255]],
      ["INT16", [-32768, 32767]],
      ["UINT16", [0, 65535]],
      ["INT32", [-2147483648, 2147483647]],
      ["UINT32", [0, 4294967295]],
      ["INT64", [-9007199254740991, 9007199254740991]],
      ["UINT64", [0, 9007199254740991]],
      ["FP32", [0.5, -1.25, 3]],
      ["FP64", [0.1, -1e300, 5e-324]],
      ["BYTES", ["a", "", "日本"]],
    ];
    for (const [dt, vals] of values) expect(JSON.parse(bytesToJsonArray(dt, valuesToBytes(dt, vals, "x")))).toEqual(vals);
  });
});

describe("readAsNumbers", () => {
  const t = (datatype: DataType, data: Uint8Array) => ({ name: "t", datatype, shape: [data.byteLength], data });
  const cases: [DataType, Uint8Array, number[]][] = [
    ["BOOL", bytes(0, 1), [0, 1]],
    ["UINT8", bytes(0, 255), [0, 255]],
    ["INT8", bytes(0xff, 0x80), [-1, -128]],
    ["UINT16", bytes(0xff, 0xff), [65535]],
    ["INT16", bytes(0xfe, 0xff), [-2]],
    ["UINT32", bytes(0xff, 0xff, 0xff, 0xff), [4294967295]],
    ["INT32", bytes(0xfe, 0xff, 0xff, 0xff, 3, 0, 0, 0), [-2, 3]],
    ["INT64", bytes(0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), [-2]],
    ["UINT64", bytes(5, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), [5, 18446744073709551615]],
    ["FP16", bytes(0x00, 0x3c, 0x00, 0x40, 0x00, 0xfc), [1, 2, -Infinity]],
    ["BF16", bytes(0x80, 0x3f, 0x40, 0xc0), [1, -3]],
    ["FP32", bytes(0, 0, 0xc0, 0x3f, 0xcd, 0xcc, 0xcc, 0x3d), [1.5, Math.fround(0.1)]],
    ["FP64", bytes(0, 0, 0, 0, 0, 0, 0xe0, 0xbf), [-0.5]],
  ];

  it.each(cases)("%s", (dt, data, expected) => {
    expect(readAsNumbers(t(dt, data))).toEqual(expected);
  });

  it("reads unaligned data", () => {
    const buf = new Uint8Array(9);
    buf.set([0, 0, 0xc0, 0x3f], 1);
    expect(readAsNumbers(t("FP32", buf.subarray(1, 5)))).toEqual([1.5]);
  });

  it("refuses BYTES", () => {
    expect(() => readAsNumbers({ name: "s", datatype: "BYTES", shape: [1], data: bytes() })).toThrow(
      new ServerError("INVALID_ARG", "classification is not supported for BYTES output 's'"),
    );
  });
});

describe("BYTES framing", () => {
  it("joins with 4-byte little-endian length prefixes and splits back", () => {
    const joined = joinBytes([bytes(1, 2), bytes(), bytes(3)]);
    expect([...joined]).toEqual([2, 0, 0, 0, 1, 2, 0, 0, 0, 0, 1, 0, 0, 0, 3]);
    expect(splitBytes(joined)).toEqual([bytes(1, 2), bytes(), bytes(3)]);
    expect(splitBytes(new Uint8Array(0))).toEqual([]);
    expect(joinBytes([]).byteLength).toBe(0);
  });

  it("reads a length of 256 and more", () => {
    const big = new Uint8Array(300).fill(7);
    const joined = joinBytes([big]);
    expect([...joined.subarray(0, 4)]).toEqual([44, 1, 0, 0]);
    expect(splitBytes(joined)[0]).toEqual(big);
  });

  it("reports bad framing with the byte offset", () => {
    expect(() => splitBytes(bytes(1, 0, 0))).toThrow("BYTES tensor: incomplete string length prefix at byte 0");
    expect(() => splitBytes(bytes(5, 0, 0, 0, 1))).toThrow("BYTES tensor: string element of length 5 at byte 0 runs past the end of the data");
    expect(() => splitBytes(bytes(1, 0, 0, 0, 9, 2, 0, 0, 0, 1), "input 'S'")).toThrow("input 'S': string element of length 2 at byte 5 runs past the end of the data");
    expect(() => splitBytes(bytes(0, 0, 0, 0, 0))).toThrow("BYTES tensor: incomplete string length prefix at byte 4");
  });
});
