// S-17: a cache entry as bytes for the redis cache, and back; #29 item 6: every crafted
// value reads as an invalid entry (a miss), never as outputs.
import { describe, expect, it } from "vitest";
import { decodeEntry, encodeEntry, MAX_HEADER_BYTES } from "../../../src/cache/entry-codec.ts";
import type { Tensor } from "../../../src/core/tensor.ts";

const outputs: Tensor[] = [
  { name: "OUTPUT0", datatype: "INT32", shape: [1, 2], data: new Uint8Array(new Int32Array([7, -1]).buffer) },
  { name: "OUTPUT1", datatype: "BYTES", shape: [1], data: new Uint8Array([2, 0, 0, 0, 0x68, 0xc3]) },
  { name: "EMPTY", datatype: "FP32", shape: [0], data: new Uint8Array(0) },
];

/** A value with `header` (any JSON, as text) and `data` after it. */
function entry(header: string, data: Uint8Array | number[] = []): Buffer {
  const json = Buffer.from(header);
  const len = Buffer.alloc(4);
  len.writeUInt32LE(json.byteLength, 0);
  return Buffer.concat([len, json, Buffer.from(data)]);
}

describe("cache entry codec", () => {
  it("encodes a length, a JSON header and the tensors' bytes, and decodes them back exactly", () => {
    const bytes = encodeEntry(outputs);
    const header = '[["OUTPUT0","INT32",[1,2],8],["OUTPUT1","BYTES",[1],6],["EMPTY","FP32",[0],0]]';
    expect(bytes.readUInt32LE(0)).toBe(header.length);
    expect(bytes.toString("utf8", 4, 4 + header.length)).toBe(header);
    expect(bytes.byteLength).toBe(4 + header.length + 14);
    expect(decodeEntry(bytes)).toEqual({ outputs });
    expect(decodeEntry(bytes, ["OUTPUT1", "OUTPUT0"])).toEqual({ outputs });
  });

  it("reads anything it did not write as a miss, never as outputs", () => {
    const bytes = encodeEntry(outputs);
    expect(decodeEntry(bytes.subarray(0, bytes.byteLength - 1)).invalid).toBe('output "OUTPUT1" runs past the end of the value'); // truncated
    expect(decodeEntry(Buffer.concat([bytes, Buffer.from([0])])).invalid).toBe("1 bytes after the last output");
    expect(decodeEntry(Buffer.from("hello")).invalid).toBe("a header of 1819043176 bytes, more than 1048576");
    expect(decodeEntry(new Uint8Array(2)).invalid).toBe("2 bytes, shorter than a header length");
    expect(decodeEntry(Buffer.from('\x04\x00\x00\x00{"a"')).invalid).toBe("a header that is not JSON");
    expect(decodeEntry(entry('{"a":1}')).invalid).toBe("a header that is not an array");
  });

  // Each crafted entry of the #29 report, and the other ways a header can lie.
  const crafted: [what: string, value: Buffer, reason: string][] = [
    ["a shape/byte-size mismatch", entry('[["O","INT32",[1,4],8]]', new Uint8Array(8)), 'output "O" holds 8 bytes, its shape and datatype need 16'],
    [
      "a byte length that is not a whole number of elements",
      entry('[["O","FP32",[1],3]]', [1, 2, 3]),
      'output "O" holds 3 bytes, its shape and datatype need 4',
    ],
    ["a BYTES element that runs past its tensor", entry('[["O","BYTES",[1],6]]', [9, 0, 0, 0, 1, 2]), 'output "O" has broken BYTES framing'],
    ["a BYTES tensor with a partial length prefix", entry('[["O","BYTES",[1],7]]', [1, 0, 0, 0, 65, 0, 0]), 'output "O" has broken BYTES framing'],
    ["a BYTES count that does not match the shape", entry('[["O","BYTES",[2],5]]', [1, 0, 0, 0, 65]), 'output "O" holds 1 BYTES elements, its shape needs 2'],
    ["an unknown datatype", entry('[["O","FP128",[1],16]]', new Uint8Array(16)), 'output "O" has an unknown datatype'],
    ["a datatype that is not a string", entry('[["O",4,[1],4]]', new Uint8Array(4)), 'output "O" has an unknown datatype'],
    [
      "a shape element that is a string (spliced into JSON before)",
      entry('[["O","INT32",["1],\\"x\\":[2"],4]]', new Uint8Array(4)),
      'output "O" has a shape that is not non-negative integers',
    ],
    ["a negative dim", entry('[["O","INT32",[-1],0]]'), 'output "O" has a shape that is not non-negative integers'],
    ["a fractional dim", entry('[["O","INT8",[1.5],1]]', [0]), 'output "O" has a shape that is not non-negative integers'],
    ["an unsafe dim", entry('[["O","INT8",[9007199254740993],1]]', [0]), 'output "O" has a shape that is not non-negative integers'],
    ["dims whose product overflows", entry('[["O","INT8",[4294967296,4294967296],0]]'), 'output "O" has a shape that is not non-negative integers'],
    ["a shape that is not an array", entry('[["O","INT8",1,1]]', [0]), 'output "O" has a shape that is not non-negative integers'],
    ["a name that is not a string", entry('[[7,"INT8",[1],1]]', [0]), "an output name that is not a string"],
    ["the same output twice", entry('[["O","INT8",[1],1],["O","INT8",[1],1]]', [0, 0]), 'output "O" twice'],
    ["a negative byte length", entry('[["O","INT8",[0],-1]]'), 'output "O" has a byte length that is not a non-negative integer'],
    ["a byte length that is not a number", entry('[["O","INT8",[1],"1"]]', [0]), 'output "O" has a byte length that is not a non-negative integer'],
    ["a header entry of the wrong arity", entry('[["O","INT8",[1]]]', [0]), "a header entry that is not [name, datatype, shape, bytes]"],
    ["a header larger than the limit", entry(`[${" ".repeat(MAX_HEADER_BYTES)}]`), `a header of ${MAX_HEADER_BYTES + 2} bytes, more than ${MAX_HEADER_BYTES}`],
  ];
  it.each(crafted)("refuses %s", (_what, value, reason) => {
    expect(decodeEntry(value)).toEqual({ invalid: reason });
  });

  it("refuses an entry without an output the request asks for (no outputs at all, or another one)", () => {
    expect(decodeEntry(entry("[]"), ["OUTPUT0"])).toEqual({ invalid: 'no output "OUTPUT0"' });
    expect(decodeEntry(encodeEntry(outputs), ["OUTPUT0", "OUTPUT2"])).toEqual({ invalid: 'no output "OUTPUT2"' });
    expect(decodeEntry(entry("[]"))).toEqual({ outputs: [] });
  });

  it("quotes and cuts names in its reasons, so a crafted name cannot forge a log line", () => {
    const name = `x\nE1127 00:00:00.000000 1 forged] ${"y".repeat(100)}`;
    const r = decodeEntry(entry(JSON.stringify([[name, "BAD", [1], 0]])));
    expect(r.invalid).toBe(`output ${JSON.stringify(`${name.slice(0, 64)}...`)} has an unknown datatype`);
    expect(r.invalid).not.toContain("\n");
  });

  it("accepts zero-sized and scalar tensors and a dim of 0 beside a huge one", () => {
    const ok = entry('[["S","FP64",[],8],["Z","INT8",[0,9007199254740991],0],["B","BYTES",[2],8]]', [...new Uint8Array(8), 0, 0, 0, 0, 0, 0, 0, 0]);
    const r = decodeEntry(ok, ["S", "Z", "B"]);
    expect(r.outputs?.map((t) => [t.name, t.datatype, t.shape, t.data.byteLength])).toEqual([
      ["S", "FP64", [], 8],
      ["Z", "INT8", [0, 9007199254740991], 0],
      ["B", "BYTES", [2], 8],
    ]);
  });

  it("reads a dim written -0 as 0 (found by the fuzzer: it did not re-encode to itself)", () => {
    const shape = decodeEntry(entry('[["Z","INT8",[2,-0],0]]')).outputs![0]!.shape;
    expect(Object.is(shape[1], 0)).toBe(true);
  });
});
