/**
 * @module TrtRuntime owns one nvinfer1::IRuntime: it deserializes plans into engines and
 * is deleted exactly once by close(), after the engines it made (close() closes any still
 * open first, as TensorRT requires). It is limited to one thread (setMaxThreads(1)), so
 * TensorRT works, and logs, on the calling thread only.
 */
import { VRUNTIME_SLOT } from "./abi.ts";
import { TensorRtError } from "./errors.ts";
import { TrtEngine } from "./engine.ts";
import { bindOwned, deletePublicObject, RUNTIME_PROTOTYPES, type RuntimeMethods } from "./symbols.ts";
import type { TrtLogger } from "./logger.ts";

export class TrtRuntime {
  #obj: bigint | undefined;
  readonly #impl: bigint;
  readonly #m: RuntimeMethods;
  readonly #logger: TrtLogger;
  readonly #engines = new Set<TrtEngine>();

  private constructor(obj: bigint, impl: bigint, m: RuntimeMethods, logger: TrtLogger) {
    this.#obj = obj;
    this.#impl = impl;
    this.#m = m;
    this.#logger = logger;
  }

  /** Takes ownership of `obj` (an IRuntime*); deletes it if binding or setMaxThreads fails. */
  static adopt(obj: bigint, logger: TrtLogger): TrtRuntime {
    const { impl, m } = bindOwned<RuntimeMethods>(obj, VRUNTIME_SLOT, RUNTIME_PROTOTYPES);
    try {
      const { value: ok, errors } = logger.capture(() => m.setMaxThreads(impl, 1));
      if (!ok) throw TensorRtError.failed("IRuntime::setMaxThreads(1)", errors);
      return new TrtRuntime(obj, impl, m, logger);
    } catch (err) {
      deletePublicObject(obj);
      throw err;
    }
  }

  #self(): bigint {
    if (this.#obj === undefined) throw new TensorRtError("TensorRT runtime already closed");
    return this.#impl;
  }

  /** IRuntime::getMaxThreads. */
  get maxThreads(): number {
    return this.#m.getMaxThreads(this.#self());
  }

  /**
   * IRuntime::deserializeCudaEngine(blob, size) on the device whose context is current on
   * this thread. The plan may be dropped once this returns.
   */
  deserialize(plan: Uint8Array): TrtEngine {
    const self = this.#self();
    const { value: obj, errors } = this.#logger.capture(() => this.#m.deserializeCudaEngine(self, plan, plan.byteLength));
    if (!obj) throw TensorRtError.failed("IRuntime::deserializeCudaEngine", errors, { detail: "the plan was refused and TensorRT logged no reason" });
    const engine = TrtEngine.adopt(obj, this.#logger, () => this.#engines.delete(engine));
    this.#engines.add(engine);
    return engine;
  }

  close(): void {
    if (this.#obj === undefined) return;
    for (const engine of [...this.#engines]) engine.close();
    const obj = this.#obj;
    this.#obj = undefined;
    deletePublicObject(obj);
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
