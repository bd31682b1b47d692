/**
 * Protobuf wire format, written and read by hand so that a fuzzer can say anything the
 * format can carry (10-byte negative varints, 2^64 − 1, wrong wire types, bad lengths,
 * unknown fields), and a field-aware mutator over it.
 */
import type { Rng } from "./rng.ts";
import { mutateBytes, concat } from "./mutate.ts";
import { ODD_STRINGS } from "./json-text.ts";

export type WireType = 0 | 1 | 2 | 5;

export interface WireField {
  no: number;
  wt: WireType;
  /** varint: the unsigned 64-bit value; fixed: 8 or 4 bytes; length-delimited: the bytes. */
  v: bigint | Uint8Array;
  /** Written with this length prefix instead of the true one (a lie the mutator tells). */
  lenLie?: number;
}

const utf8 = new TextEncoder();
const U64 = (1n << 64n) - 1n;

export function varint(v: bigint | number): Uint8Array {
  let x = BigInt(v) & U64; // negative numbers as two's complement, 10 bytes
  const out: number[] = [];
  do {
    let b = Number(x & 0x7fn);
    x >>= 7n;
    if (x > 0n) b |= 0x80;
    out.push(b);
  } while (x > 0n);
  return Uint8Array.from(out);
}

export function encodeFields(fields: readonly WireField[]): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const f of fields) {
    parts.push(varint((BigInt(f.no) << 3n) | BigInt(f.wt)));
    if (typeof f.v === "bigint") parts.push(varint(f.v));
    else if (f.wt === 2) parts.push(varint(f.lenLie ?? f.v.length), f.v);
    else parts.push(f.v);
  }
  return concat(...parts);
}

/** The fields of `b`, or undefined when it is not a well-formed message. */
export function decodeFields(b: Uint8Array): WireField[] | undefined {
  const out: WireField[] = [];
  let i = 0;
  const readVarint = (): bigint | undefined => {
    let x = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      if (i >= b.length) return undefined;
      const byte = b[i++]!;
      x |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return x & U64;
    }
    return undefined;
  };
  while (i < b.length) {
    const tag = readVarint();
    if (tag === undefined) return undefined;
    const no = Number(tag >> 3n);
    const wt = Number(tag & 7n);
    if (no === 0) return undefined;
    if (wt === 0) {
      const v = readVarint();
      if (v === undefined) return undefined;
      out.push({ no, wt, v });
    } else if (wt === 1 || wt === 5) {
      const n = wt === 1 ? 8 : 4;
      if (i + n > b.length) return undefined;
      out.push({ no, wt, v: b.slice(i, i + n) });
      i += n;
    } else if (wt === 2) {
      const len = readVarint();
      if (len === undefined || BigInt(i) + len > BigInt(b.length)) return undefined;
      out.push({ no, wt, v: b.slice(i, i + Number(len)) });
      i += Number(len);
    } else {
      return undefined;
    }
  }
  return out;
}

// Builders
export const vint = (no: number, v: bigint | number | boolean): WireField => ({ no, wt: 0, v: BigInt(typeof v === "boolean" ? Number(v) : v) });
export const str = (no: number, s: string | Uint8Array): WireField => ({ no, wt: 2, v: typeof s === "string" ? utf8.encode(s) : s });
export const msg = (no: number, fields: readonly WireField[]): WireField => ({ no, wt: 2, v: encodeFields(fields) });
export function f64(no: number, x: number): WireField {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setFloat64(0, x, true);
  return { no, wt: 1, v: b };
}
/** A packed repeated field of varints (or of fixed32 floats / fixed64 doubles). */
export function packed(no: number, values: readonly (bigint | number)[], as: "varint" | "float" | "double" = "varint"): WireField {
  if (as === "varint") return { no, wt: 2, v: concat(...values.map((x) => varint(typeof x === "number" ? BigInt(Math.trunc(x)) : x))) };
  const size = as === "float" ? 4 : 8;
  const b = new Uint8Array(values.length * size);
  const dv = new DataView(b.buffer);
  values.forEach((x, i) => (as === "float" ? dv.setFloat32(i * size, Number(x), true) : dv.setFloat64(i * size, Number(x), true)));
  return { no, wt: 2, v: b };
}
/** A map<string, M> entry: key = 1, value = 2. */
export const mapEntry = (no: number, key: string, value: readonly WireField[]): WireField => msg(no, [str(1, key), msg(2, value)]);

const EDGE_VARINTS = [
  0n,
  1n,
  2n,
  0x7fffffffn,
  0x80000000n,
  0xffffffffn,
  0x100000000n,
  (1n << 53n) + 1n,
  (1n << 63n) - 1n,
  1n << 63n,
  U64,
  U64 - 4n /* -5 */,
  U64 /* -1 */,
];

/** One change somewhere in the message tree of `b` (or a byte-level change when it is not a message). */
export function mutateWire(b: Uint8Array, r: Rng): Uint8Array {
  const fields = decodeFields(b);
  if (!fields || fields.length === 0 || r.chance(0.15)) return mutateBytes(b, r);
  return encodeFields(mutateFields(fields, r, 0));
}

function mutateFields(fields: WireField[], r: Rng, depth: number): WireField[] {
  const out = fields.slice();
  const i = r.int(out.length);
  const f = { ...out[i]! };
  // Go down into a nested message now and then.
  if (f.wt === 2 && f.v instanceof Uint8Array && depth < 4 && r.chance(0.55)) {
    const inner = decodeFields(f.v);
    if (inner && inner.length > 0) {
      f.v = encodeFields(mutateFields(inner, r, depth + 1));
      out[i] = f;
      return out;
    }
  }
  switch (r.int(8)) {
    case 0:
      out.splice(i, 1);
      return out;
    case 1:
      out.splice(i, 0, { ...f });
      return out;
    case 2:
      f.no = r.pick([1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 100, 536870911]);
      break;
    case 3:
      f.wt = r.pick([0, 1, 2, 5] as const);
      if (f.wt === 0) f.v = r.pick(EDGE_VARINTS);
      else if (f.wt === 1) f.v = r.bytes(8);
      else if (f.wt === 5) f.v = r.bytes(4);
      else if (typeof f.v === "bigint") f.v = varint(f.v);
      break;
    case 4:
      if (f.wt === 0) f.v = r.pick(EDGE_VARINTS);
      else if (f.wt === 2)
        f.v = r.chance(0.5)
          ? utf8.encode(JSON.parse(r.pick(ODD_STRINGS.filter((s) => !s.includes("\\x") && !s.includes("\\u12") && s !== '"\\"'))))
          : Uint8Array.from([0xff, 0xfe, 0xc0, 0x80]);
      else f.v = r.bytes(f.wt === 1 ? 8 : 4);
      break;
    case 5:
      if (f.wt === 2 && f.v instanceof Uint8Array) f.lenLie = r.pick([0, f.v.length + 1, f.v.length + 1000, Math.max(0, f.v.length - 1), 0x7fffffff]);
      else out.push(vint(r.range(8, 50), r.pick(EDGE_VARINTS)));
      break;
    case 6:
      if (f.wt === 2 && f.v instanceof Uint8Array) f.v = mutateBytes(f.v, r);
      break;
    default:
      out.push(r.chance(0.5) ? str(r.range(1, 12), r.bytes(r.int(8))) : vint(r.range(1, 12), r.pick(EDGE_VARINTS)));
  }
  out[i] = f;
  return out;
}
