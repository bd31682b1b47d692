/**
 * @module Tensor bytes ↔ JS values for every datatype: FP16/BF16 conversion, JSON-input
 * encoding with range checks, and number reading for classification.
 */
import { invalidArg } from "./errors.ts";
import { ELEMENT_SIZE, joinBytes, splitBytes, type DataType, type Tensor } from "./tensor.ts";

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** IEEE 754 binary16 → number. */
export function fp16ToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 0x1f) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

/** number → IEEE 754 binary16, rounding to nearest even. */
export function floatToFp16(v: number): number {
  f32[0] = v;
  const x = u32[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let half = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    if (rem > mid || (rem === mid && half & 1)) half++;
    return sign | half;
  }
  let half = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && half & 1)) half++;
  return sign | half;
}

export function bf16ToFloat(b: number): number {
  u32[0] = b << 16;
  return f32[0]!;
}

/** number → bfloat16, rounding to nearest even. */
export function floatToBf16(v: number): number {
  f32[0] = v;
  const x = u32[0]!;
  if ((x & 0x7f800000) === 0x7f800000 && x & 0x7fffff) return ((x >>> 16) | 0x40) & 0xffff;
  const rounded = x + 0x7fff + ((x >>> 16) & 1);
  return (rounded >>> 16) & 0xffff;
}

const INT_RANGE: Partial<Record<DataType, [number, number]>> = {
  INT8: [-128, 127], INT16: [-32768, 32767], INT32: [-2147483648, 2147483647],
  UINT8: [0, 255], UINT16: [0, 65535], UINT32: [0, 4294967295],
};

const encoder = new TextEncoder();

const INT_ARRAYS = { INT8: Int8Array, INT16: Int16Array, INT32: Int32Array, UINT8: Uint8Array, UINT16: Uint16Array, UINT32: Uint32Array } as const;

/** JSON `data` elements (already flattened) → tensor bytes; INVALID_ARG names `context`. */
export function valuesToBytes(datatype: DataType, values: readonly unknown[], context: string): Uint8Array {
  const n = values.length;
  const show = (v: unknown) => (typeof v === "bigint" ? v.toString() : JSON.stringify(v));
  const bad = (i: number, want: string) =>
    invalidArg(`${context}: element ${i} of 'data' is ${show(values[i])}, expected ${want} for datatype ${datatype}`);
  switch (datatype) {
    case "BYTES": {
      const parts: Uint8Array[] = new Array(n);
      for (let i = 0; i < n; i++) {
        const v = values[i];
        if (typeof v !== "string") throw bad(i, "a string");
        parts[i] = encoder.encode(v);
      }
      return joinBytes(parts);
    }
    case "BOOL": {
      const out = new Uint8Array(n);
      for (let i = 0; i < n; i++) {
        const v = values[i];
        if (typeof v !== "boolean") throw bad(i, "true or false");
        out[i] = v ? 1 : 0;
      }
      return out;
    }
    case "FP16":
    case "BF16":
      throw invalidArg(`${context}: datatype ${datatype} cannot be sent in JSON; use the binary data format`);
    case "FP32":
    case "FP64": {
      const out = datatype === "FP32" ? new Float32Array(new ArrayBuffer(n * 4)) : new Float64Array(new ArrayBuffer(n * 8));
      for (let i = 0; i < n; i++) {
        const v = values[i];
        if (typeof v !== "number") throw bad(i, "a number");
        out[i] = v;
      }
      return new Uint8Array(out.buffer);
    }
    case "INT64":
    case "UINT64": {
      const out = datatype === "INT64" ? new BigInt64Array(new ArrayBuffer(n * 8)) : new BigUint64Array(new ArrayBuffer(n * 8));
      const [lo, hi] = datatype === "INT64" ? [-(2n ** 63n), 2n ** 63n - 1n] : [0n, 2n ** 64n - 1n];
      for (let i = 0; i < n; i++) {
        const v = values[i];
        if (typeof v !== "number" && typeof v !== "bigint") throw bad(i, "an integer");
        if (typeof v === "number" && !Number.isInteger(v)) throw bad(i, "an integer");
        const b = BigInt(v);
        if (b < lo || b > hi) throw bad(i, `an integer in ${lo}..${hi}`);
        out[i] = b;
      }
      return new Uint8Array(out.buffer);
    }
    default: {
      const [lo, hi] = INT_RANGE[datatype]!;
      const Ctor = INT_ARRAYS[datatype as keyof typeof INT_ARRAYS];
      // Allocate the ArrayBuffer first: typed arrays made from a length keep their storage
      // inline until `.buffer` is read, which then has to move it.
      const out = new Ctor(new ArrayBuffer(n * Ctor.BYTES_PER_ELEMENT));
      for (let i = 0; i < n; i++) {
        const v = values[i];
        if (typeof v !== "number" || !Number.isInteger(v) || v < lo || v > hi) throw bad(i, `an integer in ${lo}..${hi}`);
        out[i] = v;
      }
      return new Uint8Array(out.buffer);
    }
  }
}

/** A typed view of tensor bytes (copied when unaligned). */
function typedView(datatype: DataType, data: Uint8Array) {
  const size = ELEMENT_SIZE[datatype];
  const aligned = data.byteOffset % Math.max(size, 1) === 0 ? data : data.slice();
  const { buffer, byteOffset, byteLength } = aligned;
  const n = byteLength / Math.max(size, 1);
  switch (datatype) {
    case "INT8": return new Int8Array(buffer, byteOffset, n);
    case "INT16": return new Int16Array(buffer, byteOffset, n);
    case "INT32": return new Int32Array(buffer, byteOffset, n);
    case "INT64": return new BigInt64Array(buffer, byteOffset, n);
    case "UINT8": case "BOOL": return new Uint8Array(buffer, byteOffset, n);
    case "UINT16": case "FP16": case "BF16": return new Uint16Array(buffer, byteOffset, n);
    case "UINT32": return new Uint32Array(buffer, byteOffset, n);
    case "UINT64": return new BigUint64Array(buffer, byteOffset, n);
    case "FP32": return new Float32Array(buffer, byteOffset, n);
    case "FP64": return new Float64Array(buffer, byteOffset, n);
    case "BYTES": throw new Error("BYTES has no typed view");
  }
}

const jsonNumber = (v: number) => (Number.isFinite(v) ? String(v) : Number.isNaN(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity");

/**
 * Tensor bytes → the text of a flat JSON array. 64-bit integers keep every digit;
 * non-finite floats are written NaN / Infinity / -Infinity (as Python's json reads them).
 */
export function bytesToJsonArray(datatype: DataType, data: Uint8Array): string {
  if (datatype === "BYTES") return JSON.stringify(splitBytes(data).map((b) => new TextDecoder().decode(b)));
  if (datatype === "BOOL") return "[" + Array.from(data, (b) => (b ? "true" : "false")).join(",") + "]";
  if (datatype === "FP16" || datatype === "BF16") {
    const conv = datatype === "FP16" ? fp16ToFloat : bf16ToFloat;
    return "[" + Array.from(typedView(datatype, data) as Uint16Array, (h) => jsonNumber(conv(h))).join(",") + "]";
  }
  const view = typedView(datatype, data);
  if (view instanceof Float32Array || view instanceof Float64Array) {
    for (const v of view) if (!Number.isFinite(v)) return "[" + Array.from(view, jsonNumber).join(",") + "]";
  }
  return "[" + view.join(",") + "]";
}

/** Every element as a JS number (for classification); BYTES is not numeric. */
export function readAsNumbers(t: Tensor): number[] {
  if (t.datatype === "BYTES") throw invalidArg(`classification is not supported for BYTES output '${t.name}'`);
  if (t.datatype === "FP16") return Array.from(typedView("FP16", t.data) as Uint16Array, fp16ToFloat);
  if (t.datatype === "BF16") return Array.from(typedView("BF16", t.data) as Uint16Array, bf16ToFloat);
  return Array.from(typedView(t.datatype, t.data) as ArrayLike<number | bigint>, Number);
}
