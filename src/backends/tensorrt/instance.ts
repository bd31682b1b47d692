/**
 * @module One tensorrt model instance on one GPU: an execution context, a CUDA stream and
 * a device buffer per I/O tensor (grown when a batch needs more), all owned here and freed
 * exactly once by close(). The device's primary context belongs to the model.
 *
 * A run, on the JS thread except the wait: make the device's context current; for each
 * input setInputShape, copy it to its buffer on the stream and setTensorAddress; size each
 * output from the shape TensorRT resolves and set its address; enqueueV3. Then wait for
 * the stream on koffi's worker thread (the event loop stays free), and copy the requested
 * outputs back. The copies are cuMemcpy*Async on the instance's own stream: from pageable
 * memory the driver stages a host→device copy before returning, and a device→host copy
 * returns once done, which is after the stream has already finished the run.
 */
import { nowNs } from "../../core/clock.ts";
import { ServerError, internal, unsupported } from "../../core/errors.ts";
import { ELEMENT_SIZE, elementCount, type Tensor } from "../../core/tensor.ts";
import type { CudaStream, DeviceBuffer, PrimaryContext } from "../../../ffi/cuda/driver.ts";
import type { TrtExecutionContext } from "../../../ffi/tensorrt/context.ts";
import type { BackendInstance, ExecuteResult } from "../backend.ts";
import type { EngineBinding } from "./io.ts";

/** Buffers are allocated in multiples of this (and never empty: cuMemAlloc refuses 0 bytes). */
const ALLOCATION_GRANULE = 256;

export class TrtInstance implements BackendInstance {
  readonly name: string;
  readonly #context: PrimaryContext;
  readonly #exec: TrtExecutionContext;
  readonly #stream: CudaStream;
  readonly #binding: EngineBinding;
  readonly #buffers = new Map<string, DeviceBuffer>();
  #running = false;
  #closed = false;
  #freed = false;

  /** Takes ownership of `exec` and `stream`; `context` stays the model's. */
  constructor(name: string, context: PrimaryContext, exec: TrtExecutionContext, stream: CudaStream, binding: EngineBinding) {
    this.name = name;
    this.#context = context;
    this.#exec = exec;
    this.#stream = stream;
    this.#binding = binding;
  }

  async execute(inputs: Tensor[], outputNames: readonly string[]): Promise<ExecuteResult> {
    if (this.#closed) throw internal(`instance '${this.name}' is closed`);
    if (this.#running) throw internal(`instance '${this.name}' was given a batch while running another`);
    this.#running = true;
    try {
      return await this.#run(inputs, outputNames.length > 0 ? outputNames : [...this.#binding.outputs.keys()]);
    } catch (err) {
      // Native failures keep their code: a shape TensorRT refuses is INVALID_ARG (ffi/tensorrt/context.ts).
      throw ServerError.from(err);
    } finally {
      this.#running = false;
      if (this.#closed) this.#free();
    }
  }

  async #run(inputs: Tensor[], outputNames: readonly string[]): Promise<ExecuteResult> {
    const t0 = nowNs();
    this.#context.makeCurrent();
    for (const t of inputs) {
      if (!this.#binding.inputs.has(t.name)) throw internal(`unexpected input '${t.name}' for the TensorRT engine`);
      this.#exec.setInputShape(t.name, t.shape);
      const buf = this.#buffer(t.name, t.data.byteLength);
      if (t.data.byteLength > 0) buf.write(t.data, this.#stream);
      this.#exec.setTensorAddress(t.name, buf.pointer);
    }
    const shapes = new Map<string, number[]>();
    for (const [name, b] of this.#binding.outputs) {
      const shape = this.#exec.tensorShape(name);
      if (shape.some((d) => d < 0)) {
        throw unsupported(
          `output '${name}' has a data-dependent shape [${shape.join(",")}]; the tensorrt backend does not serve those (they need an IOutputAllocator)`,
        );
      }
      shapes.set(name, shape);
      this.#exec.setTensorAddress(name, this.#buffer(name, elementCount(shape) * ELEMENT_SIZE[b.datatype]).pointer);
    }
    const t1 = nowNs();
    this.#exec.enqueue(this.#stream.handle);
    await this.#stream.synchronizeAsync();
    const t2 = nowNs();
    if (this.#closed) throw internal(`instance '${this.name}' was closed during a run`);
    this.#context.makeCurrent();
    const outputs: Tensor[] = [];
    for (const name of outputNames) {
      const b = this.#binding.outputs.get(name);
      const shape = shapes.get(name);
      if (!b || !shape) throw internal(`unexpected output '${name}' for the TensorRT engine`);
      const data = new Uint8Array(elementCount(shape) * ELEMENT_SIZE[b.datatype]);
      if (data.byteLength > 0) this.#buffers.get(name)!.read(data, this.#stream);
      outputs.push({ name, datatype: b.datatype, shape, data });
    }
    this.#stream.synchronize();
    const t3 = nowNs();
    return { outputs, computeInputNs: t1 - t0, computeInferNs: t2 - t1, computeOutputNs: t3 - t2 };
  }

  /** The tensor's buffer, reallocated larger when `bytes` does not fit (the old one is freed first). */
  #buffer(name: string, bytes: number): DeviceBuffer {
    const have = this.#buffers.get(name);
    if (have && have.bytes >= bytes) return have;
    if (have) {
      this.#buffers.delete(name);
      have.free();
    }
    const size = Math.max(ALLOCATION_GRANULE, Math.ceil(bytes / ALLOCATION_GRANULE) * ALLOCATION_GRANULE);
    const buf = this.#context.alloc(size);
    this.#buffers.set(name, buf);
    return buf;
  }

  /**
   * Frees the execution context, then the buffers and the stream, each once. Called during
   * a run, it waits for that run to end (the GPU may still be using them).
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (!this.#running) this.#free();
  }

  #free(): void {
    if (this.#freed) return;
    this.#freed = true;
    try {
      this.#context.makeCurrent();
    } catch {
      // Only when the model was closed first, against the close order (its context released).
    }
    this.#exec.close();
    for (const buf of this.#buffers.values()) buf.free();
    this.#buffers.clear();
    this.#stream.destroy();
  }
}
