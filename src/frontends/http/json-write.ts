/**
 * @module JSON text for response tensors and parameters, written the way Triton's rapidjson
 * writer (kWriteNanAndInfFlag) writes them: doubles as "1.0", "1e30", "-0.0", "NaN",
 * "Infinity"; 64-bit integers with every digit; data always a flat array.
 */
import { internal, invalidArg } from "../../core/errors.ts";
import { ELEMENT_SIZE, elementCount, type Tensor } from "../../core/tensor.ts";
import { typedView } from "../../core/tensor-values.ts";
import type { Parameters } from "../../core/request.ts";

/**
 * A double as rapidjson's Writer::Double prints it. JS picks the shortest round-trip
 * digits; rapidjson's Grisu2 occasionally picks a different last digit of the same double.
 */
export function formatDouble(v: number): string {
  if (Number.isInteger(v)) {
    if (v === 0) return Object.is(v, -0) ? "-0.0" : "0.0";
    if (v < 1e21 && v > -1e21) return v + ".0";
    return String(v).replace("e+", "e");
  }
  if (v === Infinity) return "Infinity";
  if (v === -Infinity) return "-Infinity";
  if (Number.isNaN(v)) return "NaN";
  return String(v).replace("e+", "e");
}

/**
 * `[v0,v1,...]` for numbers, as `join` prints them. Small arrays are first copied into a
 * plain array: JSC joins one of those about twice as fast as a typed array.
 */
function joinNumbers(view: Int8Array | Uint8Array | Int16Array | Uint16Array | Int32Array | Uint32Array | Float32Array | Float64Array): string {
  if (view.length > 1024) return "[" + view.join(",") + "]";
  const plain = new Array<number>(view.length);
  for (let i = 0; i < view.length; i++) plain[i] = view[i]!;
  return "[" + plain.join(",") + "]";
}

function doublesJson(view: Float32Array | Float64Array): string {
  // Without integral or non-finite values, rapidjson's text equals JS's: join natively.
  let plain = true;
  for (let i = 0; i < view.length && plain; i++) plain = !Number.isInteger(view[i]!) && Number.isFinite(view[i]!);
  if (plain) return joinNumbers(view);
  const parts = new Array<string>(view.length);
  for (let i = 0; i < view.length; i++) parts[i] = formatDouble(view[i]!);
  return "[" + parts.join(",") + "]";
}

function boolsJson(data: Uint8Array): string {
  let s = "[";
  for (let i = 0; i < data.length; i++) s += (i === 0 ? "" : ",") + (data[i] === 0 ? "false" : "true");
  return s + "]";
}

const utf8 = new TextDecoder();

/** Per byte: 0 when it stands for itself in a JSON string, else the letter after '\\' ('u' for \\u00XX). */
const ESCAPE = new Uint8Array(256);
for (let b = 0; b < 0x20; b++) ESCAPE[b] = 0x75;
for (const [b, e] of [
  [0x22, 0x22],
  [0x5c, 0x5c],
  [0x08, 0x62],
  [0x0c, 0x66],
  [0x0a, 0x6e],
  [0x0d, 0x72],
  [0x09, 0x74],
])
  ESCAPE[b!] = e!;
const HEX = new TextEncoder().encode("0123456789abcdef");

/**
 * `["…",…]` for BYTES elements, the text JSON.stringify(utf8.decode(element)) gives each,
 * built as UTF-8 bytes and decoded once (about 10 ns an element instead of 200). Escapes
 * are ASCII, and ASCII bytes end any UTF-8 sequence, so invalid bytes become the same U+FFFD
 * as when each element is decoded alone.
 */
function stringsJson(t: Tensor, count: number): string {
  const { data } = t;
  const mismatch = () => internal(`output tensor shape does not match size of output for '${t.name}'`);
  // Each element's 4-byte prefix pays for its quotes and comma; only escapes need more.
  let out: Uint8Array = new Uint8Array(data.byteLength + 2);
  let o = 0;
  out[o++] = 0x5b;
  let off = 0;
  for (let i = 0; i < count; i++) {
    if (off + 4 > data.byteLength) throw mismatch();
    const len = (data[off]! | (data[off + 1]! << 8) | (data[off + 2]! << 16) | (data[off + 3]! << 24)) >>> 0;
    off += 4;
    if (off + len > data.byteLength) throw mismatch();
    if (i > 0) out[o++] = 0x2c;
    out[o++] = 0x22;
    const end = off + len;
    for (let j = off; j < end; j++) {
      const b = data[j]!;
      const e = ESCAPE[b]!;
      if (e === 0) {
        out[o++] = b;
        continue;
      }
      if (o + 6 + (end - j) + 2 + (data.byteLength - end) > out.length) out = grow(out, o + 6 + (end - j) + 2 + (data.byteLength - end));
      out[o++] = 0x5c;
      out[o++] = e;
      if (e === 0x75) {
        out[o++] = 0x30;
        out[o++] = 0x30;
        out[o++] = HEX[b >> 4]!;
        out[o++] = HEX[b & 15]!;
      }
    }
    out[o++] = 0x22;
    off = end;
  }
  out[o++] = 0x5d;
  return utf8.decode(out.subarray(0, o));
}

function grow(out: Uint8Array, need: number): Uint8Array {
  const bigger = new Uint8Array(Math.max(need, out.length * 2));
  bigger.set(out);
  return bigger;
}

/**
 * The flat JSON array for an output's `data`. FP16/BF16 cannot be sent as JSON
 * (INVALID_ARG, Triton's words); a byte size that does not match the shape is INTERNAL.
 */
export function tensorDataJson(t: Tensor): string {
  const { datatype } = t;
  if (datatype === "FP16" || datatype === "BF16") {
    throw invalidArg(`sending ${datatype} data via JSON is not supported. Please use the binary data format for output`);
  }
  const count = elementCount(t.shape);
  if (datatype === "BYTES") return stringsJson(t, count);
  if (t.data.byteLength !== count * ELEMENT_SIZE[datatype]) {
    throw internal(`Failed to write 'data' field: output tensor shape does not match size of output for '${t.name}'`);
  }
  if (datatype === "BOOL") return boolsJson(t.data);
  const view = typedView(datatype, t.data);
  if (view instanceof Float32Array || view instanceof Float64Array) return doublesJson(view);
  // 64-bit integers: join prints every digit of a bigint.
  if (view instanceof BigInt64Array || view instanceof BigUint64Array) return "[" + view.join(",") + "]";
  return joinNumbers(view);
}

/** JSON outputs up to this many bytes of tensor data are written in one piece. */
export const JSON_SLICE_BYTES = 256 * 1024;
/** Elements written between turns of the event loop: a few ms of formatting. */
const SLICE_ELEMENTS = 1 << 16;

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * tensorDataJson for outputs of any size: over JSON_SLICE_BYTES, the elements are written
 * SLICE_ELEMENTS at a time with a turn of the event loop between slices, so that an 8M
 * element output does not hold other clients for seconds. The same text either way.
 */
export async function tensorDataJsonAsync(t: Tensor): Promise<string> {
  if (t.data.byteLength <= JSON_SLICE_BYTES || t.datatype === "FP16" || t.datatype === "BF16") return tensorDataJson(t);
  const count = elementCount(t.shape);
  const size = ELEMENT_SIZE[t.datatype];
  if (size > 0 && t.data.byteLength !== count * size) return tensorDataJson(t); // its error
  let text = "[";
  let off = 0;
  for (let first = 0; first < count; first += SLICE_ELEMENTS) {
    const n = Math.min(SLICE_ELEMENTS, count - first);
    let end = off + n * size;
    if (size === 0) {
      // BYTES: find where the slice's last element ends (stringsJson checks the framing).
      end = off;
      for (let i = 0; i < n && end + 4 <= t.data.byteLength; i++) {
        end += 4 + ((t.data[end]! | (t.data[end + 1]! << 8) | (t.data[end + 2]! << 16) | (t.data[end + 3]! << 24)) >>> 0);
      }
    }
    const part = tensorDataJson({ ...t, shape: [n], data: t.data.subarray(off, Math.min(end, t.data.byteLength)) });
    text += (first > 0 ? "," : "") + part.slice(1, -1);
    off = end;
    await turn();
  }
  return text + "]";
}

/**
 * Throws INVALID_ARG when an output to be written as JSON holds more than `limit` bytes of
 * tensor data: as text it would take several times that in memory and in time (a 30M
 * element FP32 output took 570 MB). Binary data has no such bound.
 */
export function checkJsonOutputSize(t: Tensor, model: string, limit: number): void {
  if (t.data.byteLength > limit) {
    throw invalidArg(
      `output '${t.name}' of model '${model}' has ${t.data.byteLength} bytes of data, more than the ${limit} bytes one JSON output may have ` +
        "(--http-max-input-size); request it as binary data (binary_data: true) instead",
    );
  }
}

/** Response parameters: bool, int64 (integers and bigints), double and string, in order. */
export function parametersJson(params: Parameters): string {
  let s = "{";
  for (const [key, v] of Object.entries(params)) {
    if (s.length > 1) s += ",";
    s += JSON.stringify(key) + ":";
    if (typeof v === "number") s += Number.isInteger(v) && Math.abs(v) < 2 ** 63 ? String(v) : formatDouble(v);
    else if (typeof v === "bigint") s += v.toString();
    else s += JSON.stringify(v);
  }
  return s + "}";
}
