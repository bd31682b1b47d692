/**
 * @module The tensors `nereid perf` sends, as perf_analyzer makes them: from the model's
 * metadata and config, with `-b` items in the batch dimension, `--shape` for variable
 * dims, and values that are random, zero, read from a JSON file in perf_analyzer's
 * format (`{"data": [{"INPUT0": [...], "INPUT1": {"content": [...], "shape": [...]}}]}`,
 * one entry per request in turn; `{"b64": "..."}` in place of an array or of "content"
 * gives the item's raw bytes), or from a directory with one file per input, named after
 * it (raw bytes; a BYTES input of one element takes the whole file as that element, one
 * of several elements takes one line each).
 */
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { ELEMENT_SIZE, elementCount, isDataType, joinBytes, type DataType } from "../core/tensor.ts";

export interface InputSpec {
  name: string;
  datatype: string;
  shape: number[];
}

/** One input of one request: its full shape (batch dimension included) and raw bytes. */
export interface PerfTensor {
  name: string;
  datatype: DataType;
  shape: number[];
  bytes: Uint8Array;
}

/** The tensors of each distinct request; requests cycle through them. */
export type PerfRequestData = PerfTensor[][];

const encoder = new TextEncoder();

/** One item's values (no batch dimension) encoded as raw little-endian bytes. */
function encode(datatype: DataType, values: readonly unknown[]): Uint8Array {
  if (datatype === "BYTES") return joinBytes(values.map((v) => encoder.encode(String(v))));
  const size = ELEMENT_SIZE[datatype];
  const out = new Uint8Array(values.length * size);
  const view = new DataView(out.buffer);
  values.forEach((raw, i) => {
    const o = i * size;
    const v = Number(raw);
    switch (datatype) {
      case "BOOL":
        view.setUint8(o, raw === true || v !== 0 ? 1 : 0);
        break;
      case "UINT8":
        view.setUint8(o, v);
        break;
      case "INT8":
        view.setInt8(o, v);
        break;
      case "UINT16":
        view.setUint16(o, v, true);
        break;
      case "INT16":
        view.setInt16(o, v, true);
        break;
      case "UINT32":
        view.setUint32(o, v, true);
        break;
      case "INT32":
        view.setInt32(o, v, true);
        break;
      case "UINT64":
        view.setBigUint64(o, BigInt(Math.trunc(v)), true);
        break;
      case "INT64":
        view.setBigInt64(o, BigInt(Math.trunc(v)), true);
        break;
      case "FP32":
        view.setFloat32(o, v, true);
        break;
      case "FP64":
        view.setFloat64(o, v, true);
        break;
      case "FP16":
      case "BF16":
        view.setUint16(o, datatype === "BF16" ? bf16(v) : fp16(v), true);
        break;
    }
  });
  return out;
}

function bf16(v: number): number {
  const f = new Float32Array([v]);
  return new Uint32Array(f.buffer)[0]! >>> 16;
}

function fp16(v: number): number {
  if (v === 0) return 0;
  const sign = v < 0 ? 0x8000 : 0;
  const a = Math.abs(v);
  const e = Math.max(-14, Math.min(15, Math.floor(Math.log2(a))));
  const m = Math.round((a / 2 ** e - (e === -14 && a < 2 ** -14 ? 0 : 1)) * 1024);
  return sign | ((e === -14 && a < 2 ** -14 ? 0 : e + 15) << 10) | (m & 0x3ff);
}

/** A random value of the type, in a small range (as perf_analyzer's random data). */
function randomValue(datatype: DataType): unknown {
  if (datatype === "BYTES") return Math.random().toString(36).slice(2, 10);
  if (datatype === "BOOL") return Math.random() < 0.5;
  if (datatype.startsWith("FP") || datatype === "BF16") return Math.random();
  return Math.floor(Math.random() * (datatype.startsWith("U") ? 100 : 200) - (datatype.startsWith("U") ? 0 : 100));
}

/** An input's dims for one item: the metadata's without the batch dimension, variable ones from --shape. */
function itemShape(input: InputSpec, batched: boolean, shapes: ReadonlyMap<string, number[]>): number[] {
  const dims = batched ? input.shape.slice(1) : input.shape;
  const given = shapes.get(input.name);
  if (given) {
    if (given.length !== dims.length || given.some((d, i) => dims[i] !== -1 && dims[i] !== d)) {
      throw new Error(`--shape ${input.name}:${given.join(",")} does not fit the input's dims [${dims.join(",")}]`);
    }
    return given;
  }
  if (dims.some((d) => d < 0))
    throw new Error(`input '${input.name}' has variable dims [${dims.join(",")}]: give them with --shape ${input.name}:<d1>,<d2>,...`);
  return dims;
}

/** The request data for `mode` (random, zero or a JSON file) with batch size `batch`. */
export function makeRequestData(
  inputs: readonly InputSpec[],
  maxBatchSize: number,
  batch: number,
  mode: string,
  shapes: ReadonlyMap<string, number[]>,
): PerfRequestData {
  const batched = maxBatchSize > 0;
  if (!batched && batch > 1) throw new Error(`batch size ${batch} given for a model that does not batch (max_batch_size 0)`);
  if (batched && batch > maxBatchSize) throw new Error(`batch size ${batch} is more than the model's max_batch_size ${maxBatchSize}`);
  for (const i of inputs) if (!isDataType(i.datatype)) throw new Error(`input '${i.name}' has datatype ${i.datatype}, which perf cannot make`);
  const full = (item: number[]) => (batched ? [batch, ...item] : item);
  const repeat = (bytes: Uint8Array) => {
    if (batch === 1 || !batched) return bytes;
    const out = new Uint8Array(bytes.byteLength * batch);
    for (let k = 0; k < batch; k++) out.set(bytes, k * bytes.byteLength);
    return out;
  };
  if (mode === "random" || mode === "zero") {
    return [
      inputs.map((input) => {
        const datatype = input.datatype as DataType;
        const shape = itemShape(input, batched, shapes);
        const n = elementCount(shape);
        const values = Array.from({ length: n }, () => (mode === "zero" ? (datatype === "BYTES" ? "" : 0) : randomValue(datatype)));
        return { name: input.name, datatype, shape: full(shape), bytes: repeat(encode(datatype, values)) };
      }),
    ];
  }
  if (isDirectory(mode)) return [fromDirectory(inputs, mode, batched, shapes, full, repeat)];
  let doc: { data?: unknown };
  try {
    doc = JSON.parse(readFileSync(mode, "utf8")) as { data?: unknown };
  } catch (err) {
    throw new Error(`--input-data ${mode}: ${(err as Error).message}`);
  }
  if (!Array.isArray(doc.data) || doc.data.length === 0)
    throw new Error(`--input-data ${mode}: expected {"data": [ {<input>: [values] or {"content": [...], "shape": [...]}}, ... ]}`);
  return doc.data.map((entry: Record<string, unknown>, k: number) =>
    inputs.map((input) => {
      const datatype = input.datatype as DataType;
      const v = entry[input.name];
      const where = `--input-data ${mode}: input '${input.name}' of entry ${k}`;
      if (v === undefined) throw new Error(`--input-data ${mode}: entry ${k} has no values for input '${input.name}'`);
      const obj = (Array.isArray(v) ? {} : v) as { content?: unknown; shape?: number[]; b64?: unknown };
      const content = Array.isArray(v) ? v : obj.b64 !== undefined ? obj : obj.content;
      const shape = obj.shape ?? itemShape(input, batched, shapes);
      const b64 = (content as { b64?: unknown } | undefined)?.b64;
      if (b64 !== undefined) {
        if (typeof b64 !== "string") throw new Error(`${where}: the value of "b64" must be a string`);
        return { name: input.name, datatype, shape: full(shape), bytes: repeat(rawItem(datatype, Buffer.from(b64, "base64"), shape, where)) };
      }
      if (!Array.isArray(content)) throw new Error(`${where} is neither an array, {"content": [...]} nor {"b64": "..."}`);
      const flat = content.flat(Infinity) as unknown[];
      if (elementCount(shape) !== flat.length) throw new Error(`${where} has ${flat.length} values for shape [${shape.join(",")}]`);
      return { name: input.name, datatype, shape: full(shape), bytes: repeat(encode(datatype, flat)) };
    }),
  );
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** Whether `bytes` are exactly `count` length-prefixed BYTES elements. */
function isSerialized(bytes: Uint8Array, count: number): boolean {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  for (let i = 0; i < count; i++) {
    if (at + 4 > bytes.byteLength) return false;
    at += 4 + view.getUint32(at, true);
  }
  return at === bytes.byteLength;
}

/**
 * One item's raw bytes, given as they are (b64 or a file), checked against its shape: for
 * BYTES, either already length-prefixed elements (perf_analyzer's b64 form) or, for an
 * item of one element, that element's bytes (an image file, say).
 */
function rawItem(datatype: DataType, bytes: Uint8Array, shape: number[], where: string): Uint8Array {
  const n = elementCount(shape);
  if (datatype === "BYTES") {
    if (isSerialized(bytes, n)) return bytes;
    if (n === 1) return joinBytes([bytes]);
    throw new Error(`${where}: ${bytes.byteLength} bytes are not ${n} length-prefixed BYTES elements for shape [${shape.join(",")}]`);
  }
  const expected = n * ELEMENT_SIZE[datatype];
  if (bytes.byteLength !== expected)
    throw new Error(`${where}: ${bytes.byteLength} bytes given, expected ${expected} for ${datatype} shape [${shape.join(",")}]`);
  return bytes;
}

/** perf_analyzer's directory form: a file per input, named after it, holding one item. */
function fromDirectory(
  inputs: readonly InputSpec[],
  dir: string,
  batched: boolean,
  shapes: ReadonlyMap<string, number[]>,
  full: (item: number[]) => number[],
  repeat: (bytes: Uint8Array) => Uint8Array,
): PerfTensor[] {
  const names = new Set(inputs.map((i) => i.name));
  for (const f of readdirSync(dir)) if (!names.has(f)) throw new Error(`--input-data ${dir}: file '${f}' is not named after an input of the model`);
  return inputs.map((input) => {
    const datatype = input.datatype as DataType;
    const shape = itemShape(input, batched, shapes);
    const where = `--input-data ${dir}: input '${input.name}'`;
    let bytes: Uint8Array;
    try {
      bytes = new Uint8Array(readFileSync(join(dir, input.name)));
    } catch (err) {
      throw new Error(`${where}: ${(err as Error).message}`);
    }
    if (datatype === "BYTES" && elementCount(shape) > 1) {
      const lines = Buffer.from(bytes).toString("utf8").split("\n");
      if (lines.at(-1) === "") lines.pop();
      if (lines.length !== elementCount(shape))
        throw new Error(`${where}: ${lines.length} lines for ${elementCount(shape)} elements of shape [${shape.join(",")}]`);
      return { name: input.name, datatype, shape: full(shape), bytes: repeat(encode(datatype, lines)) };
    }
    return { name: input.name, datatype, shape: full(shape), bytes: repeat(rawItem(datatype, bytes, shape, where)) };
  });
}
