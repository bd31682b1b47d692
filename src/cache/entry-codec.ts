/**
 * @module One cache entry (a response's output tensors) as one byte string, for caches
 * that store bytes (redis-cache.ts): a 4-byte little-endian length, a JSON header
 * `[[name, datatype, shape, byteLength], ...]`, then each tensor's bytes in order.
 *
 * Whoever can write to the cache can write any bytes under a key, so decoding trusts
 * nothing (issue #29 item 6): every datatype is a known one, every dim a non-negative safe
 * integer, every fixed-size tensor holds exactly its elements' bytes, every BYTES tensor
 * exactly its elements with exact framing, names are unique strings, the outputs the
 * request asked for are all there and no byte is left over. Anything else is an invalid
 * entry (with a reason for the log), which the cache treats as a miss.
 */
import { countBytesElements, ELEMENT_SIZE, isDataType, type Tensor } from "../core/tensor.ts";

/** The largest header read (1 MiB: a few outputs' names and shapes take well under a kilobyte). */
export const MAX_HEADER_BYTES = 1024 * 1024;

type Header = [name: string, datatype: string, shape: number[], bytes: number][];

/** The outputs of a valid entry (views into the value), or why the value is not one. */
export type DecodedEntry = { outputs: Tensor[]; invalid?: undefined } | { outputs?: undefined; invalid: string };

export function encodeEntry(outputs: readonly Tensor[]): Buffer {
  const header: Header = outputs.map((t) => [t.name, t.datatype, t.shape, t.data.byteLength]);
  const json = Buffer.from(JSON.stringify(header));
  const parts: Uint8Array[] = [Buffer.alloc(4), json];
  (parts[0] as Buffer).writeUInt32LE(json.byteLength, 0);
  for (const t of outputs) parts.push(t.data);
  return Buffer.concat(parts);
}

/** A string from the entry, quoted and cut for a log line. */
const quote = (s: string) => JSON.stringify(s.length > 64 ? `${s.slice(0, 64)}...` : s);

/** The element count of a shape whose dims are all non-negative safe integers, or undefined when it is not one (or overflows). */
function elementCountOf(shape: unknown): number | undefined {
  if (!Array.isArray(shape)) return undefined;
  let n = 1;
  let zero = false;
  for (const d of shape as unknown[]) {
    if (typeof d !== "number" || !Number.isSafeInteger(d) || d < 0) return undefined;
    if (d === 0) zero = true;
    else if (!zero) {
      n *= d;
      if (n > Number.MAX_SAFE_INTEGER) return undefined;
    }
  }
  return zero ? 0 : n;
}

/** Why one tensor's bytes do not match its header, or undefined when they do. */
function dataMismatch(name: string, datatype: keyof typeof ELEMENT_SIZE, count: number, data: Uint8Array): string | undefined {
  if (datatype !== "BYTES") {
    const want = count * ELEMENT_SIZE[datatype];
    return data.byteLength === want ? undefined : `output ${quote(name)} holds ${data.byteLength} bytes, its shape and datatype need ${want}`;
  }
  let elements: number;
  try {
    elements = countBytesElements(data);
  } catch {
    return `output ${quote(name)} has broken BYTES framing`;
  }
  return elements === count ? undefined : `output ${quote(name)} holds ${elements} BYTES elements, its shape needs ${count}`;
}

/**
 * The tensors in `value` (views into it), or why it is not a valid entry holding at least
 * the outputs named in `wanted`. Never throws.
 */
export function decodeEntry(value: Uint8Array, wanted: readonly string[] = []): DecodedEntry {
  if (value.byteLength < 4) return { invalid: `${value.byteLength} bytes, shorter than a header length` };
  const buf = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  const jsonBytes = buf.readUInt32LE(0);
  if (jsonBytes > MAX_HEADER_BYTES) return { invalid: `a header of ${jsonBytes} bytes, more than ${MAX_HEADER_BYTES}` };
  if (4 + jsonBytes > buf.byteLength) return { invalid: `a header of ${jsonBytes} bytes in a value of ${buf.byteLength}` };
  let header: unknown;
  try {
    header = JSON.parse(buf.toString("utf8", 4, 4 + jsonBytes));
  } catch {
    return { invalid: "a header that is not JSON" };
  }
  if (!Array.isArray(header)) return { invalid: "a header that is not an array" };
  const out: Tensor[] = [];
  const names = new Set<string>();
  let at = 4 + jsonBytes;
  for (const h of header as unknown[]) {
    if (!Array.isArray(h) || h.length !== 4) return { invalid: "a header entry that is not [name, datatype, shape, bytes]" };
    const [name, datatype, shape, bytes] = h as [unknown, unknown, unknown, unknown];
    if (typeof name !== "string") return { invalid: "an output name that is not a string" };
    if (names.has(name)) return { invalid: `output ${quote(name)} twice` };
    names.add(name);
    if (typeof datatype !== "string" || !isDataType(datatype)) return { invalid: `output ${quote(name)} has an unknown datatype` };
    const count = elementCountOf(shape);
    if (count === undefined) return { invalid: `output ${quote(name)} has a shape that is not non-negative integers` };
    if (typeof bytes !== "number" || !Number.isSafeInteger(bytes) || bytes < 0)
      return { invalid: `output ${quote(name)} has a byte length that is not a non-negative integer` };
    if (at + bytes > buf.byteLength) return { invalid: `output ${quote(name)} runs past the end of the value` };
    const data = new Uint8Array(buf.buffer, buf.byteOffset + at, bytes);
    const mismatch = dataMismatch(name, datatype, count, data);
    if (mismatch) return { invalid: mismatch };
    out.push({ name, datatype, shape: (shape as number[]).map((d) => d || 0), data }); // -0 (JSON allows it) as 0
    at += bytes;
  }
  if (at !== buf.byteLength) return { invalid: `${buf.byteLength - at} bytes after the last output` };
  for (const w of wanted) if (!names.has(w)) return { invalid: `no output ${quote(w)}` };
  return { outputs: out };
}
