/** P-09, §1.4, §4.9, §4.10: datatype conversion for every type, FP16/BF16 bit patterns, BYTES framing. */
import { describe, it, expect } from "vitest";
import { fp16ToFloat, floatToFp16, bf16ToFloat, floatToBf16, valuesToBytes, bytesToValues, readAsNumbers, typedView } from "../../../src/core/tensor-values.ts";
import { DATA_TYPES, joinBytes, splitBytes, type DataType } from "../../../src/core/tensor.ts";
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
    ["1e300", 1e300, 0x7c00, false],
    ["1 + 2^-11 (tie, down to even)", 1 + 2 ** -11, 0x3c00, false],
    ["1 + 3 * 2^-11 (tie, up to even)", 1 + 3 * 2 ** -11, 0x3c02, false],
    ["1 + 2^-11 + 2^-20 (above the tie)", 1 + 2 ** -11 + 2 ** -20, 0x3c01, false],
    ["1 + 2^-11 + 2^-40 (just above the tie: no float32 double rounding)", 1 + 2 ** -11 + 2 ** -40, 0x3c01, false],
    ["2 - 2^-12 (rounds up into the next binade)", 2 - 2 ** -12, 0x4000, false],
    ["0.1", 0.1, 0x2e66, false],
    ["-0.1", -0.1, 0xae66, false],
    ["2^-25 (subnormal tie, down to 0)", 2 ** -25, 0x0000, false],
    ["2^-25 + 2^-60 (just above the subnormal tie)", 2 ** -25 + 2 ** -60, 0x0001, false],
    ["1.5 * 2^-25 (rounds up to the smallest subnormal)", 1.5 * 2 ** -25, 0x0001, false],
    ["3 * 2^-25 (subnormal tie, up to even)", 3 * 2 ** -25, 0x0002, false],
    ["5 * 2^-25 (subnormal tie, down to even)", 5 * 2 ** -25, 0x0002, false],
    ["2^-14 - 2^-25 (rounds up into the normals)", 2 ** -14 - 2 ** -25, 0x0400, false],
    ["1e-8 (underflows)", 1e-8, 0x0000, false],
    ["-1e-8 (underflows to -0)", -1e-8, 0x8000, false],
    ["5e-324 (double subnormal)", 5e-324, 0x0000, false],
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

  it("rounds every midpoint between neighbours to the even one, and a hair off it to the nearer", () => {
    for (let h = 0; h < 0x7bff; h++) {
      const lo = fp16ToFloat(h);
      const hi = fp16ToFloat(h + 1);
      const mid = (lo + hi) / 2;
      const even = h % 2 === 0 ? h : h + 1;
      if (floatToFp16(mid) !== even) throw new Error(`midpoint above 0x${h.toString(16)}`);
      if (floatToFp16(mid - (hi - lo) / 1024) !== h || floatToFp16(mid + (hi - lo) / 1024) !== h + 1) {
        throw new Error(`near the midpoint above 0x${h.toString(16)}`);
      }
    }
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
    ["1e300 (overflows)", 1e300, 0x7f80],
    ["largest bf16 3.3895313892515355e38", 3.3895313892515355e38, 0x7f7f],
    ["1 + 2^-8 (tie, down to even)", 1 + 2 ** -8, 0x3f80],
    ["1 + 3 * 2^-8 (tie, up to even)", 1 + 3 * 2 ** -8, 0x3f82],
    ["1 + 2^-8 + 2^-16 (above the tie)", 1 + 2 ** -8 + 2 ** -16, 0x3f81],
    ["1 + 2^-8 + 2^-30 (just above the tie: no float32 double rounding)", 1 + 2 ** -8 + 2 ** -30, 0x3f81],
    ["0.1", 0.1, 0x3dcd],
    ["1e-40 (float32 subnormal)", 1e-40, 0x0001],
    ["2^-133 (smallest subnormal)", 2 ** -133, 0x0001],
    ["2^-134 (subnormal tie, down to 0)", 2 ** -134, 0x0000],
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

  it("round-trips every finite bit pattern", () => {
    for (let b = 0; b < 0x10000; b++) {
      if ((b & 0x7f80) === 0x7f80) continue;
      if (floatToBf16(bf16ToFloat(b)) !== b) throw new Error(`0x${b.toString(16)} does not round-trip`);
    }
  });
});

describe("valuesToBytes", () => {
  const cases: [DataType, unknown[], Uint8Array][] = [
    ["BOOL", [true, false, true], bytes(1, 0, 1)],
    ["UINT8", [0, 255], bytes(0, 255)],
    ["INT8", [-128, 127, -1], bytes(0x80, 0x7f, 0xff)],
    ["UINT16", [65535, 1], bytes(0xff, 0xff, 1, 0)],
    ["INT16", [-2, -32768, 32767], bytes(0xfe, 0xff, 0x00, 0x80, 0xff, 0x7f)],
    ["UINT32", [4294967295, 256], bytes(0xff, 0xff, 0xff, 0xff, 0, 1, 0, 0)],
    ["INT32", [-1, 256, -2147483648], bytes(0xff, 0xff, 0xff, 0xff, 0, 1, 0, 0, 0, 0, 0, 0x80)],
    ["INT32", [5n, -0], bytes(5, 0, 0, 0, 0, 0, 0, 0)],
    ["INT64", [-2], bytes(0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)],
    ["INT64", [2 ** 53 + 2], bytes(2, 0, 0, 0, 0, 0, 0x20, 0)],
    ["INT64", [-(2n ** 63n), 2n ** 63n - 1n], bytes(0, 0, 0, 0, 0, 0, 0, 0x80, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f)],
    ["UINT64", [2 ** 53], bytes(0, 0, 0, 0, 0, 0, 0x20, 0)],
    ["UINT64", [2n ** 64n - 1n, 2n ** 53n + 1n], bytes(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 0, 0, 0x20, 0)],
    ["FP16", [1, -2, 65504, 2 ** -24], bytes(0x00, 0x3c, 0x00, 0xc0, 0xff, 0x7b, 0x01, 0x00)],
    ["FP16", [Infinity, NaN], bytes(0x00, 0x7c, 0x00, 0x7e)],
    ["BF16", [1, -3, 0.1], bytes(0x80, 0x3f, 0x40, 0xc0, 0xcd, 0x3d)],
    ["FP32", [1.5, -0, 0.1], bytes(0, 0, 0xc0, 0x3f, 0, 0, 0, 0x80, 0xcd, 0xcc, 0xcc, 0x3d)],
    ["FP32", [1e40, NaN, 16777217n], bytes(0, 0, 0x80, 0x7f, 0, 0, 0xc0, 0x7f, 0, 0, 0x80, 0x4b)],
    ["FP64", [-0.5, 0.1], bytes(0, 0, 0, 0, 0, 0, 0xe0, 0xbf, 0x9a, 0x99, 0x99, 0x99, 0x99, 0x99, 0xb9, 0x3f)],
    ["BYTES", ["ab", "", "é"], bytes(2, 0, 0, 0, 0x61, 0x62, 0, 0, 0, 0, 2, 0, 0, 0, 0xc3, 0xa9)],
    ["BYTES", [bytes(0, 0xff), "x"], bytes(2, 0, 0, 0, 0, 0xff, 1, 0, 0, 0, 0x78)],
  ];

  it.each(cases)("%s, case %#", (dt, values, expected) => {
    const out = valuesToBytes(dt, values, "input 'X'");
    expect(out).toBeInstanceOf(Uint8Array);
    expect([...out]).toEqual([...expected]);
  });

  it("BYTES: the same bytes as TextEncoder per element, for surrogates, long strings and growth past the ASCII estimate", () => {
    const strings = [
      "",
      "a",
      "é",
      "€",
      "😀",
      "\ud800",
      "a\udc00b",
      "\ud83d",
      "x\ud83d\ude00y",
      "\ud83d\ude00".repeat(32),
      "€".repeat(64),
      "€".repeat(65),
      "\ud83d".repeat(70),
      "x".repeat(10_000),
      "漢字".repeat(5_000) + "\ud83d",
      "é".repeat(100_000),
    ];
    const values = [...strings, bytes(0, 0xff), ...strings.map((x) => x + "tail")];
    const reference = joinBytes(values.map((v) => (typeof v === "string" ? utf8(v) : v)));
    expect(Buffer.from(valuesToBytes("BYTES", values, "input 'X'")).equals(Buffer.from(reference))).toBe(true);
    const many = Array.from({ length: 10_000 }, (_, i) => (i % 7 === 0 ? "ü" : "a").repeat(i % 5));
    expect(Buffer.from(valuesToBytes("BYTES", many, "input 'X'")).equals(Buffer.from(joinBytes(many.map(utf8))))).toBe(true);
  });

  it.each([...DATA_TYPES])("%s: no values give no bytes", (dt) => {
    expect(valuesToBytes(dt, [], "input 'X'").byteLength).toBe(0);
  });

  it("returns exactly the tensor's bytes, at an offset aligned for any element type (small tensors share slabs)", () => {
    const out = valuesToBytes("INT32", [1, 2], "input 'X'");
    expect(out.byteLength).toBe(8);
    expect(out.byteOffset % 8).toBe(0);
    expect([...new Int32Array(out.buffer, out.byteOffset, 2)]).toEqual([1, 2]);
  });

  const errors: [DataType, unknown[], string][] = [
    ["INT8", [128], "input 'X': element 0 of 'data' is 128, expected an integer in -128..127 for datatype INT8"],
    ["INT8", [NaN], "input 'X': element 0 of 'data' is NaN, expected an integer in -128..127 for datatype INT8"],
    ["INT8", [300n], "input 'X': element 0 of 'data' is 300, expected an integer in -128..127 for datatype INT8"],
    ["UINT8", [1, 256], "input 'X': element 1 of 'data' is 256, expected an integer in 0..255 for datatype UINT8"],
    ["INT16", [32768], "input 'X': element 0 of 'data' is 32768, expected an integer in -32768..32767 for datatype INT16"],
    ["UINT16", [-1], "input 'X': element 0 of 'data' is -1, expected an integer in 0..65535 for datatype UINT16"],
    ["UINT32", [-1], "input 'X': element 0 of 'data' is -1, expected an integer in 0..4294967295 for datatype UINT32"],
    ["INT32", [1, 1.5], "input 'X': element 1 of 'data' is 1.5, expected an integer in -2147483648..2147483647 for datatype INT32"],
    ["INT32", ["1"], "input 'X': element 0 of 'data' is \"1\", expected an integer in -2147483648..2147483647 for datatype INT32"],
    ["INT32", [true], "input 'X': element 0 of 'data' is true, expected an integer in -2147483648..2147483647 for datatype INT32"],
    ["INT32", [[1]], "input 'X': element 0 of 'data' is [1], expected an integer in -2147483648..2147483647 for datatype INT32"],
    // Found by the fuzz suite (#14): a bigint inside an object element made the message itself throw (HTTP 500), and a long element was echoed whole.
    [
      "INT32",
      [{ a: [9223372036854775807n, -1n] }],
      "input 'X': element 0 of 'data' is {\"a\":[9223372036854775807,-1]}, expected an integer in -2147483648..2147483647 for datatype INT32",
    ],
    ["INT32", ["x".repeat(5000)], `input 'X': element 0 of 'data' is "${"x".repeat(99)}…, expected an integer in -2147483648..2147483647 for datatype INT32`],
    ["INT64", [0.5], "input 'X': element 0 of 'data' is 0.5, expected an integer for datatype INT64"],
    ["INT64", ["1"], "input 'X': element 0 of 'data' is \"1\", expected an integer for datatype INT64"],
    ["INT64", [Infinity], "input 'X': element 0 of 'data' is Infinity, expected an integer for datatype INT64"],
    ["INT64", [null], "input 'X': element 0 of 'data' is null, expected an integer for datatype INT64"],
    [
      "INT64",
      [2 ** 63],
      "input 'X': element 0 of 'data' is 9223372036854776000, expected an integer in -9223372036854775808..9223372036854775807 for datatype INT64",
    ],
    [
      "INT64",
      [2n ** 63n],
      "input 'X': element 0 of 'data' is 9223372036854775808, expected an integer in -9223372036854775808..9223372036854775807 for datatype INT64",
    ],
    ["UINT64", [-1], "input 'X': element 0 of 'data' is -1, expected an integer in 0..18446744073709551615 for datatype UINT64"],
    ["UINT64", [-1n], "input 'X': element 0 of 'data' is -1, expected an integer in 0..18446744073709551615 for datatype UINT64"],
    ["UINT64", [2 ** 64], "input 'X': element 0 of 'data' is 18446744073709552000, expected an integer in 0..18446744073709551615 for datatype UINT64"],
    ["BOOL", [1], "input 'X': element 0 of 'data' is 1, expected true or false for datatype BOOL"],
    ["BOOL", ["true"], "input 'X': element 0 of 'data' is \"true\", expected true or false for datatype BOOL"],
    ["BYTES", [5], "input 'X': element 0 of 'data' is 5, expected a string for datatype BYTES"],
    ["BYTES", ["a", null], "input 'X': element 1 of 'data' is null, expected a string for datatype BYTES"],
    ["FP32", [null], "input 'X': element 0 of 'data' is null, expected a number for datatype FP32"],
    ["FP64", [1, "2"], "input 'X': element 1 of 'data' is \"2\", expected a number for datatype FP64"],
    ["FP16", [true], "input 'X': element 0 of 'data' is true, expected a number for datatype FP16"],
    ["BF16", [{}], "input 'X': element 0 of 'data' is {}, expected a number for datatype BF16"],
    ["FP32", [undefined], "input 'X': element 0 of 'data' is undefined, expected a number for datatype FP32"],
  ];

  it.each(errors)("rejects %s %o", (dt, values, message) => {
    let caught: unknown;
    try {
      valuesToBytes(dt, values, "input 'X'");
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(ServerError);
    expect(caught).toMatchObject({ code: "INVALID_ARG", message });
  });
});

describe("bytesToValues", () => {
  const cases: [DataType, Uint8Array, unknown[]][] = [
    ["BOOL", bytes(1, 0, 2, 0xff), [true, false, true, true]],
    ["UINT8", bytes(0, 255), [0, 255]],
    ["INT8", bytes(0xff, 1, 0x80), [-1, 1, -128]],
    ["UINT16", bytes(0xff, 0xff, 1, 0), [65535, 1]],
    ["INT16", bytes(0x00, 0x80), [-32768]],
    ["UINT32", bytes(0xff, 0xff, 0xff, 0xff), [4294967295]],
    ["INT32", bytes(0xfe, 0xff, 0xff, 0xff, 0, 1, 0, 0), [-2, 256]],
    ["INT64", bytes(1, 0, 0, 0, 0, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0x80), [2n ** 53n + 1n, -(2n ** 63n)]],
    ["UINT64", bytes(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 5, 0, 0, 0, 0, 0, 0, 0), [2n ** 64n - 1n, 5n]],
    ["FP16", bytes(0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00, 0x00, 0x7c), [1, -2, 2 ** -24, Infinity]],
    ["BF16", bytes(0x80, 0x3f, 0xcd, 0x3d), [1, 0.10009765625]],
    ["FP32", bytes(0, 0, 0xc0, 0x3f, 0xcd, 0xcc, 0xcc, 0x3d), [1.5, Math.fround(0.1)]],
    ["FP64", bytes(0, 0, 0, 0, 0, 0, 0xf0, 0xff), [-Infinity]],
    ["BYTES", joinBytes([utf8("hi"), bytes(), bytes(0xff)]), [utf8("hi"), bytes(), bytes(0xff)]],
  ];

  it.each(cases)("%s", (dt, data, expected) => {
    expect(bytesToValues(dt, data)).toEqual(expected);
  });

  it("round-trips bytes → values → bytes exactly for every datatype", () => {
    const samples: Record<DataType, number[]> = {
      BOOL: [0, 1, 1, 0],
      UINT8: [0, 1, 127, 255],
      INT8: [0, 1, 127, 128, 255],
      UINT16: [0xff, 0xff, 0, 0x80],
      INT16: [0x01, 0x80, 0xff, 0x7f],
      UINT32: [1, 2, 3, 4, 0xff, 0xff, 0xff, 0xff],
      INT32: [0, 0, 0, 0x80, 0xff, 0xff, 0xff, 0x7f],
      UINT64: [1, 0, 0, 0, 0, 0, 0x20, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
      INT64: [1, 0, 0, 0, 0, 0, 0x20, 0x80, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
      FP16: [0x00, 0x3c, 0x01, 0x00, 0xff, 0x7b, 0x00, 0xfc, 0x00, 0x80, 0x66, 0x2e],
      BF16: [0x80, 0x3f, 0x01, 0x00, 0x7f, 0x7f, 0x80, 0xff, 0x00, 0x80, 0xcd, 0x3d],
      FP32: [0, 0, 0xc0, 0x3f, 1, 0, 0, 0, 0xff, 0xff, 0x7f, 0x7f, 0, 0, 0, 0x80],
      FP64: [0x9a, 0x99, 0x99, 0x99, 0x99, 0x99, 0xb9, 0x3f, 1, 0, 0, 0, 0, 0, 0, 0],
      BYTES: [...joinBytes([utf8("héllo"), bytes(), bytes(0, 0xff)])],
    };
    for (const dt of DATA_TYPES) {
      const data = Uint8Array.from(samples[dt]);
      const values = bytesToValues(dt, data);
      // Booleans normalise to 0/1, so BOOL is sampled with 0/1 bytes only.
      expect([...valuesToBytes(dt, values, "x")], dt).toEqual([...data]);
    }
  });

  it("reads views at unaligned offsets for every multi-byte type", () => {
    const at = (offset: number, b: number[]) => {
      const buf = new Uint8Array(offset + b.length + 3);
      buf.set(b, offset);
      return buf.subarray(offset, offset + b.length);
    };
    expect(bytesToValues("INT32", at(1, [0xff, 0xff, 0xff, 0x7f]))).toEqual([2147483647]);
    expect(bytesToValues("INT16", at(1, [0xfe, 0xff]))).toEqual([-2]);
    expect(bytesToValues("UINT64", at(3, [1, 0, 0, 0, 0, 0, 0x20, 0]))).toEqual([9007199254740993n]);
    expect(bytesToValues("INT64", at(5, [0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]))).toEqual([-2n]);
    expect(bytesToValues("FP32", at(2, [0, 0, 0xc0, 0x3f]))).toEqual([1.5]);
    expect(bytesToValues("FP64", at(4, [0, 0, 0, 0, 0, 0, 0xe0, 0xbf]))).toEqual([-0.5]);
    expect(bytesToValues("FP16", at(1, [0x00, 0x3c]))).toEqual([1]);
    expect(bytesToValues("BF16", at(1, [0x80, 0x3f]))).toEqual([1]);
  });

  it("typedView shares aligned bytes and copies unaligned ones", () => {
    const buf = new Uint8Array(12);
    expect(typedView("INT32", buf.subarray(4, 12)).buffer).toBe(buf.buffer);
    expect(typedView("INT32", buf.subarray(1, 9)).buffer).not.toBe(buf.buffer);
  });

  it("reports bad BYTES framing", () => {
    expect(() => bytesToValues("BYTES", bytes(5, 0, 0, 0, 1))).toThrow("BYTES tensor: string element of length 5 at byte 0 runs past the end of the data");
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
    // biome-ignore lint/correctness/noPrecisionLoss: the literal is 2^64 - 1 as a client writes it; the test checks how it reads
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
    expect(() => splitBytes(bytes(1, 0, 0, 0, 9, 2, 0, 0, 0, 1), "input 'S'")).toThrow(
      "input 'S': string element of length 2 at byte 5 runs past the end of the data",
    );
    expect(() => splitBytes(bytes(0, 0, 0, 0, 0))).toThrow("BYTES tensor: incomplete string length prefix at byte 4");
  });
});

describe("valuesToBytes for integer types, written byte by byte when small (#30 item 5)", () => {
  const CASES = [
    ["INT8", Int8Array, [-128, -1, 0, 1, 127]],
    ["UINT8", Uint8Array, [0, 1, 128, 255]],
    ["INT16", Int16Array, [-32768, -256, -1, 0, 1, 255, 256, 32767]],
    ["UINT16", Uint16Array, [0, 1, 255, 256, 65535]],
    ["INT32", Int32Array, [-2147483648, -65536, -1, 0, 1, 65535, 16777216, 2147483647]],
    ["UINT32", Uint32Array, [0, 1, 255, 65536, 2147483648, 4294967295]],
  ] as const;
  for (const [datatype, Ctor, edge] of CASES) {
    // 256 elements or fewer take the byte-by-byte path, more the typed view: both must give the typed array's bytes.
    for (const n of [1, 16, 256, 257, 1000]) {
      it(`${datatype}, ${n} elements: the bytes of a ${Ctor.name}`, () => {
        const values = Array.from({ length: n }, (_, i) => edge[i % edge.length]!);
        const expected = new Uint8Array(Ctor.from(values).buffer);
        expect([...valuesToBytes(datatype, values, "input 'x'")]).toEqual([...expected]);
      });
    }
  }
});
