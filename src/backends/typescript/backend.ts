/**
 * @module The `typescript` backend (issue #15): a version folder's `model.ts` / `model.js`
 * is imported (a fresh import per load), its default-export class instantiated once per
 * instance, and its `execute` given the requests of a batch unmerged. BLS calls go back
 * into the server through the runner each load's context carries (`ctx.runner`), so the
 * backend layer never imports the server.
 */
import { pathToFileURL } from "node:url";
import { nowNs } from "../../core/clock.ts";
import { type ServerError, internal, invalidArg, unavailable, unsupported } from "../../core/errors.ts";
import { getLogger } from "../../core/logger.ts";
import type { InferenceRequest as CoreRequest, InferenceResponse as CoreResponse, ResponseSink } from "../../core/request.ts";
import type { PreparedRequest } from "../../core/request-validate.ts";
import type { ModelConfig } from "../../core/model-config-types.ts";
import type { Tensor } from "../../core/tensor.ts";
import type { ModelRunner } from "../../core/runner.ts";
import type { Backend, BackendInstance, BackendLoadContext, BackendModel, ExecuteResult, RequestOutcome, RequestsResult, SharedInstance } from "../backend.ts";
import type { ResponseSender, BlsRequest, BlsResponse, InferenceRequest, InferenceResponse, ModelLogger, TritonModel, TritonModelClass } from "./api.ts";
import { fromModelTensor, toModelTensor } from "./tensors.ts";
import { OutcomeChecker, requestFields } from "./outcome.ts";
import { registerEmbeddedPackages } from "./embedded-packages.ts";
import { autoCompleteInWorker, hasWorkers, WorkerModel, workerUnavailable } from "./worker.ts";
import { claimModelFiles } from "./stray-errors.ts";
import { registerConnectable, sharedEnded } from "../connect.ts";
import { wireError } from "../../core/threads/wire-error.ts";
import { BUSY, COMPLETED, ENDED, RETIRED, STATE_BYTES, type SharedTsInstance } from "./direct.ts";
import { endedSlot } from "./worker-protocol.ts";
import { metricsClient } from "./metrics.ts";
import { CUSTOM_METRICS, type MetricsScope } from "../custom-metrics.ts";

const log = getLogger("src/backends/typescript/backend.ts");

/** BLS depth cap: a chain of this many models refuses a further call. */
export const MAX_BLS_DEPTH = 16;

/** The BLS call chain of a request made by a TypeScript model (models before the callee). */
const chains = new WeakMap<CoreRequest, readonly string[]>();

let importCount = 0;
/** Worker-thread instances shared so far: each one's key (SharedTsInstance.key). */
let sharedInstances = 0;

/** How often an unload's drain looks at a worker-thread instance's BUSY count (idle()). */
const IDLE_POLL_MS = 10;

/** The signal of a request that cannot be cancelled (made inside the server, or by warmup). */
const NEVER_CANCELLED = new AbortController().signal;

/** The specifier that imports `modelPath` afresh. */
function moduleUrl(modelPath: string): string {
  // A query makes each load a fresh module, so a reload picks up an edited file. Bun
  // (1.4) ignores the query on a file: URL but honours it on a plain absolute path.
  const v = `?v=${++importCount}`;
  return "Bun" in globalThis && modelPath.startsWith("/") ? modelPath + v : pathToFileURL(modelPath).href + v;
}

const importFailed = (modelPath: string, err: unknown) => unavailable(`failed to import '${modelPath}': ${(err as Error)?.stack ?? String(err)}`, err);
const noClass = (modelPath: string) => invalidArg(`'${modelPath}' has no default export class (export default class { execute(requests) {...} })`);
const noConfig = (modelPath: string) => invalidArg(`'${modelPath}': autoCompleteConfig returned no config`);

async function importModelClass(modelPath: string): Promise<TritonModelClass> {
  registerEmbeddedPackages();
  const url = moduleUrl(modelPath);
  let mod: { default?: unknown };
  try {
    mod = (await import(url)) as { default?: unknown };
  } catch (err) {
    throw importFailed(modelPath, err);
  }
  if (typeof mod.default !== "function") throw noClass(modelPath);
  return mod.default as TritonModelClass;
}

/**
 * Where the model's code runs: "worker" (the default where the runtime has Web Workers:
 * its own thread and globals, its faults contained) or "main" (the server's event loop
 * and realm, for trusted models that need the lowest latency).
 */
function executionThread(config: ModelConfig, model: string): "main" | "worker" {
  const thread = stringParameters(config)["execution_thread"] ?? (hasWorkers() ? "worker" : "main");
  if (thread !== "main" && thread !== "worker") throw invalidArg(`model '${model}': parameter execution_thread must be "main" or "worker", not '${thread}'`);
  return thread;
}

function stringParameters(config: ModelConfig): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(config.parameters ?? {})) out[k] = String((v as { string_value?: string }).string_value ?? "");
  return out;
}

function modelLogger(model: string): ModelLogger {
  const p = `model '${model}': `;
  return {
    info: (m) => log.info(p + m),
    warn: (m) => log.warn(p + m),
    error: (m) => log.error(p + m),
    verbose: (m) => log.verbose(1, p + m),
  };
}

function blsResponse(r: CoreResponse): BlsResponse {
  const outputs = r.outputs.map(toModelTensor);
  const parameters: Record<string, string | number | boolean> = {};
  for (const [k, v] of Object.entries(r.parameters ?? {})) parameters[k] = typeof v === "bigint" ? Number(v) : v;
  return { model: r.modelName, version: Number(r.modelVersion), outputs, output: (n) => outputs.find((t) => t.name === n), parameters };
}

/**
 * A decoupled request's response sender: each send is checked like a returned response
 * and handed to the server's sink; nothing may follow the final flag. A request with no
 * sink (warmup) drops its responses.
 */
class Sender implements ResponseSender {
  #closed = false;
  constructor(
    readonly sink: ResponseSink | undefined,
    readonly check: (r: InferenceResponse) => RequestOutcome,
    readonly model: string,
  ) {}

  send(response?: InferenceResponse, options?: { final?: boolean }): void {
    const final = options?.final === true;
    if (this.#closed) throw unsupported(`model '${this.model}': Unable to send response. Response sender has been closed.`);
    if (response === undefined || response === null) {
      if (!final) throw invalidArg(`model '${this.model}': send() needs a response or { final: true }`);
      this.#closed = true;
      this.sink?.({ final: true });
      return;
    }
    if (final) this.#closed = true;
    const o = this.check(response);
    if (o.error) this.sink?.({ error: o.error, final });
    else this.sink?.({ outputs: o.outputs, ...(o.parameters ? { parameters: o.parameters } : {}), final });
  }
}

class TsInstance implements BackendInstance {
  readonly name: string;
  readonly #model: TritonModel;
  readonly #modelName: string;
  readonly #checker: OutcomeChecker;
  readonly #batched: boolean;
  readonly #decoupled: boolean;
  /** The server's inference entry, for BLS calls. */
  readonly #runner: ModelRunner;
  /** The executions running, each failed at once by abort(). */
  readonly #running = new Set<(error: ServerError) => void>();
  /** The custom metrics a main-thread model made (a worker-thread model's are its worker's). */
  readonly #metrics: MetricsScope | undefined;
  #closed = false;
  #aborted = false;
  /** A worker-thread instance's state shared with the frontend workers (SharedTsInstance.state): its executes waiting or running, any thread's; retired. */
  readonly #state: Int32Array | undefined;
  readonly #unregister: (() => void) | undefined;
  /** A worker-thread instance as the frontend workers reach it directly (#30); a main-thread one has none. */
  readonly share?: () => SharedInstance;

  constructor(name: string, model: TritonModel, ctx: BackendLoadContext, metrics?: MetricsScope) {
    this.name = name;
    this.#metrics = metrics;
    this.#model = model;
    this.#modelName = ctx.modelName;
    this.#checker = new OutcomeChecker(ctx.modelName, ctx.config);
    this.#batched = (ctx.config.max_batch_size ?? 0) > 0;
    this.#decoupled = ctx.config.model_transaction_policy?.decoupled === true;
    this.#runner = ctx.runner;
    if (model instanceof WorkerModel) {
      // The BLS calls of a request a frontend worker sent start a call chain of their own.
      model.direct = { infer: (call) => this.#bls(call, [ctx.modelName]), stream: (call) => this.#blsStream(call, [ctx.modelName]) };
      const state = new Int32Array(new SharedArrayBuffer(STATE_BYTES));
      model.completedElsewhere = () => Atomics.load(state, COMPLETED);
      const key = `typescript:${++sharedInstances}`;
      this.#state = state;
      // While the worker has ended (ENDED: set by the worker as it reports a fault, or here) no port is given out; a fresh one's ready clears it.
      model.endedFlag = new Int32Array(state.buffer, ENDED * 4, 1);
      this.#unregister = registerConnectable(key, () => model.connect());
      model.ended = (error) => {
        endedSlot.end(state, ENDED);
        sharedEnded(key, error && wireError(error));
      };
      model.started = () => endedSlot.started(state, ENDED);
      const spec: SharedTsInstance = { key, model: ctx.modelName, instance: name, config: ctx.config, state };
      this.share = () => ({ backend: "typescript", spec });
    }
  }

  /** One batch as one request (warmup calls this). */
  async execute(inputs: Tensor[], outputNames: readonly string[]): Promise<ExecuteResult> {
    const prepared: PreparedRequest = {
      request: { modelName: this.#modelName, parameters: {}, inputs },
      control: { sequenceStart: false, sequenceEnd: false, priority: 0, timeoutUs: 0 },
      batchSize: this.#batched ? (inputs[0]?.shape[0] ?? 1) : 1,
      inputs,
      outputNames: [...outputNames],
      classification: new Map(),
    };
    const r = await this.executeRequests([prepared]);
    const o = r.outcomes[0]!;
    if (o.error) throw o.error;
    return { outputs: o.outputs, computeInputNs: r.computeInputNs, computeInferNs: r.computeInferNs, computeOutputNs: r.computeOutputNs };
  }

  async executeRequests(requests: readonly PreparedRequest[]): Promise<RequestsResult> {
    const t0 = nowNs();
    const senders = this.#decoupled ? requests.map((p) => new Sender(p.request.responseSink, (r) => this.#checker.outcome(p, r), this.#modelName)) : undefined;
    const modelRequests = requests.map((p, i) => this.#modelRequest(p, senders?.[i]));
    const t1 = nowNs();
    let responses: InferenceResponse[] | void;
    try {
      responses = await this.#run(modelRequests);
    } catch (err) {
      const error = this.#checker.thrown(err);
      return { outcomes: requests.map(() => ({ error })), computeInputNs: t1 - t0, computeInferNs: nowNs() - t1, computeOutputNs: 0 };
    }
    const t2 = nowNs();
    if (senders) {
      // Decoupled: the responses went (or will go) through the senders; execute returns nothing.
      if (responses !== undefined && responses !== null) {
        const error = internal(`model '${this.#modelName}' is decoupled: execute() must return nothing and answer through request.getResponseSender()`);
        return { outcomes: requests.map(() => ({ error })), computeInputNs: t1 - t0, computeInferNs: t2 - t1, computeOutputNs: 0 };
      }
      return { outcomes: requests.map(() => ({ outputs: [] })), computeInputNs: t1 - t0, computeInferNs: t2 - t1, computeOutputNs: 0 };
    }
    return {
      outcomes: this.#checker.outcomes(requests, responses),
      computeInputNs: t1 - t0,
      computeInferNs: t2 - t1,
      computeOutputNs: nowNs() - t2,
    };
  }

  /** The model's execute, failed by abort() if it is still running then. */
  #run(requests: InferenceRequest[]): Promise<InferenceResponse[] | void> {
    const state = this.#state;
    if (state) Atomics.add(state, BUSY, 1);
    return new Promise<InferenceResponse[] | void>((resolve, reject) => {
      this.#running.add(reject);
      let result: Promise<InferenceResponse[] | void>;
      try {
        result = Promise.resolve(this.#model.execute(requests));
      } catch (err) {
        result = Promise.reject(err);
      }
      result.then(resolve, reject).finally(() => {
        this.#running.delete(reject);
        if (state) Atomics.sub(state, BUSY, 1);
      });
    });
  }

  /**
   * Resolves once no execute is waiting or running in the instance's worker (BUSY: the
   * frontend workers' too, which the scheduler's drain does not see), or once the instance
   * is aborted or closed. Polled: an unload is rare, and the count is another thread's.
   */
  async idle(): Promise<void> {
    const state = this.#state;
    while (state && Atomics.load(state, BUSY) > 0 && !this.#closed && !this.#aborted) await new Promise((r) => setTimeout(r, IDLE_POLL_MS));
  }

  /** Fails the executions still running with `error`; a worker-thread instance's worker is ended. */
  abort(error: ServerError): void {
    this.#aborted = true;
    if (this.#state) Atomics.store(this.#state, RETIRED, 1);
    for (const reject of this.#running) reject(error);
    this.#running.clear();
    if (this.#model instanceof WorkerModel) this.#model.abort(error);
  }

  #modelRequest(p: PreparedRequest, sender: Sender | undefined): InferenceRequest {
    const fields = requestFields(p);
    const inputs = fields.inputs;
    const chain = [...(chains.get(p.request) ?? []), this.#modelName];
    const signal = p.request.signal ?? NEVER_CANCELLED;
    return {
      ...fields,
      input: (n) => inputs.find((t) => t.name === n),
      isCancelled: () => signal.aborted,
      signal,
      infer: (call) => this.#bls(call, chain),
      stream: (call) => this.#blsStream(call, chain),
      getResponseSender: () => {
        if (!sender) throw unsupported(`model '${this.#modelName}' is not decoupled: getResponseSender() needs model_transaction_policy { decoupled: true }`);
        return sender;
      },
    };
  }

  async #bls(call: BlsRequest, chain: readonly string[]): Promise<BlsResponse> {
    const request = this.#blsRequest(call, chain);
    return blsResponse(await this.#runner.inferStep(request));
  }

  async *#blsStream(call: BlsRequest, chain: readonly string[]): AsyncGenerator<BlsResponse> {
    const request = this.#blsRequest(call, chain);
    for await (const r of this.#runner.inferStepStream(request)) {
      if (r.error) throw Object.assign(new Error(r.error.message), { code: r.error.code });
      if (r.response) yield blsResponse(r.response);
    }
  }

  /** The core request of a BLS call, after the chain and depth checks. */
  #blsRequest(call: BlsRequest, chain: readonly string[]): CoreRequest {
    if (!call || typeof call.model !== "string") throw invalidArg(`model '${this.#modelName}': BLS call needs a 'model' name`);
    if (chain.includes(call.model)) {
      throw invalidArg(`BLS call refused: model '${call.model}' is already in the call chain ${[...chain, call.model].join(" -> ")}`);
    }
    if (chain.length >= MAX_BLS_DEPTH) {
      throw invalidArg(`BLS call refused: call chain ${[...chain, call.model].join(" -> ")} exceeds the depth limit of ${MAX_BLS_DEPTH}`);
    }
    let inputs: Tensor[];
    try {
      inputs = (call.inputs ?? []).map((t) => fromModelTensor(t, "BLS input"));
    } catch (err) {
      throw invalidArg(`model '${this.#modelName}': ${(err as Error).message}`);
    }
    if (call.signal !== undefined && !(call.signal instanceof AbortSignal)) {
      throw invalidArg(`model '${this.#modelName}': BLS call 'signal' must be an AbortSignal`);
    }
    const request: CoreRequest = {
      modelName: call.model,
      modelVersion: call.version === undefined ? "" : String(call.version),
      id: call.id,
      parameters: { ...(call.parameters ?? {}) },
      inputs,
      outputs: call.outputs?.map((name) => ({ name })),
      signal: call.signal,
    };
    chains.set(request, chain);
    return request;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    // The frontend workers send it nothing more: the main thread runs what they still get.
    if (this.#state) Atomics.store(this.#state, RETIRED, 1);
    this.#unregister?.();
    this.#metrics?.release();
    if (!this.#model.finalize) return;
    // close() is synchronous: finalize starts now (its synchronous part runs before close
    // returns), runs once, and its failure is logged.
    const failed = (err: unknown) => log.error(`model '${this.#modelName}' instance ${this.name}: finalize failed: ${(err as Error)?.stack ?? String(err)}`);
    try {
      void Promise.resolve(this.#model.finalize()).catch(failed);
    } catch (err) {
      failed(err);
    }
  }
}

class TsModel implements BackendModel {
  readonly #ctx: BackendLoadContext;
  readonly #cls: TritonModelClass | undefined;
  readonly #release: () => void;

  constructor(ctx: BackendLoadContext, cls: TritonModelClass | undefined, release: () => void = () => {}) {
    this.#ctx = ctx;
    this.#cls = cls;
    this.#release = release;
  }

  async createInstance(name: string, kind: "KIND_CPU" | "KIND_GPU" | "KIND_MODEL", deviceId: number): Promise<BackendInstance> {
    const ctx = this.#ctx;
    const parameters = stringParameters(ctx.config);
    const args = {
      modelConfig: structuredClone(ctx.config),
      modelName: ctx.modelName,
      modelVersion: ctx.version,
      instanceName: name,
      instanceKind: kind,
      deviceId,
      repositoryPath: ctx.modelDir,
      parameters,
      logger: modelLogger(ctx.modelName),
    };
    if (!this.#cls) {
      // The worker's metrics calls are posted here and answered by a scope of its own (worker.ts).
      const owner = { model: ctx.modelName, instance: name, logger: args.logger, unavailable: (reason: string) => ctx.unavailable?.(reason) };
      try {
        return new TsInstance(name, await WorkerModel.create(moduleUrl(ctx.modelPath), ctx.modelPath, args, owner, CUSTOM_METRICS), ctx);
      } catch (err) {
        throw workerUnavailable(ctx.modelName, name, err);
      }
    }
    const scope = CUSTOM_METRICS.scope();
    const metrics = metricsClient((m) => scope.handle(m, (reply) => metrics.receive(reply)));
    let model: TritonModel;
    try {
      model = new this.#cls!();
      if (typeof model.execute !== "function") throw new Error("the default export has no execute(requests) method");
      await model.initialize?.({ ...args, metrics: metrics.api });
    } catch (err) {
      scope.release();
      const e = err as Error;
      throw unavailable(`model '${ctx.modelName}' instance ${name}: initialize failed: ${e?.stack ?? String(err)}`, err);
    }
    return new TsInstance(name, model, ctx, scope);
  }

  close(): void {
    this.#release();
  }
}

export class TypeScriptBackend implements Backend {
  readonly name = "typescript";
  readonly defaultModelFilename = "model.ts";
  readonly otherModelFilenames = ["model.js"];

  /** The class auto-complete imported, handed to the load that follows (one import per load). */
  readonly #imported = new Map<string, TritonModelClass>();

  async autoComplete(config: ModelConfig, modelPath: string): Promise<ModelConfig> {
    if (executionThread(config, config.name ?? modelPath) === "worker") return this.#autoCompleteInWorker(config, modelPath);
    const cls = await importModelClass(modelPath);
    this.#imported.set(modelPath, cls);
    if (typeof cls.autoCompleteConfig !== "function") return config;
    const out = await cls.autoCompleteConfig(structuredClone(config));
    if (!out || typeof out !== "object") throw noConfig(modelPath);
    return out as ModelConfig;
  }

  /** A worker-thread model's module is imported in a worker for its autoCompleteConfig too: its top level never runs here. */
  async #autoCompleteInWorker(config: ModelConfig, modelPath: string): Promise<ModelConfig> {
    const r = await autoCompleteInWorker(moduleUrl(modelPath), modelPath, structuredClone(config));
    if ("error" in r) {
      if (r.stage === "import") throw importFailed(modelPath, r.error);
      if (r.stage === "class") throw noClass(modelPath);
      throw r.error;
    }
    if (!r.found) return config;
    if (!r.config || typeof r.config !== "object") throw noConfig(modelPath);
    return r.config as ModelConfig;
  }

  async load(ctx: BackendLoadContext): Promise<BackendModel> {
    // Worker instances import the module in their worker; the main thread does not run it.
    const inWorker = executionThread(ctx.config, ctx.modelName) === "worker";
    const imported = this.#imported.get(ctx.modelPath);
    this.#imported.delete(ctx.modelPath);
    if (inWorker) return new TsModel(ctx, undefined);
    // A main-thread model's stray errors (a rejection nobody handles, a throw from a
    // timer) are told apart from the server's by its files in their stacks.
    const release = claimModelFiles(ctx.modelDir, ctx.modelName);
    try {
      return new TsModel(ctx, imported ?? (await importModelClass(ctx.modelPath)), release);
    } catch (err) {
      release();
      throw err;
    }
  }
}
