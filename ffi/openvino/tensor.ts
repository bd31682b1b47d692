/**
 * @module OvTensor: one owned ov_tensor_t, either over JS memory without copying
 * (ov_tensor_create_from_host_ptr) or one the library made (an infer request's output),
 * and its reading back into JS memory. OpenVINO reads host memory for as long as any
 * ov::Tensor shares it (a tensor set on an infer request is shared with the request), so
 * the JS buffer is kept referenced by `data` and by whoever holds it longer.
 */
import { getKoffi, type Pointer } from "../load.ts";
import { outPointer, outUint32, type OvShapeStruct } from "./symbols.ts";
import { check } from "./status.ts";
import type { OpenVinoRuntime } from "./runtime.ts";

/**
 * V8 keeps typed arrays of up to 64 bytes inside its moving heap; JavaScriptCore (Bun)
 * does not move array storage. Under V8 such inputs are copied before OpenVINO holds them.
 */
const MOVABLE_SMALL_ARRAYS = typeof (globalThis as { Bun?: unknown }).Bun === "undefined";

/** A tensor read back from OpenVINO, in JS memory the library no longer references. */
export interface OvTensorData {
  elementType: number;
  shape: number[];
  data: Uint8Array;
}

/** `src` in memory OpenVINO may keep a pointer to: off V8's moving heap and aligned for its element size. */
function hostMemory(src: Uint8Array, elementSize: number): Uint8Array {
  const aligned = src.byteOffset % Math.max(elementSize, 1) === 0;
  if (src.byteLength > 0 && aligned && !(MOVABLE_SMALL_ARRAYS && src.byteLength <= 128)) return src;
  const copy = new Uint8Array(new ArrayBuffer(Math.max(src.byteLength, 1)));
  copy.set(src);
  return copy;
}

export class OvTensor {
  readonly #runtime: OpenVinoRuntime;
  #handle: Pointer;
  /** The JS memory a host tensor points into. */
  readonly data: Uint8Array | undefined;

  private constructor(runtime: OpenVinoRuntime, handle: Pointer, data?: Uint8Array) {
    this.#runtime = runtime;
    this.#handle = handle;
    this.data = data;
  }

  /** Takes ownership of an ov_tensor_t the library made. */
  static adopt(runtime: OpenVinoRuntime, handle: Pointer): OvTensor {
    return new OvTensor(runtime, handle);
  }

  /**
   * A tensor over `data` (row-major element bytes) without copying, unless the bytes must
   * move first (hostMemory). The shape goes through ov_shape_create / ov_shape_free: the
   * tensor keeps its own copy of it.
   */
  static overHost(runtime: OpenVinoRuntime, name: string, elementType: number, elementSize: number, shape: readonly number[], data: Uint8Array): OvTensor {
    const api = runtime.api;
    const held = hostMemory(data, elementSize);
    const dims = new BigInt64Array(new ArrayBuffer(Math.max(shape.length, 1) * 8));
    shape.forEach((d, i) => (dims[i] = BigInt(d)));
    const s: Partial<OvShapeStruct> = {};
    check(api, api.ov_shape_create(shape.length, dims, s), `ov_shape_create(${name})`);
    const ovShape = s as OvShapeStruct;
    try {
      const out = outPointer();
      check(api, api.ov_tensor_create_from_host_ptr(elementType, ovShape, held, out), `ov_tensor_create_from_host_ptr(${name})`);
      return new OvTensor(runtime, out[0] || null, held);
    } finally {
      api.ov_shape_free(ovShape); // fails only for a null pointer
    }
  }

  get handle(): Pointer {
    return this.#handle;
  }

  /** Element type, shape and a copy of the bytes (the library's buffer may be reused by the next run). */
  read(name: string): OvTensorData {
    const api = this.#runtime.api;
    const type = outUint32();
    check(api, api.ov_tensor_get_element_type(this.#handle, type), `ov_tensor_get_element_type(${name})`);
    const s: Partial<OvShapeStruct> = {};
    check(api, api.ov_tensor_get_shape(this.#handle, s), `ov_tensor_get_shape(${name})`);
    const ovShape = s as OvShapeStruct;
    let shape: number[];
    try {
      const rank = Number(ovShape.rank);
      shape = rank > 0 ? Array.from(getKoffi().decode(ovShape.dims, "int64_t", rank) as BigInt64Array, Number) : [];
    } finally {
      api.ov_shape_free(ovShape);
    }
    const size = outPointer();
    check(api, api.ov_tensor_get_byte_size(this.#handle, size), `ov_tensor_get_byte_size(${name})`);
    const bytes = Number(size[0]);
    const data = new Uint8Array(new ArrayBuffer(bytes));
    if (bytes > 0) {
      const ptr = outPointer();
      check(api, api.ov_tensor_data(this.#handle, ptr), `ov_tensor_data(${name})`);
      data.set(new Uint8Array(getKoffi().view(ptr[0] || null, bytes)));
    }
    return { elementType: type[0]!, shape, data };
  }

  close(): void {
    if (this.#handle) this.#runtime.api.ov_tensor_free(this.#handle);
    this.#handle = null;
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
