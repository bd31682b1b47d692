/**
 * @module Tensor bytes ↔ JS values for every datatype: IEEE half and bfloat16 conversion,
 * value encoding with type and range checks, decoding, and number reading for
 * classification. Assumes a little-endian host, as the wire formats are little-endian.
 */
import { invalidArg } from "./errors.ts";
import { ELEMENT_SIZE, splitBytes, type DataType, type Tensor } from "./tensor.ts";
import { allocBytes } from "./bytes.ts";

/** One tensor element as JS sees it: 64-bit integers are bigint, BYTES elements Uint8Array. */
export type TensorValue = number | bigint | boolean | Uint8Array;

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** IEEE 754 binary16 bits → number. */
export function fp16ToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 0x1f) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

/** bfloat16 bits → number. */
export function bf16ToFloat(b: number): number {
  u32[0] = (b & 0xffff) << 16;
  return f32[0]!;
}

/**
 * number → a binary float with `expBits` exponent and `mantBits` fraction bits, rounded to
 * nearest even straight from the float64 (no intermediate float32 rounding). Overflow gives
 * infinity, NaN the quiet NaN, and the sign of zero is kept.
 */
function toSmallFloat(v: number, expBits: number, mantBits: number): number {
  const bias = (1 << (expBits - 1)) - 1;
  const inf = ((1 << expBits) - 1) << mantBits;
  if (Number.isNaN(v)) return inf | (1 << (mantBits - 1));
  const sign = v < 0 || Object.is(v, -0) ? 1 << (expBits + mantBits) : 0;
  const a = Math.abs(v);
  if (a === Infinity) return sign | inf;
  const minExp = 1 - bias;
  let e = minExp;
  if (a >= 2 ** minExp) {
    e = Math.floor(Math.log2(a));
    if (2 ** e > a) e--;
    else if (2 ** (e + 1) <= a) e++;
  }
  // Scale so one unit in the last place is 1; power-of-two scaling is exact here.
  const q = a * 2 ** (mantBits - e);
  let n = Math.floor(q);
  const rest = q - n;
  if (rest > 0.5 || (rest === 0.5 && n % 2 === 1)) n++;
  // Normals carry the implicit leading 1 in n; a carry out of the fraction bumps the exponent.
  const bits = a < 2 ** minExp ? n : (e + bias - 1) * 2 ** mantBits + n;
  return sign | Math.min(bits, inf);
}

/** number → IEEE 754 binary16 bits, rounding to nearest even. */
export function floatToFp16(v: number): number {
  return toSmallFloat(v, 5, 10);
}

/** number → bfloat16 bits, rounding to nearest even. */
export function floatToBf16(v: number): number {
  return toSmallFloat(v, 8, 7);
}

const INT_RANGE = {
  INT8: [-128, 127],
  INT16: [-32768, 32767],
  INT32: [-2147483648, 2147483647],
  UINT8: [0, 255],
  UINT16: [0, 65535],
  UINT32: [0, 4294967295],
} as const;
const INT_ARRAYS = { INT8: Int8Array, INT16: Int16Array, INT32: Int32Array, UINT8: Uint8Array, UINT16: Uint16Array, UINT32: Uint32Array } as const;
const BIG_RANGE = { INT64: [-(2n ** 63n), 2n ** 63n - 1n], UINT64: [0n, 2n ** 64n - 1n] } as const;

const encoder = new TextEncoder();

const SHOW_MAX = 100;

/**
 * An element as an error message shows it: JSON, with the bigints the exact parser gives
 * for integers beyond 2^53 inside an array or object written as their digits, cut at
 * SHOW_MAX characters so that a client's long string or deep object is not echoed whole.
 */
function show(v: unknown): string {
  if (typeof v === "number" || typeof v === "bigint") return String(v);
  if (v instanceof Uint8Array) return `<${v.byteLength} bytes>`;
  if (v === undefined) return "undefined";
  const text = JSON.stringify(v, (_, x: unknown) => (typeof x === "bigint" ? `\0bigint:${x}` : x)).replace(/"\\u0000bigint:(-?\d+)"/g, "$1");
  return text.length > SHOW_MAX ? `${text.slice(0, SHOW_MAX)}…` : text;
}

/** An integer-valued number or bigint as a bigint; undefined for anything else. */
function asBigInt(v: unknown): bigint | undefined {
  if (typeof v === "bigint") return v;
  if (typeof v === "number" && Number.isInteger(v)) return BigInt(v);
  return undefined;
}

/** Strings up to this many UTF-16 units are UTF-8 encoded by hand, without a call out. */
const SHORT_STRING = 64;

function grow(out: Uint8Array, need: number): Uint8Array {
  const bigger = new Uint8Array(Math.max(need, out.length * 2));
  bigger.set(out);
  return bigger;
}

/**
 * BYTES elements → Triton's serialization (4-byte little-endian length, then the bytes),
 * written straight into one buffer: about 8 ns an element for short ASCII strings where
 * TextEncoder.encode per element and a join took 60. The buffer is sized for ASCII and
 * grows when UTF-8 needs more; lone surrogates become U+FFFD, as TextEncoder makes them.
 */
function serializeStrings(values: readonly (string | Uint8Array)[]): Uint8Array {
  const n = values.length;
  let cap = 4 * n;
  for (let i = 0; i < n; i++) {
    const v = values[i]!;
    cap += typeof v === "string" ? v.length : v.byteLength;
  }
  // Slack for the 3-bytes-a-unit check of the last short string, so all-ASCII data never grows.
  let out: Uint8Array = allocBytes(cap + 2 * SHORT_STRING);
  let off = 0;
  for (let i = 0; i < n; i++) {
    const v = values[i]!;
    let p = off + 4;
    if (typeof v !== "string") {
      if (p + v.byteLength > out.length) out = grow(out, p + v.byteLength);
      out.set(v, p);
      p += v.byteLength;
    } else if (v.length <= SHORT_STRING) {
      const len = v.length;
      if (p + 3 * len > out.length) out = grow(out, p + 3 * len);
      for (let j = 0; j < len; j++) {
        let c = v.charCodeAt(j);
        if (c < 0x80) {
          out[p++] = c;
          continue;
        }
        if (c < 0x800) {
          out[p++] = 0xc0 | (c >> 6);
          out[p++] = 0x80 | (c & 0x3f);
          continue;
        }
        if (c >= 0xd800 && c <= 0xdfff) {
          const low = c <= 0xdbff && j + 1 < len ? v.charCodeAt(j + 1) : 0;
          if (low >= 0xdc00 && low <= 0xdfff) {
            const cp = ((c - 0xd800) << 10) + (low - 0xdc00) + 0x10000;
            out[p++] = 0xf0 | (cp >> 18);
            out[p++] = 0x80 | ((cp >> 12) & 0x3f);
            out[p++] = 0x80 | ((cp >> 6) & 0x3f);
            out[p++] = 0x80 | (cp & 0x3f);
            j++;
            continue;
          }
          c = 0xfffd;
        }
        out[p++] = 0xe0 | (c >> 12);
        out[p++] = 0x80 | ((c >> 6) & 0x3f);
        out[p++] = 0x80 | (c & 0x3f);
      }
    } else {
      let rest = v;
      for (;;) {
        const { read, written } = encoder.encodeInto(rest, out.subarray(p));
        p += written;
        if (read === rest.length) break;
        rest = rest.slice(read);
        out = grow(out, p + 3 * rest.length);
      }
    }
    const w = p - off - 4;
    out[off] = w;
    out[off + 1] = w >>> 8;
    out[off + 2] = w >>> 16;
    out[off + 3] = w >>> 24;
    off = p;
  }
  return off === out.length ? out : out.subarray(0, off);
}

function badElement(values: readonly unknown[], i: number, datatype: DataType, context: string, want: string) {
  return invalidArg(`${context}: element ${i} of 'data' is ${show(values[i])}, expected ${want} for datatype ${datatype}`);
}

/**
 * Element values → tensor bytes. Accepts booleans for BOOL; integer numbers or bigints in
 * range for integer types; numbers (or bigints) for FP16/BF16/FP32/FP64; strings (UTF-8
 * encoded) or Uint8Array for BYTES. Throws INVALID_ARG naming `context` and the element.
 */
export function valuesToBytes(datatype: DataType, values: readonly unknown[], context: string): Uint8Array {
  const n = values.length;
  switch (datatype) {
    case "BYTES": {
      for (let i = 0; i < n; i++) {
        const v = values[i];
        if (typeof v !== "string" && !(v instanceof Uint8Array)) throw badElement(values, i, datatype, context, "a string");
      }
      return serializeStrings(values as readonly (string | Uint8Array)[]);
    }
    case "BOOL": {
      const out = new Uint8Array(n);
      for (let i = 0; i < n; i++) {
        const v = values[i];
        if (typeof v !== "boolean") throw badElement(values, i, datatype, context, "true or false");
        out[i] = v ? 1 : 0;
      }
      return out;
    }
    case "FP16":
    case "BF16": {
      const bytes = allocBytes(n * 2);
      const out = new Uint16Array(bytes.buffer, bytes.byteOffset, n);
      const conv = datatype === "FP16" ? floatToFp16 : floatToBf16;
      for (let i = 0; i < n; i++) {
        const v = values[i];
        if (typeof v !== "number" && typeof v !== "bigint") throw badElement(values, i, datatype, context, "a number");
        out[i] = conv(Number(v));
      }
      return bytes;
    }
    case "FP32":
    case "FP64": {
      // Views over allocBytes: a typed array made from a length keeps its storage inline
      // until `.buffer` is read, which then has to move it.
      const bytes = allocBytes(n * (datatype === "FP32" ? 4 : 8));
      const out = datatype === "FP32" ? new Float32Array(bytes.buffer, bytes.byteOffset, n) : new Float64Array(bytes.buffer, bytes.byteOffset, n);
      for (let i = 0; i < n; i++) {
        const v = values[i];
        if (typeof v === "number") out[i] = v;
        else if (typeof v === "bigint") out[i] = Number(v);
        else throw badElement(values, i, datatype, context, "a number");
      }
      return bytes;
    }
    case "INT64":
    case "UINT64": {
      const bytes = allocBytes(n * 8);
      const out = datatype === "INT64" ? new BigInt64Array(bytes.buffer, bytes.byteOffset, n) : new BigUint64Array(bytes.buffer, bytes.byteOffset, n);
      const [lo, hi] = BIG_RANGE[datatype];
      for (let i = 0; i < n; i++) {
        const b = asBigInt(values[i]);
        if (b === undefined) throw badElement(values, i, datatype, context, "an integer");
        if (b < lo || b > hi) throw badElement(values, i, datatype, context, `an integer in ${lo}..${hi}`);
        out[i] = b;
      }
      return bytes;
    }
    default: {
      const range = INT_RANGE[datatype];
      const lo = range[0];
      const hi = range[1];
      const Ctor = INT_ARRAYS[datatype];
      const size = Ctor.BYTES_PER_ELEMENT;
      const bytes = allocBytes(n * size);
      // A few elements are written byte by byte (little-endian, as the typed arrays write
      // them on the hosts Nereid runs on): cheaper than making a typed view of the bytes.
      const out = n > SMALL_INT_ELEMENTS ? new Ctor(bytes.buffer, bytes.byteOffset, n) : undefined;
      for (let i = 0; i < n; i++) {
        let v = values[i];
        if (typeof v === "bigint" && v >= BigInt(lo) && v <= BigInt(hi)) v = Number(v);
        if (typeof v !== "number" || !Number.isInteger(v) || v < lo || v > hi) throw badElement(values, i, datatype, context, `an integer in ${lo}..${hi}`);
        if (out) out[i] = v;
        else if (size === 4) {
          const o = i * 4;
          bytes[o] = v;
          bytes[o + 1] = v >> 8;
          bytes[o + 2] = v >> 16;
          bytes[o + 3] = v >> 24;
        } else if (size === 2) {
          bytes[i * 2] = v;
          bytes[i * 2 + 1] = v >> 8;
        } else {
          bytes[i] = v;
        }
      }
      return bytes;
    }
  }
}

/** Integer tensors of at most this many elements are written without a typed view (valuesToBytes). */
const SMALL_INT_ELEMENTS = 256;

export type TypedView =
  | Int8Array
  | Int16Array
  | Int32Array
  | BigInt64Array
  | Uint8Array
  | Uint16Array
  | Uint32Array
  | BigUint64Array
  | Float32Array
  | Float64Array;

/**
 * A typed view of fixed-size tensor bytes (FP16/BF16 as their Uint16 bits, BOOL as Uint8);
 * copied first when the bytes are not aligned for the element size. Trailing bytes that do
 * not make a whole element are ignored.
 */
export function typedView(datatype: Exclude<DataType, "BYTES">, data: Uint8Array): TypedView {
  const size = ELEMENT_SIZE[datatype];
  const aligned = data.byteOffset % size === 0 ? data : data.slice();
  const { buffer, byteOffset } = aligned;
  const n = Math.floor(aligned.byteLength / size);
  switch (datatype) {
    case "INT8":
      return new Int8Array(buffer, byteOffset, n);
    case "INT16":
      return new Int16Array(buffer, byteOffset, n);
    case "INT32":
      return new Int32Array(buffer, byteOffset, n);
    case "INT64":
      return new BigInt64Array(buffer, byteOffset, n);
    case "UINT8":
    case "BOOL":
      return new Uint8Array(buffer, byteOffset, n);
    case "UINT16":
    case "FP16":
    case "BF16":
      return new Uint16Array(buffer, byteOffset, n);
    case "UINT32":
      return new Uint32Array(buffer, byteOffset, n);
    case "UINT64":
      return new BigUint64Array(buffer, byteOffset, n);
    case "FP32":
      return new Float32Array(buffer, byteOffset, n);
    case "FP64":
      return new Float64Array(buffer, byteOffset, n);
  }
}

/**
 * Tensor bytes → element values: BOOL → boolean (any non-zero byte is true), INT64/UINT64 →
 * bigint, other numeric types (FP16/BF16 included) → number, BYTES → Uint8Array views.
 * Throws INVALID_ARG on bad BYTES framing.
 */
export function bytesToValues(datatype: DataType, data: Uint8Array): TensorValue[] {
  switch (datatype) {
    case "BYTES":
      return splitBytes(data);
    case "BOOL":
      return Array.from(data, (b) => b !== 0);
    case "FP16":
      return Array.from(typedView(datatype, data) as Uint16Array, fp16ToFloat);
    case "BF16":
      return Array.from(typedView(datatype, data) as Uint16Array, bf16ToFloat);
    default:
      return Array.from(typedView(datatype, data) as ArrayLike<number | bigint>);
  }
}

/** Every element as a JS number (for classification; 64-bit values may round); BYTES is not numeric. */
export function readAsNumbers(t: Tensor): number[] {
  if (t.datatype === "BYTES") throw invalidArg(`classification is not supported for BYTES output '${t.name}'`);
  if (t.datatype === "FP16") return Array.from(typedView("FP16", t.data) as Uint16Array, fp16ToFloat);
  if (t.datatype === "BF16") return Array.from(typedView("BF16", t.data) as Uint16Array, bf16ToFloat);
  return Array.from(typedView(t.datatype, t.data) as ArrayLike<number | bigint>, Number);
}
