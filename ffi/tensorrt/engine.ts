/**
 * @module TrtEngine owns one nvinfer1::ICudaEngine: its I/O tensors (read once), profile
 * shapes, and the execution contexts made from it. close() closes those contexts, then
 * deletes the engine, exactly once; TrtRuntime.close() closes engines still open first.
 */
import { EXECUTION_CONTEXT_ALLOCATION, TENSOR_IO_MODE, VCUDA_ENGINE_SLOT } from "./abi.ts";
import { TensorRtError } from "./errors.ts";
import { TrtExecutionContext } from "./context.ts";
import { bindOwned, deletePublicObject, ENGINE_PROTOTYPES, fromDims, type EngineMethods } from "./symbols.ts";
import type { TrtLogger } from "./logger.ts";

/** One I/O tensor of an engine, as ICudaEngine reports it. */
export interface TrtTensorInfo {
  name: string;
  mode: "input" | "output";
  /** nvinfer1::DataType value (abi.ts TRT_DATA_TYPE). */
  dataType: number;
  /** -1 marks a dimension that is only known at run time. */
  shape: number[];
  /** nvinfer1::TensorFormat value; 0 is kLINEAR. */
  format: number;
  /** nvinfer1::TensorLocation value; 0 is kDEVICE. */
  location: number;
  /** A shape tensor (its values, on the host, decide other shapes). */
  shapeInference: boolean;
}

export class TrtEngine {
  #obj: bigint | undefined;
  readonly #impl: bigint;
  readonly #m: EngineMethods;
  readonly #logger: TrtLogger;
  readonly #onClose: () => void;
  readonly #contexts = new Set<TrtExecutionContext>();
  readonly tensors: readonly TrtTensorInfo[];
  readonly profileCount: number;

  private constructor(obj: bigint, impl: bigint, m: EngineMethods, logger: TrtLogger, onClose: () => void) {
    this.#obj = obj;
    this.#impl = impl;
    this.#m = m;
    this.#logger = logger;
    this.#onClose = onClose;
    this.tensors = readTensors(m, impl);
    this.profileCount = m.getNbOptimizationProfiles(impl);
  }

  /** Takes ownership of `obj` (an ICudaEngine*); deletes it if reading it fails. */
  static adopt(obj: bigint, logger: TrtLogger, onClose: () => void): TrtEngine {
    const { impl, m } = bindOwned<EngineMethods>(obj, VCUDA_ENGINE_SLOT, ENGINE_PROTOTYPES);
    try {
      return new TrtEngine(obj, impl, m, logger, onClose);
    } catch (err) {
      deletePublicObject(obj); // reading its tensors failed
      throw err;
    }
  }

  #self(): bigint {
    if (this.#obj === undefined) throw new TensorRtError("TensorRT engine already closed");
    return this.#impl;
  }

  /** ICudaEngine::getProfileShape; undefined where TensorRT has none (an output, an unknown profile). */
  profileShape(name: string, profile: number, selector: number): number[] | undefined {
    return fromDims(this.#m.getProfileShape(this.#self(), name, profile, selector));
  }

  /** ICudaEngine::createExecutionContext(kSTATIC): device memory for the largest profile, owned by the context. */
  createExecutionContext(): TrtExecutionContext {
    const self = this.#self();
    const { value: obj, errors } = this.#logger.capture(() => this.#m.createExecutionContext(self, EXECUTION_CONTEXT_ALLOCATION.STATIC));
    if (!obj) throw TensorRtError.failed("ICudaEngine::createExecutionContext", errors);
    const ctx = TrtExecutionContext.adopt(obj, this.#logger, () => this.#contexts.delete(ctx));
    this.#contexts.add(ctx);
    return ctx;
  }

  close(): void {
    if (this.#obj === undefined) return;
    for (const ctx of [...this.#contexts]) ctx.close();
    const obj = this.#obj;
    this.#obj = undefined;
    this.#onClose();
    deletePublicObject(obj);
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

function readTensors(m: EngineMethods, self: bigint): TrtTensorInfo[] {
  const n = m.getNbIOTensors(self);
  const out: TrtTensorInfo[] = [];
  for (let i = 0; i < n; i++) {
    const name = m.getIOTensorName(self, i);
    if (name === null) throw new TensorRtError(`TensorRT ICudaEngine::getIOTensorName(${i}) answered null`);
    const mode = m.getTensorIOMode(self, name);
    if (mode !== TENSOR_IO_MODE.INPUT && mode !== TENSOR_IO_MODE.OUTPUT) throw new TensorRtError(`TensorRT reports I/O tensor '${name}' with mode ${mode}`);
    const shape = fromDims(m.getTensorShape(self, name));
    if (!shape) throw new TensorRtError(`TensorRT ICudaEngine::getTensorShape('${name}') answered an invalid shape`);
    out.push({
      name,
      mode: mode === TENSOR_IO_MODE.INPUT ? "input" : "output",
      dataType: m.getTensorDataType(self, name),
      shape,
      format: m.getTensorFormat(self, name),
      location: m.getTensorLocation(self, name),
      shapeInference: m.isShapeInferenceIO(self, name),
    });
  }
  return out;
}
