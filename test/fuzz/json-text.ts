/**
 * JSON documents for the fuzzers, with room for what JSON.stringify cannot write: a
 * `Raw` node is emitted verbatim (NaN, Infinity, 1e0, -0, 1e400, integers beyond 2^64,
 * lone surrogate escapes, a deep run of brackets), and bigint is written exactly.
 */
import type { Rng } from "./rng.ts";

/** Literal JSON text, written as is. */
export class Raw {
  constructor(readonly text: string) {}
}

export const raw = (text: string) => new Raw(text);

export type Doc = null | boolean | number | bigint | string | Raw | Doc[] | { [key: string]: Doc };

export function isObjectDoc(d: Doc | undefined): d is { [key: string]: Doc } {
  return typeof d === "object" && d !== null && !Array.isArray(d) && !(d instanceof Raw);
}

/** JSON text of `doc`; `pretty` adds whitespace (another spelling of the same document). */
export function toJsonText(doc: Doc, pretty = false): string {
  const nl = pretty ? "\n " : "";
  const write = (d: Doc): string => {
    if (d === null) return "null";
    if (d instanceof Raw) return d.text;
    if (Array.isArray(d)) return `[${d.map(write).join(`,${nl}`)}]`;
    switch (typeof d) {
      case "bigint":
        return d.toString();
      case "number":
        return Number.isFinite(d) ? (Object.is(d, -0) ? "-0" : String(d)) : String(d);
      case "string":
      case "boolean":
        return JSON.stringify(d);
      default:
        return `{${nl}${Object.entries(d)
          .map(([k, v]) => `${JSON.stringify(k)}:${pretty ? " " : ""}${write(v)}`)
          .join(`,${nl}`)}}`;
    }
  };
  return write(doc);
}

/** obj[key] = v as an own member, "__proto__" included. */
export function setMember(obj: { [key: string]: Doc }, key: string, v: Doc): void {
  Object.defineProperty(obj, key, { value: v, enumerable: true, writable: true, configurable: true });
}

export function cloneDoc<T extends Doc>(d: T): T {
  if (Array.isArray(d)) return d.map(cloneDoc) as T;
  if (isObjectDoc(d)) {
    const out: { [key: string]: Doc } = {};
    for (const [k, v] of Object.entries(d)) setMember(out, k, cloneDoc(v));
    return out as T;
  }
  return d;
}

/** Number spellings a strict parser refuses or reads differently from JSON.parse. */
export const ODD_NUMBERS = [
  "NaN",
  "-NaN",
  "Infinity",
  "-Infinity",
  "Inf",
  "-Inf",
  "inf",
  "nan",
  "1e0",
  "1.0",
  "1E+0",
  "-0",
  "-0.0",
  "0e5",
  "1e400",
  "-1e400",
  "1e-400",
  "4.9e-324",
  "01",
  "00",
  "+1",
  ".5",
  "5.",
  "0x10",
  "1_000",
  "--1",
  "1e",
  "1e+",
  "-",
  "2147483647",
  "2147483648",
  "-2147483649",
  "4294967296",
  "9007199254740992",
  "9007199254740993",
  "-9007199254740993",
  "9223372036854775807",
  "9223372036854775808",
  "-9223372036854775808",
  "-9223372036854775809",
  "18446744073709551615",
  "18446744073709551616",
  "1844674407370955161600",
  "123456789012345678901234567890",
  "1234567890123456789",
  "1234567890123456790",
] as const;

/** String literal texts (quotes included) with escapes a decoder has to think about. */
export const ODD_STRINGS = [
  '""',
  '"\\ud800"',
  '"\\udc00"',
  '"\\ud800\\u0041"',
  '"\\u0000"',
  '"a\\u0000b"',
  '"\\uFEFF"',
  '"\\x41"',
  '"\\u12"',
  '"\\"',
  '"\\/"',
  '"\\\\"',
  '"\\n\\t\\r"',
  '"é"',
  '"\u{1F600}"',
  '"INT32"',
  '"BYTES"',
  '"FP16"',
  '"BF16"',
  '"int32"',
  '"TYPE_INT32"',
  '"INPUT0"',
  '"OUTPUT0"',
  '"../../etc/passwd"',
  '"%zz"',
  '"a\\/b"',
] as const;

/** Other JSON values worth putting where something else is expected. */
export function edgeValue(r: Rng): Doc {
  switch (r.int(8)) {
    case 0:
      return raw(r.pick(ODD_NUMBERS));
    case 1:
      return raw(r.pick(ODD_STRINGS));
    case 2:
      return r.pick([null, true, false, 0, -1, 1, 1.5, -0.5, 2 ** 31, 2 ** 32, 2 ** 53, -(2 ** 53), 2 ** 64]);
    case 3:
      return r.pick(["", "x", "1", "true", "null", "priority", "sequence_id", "triton_enable_empty_final_response"]);
    case 4:
      return r.pick<Doc>([[], {}, [null], [[]], [1, 2], { a: 1 }, [[1, 2], [3]]]);
    case 5:
      return nest(r.pick(["[", '{"a":']), r.pick([2, 50, 99, 100, 101, 1000]));
    case 6:
      return BigInt(r.pick(["9007199254740993", "18446744073709551615", "-1", "0"]));
    default:
      return r.int(1000) - 500;
  }
}

/** `depth` levels of `open` around a 0, closed again: [[[0]]] or {"a":{"a":0}}. */
export function nest(open: "[" | '{"a":', depth: number): Raw {
  const close = open === "[" ? "]" : "}";
  return raw(open.repeat(depth) + "0" + close.repeat(depth));
}
