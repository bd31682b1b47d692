/**
 * @module OvCore: an ov_core_t shared by the models of one runtime. acquire() hands out
 * a lease; the core is created by the first lease and freed (ov_core_free) when the last
 * lease is closed, so an idle server holds no OpenVINO objects. Reading a model runs on
 * koffi's worker thread; compiling is synchronous (below).
 */
import type { Pointer } from "../load.ts";
import { outPointer } from "./symbols.ts";
import { check } from "./status.ts";
import { NativeError } from "../errors.ts";
import { OvModel, OvCompiledModel } from "./model.ts";
import type { OpenVinoRuntime } from "./runtime.ts";

const shared = new Map<OpenVinoRuntime, OvCore>();

export class OvCore {
  readonly runtime: OpenVinoRuntime;
  #handle: Pointer;
  #leases = 0;

  private constructor(runtime: OpenVinoRuntime) {
    this.runtime = runtime;
    const out = outPointer();
    check(runtime.api, runtime.api.ov_core_create(out), "ov_core_create");
    this.#handle = out[0] || null;
  }

  /** A lease on the runtime's core; close it exactly once. */
  static acquire(runtime: OpenVinoRuntime): OvCoreLease {
    let core = shared.get(runtime);
    if (!core) {
      core = new OvCore(runtime);
      shared.set(runtime, core);
    }
    core.#leases++;
    return new OvCoreLease(core);
  }

  /** @internal by OvCoreLease.close(). */
  release(): void {
    if (--this.#leases > 0 || !this.#handle) return;
    shared.delete(this.runtime);
    this.runtime.api.ov_core_free(this.#handle);
    this.#handle = null;
  }

  get handle(): Pointer {
    return this.#handle;
  }
}

export class OvCoreLease {
  #core: OvCore | undefined;

  constructor(core: OvCore) {
    this.#core = core;
  }

  get runtime(): OpenVinoRuntime {
    return this.#live().runtime;
  }

  #live(): OvCore {
    if (!this.#core) throw new NativeError("INTERNAL", "openvino", "openvino: the core lease is closed");
    return this.#core;
  }

  /**
   * ov_core_read_model on koffi's worker thread (parsing a large IR takes a while).
   * `weightsPath` null lets OpenVINO find the weights beside the model (model.bin for
   * model.xml).
   */
  async readModel(modelPath: string, weightsPath: string | null): Promise<OvModel> {
    const core = this.#live();
    const api = core.runtime.api;
    const out = outPointer();
    const status = await new Promise<number>((resolve, reject) =>
      api.ov_core_read_model.async(core.handle, modelPath, weightsPath, out, (err: unknown, res: number) =>
        err ? reject(NativeError.fromKoffi("openvino", "ov_core_read_model", err)) : resolve(res),
      ),
    );
    check(api, status, `ov_core_read_model(${modelPath})`);
    return OvModel.adopt(core.runtime, out[0] || null);
  }

  /**
   * ov_core_compile_model for `device` ("CPU", "GPU", "AUTO", ...) with `properties`
   * (string keys and values, passed as the variadic `const char*` pairs; the count is of
   * strings, two per property). It is variadic, and koffi cannot call variadic functions
   * on its worker thread, so this blocks the event loop for as long as the plugin
   * compiles (once per model and device, at load).
   */
  compile(model: OvModel, device: string, properties: readonly (readonly [string, string])[] = []): OvCompiledModel {
    const core = this.#live();
    const api = core.runtime.api;
    const out = outPointer();
    const args = properties.flatMap(([k, v]) => ["const char *", k, "const char *", v]);
    check(api, api.ov_core_compile_model(core.handle, model.handle, device, properties.length * 2, out, ...args), `ov_core_compile_model(${device})`);
    return OvCompiledModel.adopt(core.runtime, out[0] || null, device);
  }

  close(): void {
    this.#core?.release();
    this.#core = undefined;
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
