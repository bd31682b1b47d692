// The TypeScript model API's view of a request tensor (#15): aligned bytes are viewed,
// unaligned ones copied; a Node Buffer (how gRPC raw_input_contents arrive) included.
import { describe, expect, it } from "vitest";
import { toModelTensor } from "../../../../src/backends/typescript/tensors.ts";

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
