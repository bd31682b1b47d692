// S-17: a cache entry as bytes for the redis cache, and back.
import { describe, expect, it } from "vitest";
import { decodeEntry, encodeEntry } from "../../../src/cache/entry-codec.ts";
import type { Tensor } from "../../../src/core/tensor.ts";

const outputs: Tensor[] = [
  { name: "OUTPUT0", datatype: "INT32", shape: [1, 2], data: new Uint8Array(new Int32Array([7, -1]).buffer) },
  { name: "OUTPUT1", datatype: "BYTES", shape: [1], data: new Uint8Array([2, 0, 0, 0, 0x68, 0xc3]) },
  { name: "EMPTY", datatype: "FP32", shape: [0], data: new Uint8Array(0) },
];

describe("cache entry codec", () => {
  it("encodes a length, a JSON header and the tensors' bytes, and decodes them back exactly", () => {
    const bytes = encodeEntry(outputs);
    const header = '[["OUTPUT0","INT32",[1,2],8],["OUTPUT1","BYTES",[1],6],["EMPTY","FP32",[0],0]]';
    expect(bytes.readUInt32LE(0)).toBe(header.length);
    expect(bytes.toString("utf8", 4, 4 + header.length)).toBe(header);
    expect(bytes.byteLength).toBe(4 + header.length + 14);
    expect(decodeEntry(bytes)).toEqual(outputs);
  });

  it("reads anything it did not write as a miss, never as outputs", () => {
    const bytes = encodeEntry(outputs);
    expect(decodeEntry(bytes.subarray(0, bytes.byteLength - 1))).toBeUndefined(); // truncated
    expect(decodeEntry(Buffer.concat([bytes, Buffer.from([0])]))).toBeUndefined(); // trailing bytes
    expect(decodeEntry(Buffer.from("hello"))).toBeUndefined();
    expect(decodeEntry(new Uint8Array(2))).toBeUndefined();
    const notArray = Buffer.from('\x04\x00\x00\x00{"a"');
    expect(decodeEntry(notArray)).toBeUndefined();
  });
});
