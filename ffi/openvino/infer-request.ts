/**
 * @module OvInferRequest: one ov_infer_request_t and its runs. A run sets each input as
 * a tensor over the caller's JS memory, calls ov_infer_request_infer on koffi's worker
 * thread (the event loop stays free), and copies the requested outputs out. The input
 * buffers stay referenced until the next run replaces them or the request is freed,
 * since the request shares them. close() during a run frees the request after it.
 */
import { nowNs } from "../../src/core/clock.ts";
import type { Pointer } from "../load.ts";
import { outPointer } from "./symbols.ts";
import { check } from "./status.ts";
import { NativeError } from "../errors.ts";
import { OvTensor, type OvTensorData } from "./tensor.ts";
import type { OpenVinoRuntime } from "./runtime.ts";

export interface OvRunInput {
  /** Model input index (OvPortInfo.index). */
  index: number;
  name: string;
  elementType: number;
  elementSize: number;
  shape: readonly number[];
  data: Uint8Array;
}

export interface OvRunResult {
  outputs: OvTensorData[];
  /** Nanoseconds spent binding inputs, in the inference, and reading outputs. */
  inputNs: number;
  inferNs: number;
  outputNs: number;
}

export class OvInferRequest {
  readonly #runtime: OpenVinoRuntime;
  #handle: Pointer;
  #running = false;
  #closeWhenIdle = false;
  /** JS memory the request's input tensors point into. */
  #held: Uint8Array[] = [];

  private constructor(runtime: OpenVinoRuntime, handle: Pointer) {
    this.#runtime = runtime;
    this.#handle = handle;
  }

  /** Takes ownership of an ov_infer_request_t (from ov_compiled_model_create_infer_request). */
  static adopt(runtime: OpenVinoRuntime, handle: Pointer): OvInferRequest {
    return new OvInferRequest(runtime, handle);
  }

  /**
   * One inference. `outputs` are model output indices with names for messages. One run
   * at a time per request: the caller (one model instance) never overlaps them.
   */
  async run(inputs: readonly OvRunInput[], outputs: readonly { index: number; name: string }[]): Promise<OvRunResult> {
    if (!this.#handle || this.#closeWhenIdle) throw new NativeError("INTERNAL", "openvino", "openvino: the infer request is closed");
    if (this.#running) throw new NativeError("INTERNAL", "openvino", "openvino: the infer request is already running", { call: "ov_infer_request_infer" });
    const api = this.#runtime.api;
    const h = this.#handle;
    this.#running = true;
    try {
      const t0 = nowNs();
      const held: Uint8Array[] = [];
      for (const input of inputs) {
        // The request keeps its own reference to the tensor: the wrapper can go at once.
        using tensor = OvTensor.overHost(this.#runtime, input.name, input.elementType, input.elementSize, input.shape, input.data);
        held.push(tensor.data!);
        this.#held.push(tensor.data!); // until every input is bound, the old ones may still be set too
        check(api, api.ov_infer_request_set_input_tensor_by_index(h, input.index, tensor.handle), `ov_infer_request_set_input_tensor_by_index(${input.name})`);
      }
      this.#held = held;
      const t1 = nowNs();
      const status = await new Promise<number>((resolve, reject) =>
        api.ov_infer_request_infer.async(h, (err: unknown, res: number) =>
          err ? reject(NativeError.fromKoffi("openvino", "ov_infer_request_infer", err)) : resolve(res),
        ),
      );
      check(api, status, "ov_infer_request_infer");
      const t2 = nowNs();
      const data = outputs.map((o) => {
        const out = outPointer();
        check(api, api.ov_infer_request_get_output_tensor_by_index(h, o.index, out), `ov_infer_request_get_output_tensor_by_index(${o.name})`);
        using tensor = OvTensor.adopt(this.#runtime, out[0] || null);
        return tensor.read(o.name);
      });
      const t3 = nowNs();
      return { outputs: data, inputNs: t1 - t0, inferNs: t2 - t1, outputNs: t3 - t2 };
    } finally {
      this.#running = false;
      if (this.#closeWhenIdle) this.close();
    }
  }

  /** Frees the request now, or after the run in flight. */
  close(): void {
    if (!this.#handle) return;
    if (this.#running) {
      this.#closeWhenIdle = true;
      return;
    }
    this.#runtime.api.ov_infer_request_free(this.#handle);
    this.#handle = null;
    this.#held = [];
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
