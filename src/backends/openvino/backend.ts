/**
 * @module The OpenVINO backend (Triton's `backend: "openvino"`; no platform name):
 * model.xml with its weights model.bin beside it, read once per model version and
 * compiled once per device (options.ts: KIND_CPU → CPU, KIND_GPU → GPU, or the model's
 * `device` parameter), one infer request per instance, runs on koffi's worker thread.
 * The frontend worker threads run a model's requests themselves where its scheduling
 * allows (server/direct-models.ts), with infer requests of their own (direct.ts).
 * Without OpenVINO's C library (ffi/openvino/library.ts says where it is looked for) the
 * model is UNAVAILABLE with the reason and the other models serve.
 */
import { basename, dirname } from "node:path";
import { ServerError, internal, invalidArg } from "../../core/errors.ts";
import { OpenVinoRuntime } from "../../../ffi/openvino/runtime.ts";
import { OvCore, type OvCoreLease } from "../../../ffi/openvino/core.ts";
import { mallocTrim } from "../../../ffi/libc/malloc.ts";
import type { OvCompiledModel, OvModel, SharedOvCompiledModel } from "../../../ffi/openvino/model.ts";
import type { OvInferRequest } from "../../../ffi/openvino/infer-request.ts";
import { bindPorts, outputTensor, portSpec, runInput, type BoundPort } from "./io.ts";
import { compileProperties, deviceFor, weightsFor } from "./options.ts";
import type { Backend, BackendInstance, BackendLoadContext, BackendModel, ExecuteResult, ModelFileIO, SharedInstance } from "../backend.ts";
import type { Tensor } from "../../core/tensor.ts";

/**
 * One inference of `request` with Triton tensors: the inputs mapped onto their ports, the
 * outputs asked for (all when none are named) read back as Triton tensors. Also what a
 * frontend worker's borrowed instance runs (direct.ts).
 */
export async function executeOn(
  runtime: OpenVinoRuntime,
  request: OvInferRequest,
  ports: OpenVinoPorts,
  inputs: readonly Tensor[],
  outputNames: readonly string[],
): Promise<ExecuteResult> {
  const types = runtime.elementTypes;
  const runInputs = inputs.map((t) => runInput(types, ports.inputs, t));
  const names = outputNames.length > 0 ? outputNames : [...ports.outputs.keys()];
  const outputs = names.map((name) => {
    const b = ports.outputs.get(name);
    if (!b) throw invalidArg(`unexpected inference output '${name}' for the OpenVINO model`);
    return { index: b.port.index, name };
  });
  const r = await request.run(runInputs, outputs);
  return {
    outputs: r.outputs.map((o, i) => outputTensor(types, names[i]!, o)),
    computeInputNs: r.inputNs,
    computeInferNs: r.inferNs,
    computeOutputNs: r.outputNs,
  };
}

/** A model's configured inputs and outputs bound to its ports (io.ts bindPorts). */
export interface OpenVinoPorts {
  inputs: ReadonlyMap<string, BoundPort>;
  outputs: ReadonlyMap<string, BoundPort>;
}

/** An OpenVINO instance as a frontend worker thread borrows it (OpenVinoInstance.share, direct.ts). */
export interface SharedOpenVinoInstance {
  compiled: SharedOvCompiledModel;
  inputs: [string, BoundPort][];
  outputs: [string, BoundPort][];
}

class OpenVinoInstance implements BackendInstance {
  readonly name: string;
  readonly #runtime: OpenVinoRuntime;
  readonly #compiled: OvCompiledModel;
  readonly #request: OvInferRequest;
  readonly #ports: OpenVinoPorts;

  constructor(name: string, runtime: OpenVinoRuntime, compiled: OvCompiledModel, ports: OpenVinoPorts) {
    this.name = name;
    this.#runtime = runtime;
    this.#compiled = compiled;
    this.#request = compiled.createInferRequest();
    this.#ports = ports;
  }

  execute(inputs: Tensor[], outputNames: readonly string[]): Promise<ExecuteResult> {
    return executeOn(this.#runtime, this.#request, this.#ports, inputs, outputNames);
  }

  /** The instance as a frontend worker runs it: the compiled model (its infer requests the worker's own) and the ports. */
  share(): SharedInstance {
    const spec: SharedOpenVinoInstance = {
      compiled: this.#compiled.share(),
      inputs: [...this.#ports.inputs],
      outputs: [...this.#ports.outputs],
    };
    return { backend: "openvino", spec };
  }

  close(): void {
    this.#request.close();
  }
}

class OpenVinoModel implements BackendModel {
  readonly #ctx: BackendLoadContext;
  readonly #runtime: OpenVinoRuntime;
  #core: OvCoreLease | undefined;
  #model: OvModel | undefined;
  /** Compiled once per device, in creation order. */
  readonly #compiled = new Map<string, OvCompiledModel>();
  readonly #inputs: Map<string, BoundPort>;
  readonly #outputs: Map<string, BoundPort>;
  /** The model parameters that are OpenVINO compile properties (options.ts). */
  readonly #properties: [string, string][];

  /** Takes ownership of `core` and `model`. */
  constructor(ctx: BackendLoadContext, runtime: OpenVinoRuntime, core: OvCoreLease, model: OvModel) {
    this.#ctx = ctx;
    this.#runtime = runtime;
    this.#core = core;
    this.#model = model;
    try {
      ({ inputs: this.#inputs, outputs: this.#outputs } = bindPorts(ctx.config, runtime.elementTypes, model.inputs, model.outputs, ctx.modelName));
      this.#properties = compileProperties(ctx.config);
    } catch (err) {
      this.close();
      throw err;
    }
  }

  async createInstance(name: string, kind: "KIND_CPU" | "KIND_GPU" | "KIND_MODEL", deviceId: number): Promise<BackendInstance> {
    if (!this.#core || !this.#model) throw internal(`model '${this.#ctx.modelName}' is closed`);
    const device = deviceFor(this.#ctx.config, kind, deviceId);
    let compiled = this.#compiled.get(device);
    if (!compiled) {
      try {
        compiled = this.#core.compile(this.#model, device, this.#properties);
      } catch (err) {
        throw new ServerError(
          ServerError.from(err).code,
          `model '${this.#ctx.modelName}': compiling for OpenVINO device '${device}': ${(err as Error).message}`,
          { cause: err },
        );
      }
      this.#compiled.set(device, compiled);
    }
    return new OpenVinoInstance(name, this.#runtime, compiled, { inputs: this.#inputs, outputs: this.#outputs });
  }

  /**
   * Frees the compiled models, then the model, then the core lease (reverse order of
   * creation); a compiled model frontend workers still use is freed once they have left
   * it, and the model and the lease after it.
   */
  close(): void {
    const compiled = [...this.#compiled.values()].reverse();
    this.#compiled.clear();
    let left = compiled.length + 1;
    const released = () => {
      if (--left > 0) return;
      this.#model?.close();
      this.#model = undefined;
      this.#core?.close();
      this.#core = undefined;
      mallocTrim(); // the weights and compiled blobs just freed go back to the system
    };
    for (const c of compiled) c.close(released);
    released();
  }
}

export class OpenVinoBackend implements Backend {
  readonly name = "openvino";
  readonly defaultModelFilename = "model.xml";
  /** KIND_GPU is OpenVINO's GPU plugin (Intel GPUs), not a CUDA device: OpenVINO checks it at compile. */
  readonly gpus = "own";

  /** The runtime, or UNAVAILABLE: "model 'x': the openvino backend needs OpenVINO's C library: <reason>". */
  #runtime(backendConfig: Record<string, string>, modelName: string): OpenVinoRuntime {
    try {
      return OpenVinoRuntime.get(backendConfig.library);
    } catch (err) {
      throw new ServerError("UNAVAILABLE", `model '${modelName}': the openvino backend needs OpenVINO's C library: ${(err as Error).message}`, { cause: err });
    }
  }

  async describe(modelPath: string, backendConfig: Record<string, string>): Promise<ModelFileIO> {
    // <repository>/<model>/<version>/model.xml
    const modelName = basename(dirname(dirname(modelPath)));
    const runtime = this.#runtime(backendConfig, modelName);
    using core = OvCore.acquire(runtime);
    using model = await core.readModel(modelPath, weightsFor(modelPath));
    const where = `model '${modelName}'`;
    return {
      inputs: model.inputs.map((p) => portSpec(runtime.elementTypes, p, where)),
      outputs: model.outputs.map((p) => portSpec(runtime.elementTypes, p, where)),
    };
  }

  async load(ctx: BackendLoadContext): Promise<BackendModel> {
    const runtime = this.#runtime(ctx.backendConfig, ctx.modelName);
    const core = OvCore.acquire(runtime);
    let model: OvModel;
    try {
      model = await core.readModel(ctx.modelPath, weightsFor(ctx.modelPath));
    } catch (err) {
      core.close();
      throw new ServerError(ServerError.from(err).code, `model '${ctx.modelName}': ${(err as Error).message}`, { cause: err });
    }
    return new OpenVinoModel(ctx, runtime, core, model);
  }
}
