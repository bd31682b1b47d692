/**
 * @module TrtExecutionContext owns one nvinfer1::IExecutionContext: input shapes, tensor
 * addresses, enqueueV3 on a CUDA stream, and the output shapes TensorRT resolves from the
 * inputs. Deleted exactly once by close(), before its engine (TrtEngine.close() closes any
 * context still open first).
 */
import { VEXECUTION_CONTEXT_SLOT } from "./abi.ts";
import { TensorRtError } from "./errors.ts";
import { bindOwned, CONTEXT_PROTOTYPES, deletePublicObject, fromDims, toDims, type ContextMethods } from "./symbols.ts";
import type { TrtLogger } from "./logger.ts";

export class TrtExecutionContext {
  #obj: bigint | undefined;
  readonly #impl: bigint;
  readonly #m: ContextMethods;
  readonly #logger: TrtLogger;
  readonly #onClose: () => void;

  private constructor(obj: bigint, impl: bigint, m: ContextMethods, logger: TrtLogger, onClose: () => void) {
    this.#obj = obj;
    this.#impl = impl;
    this.#m = m;
    this.#logger = logger;
    this.#onClose = onClose;
  }

  /** Takes ownership of `obj` (an IExecutionContext*); deletes it if binding fails. */
  static adopt(obj: bigint, logger: TrtLogger, onClose: () => void): TrtExecutionContext {
    const { impl, m } = bindOwned<ContextMethods>(obj, VEXECUTION_CONTEXT_SLOT, CONTEXT_PROTOTYPES);
    return new TrtExecutionContext(obj, impl, m, logger, onClose);
  }

  #self(): bigint {
    if (this.#obj === undefined) throw new TensorRtError("TensorRT execution context already closed");
    return this.#impl;
  }

  /** IExecutionContext::setInputShape; TensorRT's logged reason when it refuses. */
  setInputShape(name: string, shape: readonly number[]): void {
    const self = this.#self();
    const { value: ok, errors } = this.#logger.capture(() => this.#m.setInputShape(self, name, toDims(shape)));
    // A shape TensorRT refuses lies outside the optimization profile: the request's fault.
    if (!ok) throw TensorRtError.failed(`IExecutionContext::setInputShape('${name}', [${shape.join(",")}])`, errors, { code: "INVALID_ARG" });
  }

  /** IExecutionContext::getTensorShape: after the inputs' shapes are set, an output's resolved shape. */
  tensorShape(name: string): number[] {
    const shape = fromDims(this.#m.getTensorShape(this.#self(), name));
    if (!shape) throw new TensorRtError(`TensorRT IExecutionContext::getTensorShape('${name}') answered an invalid shape (no such tensor?)`);
    return shape;
  }

  /** IExecutionContext::setTensorAddress (a device address). */
  setTensorAddress(name: string, address: bigint): void {
    const self = this.#self();
    const { value: ok, errors } = this.#logger.capture(() => this.#m.setTensorAddress(self, name, address));
    if (!ok) throw TensorRtError.failed(`IExecutionContext::setTensorAddress('${name}')`, errors);
  }

  /** IExecutionContext::enqueueV3: queues the run on `stream` (a CUstream / cudaStream_t) and returns. */
  enqueue(stream: unknown): void {
    const self = this.#self();
    const { value: ok, errors } = this.#logger.capture(() => this.#m.enqueueV3(self, stream));
    if (!ok) throw TensorRtError.failed("IExecutionContext::enqueueV3", errors);
  }

  close(): void {
    if (this.#obj === undefined) return;
    const obj = this.#obj;
    this.#obj = undefined;
    this.#onClose();
    deletePublicObject(obj);
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
