/**
 * @module Tensor datatypes and the one in-memory tensor shape every layer passes around:
 * raw little-endian row-major bytes, with BYTES elements serialized as Triton does
 * (4-byte little-endian length, then the bytes).
 */
import { invalidArg } from "./errors.ts";

export const DATA_TYPES = ["BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64", "FP16", "FP32", "FP64", "BYTES", "BF16"] as const;

export type DataType = (typeof DATA_TYPES)[number];

/** Element size in bytes; 0 for BYTES (variable). */
export const ELEMENT_SIZE: Readonly<Record<DataType, number>> = {
  BOOL: 1,
  UINT8: 1,
  UINT16: 2,
  UINT32: 4,
  UINT64: 8,
  INT8: 1,
  INT16: 2,
  INT32: 4,
  INT64: 8,
  FP16: 2,
  FP32: 4,
  FP64: 8,
  BYTES: 0,
  BF16: 2,
};

export function isDataType(s: string): s is DataType {
  return (DATA_TYPES as readonly string[]).includes(s);
}

/** Config enum name (TYPE_FP32, TYPE_STRING) → protocol name (FP32, BYTES). */
export function fromConfigType(t: string): DataType | undefined {
  if (t === "TYPE_STRING") return "BYTES";
  if (!t.startsWith("TYPE_")) return undefined;
  const s = t.slice(5);
  return isDataType(s) && s !== "BYTES" ? s : undefined;
}

/** Protocol name → config enum name. */
export function toConfigType(t: DataType): string {
  return t === "BYTES" ? "TYPE_STRING" : `TYPE_${t}`;
}

export interface Tensor {
  name: string;
  datatype: DataType;
  shape: number[];
  /** Row-major little-endian element bytes; for BYTES, length-prefixed elements. */
  data: Uint8Array;
}

export function elementCount(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/** Dims quoted in an error message; longer shapes are cut (a 20k-dim shape overflows gRPC trailers). */
const QUOTED_DIMS = 16;

/**
 * A shape as Triton's ShapeToString writes it, `[1,16]`, but with at most 16 dims:
 * `[1,1,...] (20000 dims)` beyond that.
 */
export function shapeToString(shape: readonly (number | bigint)[]): string {
  if (shape.length <= QUOTED_DIMS) return `[${shape.join(",")}]`;
  return `[${shape.slice(0, QUOTED_DIMS).join(",")},...] (${shape.length} dims)`;
}

/** Splits serialized BYTES into its elements; throws INVALID_ARG on bad framing. */
export function splitBytes(data: Uint8Array, context = "BYTES tensor"): Uint8Array[] {
  const out: Uint8Array[] = [];
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  let off = 0;
  while (off < data.byteLength) {
    if (off + 4 > data.byteLength) {
      throw invalidArg(`${context}: incomplete string length prefix at byte ${off}`);
    }
    const len = view.getUint32(off, true);
    off += 4;
    if (off + len > data.byteLength) {
      throw invalidArg(`${context}: string element of length ${len} at byte ${off - 4} runs past the end of the data`);
    }
    out.push(data.subarray(off, off + len));
    off += len;
  }
  return out;
}

/**
 * How many elements serialized BYTES hold, with splitBytes's framing checks and errors,
 * without making a view per element (8M elements: 8M objects).
 */
export function countBytesElements(data: Uint8Array, context = "BYTES tensor"): number {
  let count = 0;
  let off = 0;
  const n = data.byteLength;
  while (off < n) {
    if (off + 4 > n) throw invalidArg(`${context}: incomplete string length prefix at byte ${off}`);
    const len = (data[off]! | (data[off + 1]! << 8) | (data[off + 2]! << 16) | (data[off + 3]! << 24)) >>> 0;
    off += 4;
    if (off + len > n) throw invalidArg(`${context}: string element of length ${len} at byte ${off - 4} runs past the end of the data`);
    off += len;
    count++;
  }
  return count;
}

/** Serializes BYTES elements with 4-byte little-endian length prefixes. */
export function joinBytes(elements: readonly Uint8Array[]): Uint8Array {
  let total = 0;
  for (const e of elements) total += 4 + e.byteLength;
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  let off = 0;
  for (const e of elements) {
    view.setUint32(off, e.byteLength, true);
    out.set(e, off + 4);
    off += 4 + e.byteLength;
  }
  return out;
}
