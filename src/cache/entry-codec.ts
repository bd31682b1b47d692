/**
 * @module One cache entry (a response's output tensors) as one byte string, for caches
 * that store bytes (redis-cache.ts): a 4-byte little-endian length, a JSON header
 * `[[name, datatype, shape, byteLength], ...]`, then each tensor's bytes in order.
 * Decoding checks every length, so a foreign or truncated value reads as a miss.
 */
import type { DataType, Tensor } from "../core/tensor.ts";

type Header = [name: string, datatype: DataType, shape: number[], bytes: number][];

export function encodeEntry(outputs: readonly Tensor[]): Buffer {
  const header: Header = outputs.map((t) => [t.name, t.datatype, t.shape, t.data.byteLength]);
  const json = Buffer.from(JSON.stringify(header));
  const parts: Uint8Array[] = [Buffer.alloc(4), json];
  (parts[0] as Buffer).writeUInt32LE(json.byteLength, 0);
  for (const t of outputs) parts.push(t.data);
  return Buffer.concat(parts);
}

/** The tensors in `value` (views into it), or undefined when it is not an entry this codec wrote. */
export function decodeEntry(value: Uint8Array): Tensor[] | undefined {
  if (value.byteLength < 4) return undefined;
  const buf = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  const jsonBytes = buf.readUInt32LE(0);
  if (4 + jsonBytes > buf.byteLength) return undefined;
  let header: unknown;
  try {
    header = JSON.parse(buf.toString("utf8", 4, 4 + jsonBytes));
  } catch {
    return undefined;
  }
  if (!Array.isArray(header)) return undefined;
  const out: Tensor[] = [];
  let at = 4 + jsonBytes;
  for (const h of header as unknown[]) {
    if (!Array.isArray(h) || h.length !== 4) return undefined;
    const [name, datatype, shape, bytes] = h as [unknown, unknown, unknown, unknown];
    if (typeof name !== "string" || typeof datatype !== "string" || !Array.isArray(shape) || typeof bytes !== "number") return undefined;
    if (!Number.isInteger(bytes) || bytes < 0 || at + bytes > buf.byteLength) return undefined;
    out.push({ name, datatype: datatype as DataType, shape: shape as number[], data: new Uint8Array(buf.buffer, buf.byteOffset + at, bytes) });
    at += bytes;
  }
  return at === buf.byteLength ? out : undefined;
}
