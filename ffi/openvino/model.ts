/**
 * @module OvModel (ov_model_t, read from an IR) with its ports described once, and
 * OvCompiledModel (ov_compiled_model_t, a model compiled for one device), which makes
 * infer requests. Each owns one handle and frees it once, with ov_model_free /
 * ov_compiled_model_free; the port objects used while describing are freed at once.
 */
import { getKoffi, type Pointer } from "../load.ts";
import { outPointer, outUint32, type OvDimension, type OvPartialShapeStruct } from "./symbols.ts";
import { check } from "./status.ts";
import { NativeError } from "../errors.ts";
import { ovStructTypes } from "./types.ts";
import { OvInferRequest } from "./infer-request.ts";
import type { OpenVinoRuntime } from "./runtime.ts";

/** One model input or output as its port describes it. */
export interface OvPortInfo {
  /** ov_port_get_any_name: one of the tensor's names. */
  name: string;
  /** Position among the model's inputs (or outputs): the index the infer request takes. */
  index: number;
  /** ov_element_type_e value of the runtime's table. */
  elementType: number;
  /** Partial shape with -1 for each dimension that is not static; undefined for a dynamic rank. */
  shape: number[] | undefined;
}

/** A static dimension has min == max (ov::Dimension); unbounded max reads back as -1. */
function dimension(d: OvDimension): number {
  const min = Number(d.min);
  return min === Number(d.max) && min >= 0 ? min : -1;
}

export class OvModel {
  readonly #runtime: OpenVinoRuntime;
  #handle: Pointer;
  readonly inputs: OvPortInfo[];
  readonly outputs: OvPortInfo[];

  private constructor(runtime: OpenVinoRuntime, handle: Pointer) {
    this.#runtime = runtime;
    this.#handle = handle;
    try {
      this.inputs = this.#ports(true);
      this.outputs = this.#ports(false);
    } catch (err) {
      this.close();
      throw err;
    }
  }

  /** Takes ownership of an ov_model_t (from ov_core_read_model). */
  static adopt(runtime: OpenVinoRuntime, handle: Pointer): OvModel {
    return new OvModel(runtime, handle);
  }

  get handle(): Pointer {
    return this.#handle;
  }

  #ports(input: boolean): OvPortInfo[] {
    const api = this.#runtime.api;
    const size = outPointer();
    check(
      api,
      input ? api.ov_model_inputs_size(this.#handle, size) : api.ov_model_outputs_size(this.#handle, size),
      input ? "ov_model_inputs_size" : "ov_model_outputs_size",
    );
    const list: OvPortInfo[] = [];
    for (let index = 0; index < Number(size[0]); index++) {
      const out = outPointer();
      const what = input ? "ov_model_const_input_by_index" : "ov_model_const_output_by_index";
      check(api, (input ? api.ov_model_const_input_by_index : api.ov_model_const_output_by_index)(this.#handle, index, out), what);
      const port = out[0] || null;
      try {
        list.push({ index, ...this.#describe(port) });
      } finally {
        api.ov_output_const_port_free(port);
      }
    }
    return list;
  }

  #describe(port: Pointer): Omit<OvPortInfo, "index"> {
    const api = this.#runtime.api;
    const koffi = getKoffi();
    const namePtr = outPointer();
    check(api, api.ov_port_get_any_name(port, namePtr), "ov_port_get_any_name");
    const name = koffi.decode(namePtr[0], "char", -1) as string;
    api.ov_free(namePtr[0] || null);
    const type = outUint32();
    check(api, api.ov_port_get_element_type(port, type), `ov_port_get_element_type(${name})`);
    const ps: Partial<OvPartialShapeStruct> = {};
    check(api, api.ov_port_get_partial_shape(port, ps), `ov_port_get_partial_shape(${name})`);
    const partial = ps as OvPartialShapeStruct;
    try {
      const rank = dimension(partial.rank);
      let shape: number[] | undefined;
      if (rank >= 0) {
        const dims = rank > 0 ? (koffi.decode(partial.dims, ovStructTypes().dimension, rank) as OvDimension[]) : [];
        shape = dims.map(dimension);
      }
      return { name, elementType: type[0]!, shape };
    } finally {
      api.ov_partial_shape_free(partial);
    }
  }

  close(): void {
    if (this.#handle) this.#runtime.api.ov_model_free(this.#handle);
    this.#handle = null;
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

export class OvCompiledModel {
  readonly #runtime: OpenVinoRuntime;
  #handle: Pointer;
  readonly device: string;

  private constructor(runtime: OpenVinoRuntime, handle: Pointer, device: string) {
    this.#runtime = runtime;
    this.#handle = handle;
    this.device = device;
  }

  /** Takes ownership of an ov_compiled_model_t (from ov_core_compile_model). */
  static adopt(runtime: OpenVinoRuntime, handle: Pointer, device: string): OvCompiledModel {
    return new OvCompiledModel(runtime, handle, device);
  }

  createInferRequest(): OvInferRequest {
    if (!this.#handle) throw new NativeError("INTERNAL", "openvino", "openvino: the compiled model is closed");
    const api = this.#runtime.api;
    const out = outPointer();
    check(api, api.ov_compiled_model_create_infer_request(this.#handle, out), "ov_compiled_model_create_infer_request");
    return OvInferRequest.adopt(this.#runtime, out[0] || null);
  }

  close(): void {
    if (this.#handle) this.#runtime.api.ov_compiled_model_free(this.#handle);
    this.#handle = null;
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
