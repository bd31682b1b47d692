// The TypeScript model API's view of a request tensor (#15): aligned bytes are viewed,
// unaligned ones copied; a Node Buffer (how gRPC raw_input_contents arrive) included.
import { describe, expect, it } from "vitest";
import { fromModelTensor, toModelTensor } from "../../../../src/backends/typescript/tensors.ts";

describe("toModelTensor", () => {
  it("reads an INT32 tensor from a Buffer at an unaligned offset of a larger pool", () => {
    const pool = Buffer.alloc(64, 0xee);
    const bytes = pool.subarray(5, 13); // offset 5: not a multiple of 4
    bytes.set(new Uint8Array(new Int32Array([5, -7]).buffer));
    const t = toModelTensor({ name: "IN", datatype: "INT32", shape: [1, 2], data: bytes });
    expect(Array.from(t.data as Int32Array)).toEqual([5, -7]);
  });

  it("views aligned bytes in place", () => {
    const pool = Buffer.alloc(64);
    const bytes = pool.subarray(8, 16);
    bytes.set(new Uint8Array(new Float32Array([1.5, 2.5]).buffer));
    const t = toModelTensor({ name: "X", datatype: "FP32", shape: [2], data: bytes });
    expect(Array.from(t.data as Float32Array)).toEqual([1.5, 2.5]);
    expect((t.data as Float32Array).buffer).toBe(pool.buffer);
  });
});

describe("fromModelTensor: a numeric output given as number[] (#29)", () => {
  it("converts numbers, bigints for INT64 and booleans for BOOL", () => {
    expect(Array.from(new Float32Array(fromModelTensor({ name: "Y", datatype: "FP32", shape: [2], data: [1.5, -2] }, "output").data.buffer))).toEqual([
      1.5, -2,
    ]);
    expect(
      Array.from(new BigInt64Array(fromModelTensor({ name: "Y", datatype: "INT64", shape: [2], data: [2n ** 40n, 7] as never }, "output").data.buffer)),
    ).toEqual([2n ** 40n, 7n]);
    expect(Array.from(fromModelTensor({ name: "B", datatype: "BOOL", shape: [2], data: [true, false] as never }, "output").data)).toEqual([1, 0]);
  });

  it.each([
    ["FP32", ["a"], `output 'Y': element 0 of its data is "a", not a number (datatype FP32)`],
    ["INT32", [1, "2"], `output 'Y': element 1 of its data is "2", not a number (datatype INT32)`],
    ["FP64", [1, null], "output 'Y': element 1 of its data is null, not a number (datatype FP64)"],
    ["INT64", [1.5], "output 'Y': element 0 of its data is 1.5, not an integer (datatype INT64)"],
    ["FP32", [{}], "output 'Y': element 0 of its data is an object, not a number (datatype FP32)"],
  ])("%s data %j → an error naming the output and element, not NaN", (datatype, data, message) => {
    expect(() => fromModelTensor({ name: "Y", datatype: datatype as never, shape: [data.length], data: data as never }, "output")).toThrow(message);
  });
});
