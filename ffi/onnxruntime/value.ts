/**
 * @module OrtValue: one owned ONNX Runtime tensor (zero-copy over JS memory, a string
 * tensor, or a Run output ORT allocated), its reading back into JS memory, and the
 * element sizes of the tensor types served. The tensors a run takes and gives are
 * OrtInput and OrtOutput.
 */
import { getKoffi, type Pointer } from "../load.ts";
import { ONNX_TYPE, type OrtApi } from "./symbols.ts";
import { check } from "./status.ts";
import { NativeError } from "../errors.ts";
import { copyBytes } from "../../src/core/bytes.ts";
import type { OrtEnvironment } from "./handles.ts";

/** A tensor going into a run. */
export interface OrtInput {
  name: string;
  elementType: number;
  shape: number[];
  /**
   * Raw element bytes; for STRING, Triton's serialization: per element a 4-byte
   * little-endian length, then the bytes.
   */
  data?: Uint8Array;
}

/** A tensor coming out of a run, in JS memory that ORT no longer references. */
export interface OrtOutput {
  name: string;
  elementType: number;
  shape: number[];
  /** Raw element bytes; for STRING, serialized as in OrtInput. */
  data: Uint8Array;
}

const MAX_RANK = 16;
// ORT copies the shape and writes the new value's pointer during the create call itself,
// so one pair of scratch buffers serves every call (JS makes them one at a time).
const shapeScratch = new BigInt64Array(new ArrayBuffer(MAX_RANK * 8));
const outScratch = new BigUint64Array(new ArrayBuffer(8));
// Out-parameters of the per-output calls (type, shape, data pointer): typed scratch is
// several times cheaper for koffi than a JS array marked _Out_.
const infoScratch = new BigUint64Array(new ArrayBuffer(8));
const intScratch = new Int32Array(new ArrayBuffer(4));
const sizeScratch = new BigUint64Array(new ArrayBuffer(8));
/**
 * V8 keeps typed arrays of up to 64 bytes inside its moving heap; JavaScriptCore (Bun)
 * does not move array storage. Under V8 such inputs are copied before ORT holds them.
 */
const MOVABLE_SMALL_ARRAYS = typeof (globalThis as { Bun?: unknown }).Bun === "undefined";

function shapeArg(shape: readonly number[]): BigInt64Array {
  const buf = shape.length <= MAX_RANK ? shapeScratch : new BigInt64Array(new ArrayBuffer(shape.length * 8));
  for (let i = 0; i < shape.length; i++) buf[i] = BigInt(shape[i]!);
  return buf;
}

export class OrtValue {
  readonly #api: OrtApi;
  #handle: Pointer;
  /** The JS memory a zero-copy tensor points into: referenced until the value is released. */
  // biome-ignore lint/correctness/noUnusedPrivateClassMembers: written only, to keep the memory alive while the native value points into it
  #data: Uint8Array | undefined;

  private constructor(api: OrtApi, handle: Pointer, data?: Uint8Array) {
    this.#api = api;
    this.#handle = handle;
    this.#data = data;
  }

  /** Takes ownership of a value ORT created (a Run output). */
  static adopt(api: OrtApi, handle: Pointer): OrtValue {
    return new OrtValue(api, handle);
  }

  /**
   * A tensor over `data` without copying: ORT reads (or, for a preallocated output,
   * writes) the JS buffer. `copySmall` false: `data` is known to own its ArrayBuffer.
   */
  static overData(env: OrtEnvironment, name: string, elementType: number, shape: readonly number[], data: Uint8Array | undefined, copySmall = true): OrtValue {
    const bytes = data?.byteLength ?? 0;
    let held = data && bytes > 0 ? data : new Uint8Array(new ArrayBuffer(1));
    if (copySmall && MOVABLE_SMALL_ARRAYS && bytes <= 128) {
      const copy = new Uint8Array(new ArrayBuffer(held.byteLength));
      copy.set(held);
      held = copy;
    }
    const api = env.api;
    const status = api.CreateTensorWithDataAsOrtValue(env.cpuMemory.handle, held, bytes, shapeArg(shape), shape.length, elementType, outScratch);
    check(api, status, `CreateTensorWithDataAsOrtValue(${name})`);
    return new OrtValue(api, outScratch[0] || null, held);
  }

  /**
   * A string tensor in memory ORT allocates, from Triton's serialization of its elements.
   * FillStringTensor takes NUL-terminated C strings: the elements are copied, each with a
   * NUL, into one native buffer and their addresses into one array, in one pass (about
   * 10 ns an element where a Uint8Array and a koffi C string per element cost about 500),
   * STRING_SLICE elements at a time with a turn of the event loop between slices; the
   * native fill of a large tensor runs on koffi's worker thread. Elements that contain a
   * 0 byte are written one by one at their exact length.
   */
  static async strings(env: OrtEnvironment, name: string, shape: readonly number[], data: Uint8Array): Promise<OrtValue> {
    const api = env.api;
    check(api, api.CreateTensorAsOrtValue(env.allocator, shapeArg(shape), shape.length, ONNX_TYPE.STRING, outScratch), `CreateTensorAsOrtValue(${name})`);
    const value = new OrtValue(api, outScratch[0] || null);
    try {
      const count = shape.reduce((a, b) => a * b, 1);
      if (count > 0) await fillStrings(api, value.handle, name, count, data);
      return value;
    } catch (err) {
      value.close();
      throw err;
    }
  }

  get handle(): Pointer {
    return this.#handle;
  }

  /** The element type and shape of this tensor. */
  typeAndShape(name: string): { elementType: number; shape: number[] } {
    check(this.#api, this.#api.GetTensorTypeAndShape(this.#handle, infoScratch), `GetTensorTypeAndShape(${name})`);
    const info = infoScratch[0] || null;
    try {
      return readTypeAndShape(this.#api, info);
    } finally {
      this.#api.ReleaseTensorTypeAndShapeInfo(info);
    }
  }

  /** Copies the tensor out of ORT's memory; a string tensor (see #readStrings) asynchronously. */
  read(name: string): OrtOutput | Promise<OrtOutput> {
    const api = this.#api;
    const { elementType, shape } = this.typeAndShape(name);
    const count = shape.reduce((a, b) => a * b, 1);
    if (elementType === ONNX_TYPE.STRING) return this.#readStrings(name, shape, count);
    const bytes = count * elementSize(elementType);
    if (bytes === 0) return { name, elementType, shape, data: new Uint8Array(0) };
    check(api, api.GetTensorMutableData(this.#handle, infoScratch), `GetTensorMutableData(${name})`);
    return { name, elementType, shape, data: copyBytes(new Uint8Array(getKoffi().view(infoScratch[0], bytes))) };
  }

  /**
   * Copies a string tensor out of ORT's memory in Triton's serialization: the content of a
   * large one fetched on koffi's worker thread, then serialized in slices.
   */
  async #readStrings(name: string, shape: number[], count: number): Promise<OrtOutput> {
    const api = this.#api;
    const elementType = ONNX_TYPE.STRING;
    const len: [number] = [0];
    check(api, api.GetStringTensorDataLength(this.#handle, len), `GetStringTensorDataLength(${name})`);
    const total = Number(len[0]);
    const buf = new Uint8Array(new ArrayBuffer(Math.max(total, 1)));
    const offsets = new BigUint64Array(new ArrayBuffer(Math.max(count, 1) * 8));
    if (count > STRING_SLICE) {
      const h = this.#handle;
      check(
        api,
        await onWorker("GetStringTensorContent", (done) => api.GetStringTensorContent.async(h, buf, total, offsets, count, done)),
        `GetStringTensorContent(${name})`,
      );
    } else if (count > 0) {
      check(api, api.GetStringTensorContent(this.#handle, buf, total, offsets, count), `GetStringTensorContent(${name})`);
    }
    return { name, elementType, shape, data: await serializeStrings(buf, total, offsets, count) };
  }

  close(): void {
    if (this.#handle) this.#api.ReleaseValue(this.#handle);
    this.#handle = null;
    this.#data = undefined;
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

const badFraming = (name: string, detail: string) => new NativeError("INVALID_ARG", "onnxruntime", `onnxruntime: string input '${name}': ${detail}`);

/** String elements handled between turns of the event loop: a few ms of copying. */
const STRING_SLICE = 1 << 16;

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The status of an ORT call made on koffi's worker thread (`start` passes koffi's callback). */
function onWorker(call: string, start: (done: (err: unknown, status: Pointer) => void) => void): Promise<Pointer> {
  return new Promise((resolve, reject) => start((err, status) => (err ? reject(NativeError.fromKoffi("onnxruntime", call, err)) : resolve(status))));
}

const prefix = (data: Uint8Array, off: number) => (data[off]! | (data[off + 1]! << 8) | (data[off + 2]! << 16) | (data[off + 3]! << 24)) >>> 0;

/** Writes `count` serialized elements of `data` into the string tensor `value`. */
async function fillStrings(api: OrtApi, value: Pointer, name: string, count: number, data: Uint8Array): Promise<void> {
  const koffi = getKoffi();
  const textBytes = data.byteLength - 4 * count;
  if (textBytes < 0) throw badFraming(name, `${data.byteLength} bytes cannot hold ${count} elements`);
  const mem = koffi.alloc("uint8_t", textBytes + count) as Pointer;
  try {
    const text = new Uint8Array(koffi.view(mem, textBytes + count));
    const pointers = new BigUint64Array(new ArrayBuffer(count * 8));
    const halves = new Uint32Array(pointers.buffer);
    const base = Number(mem);
    let off = 0;
    let o = 0;
    let zero = false;
    for (let i = 0; i < count; i++) {
      if (i > 0 && i % STRING_SLICE === 0) await turn();
      if (off + 4 > data.byteLength) throw badFraming(name, `element ${i} has no length prefix`);
      const len = prefix(data, off);
      off += 4;
      const end = off + len;
      // Each element after this one needs at least its 4-byte prefix.
      if (end > data.byteLength - 4 * (count - 1 - i)) throw badFraming(name, `element ${i} runs past the end of the data`);
      const addr = base + o;
      halves[2 * i] = addr >>> 0;
      halves[2 * i + 1] = Math.floor(addr / 4294967296);
      if (len <= 32) {
        for (let j = off; j < end; j++) {
          const b = data[j]!;
          if (b === 0) zero = true;
          text[o++] = b;
        }
      } else {
        const part = data.subarray(off, end);
        if (part.indexOf(0) >= 0) zero = true;
        text.set(part, o);
        o += len;
      }
      text[o++] = 0;
      off = end;
    }
    if (off !== data.byteLength) throw badFraming(name, `${data.byteLength - off} bytes follow the last of its ${count} elements`);
    if (!zero && count > STRING_SLICE) {
      check(api, await onWorker("FillStringTensor", (done) => api.FillStringTensor.async(value, pointers, count, done)), `FillStringTensor(${name})`);
      return;
    }
    if (!zero) {
      check(api, api.FillStringTensor(value, pointers, count), `FillStringTensor(${name})`);
      return;
    }
    const buffer: [Pointer] = [null];
    off = 0;
    for (let i = 0; i < count; i++) {
      if (i > 0 && i % STRING_SLICE === 0) await turn();
      const len = prefix(data, off);
      off += 4;
      check(api, api.GetResizedStringTensorElementBuffer(value, i, len, buffer), `GetResizedStringTensorElementBuffer(${name})`);
      if (len > 0) new Uint8Array(koffi.view(buffer[0], len)).set(data.subarray(off, off + len));
      off += len;
    }
  } finally {
    koffi.free(mem);
  }
}

/**
 * GetStringTensorContent's text and offsets → Triton's serialization, in one pass of
 * slices (offsets read as 32-bit halves: a bigint per element would cost more than the copy).
 */
async function serializeStrings(buf: Uint8Array, total: number, offsets: BigUint64Array, count: number): Promise<Uint8Array> {
  const out = new Uint8Array(total + 4 * count);
  const halves = new Uint32Array(offsets.buffer, offsets.byteOffset, 2 * Math.max(count, 1));
  let o = 0;
  for (let i = 0; i < count; i++) {
    if (i > 0 && i % STRING_SLICE === 0) await turn();
    const start = halves[2 * i]! + halves[2 * i + 1]! * 4294967296;
    const end = i + 1 < count ? halves[2 * i + 2]! + halves[2 * i + 3]! * 4294967296 : total;
    const len = end - start;
    out[o] = len;
    out[o + 1] = len >>> 8;
    out[o + 2] = len >>> 16;
    out[o + 3] = len >>> 24;
    o += 4;
    if (len <= 32) {
      for (let j = start; j < end; j++) out[o++] = buf[j]!;
    } else {
      out.set(buf.subarray(start, end), o);
      o += len;
    }
  }
  return out;
}

/** Element type and dims of an OrtTensorTypeAndShapeInfo (dims as ORT gives them, -1 when unknown). */

export function readTypeAndShape(api: OrtApi, info: Pointer): { elementType: number; shape: number[] } {
  check(api, api.GetTensorElementType(info, intScratch), "GetTensorElementType");
  const elementType = intScratch[0]!;
  check(api, api.GetDimensionsCount(info, sizeScratch), "GetDimensionsCount");
  const rank = Number(sizeScratch[0]);
  const dims = rank <= MAX_RANK ? shapeScratch : new BigInt64Array(rank);
  if (rank > 0) check(api, api.GetDimensions(info, dims, rank), "GetDimensions");
  const shape = new Array<number>(rank);
  for (let i = 0; i < rank; i++) shape[i] = Number(dims[i]);
  return { elementType, shape };
}

const SIZES: Readonly<Record<number, number>> = {
  [ONNX_TYPE.FLOAT]: 4,
  [ONNX_TYPE.UINT8]: 1,
  [ONNX_TYPE.INT8]: 1,
  [ONNX_TYPE.UINT16]: 2,
  [ONNX_TYPE.INT16]: 2,
  [ONNX_TYPE.INT32]: 4,
  [ONNX_TYPE.INT64]: 8,
  [ONNX_TYPE.BOOL]: 1,
  [ONNX_TYPE.FLOAT16]: 2,
  [ONNX_TYPE.DOUBLE]: 8,
  [ONNX_TYPE.UINT32]: 4,
  [ONNX_TYPE.UINT64]: 8,
  [ONNX_TYPE.BFLOAT16]: 2,
};

/** Whether the element type has a fixed size (every served type but STRING). */
export function hasFixedSize(elementType: number): boolean {
  return elementType in SIZES;
}

export function elementSize(elementType: number): number {
  const s = SIZES[elementType];
  if (s === undefined) throw new NativeError("UNSUPPORTED", "onnxruntime", `onnxruntime: unsupported tensor element type ${elementType}`);
  return s;
}
