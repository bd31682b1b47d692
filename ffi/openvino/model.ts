/**
 * @module OvModel (ov_model_t, read from an IR) with its ports described once, and
 * OvCompiledModel (ov_compiled_model_t, a model compiled for one device), which makes
 * infer requests. Each owns one handle and frees it once, with ov_model_free /
 * ov_compiled_model_free; the port objects used while describing are freed at once.
 *
 * A compiled model can be shared with other threads of the process (#30): share() gives
 * its address and a guard in shared memory, borrow() wraps them in another thread, which
 * makes and frees infer requests of its own (ov_compiled_model_create_infer_request is
 * thread-safe; each request runs one inference at a time). A borrower enters the guard
 * for each use and never frees the compiled model; the owner's close() retires the guard
 * and frees it only once no borrower is inside it. An infer request holds its own
 * reference to what it runs (OpenVINO's objects are reference-counted), so a borrower may
 * free an idle one after that.
 */
import { getKoffi, koffiNativePath, type Pointer } from "../load.ts";
import { SharedGuard } from "../shared-guard.ts";
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

/** What another thread needs to make infer requests of a compiled model: its address, and the guard its uses enter. */
export interface SharedOvCompiledModel {
  address: bigint;
  device: string;
  /** OpenVINO's C library as the owner loaded it (the same one, already open, in every thread). */
  library: string;
  /** koffi's native module as the owner's thread loaded it (the compiled binary's embedded copy). */
  koffi: string | undefined;
  /** Int32 [uses by borrowers in flight, retired (1 once the owner closes)]. */
  guard: SharedArrayBuffer;
}

export class OvCompiledModel {
  readonly #runtime: OpenVinoRuntime;
  #handle: Pointer;
  readonly device: string;
  /** Set once the compiled model is shared with other threads (share()), or borrowed from another. */
  #guard: SharedGuard | undefined;
  /** Another thread owns (and frees) the native compiled model. */
  #borrowed = false;
  /** Told once the native compiled model has been freed (the owner's close()). */
  readonly #onReleased: (() => void)[] = [];

  private constructor(runtime: OpenVinoRuntime, handle: Pointer, device: string) {
    this.#runtime = runtime;
    this.#handle = handle;
    this.device = device;
  }

  /** Takes ownership of an ov_compiled_model_t (from ov_core_compile_model). */
  static adopt(runtime: OpenVinoRuntime, handle: Pointer, device: string): OvCompiledModel {
    return new OvCompiledModel(runtime, handle, device);
  }

  /** This compiled model as other threads of the process may use it (see borrow()). */
  share(): SharedOvCompiledModel {
    if (!this.#handle || this.#borrowed) throw new NativeError("INTERNAL", "openvino", "openvino: only an open compiled model of this thread can be shared");
    this.#guard ??= new SharedGuard();
    return { address: this.#handle, device: this.device, library: this.#runtime.path, koffi: koffiNativePath(), guard: this.#guard.buffer };
  }

  /** Another thread's compiled model, to use here: enter() before each use (an infer request made or run) and leave() after it. */
  static borrow(runtime: OpenVinoRuntime, shared: SharedOvCompiledModel): OvCompiledModel {
    const c = new OvCompiledModel(runtime, shared.address, shared.device);
    c.#borrowed = true;
    c.#guard = new SharedGuard(shared.guard);
    return c;
  }

  /** A borrower's use begins: false once the owner has retired the compiled model, or this thread's copy is closed (use nothing then). */
  enter(): boolean {
    return this.#handle !== null && this.#guard?.enter() === true;
  }

  /** A borrower's use has ended. */
  leave(): void {
    this.#guard?.leave();
  }

  createInferRequest(): OvInferRequest {
    if (!this.#handle) throw new NativeError("INTERNAL", "openvino", "openvino: the compiled model is closed");
    const api = this.#runtime.api;
    const out = outPointer();
    check(api, api.ov_compiled_model_create_infer_request(this.#handle, out), "ov_compiled_model_create_infer_request");
    return OvInferRequest.adopt(this.#runtime, out[0] || null);
  }

  /**
   * Frees the compiled model (a borrowed one: forgets it), at once or, while borrowers
   * are inside a shared one, once they have left (SharedGuard.retire); `onReleased` is
   * told when it has been freed.
   */
  close(onReleased?: () => void): void {
    if (!this.#handle) {
      onReleased?.();
      return;
    }
    if (this.#borrowed) {
      this.#handle = null;
      onReleased?.();
      return;
    }
    if (onReleased) this.#onReleased.push(onReleased);
    if (this.#guard) this.#guard.retire(() => this.#release());
    else this.#release();
  }

  #release(): void {
    if (this.#handle) this.#runtime.api.ov_compiled_model_free(this.#handle);
    this.#handle = null;
    for (const told of this.#onReleased.splice(0)) told();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
