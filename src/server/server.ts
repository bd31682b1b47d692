/**
 * @module InferenceServer: owns the repository manager and answers every core question
 * the frontends ask (live, ready, metadata, config, statistics). inferAsync() is the
 * only way an inference enters the server.
 */
import { nowNs } from "../core/clock.ts";
import { ServerError, cancelled, invalidArg, unavailable } from "../core/errors.ts";
import { whenCancelled } from "../core/cancel.ts";
import { QueuedBytes } from "../core/queued-bytes.ts";
import { prepareForInference } from "../core/request-validate.ts";
import { metadataShape } from "../core/signature.ts";
import { classifyOutputs } from "./classification.ts";
import { orderedOutputs } from "../core/outputs.ts";
import { configToJson, configFromJson } from "../model-config/json.ts";
import { cacheKey, cacheModelName } from "../cache/cache-key.ts";
import type { ResponseCache } from "../cache/cache.ts";
import {
  DEFAULT_MAX_QUEUED_BYTES,
  addStepTimes,
  continuesSequence,
  logPrefix,
  parseControl,
  type InferenceRequest,
  type InferenceResponse,
  type OutputTensor,
  type Parameters,
  type SentResponse,
  type StreamedResponse,
} from "../core/request.ts";
import {
  SharedMemoryManager,
  outputsToSharedMemory,
  readInputsFromSharedMemory,
  regionsNamed,
  type CudaRegionStatus,
  type RegionStatus,
  type SharedRegionLink,
} from "./shared-memory.ts";
import type { TraceManager, TraceSettings } from "./trace.ts";
import type { ModelRunner } from "../core/runner.ts";
import type { ModelRepositoryManager, IndexEntry, LoadOverride } from "../repository/manager.ts";
import { onModelStateChange, type ModelVersion } from "../repository/model-version.ts";
import { SharedHealth } from "./shared-health.ts";
import type { Tensor } from "../core/tensor.ts";
import type { ModelSignature } from "../core/signature.ts";
import type { FailureReason } from "../core/stats.ts";

export type ServerState = "STARTING" | "READY" | "EXITING";

export interface ServerInfo {
  id: string;
  version: string;
  extensions: readonly string[];
  strictReadiness: boolean;
}

export interface TensorMetadata {
  name: string;
  datatype: string;
  shape: number[];
}

export interface ModelMetadata {
  name: string;
  versions: string[];
  platform: string;
  inputs: TensorMetadata[];
  outputs: TensorMetadata[];
}

/** A shared-memory register request's arguments as a frontend decoded them, not yet checked. */
export interface SharedMemoryRegisterArgs {
  key?: unknown;
  offset?: unknown;
  byteSize?: unknown;
  deviceId?: unknown;
  rawHandle?: unknown;
}

/** A non-negative integer, exact (a bigint past 2^53). */
function isUint(v: unknown): v is number | bigint {
  return typeof v === "bigint" ? v >= 0n : typeof v === "number" && Number.isInteger(v) && v >= 0;
}

function refuseRepositoryName(repositoryName: string | undefined): void {
  if (repositoryName) throw new ServerError("UNSUPPORTED", "'repository_name' specification is not supported");
}

/** Durations of one successful request, in ns; compute durations are absent for cache hits. */
export interface RequestDurations {
  requestNs: number;
  queueNs: number;
  computeInputNs?: number;
  computeInferNs?: number;
  computeOutputNs?: number;
  /** Cache lookup of a hit; lookup and insert of a miss (models with the response cache). */
  cacheHitNs?: number;
  cacheMissNs?: number;
}

/** What the server tells besides the statistics about each request (the metrics registry: summaries and histograms). */
export interface RequestObserver {
  /** A request answered successfully, on this thread or a frontend worker's. */
  success(mv: ModelVersion, d: RequestDurations): void;
  /** The time to a decoupled request's first response. */
  firstResponse(mv: ModelVersion, ns: number): void;
}

/** Something else that holds statistics for a while (frontend worker threads that run models: DirectModels). */
export interface StatisticsSource {
  /** Resolves once what it held is in the versions' statistics. */
  settle(): Promise<void>;
  /** Adds what it can reach without waiting (counters in shared memory) to the versions' statistics now. */
  fold?(): void;
}

/** Everything the server is built from; what may change later has a method of its own (observe, addStatisticsSource). */
export interface InferenceServerOptions {
  info: ServerInfo;
  repository: ModelRepositoryManager;
  /** The `--cache-config` response cache, shared by the models that enable it. */
  responseCache?: ResponseCache;
  /** System and CUDA shared-memory regions (`--allow-client-shm`); none allowed when omitted. */
  sharedMemory?: SharedMemoryManager;
  /** The trace extension's settings and sampler (`--trace-config`); without it the extension is refused. */
  trace?: TraceManager;
  /** `--max-queued-bytes` (default DEFAULT_MAX_QUEUED_BYTES; 0: no bound). */
  maxQueuedBytes?: number;
}

export class InferenceServer implements ModelRunner {
  readonly info: ServerInfo;
  readonly repository: ModelRepositoryManager;
  #state: ServerState = "STARTING";
  /** The `--cache-config` response cache, shared by the models that enable it. */
  readonly responseCache: ResponseCache | undefined;
  /** The trace extension's settings and sampler, when tracing is available. */
  readonly trace: TraceManager | undefined;
  /** `--max-queued-bytes`: input bytes that client requests not yet answered may hold together (0: no bound). */
  readonly maxQueuedBytes: number;
  /** The metrics registry once it exists (observe). */
  #observer: RequestObserver | undefined;
  readonly #statisticsSources: StatisticsSource[] = [];
  readonly #repositoryControlled: (() => void)[] = [];

  /** System and CUDA shared-memory regions (`--allow-client-shm`); reached through the shared-memory methods below. */
  readonly #sharedMemory: SharedMemoryManager;
  /** Bytes held by client requests not yet answered, shared with the frontend workers that answer requests themselves. */
  readonly queued: QueuedBytes;
  /** live and ready as the frontend worker threads read them (shareHealth). */
  readonly #health = new SharedHealth();
  #healthReaders = 0;
  #stopWatchingModels: (() => void) | undefined;

  constructor(options: InferenceServerOptions) {
    this.info = options.info;
    this.repository = options.repository;
    this.responseCache = options.responseCache;
    this.#sharedMemory = options.sharedMemory ?? new SharedMemoryManager(false);
    this.trace = options.trace;
    this.maxQueuedBytes = options.maxQueuedBytes ?? DEFAULT_MAX_QUEUED_BYTES;
    this.queued = new QueuedBytes(this.maxQueuedBytes);
  }

  /** STARTING until markReady(), EXITING from markExiting() on. */
  get state(): ServerState {
    return this.#state;
  }

  /** The repository has loaded: ready answers true (until markExiting); the listeners start after it, as in Triton. */
  markReady(): void {
    if (this.#state === "STARTING") this.#state = "READY";
    this.#publishHealth();
  }

  /** Shutdown began: new inference is refused, live and ready answer false. For good. */
  markExiting(): void {
    this.#state = "EXITING";
    this.#publishHealth();
  }

  /**
   * The server's health in shared memory for other threads (SharedHealth), kept current
   * until release(): while any reader holds it, every model version's state change and
   * every change of the versions served writes it again, as isReady() would answer then.
   */
  shareHealth(): { buffer: SharedArrayBuffer; release(): void } {
    if (this.#healthReaders++ === 0) this.#stopWatchingModels = onModelStateChange(() => this.#publishHealth());
    this.#publishHealth();
    let released = false;
    return {
      buffer: this.#health.buffer,
      release: () => {
        if (released) return;
        released = true;
        if (--this.#healthReaders > 0) return;
        this.#stopWatchingModels?.();
        this.#stopWatchingModels = undefined;
      },
    };
  }

  #publishHealth(): void {
    this.#health.write({ live: this.isLive(), ready: this.isReady(), exiting: this.#state === "EXITING" });
  }

  /**
   * Has `observer` told of every request from now on (the metrics registry, made when the
   * metrics listener first starts). One observer per server.
   */
  observe(observer: RequestObserver): void {
    if (this.#observer) throw new Error("the server already has a request observer");
    this.#observer = observer;
  }

  /** Whether something observes each request (observe()): then every request's durations must reach it. */
  get observing(): boolean {
    return this.#observer !== undefined;
  }

  /** Tells the observer of a request answered elsewhere (a frontend worker thread), as inference here does. */
  observeSuccess(mv: ModelVersion, d: RequestDurations): void {
    this.#observer?.success(mv, d);
  }

  /** Adds a holder of statistics that statisticsSettled() waits for. */
  addStatisticsSource(source: StatisticsSource): void {
    this.#statisticsSources.push(source);
  }

  /**
   * Calls `fn` when a repository load or unload request has ended (either way), before
   * its answer goes out: the frontend workers' table of models is published then, ahead
   * of the answer, so that a client's next request never meets the version it replaced.
   */
  onRepositoryControlled(fn: () => void): void {
    this.#repositoryControlled.push(fn);
  }

  #repositoryControlEnded(): void {
    for (const fn of this.#repositoryControlled) fn();
  }

  /** Adds to the statistics what other threads counted in shared memory (StatisticsSource.fold), without waiting for any thread. */
  foldStatistics(): void {
    for (const s of this.#statisticsSources) s.fold?.();
  }

  /** Resolves once the statistics count every request answered so far, on whichever thread. */
  async statisticsSettled(): Promise<void> {
    await Promise.all(this.#statisticsSources.map((s) => s.settle()));
  }

  /** Both the server (--cache-config) and the model (response_cache.enable) must ask for the cache. */
  cacheEnabled(mv: ModelVersion): boolean {
    return this.responseCache !== undefined && mv.config.response_cache?.enable === true;
  }

  isLive(): boolean {
    return this.#state !== "EXITING";
  }

  isReady(): boolean {
    if (this.#state !== "READY") return false;
    return !this.info.strictReadiness || this.repository.allReady();
  }

  serverMetadata() {
    return { name: this.info.id, version: this.info.version, extensions: [...this.info.extensions] };
  }

  modelReady(name: string, version?: string): boolean {
    return this.repository.getModel(name, version).ready;
  }

  modelMetadata(name: string, version?: string): ModelMetadata {
    const mv = this.repository.getModel(name, version);
    const versions = version ? [String(mv.version)] : this.repository.readyVersions(name).map((v) => String(v.version));
    const sig = mv.signature;
    const tensor = (n: string, dt: string, dims: number[] | undefined) => ({ name: n, datatype: dt, shape: metadataShape(dims, sig.maxBatchSize) });
    return {
      name,
      versions,
      platform: mv.config.platform || mv.config.backend || "",
      inputs: [...sig.inputs.values()].map((i) => tensor(i.name!, sig.inputTypes.get(i.name!)!, i.dims)),
      outputs: [...sig.outputs.values()].map((o) => tensor(o.name!, sig.outputTypes.get(o.name!)!, o.dims)),
    };
  }

  modelConfig(name: string, version?: string): object {
    return configToJson(this.repository.getModel(name, version).config);
  }

  modelStatistics(name?: string, version?: string) {
    let versions: ModelVersion[];
    if (name) {
      versions = version ? [this.repository.getModel(name, version)] : this.repository.readyVersions(name);
      if (versions.length === 0) this.repository.getModel(name); // throws the right error
    } else {
      versions = this.repository.allVersions().filter((v) => v.ready);
    }
    return { model_stats: versions.map((v) => v.stats.toJSON(v.name, String(v.version))) };
  }

  /** The repository extension's index; naming a repository is refused as in Triton. */
  repositoryIndex(readyOnly = false, repositoryName?: string): IndexEntry[] {
    refuseRepositoryName(repositoryName);
    return this.repository.index(readyOnly);
  }

  /**
   * Whether a load or unload request may go on: a named repository is UNSUPPORTED, and
   * only explicit model control takes them (UNAVAILABLE otherwise, Triton's wording).
   * repositoryLoad/Unload check it; a frontend may call it before reading the body.
   */
  checkRepositoryControl(repositoryName?: string): void {
    refuseRepositoryName(repositoryName);
    if (this.repository.controlMode !== "explicit") throw unavailable("explicit model load / unload is not allowed if polling is enabled");
  }

  /**
   * The repository extension's load. `params` as both frontends decode them: `config`
   * (a JSON ModelConfig) and `file:<version>/<path>` entries (bytes; base64 text over HTTP).
   */
  async repositoryLoad(name: string, params: Record<string, string | number | boolean | bigint | Uint8Array>, repositoryName?: string): Promise<void> {
    this.checkRepositoryControl(repositoryName);
    if (this.#state === "EXITING") throw unavailable("Server is stopping");
    const override: LoadOverride = {};
    for (const [key, value] of Object.entries(params)) {
      if (key === "config") {
        if (typeof value !== "string") throw invalidArg("the 'config' parameter must be a JSON string");
        let json: unknown;
        try {
          json = JSON.parse(value);
        } catch (err) {
          throw invalidArg(`failed to parse the 'config' parameter of model '${name}' as JSON: ${(err as Error).message}`);
        }
        override.config = configFromJson(json);
      } else if (key.startsWith("file:")) {
        const bytes = typeof value === "string" ? Buffer.from(value, "base64") : value instanceof Uint8Array ? value : undefined;
        if (!bytes) throw invalidArg(`file override '${key}' must carry bytes (base64 text over HTTP)`);
        (override.files ??= {})[key.slice(5)] = bytes;
      }
    }
    try {
      await this.repository.loadModel(name, override);
    } finally {
      this.#repositoryControlEnded();
    }
  }

  /** The repository extension's unload; with `unload_dependents`, the ensembles that use the model go too. */
  async repositoryUnload(name: string, params: Record<string, unknown> = {}, repositoryName?: string): Promise<void> {
    this.checkRepositoryControl(repositoryName);
    const v = params.unload_dependents;
    if (v !== undefined && typeof v !== "boolean") throw invalidArg("'unload_dependents' must be a boolean");
    try {
      await this.repository.unloadModel(name);
      if (v === true) await Promise.all(this.repository.dependentsOf(name).map((d) => this.repository.unloadModel(d)));
    } finally {
      this.#repositoryControlEnded();
    }
  }

  /**
   * The version an inference request goes to. While the server is stopping only requests
   * that continue an open sequence are let through (`continuing`; the sequence batcher
   * refuses new sequences itself).
   */
  modelForInference(name: string, version?: string, continuing = false, resolved?: ModelVersion, namespace?: string): ModelVersion {
    if (this.#state === "EXITING" && !continuing) throw unavailable("Server is stopping");
    // A version resolved earlier (resolve) that has since begun to unload is looked up again.
    return resolved?.ready ? resolved : this.repository.getModel(name, version, namespace);
  }

  /**
   * The one way a frontend's inference request reaches a model: `name` and `version`
   * resolved before the body is read, as Triton's frontends do (an unknown or unavailable
   * model is reported first). With `unary`, the message a decoupled model is refused with
   * (a unary entry cannot carry its 0..N responses). Hand the result to inferAsync or
   * inferStream so that the model is looked up once. While the server is stopping nothing
   * is resolved yet: whether the request is let in depends on its sequence parameters,
   * which inferAsync reads.
   */
  resolve(name: string, version: string | undefined, opts: { unary?: string } = {}): ResolvedModel {
    const mv = this.#state === "EXITING" ? undefined : this.repository.getModel(name, version);
    const decoupled = mv !== undefined && this.isDecoupled(mv);
    if (decoupled && opts.unary !== undefined) throw new ServerError("UNSUPPORTED", opts.unary);
    return new ResolvedModel(mv, decoupled, () => (mv ?? this.modelForInference(name, version, true)).signature);
  }

  /** The trace extension's settings, global or `model`'s (which must exist); `update` changes them first. */
  traceSetting(model: string | undefined, update?: Record<string, unknown>): TraceSettings {
    const trace = this.trace;
    if (!trace) throw new ServerError("UNSUPPORTED", "trace is not enabled");
    if (model !== undefined) this.repository.getModel(model);
    return update === undefined ? trace.settings(model) : trace.update(update, model);
  }

  /**
   * The shared-memory extension's register, for both frontends: the arguments as decoded
   * from the wire (JSON values or protobuf fields) are checked here, once, so a bad value
   * gets the same answer over HTTP and gRPC. 64-bit sizes stay exact (bigint).
   */
  registerSharedMemory(kind: "system" | "cuda", name: string, args: SharedMemoryRegisterArgs): void {
    const byteSize = args.byteSize;
    if (!isUint(byteSize)) throw invalidArg("Shared memory register request needs a numeric 'byte_size'");
    if (kind === "cuda") {
      if (!(args.rawHandle instanceof Uint8Array)) throw invalidArg("CUDA shared memory register request needs 'raw_handle': {'b64': <base64 handle>}");
      const device = args.deviceId ?? 0;
      if (!isUint(device) || device > 0x7fffffff) throw invalidArg("'device_id' must be a non-negative 32-bit integer");
      this.#sharedMemory.registerCuda(name, args.rawHandle, Number(device), byteSize);
      return;
    }
    if (typeof args.key !== "string") throw invalidArg("Shared memory register request has no 'key' field or it is not a string");
    const offset = args.offset ?? 0;
    if (!isUint(offset)) throw invalidArg("'offset' must be a number");
    this.#sharedMemory.register(name, args.key, offset, byteSize);
  }

  /** The system shared-memory regions registered now, for the frontend workers' table (none while client shared memory is off). */
  sharedMemoryRegions(): SharedRegionLink[] {
    return this.#sharedMemory.systemRegions();
  }

  /** The frontend worker of `slot` (DirectModels) ended: its holds on shared-memory regions go back. */
  frontendWorkerEnded(slot: number): void {
    this.#sharedMemory.workerEnded(slot);
  }

  /** Calls `listener` synchronously when a system shared-memory region is registered or goes; returns what stops it. */
  onSharedMemoryChange(listener: () => void): () => void {
    return this.#sharedMemory.onSystemChange(listener);
  }

  /**
   * The shared-memory extension's status: every region of `kind`, or region `name`
   * (NOT_FOUND when it is not registered as that kind).
   */
  sharedMemoryStatus(kind: "system", name?: string): RegionStatus[];
  sharedMemoryStatus(kind: "cuda", name?: string): CudaRegionStatus[];
  sharedMemoryStatus(kind: "system" | "cuda", name?: string): RegionStatus[] | CudaRegionStatus[];
  sharedMemoryStatus(kind: "system" | "cuda", name?: string): RegionStatus[] | CudaRegionStatus[] {
    return kind === "system" ? this.#sharedMemory.status(name) : this.#sharedMemory.cudaStatus(name);
  }

  /**
   * The shared-memory extension's unregister: region `name` of `kind`, or every region of
   * `kind`; an unknown name is not an error (Triton). A region in use goes when its last request settles.
   */
  unregisterSharedMemory(kind: "system" | "cuda", name?: string): void {
    if (kind === "system") this.#sharedMemory.unregister(name);
    else this.#sharedMemory.unregisterCuda(name);
  }

  /** Frees every shared-memory region, in use or not (shutdown: later requests naming them fail cleanly). */
  closeSharedMemory(): void {
    this.#sharedMemory.close();
  }

  /**
   * Runs one client's inference request through validation, the model's scheduler and
   * post-processing. Its input bytes count against `maxQueuedBytes` until it is answered.
   */
  inferAsync(request: InferenceRequest, model?: ResolvedModel): Promise<InferenceResponse> {
    return this.#infer(request, true, model?.version) as Promise<InferenceResponse>;
  }

  /** An ensemble step or other request made inside the server: its caller already holds the bytes. */
  inferStep(request: InferenceRequest): Promise<InferenceResponse> {
    return this.#infer(request, false) as Promise<InferenceResponse>;
  }

  /** Whether `mv` is decoupled (0..N responses a request): only the streaming entry serves it. */
  isDecoupled(mv: ModelVersion): boolean {
    return mv.config.model_transaction_policy?.decoupled === true;
  }

  /**
   * One client request's responses as they come: a decoupled model's 0..N responses (the
   * last carries the final flag, or a response-less final follows it), an ordinary
   * model's one response with the final flag, or an error (final). Ends after the final
   * one, or as soon as `request.signal` aborts (what the model sends later is dropped).
   */
  inferStream(request: InferenceRequest, model?: ResolvedModel): AsyncGenerator<StreamedResponse> {
    return this.#stream(request, true, model?.version);
  }

  /** inferStream for a request made inside the server (BLS). */
  inferStepStream(request: InferenceRequest): AsyncGenerator<StreamedResponse> {
    return this.#stream(request, false);
  }

  async *#stream(request: InferenceRequest, admit: boolean, model?: ModelVersion): AsyncGenerator<StreamedResponse> {
    const queue: StreamedResponse[] = [];
    let head = 0;
    let finished = false;
    let wake: (() => void) | undefined;
    const notify = () => {
      const w = wake;
      wake = undefined;
      w?.();
    };
    // Output bytes of responses the consumer has not taken yet: a client that stops reading
    // must not make the server hold a fast model's responses without bound (#29).
    let held = 0;
    const overflow = new AbortController();
    const signal = request.signal;
    request.signal = signal ? AbortSignal.any([signal, overflow.signal]) : overflow.signal;
    const push = (r: StreamedResponse) => {
      if (finished) return;
      if (r.final) finished = true;
      const bytes = responseBytes(r);
      const over = held + bytes > MAX_STREAM_HELD_BYTES || (held > 0 && this.queued.wouldPass(bytes));
      if (!r.final && over) {
        // The client reads slower than the model sends: the request is cancelled (the model
        // sees it cancelled), what waits is dropped, and the client gets why once it reads on.
        finished = true;
        drop();
        overflow.abort();
        queue.push({
          error: unavailable(
            `${logPrefix(request.id)}Exceeds maximum queue size: responses waiting for the client to read would hold more than the server allows; the request is cancelled`,
          ),
          final: true,
        });
        notify();
        return;
      }
      held += bytes;
      this.queued.add(bytes);
      queue.push(r);
      notify();
    };
    /** Drops what waits and gives its bytes back: the client is gone, or it will never read them. */
    const drop = () => {
      for (let i = head; i < queue.length; i++) queue[i] = undefined as never;
      head = queue.length;
      this.queued.add(-held);
      held = 0;
    };
    // The client went away: nothing more is taken, even by a consumer that never asks again.
    const gone = () => {
      finished = true;
      drop();
      notify();
    };
    signal?.addEventListener("abort", gone, { once: true });
    this.#infer(request, admit, model, push).then(
      (r) => r && push({ response: r, final: true }),
      (err) => push({ error: ServerError.from(err), final: true }),
    );
    try {
      for (;;) {
        while (head < queue.length) {
          const r = queue[head]!;
          queue[head++] = undefined as never;
          const bytes = responseBytes(r);
          held -= bytes;
          this.queued.add(-bytes);
          yield r;
          if (r.final) return;
        }
        if (signal?.aborted) return;
        await new Promise<void>((resolve) => (wake = resolve));
      }
    } finally {
      // A consumer that stops early (a cancelled body, a broken loop): later sends are dropped, not queued.
      finished = true;
      drop();
      queue.length = 0;
      signal?.removeEventListener("abort", gone);
    }
  }

  /** Input bytes held by client requests not yet answered (see `maxQueuedBytes`). */
  get queuedBytes(): number {
    return this.queued.held;
  }

  async #infer(
    request: InferenceRequest,
    admit: boolean,
    model?: ModelVersion,
    stream?: (r: StreamedResponse) => void,
  ): Promise<InferenceResponse | undefined> {
    const control = parseControl(request.parameters);
    const mv = this.modelForInference(request.modelName, request.modelVersion, continuesSequence(control), model, request.modelNamespace);
    const decoupled = this.isDecoupled(mv);
    if (decoupled && !stream) {
      throw new ServerError("UNSUPPORTED", `model '${mv.name}' is decoupled (model_transaction_policy): its responses are served by the streaming entry only`);
    }
    const start = nowNs();
    let reason: FailureReason = "OTHER";
    let held = 0;
    let releaseRegions: (() => void) | undefined;
    try {
      // Every region named is held until the request settles, so unregister cannot close it under us.
      const regions = regionsNamed(request.inputs, request.outputs);
      if (regions) releaseRegions = this.#sharedMemory.acquire(regions);
      readInputsFromSharedMemory(request.inputs, (ref, what) => this.#sharedMemory.read(ref, what));
      const prepared = prepareForInference(request, mv.signature, control);
      reason = "BACKEND";
      // A request cancelled before it was queued (S-20) holds nothing and runs nothing.
      if (request.signal?.aborted) throw cancelled(request.id);
      if (admit) held = this.#admit(request);
      if (decoupled) {
        // The request ends with its final flag, or when it is cancelled first (mid-stream:
        // a gRPC stream cancelled, an SSE client gone), which counts it CANCELED: its client
        // did not get all it asked for. Until then it holds its bytes and regions.
        let ended!: (how: "final" | "cancelled") => void;
        const end = new Promise<"final" | "cancelled">((resolve) => (ended = resolve));
        const forget = whenCancelled(request.signal, () => ended("cancelled"));
        prepared.request.responseSink = this.#decoupledSink(mv, request, prepared.outputNames, prepared.classification, stream!, start, () => ended("final"));
        try {
          const result = await mv.scheduler.enqueue(prepared);
          if ((await end) === "cancelled") throw cancelled(request.id);
          mv.stats.recordSuccess(nowNs() - start, result.queueNs, result.computeInputNs, result.computeInferNs, result.computeOutputNs);
        } finally {
          forget();
        }
        return undefined;
      }
      // Response cache (S-17, S-18): a hit skips the scheduler; a miss stores what the model answered.
      const cache = this.cacheEnabled(mv) ? this.responseCache : undefined;
      let key = "";
      let lookupNs = 0;
      let outputs: OutputTensor[];
      // The model's response parameters (a cache hit has none: the cache keeps outputs).
      let parameters: Parameters | undefined;
      let hit: Tensor[] | undefined;
      if (cache) {
        const lookupStart = nowNs();
        key = cacheKey(cacheModelName(mv.name, mv.namespace), mv.version, prepared.inputs, prepared.outputNames);
        const found = cache.lookup(key, prepared.outputNames);
        // The local cache answers at once; only a remote one costs an await.
        hit = found instanceof Promise ? await found : found;
        lookupNs = nowNs() - lookupStart;
      }
      if (hit) {
        outputs = this.#toSharedMemory(request, this.#postprocess(mv, hit, prepared.outputNames, prepared.classification));
        const requestNs = nowNs() - start;
        mv.stats.recordCacheHit(requestNs, 0, lookupNs);
        this.#observer?.success(mv, { requestNs, queueNs: 0, cacheHitNs: lookupNs });
      } else {
        // A request a frontend worker already counted for the sampling rate is not counted again.
        const sampled = request.traceSampled;
        // One a worker chose is traced unless tracing stopped meanwhile.
        const traced = sampled === undefined ? this.trace?.sample(mv.name) === true : sampled && this.trace?.mayTrace(mv.name) === true;
        const queueStart = traced ? nowNs() : 0;
        const result = await mv.scheduler.enqueue(prepared);
        let cacheMissNs: number | undefined;
        if (cache) {
          const insertStart = nowNs();
          // The response cache never stores what a cancelled request got (S-20).
          if (!request.signal?.aborted) cache.insert(key, result.outputs);
          cacheMissNs = lookupNs + (nowNs() - insertStart);
          mv.stats.recordCacheMiss(cacheMissNs);
        }
        // Written into shared memory before the success is counted: a write that fails fails the request.
        outputs = this.#toSharedMemory(request, this.#postprocess(mv, result.outputs, prepared.outputNames, prepared.classification));
        parameters = result.parameters;
        const end = nowNs();
        const requestNs = end - start;
        mv.stats.recordSuccess(requestNs, result.queueNs, result.computeInputNs, result.computeInferNs, result.computeOutputNs);
        addStepTimes(request, result.computeInputNs, result.computeInferNs, result.computeOutputNs);
        if (traced) {
          const computeStart = queueStart + result.queueNs;
          const inputEnd = computeStart + result.computeInputNs;
          const outputStart = inputEnd + result.computeInferNs;
          this.trace!.record(mv.name, String(mv.version), request.id, {
            requestStart: start,
            queueStart,
            computeStart,
            computeInputEnd: inputEnd,
            computeOutputStart: outputStart,
            computeEnd: outputStart + result.computeOutputNs,
            requestEnd: end,
          });
        }
        this.#observer?.success(mv, {
          requestNs,
          queueNs: result.queueNs,
          computeInputNs: result.computeInputNs,
          computeInferNs: result.computeInferNs,
          computeOutputNs: result.computeOutputNs,
          ...(cacheMissNs !== undefined ? { cacheMissNs } : {}),
        });
      }
      const response: InferenceResponse = { modelName: mv.name, modelVersion: String(mv.version), outputs };
      if (request.id) response.id = request.id;
      if (parameters) response.parameters = parameters;
      return response;
    } catch (err) {
      const e = ServerError.from(err);
      if (reason === "BACKEND") e.inResponse = true;
      // Validation failures count as OTHER; a scheduler's refusal (queue full, timeout, stopping) as
      // REJECTED; a cancelled request (CANCELLED, from a scheduler or a model) as CANCELED.
      if (reason === "BACKEND") reason = e.reason ?? (e.code === "UNAVAILABLE" ? "REJECTED" : e.code === "CANCELLED" ? "CANCELED" : "BACKEND");
      if (mv.config.platform === "ensemble") reason = "OTHER"; // as Triton reports ensemble failures
      mv.stats.recordFailure(nowNs() - start, reason);
      throw e;
    } finally {
      this.queued.add(-held);
      releaseRegions?.();
    }
  }

  /**
   * Counts the request's input bytes against `maxQueuedBytes`: past it the request is
   * refused as a full queue is (UNAVAILABLE "Exceeds maximum queue size", HTTP 503), so
   * that memory held by waiting requests stays bounded. A request larger than the whole
   * bound is still let in when nothing else is held. Returns the bytes to give back.
   */
  #admit(request: InferenceRequest): number {
    return this.queued.admitRequest(request);
  }

  /**
   * Where a decoupled model's sends go: each is post-processed (reshape, classification,
   * shared memory) like a unary response, counted in `response_stats` by its index, and
   * handed to the stream; after the client has gone (the request's signal) it is counted
   * as cancelled and dropped.
   */
  #decoupledSink(
    mv: ModelVersion,
    request: InferenceRequest,
    names: string[],
    classification: ReadonlyMap<string, number>,
    stream: (r: StreamedResponse) => void,
    start: number,
    onFinal: () => void,
  ) {
    let index = 0;
    let last = nowNs();
    return (sent: SentResponse) => {
      if (sent.final) onFinal();
      const t = nowNs();
      const inferNs = t - last;
      const i = index++;
      // Triton observes the first response a request sends, whatever it carries.
      if (i === 0 && !request.signal?.aborted) this.#observer?.firstResponse(mv, t - start);
      if (request.signal?.aborted) {
        mv.stats.recordResponse(i, "cancel", inferNs, 0);
      } else if (sent.error) {
        mv.stats.recordResponse(i, "fail", inferNs, 0);
        stream({ error: sent.error, final: sent.final });
      } else if (!sent.outputs) {
        mv.stats.recordResponse(i, "empty_response", inferNs, 0);
        stream({ final: sent.final });
      } else {
        try {
          const present = names.filter((n) => sent.outputs!.some((o) => o.name === n));
          const outputs = this.#toSharedMemory(request, this.#postprocess(mv, sent.outputs, present, classification));
          const response: InferenceResponse = { modelName: mv.name, modelVersion: String(mv.version), outputs };
          if (request.id) response.id = request.id;
          if (sent.parameters) response.parameters = sent.parameters;
          mv.stats.recordResponse(i, "success", inferNs, nowNs() - t);
          stream({ response, final: sent.final });
        } catch (err) {
          mv.stats.recordResponse(i, "fail", inferNs, nowNs() - t);
          stream({ error: ServerError.from(err), final: sent.final });
        }
      }
      last = nowNs();
    };
  }

  /** Writes outputs requested into shared memory there; they are answered without data. */
  #toSharedMemory(request: InferenceRequest, outputs: Tensor[]): OutputTensor[] {
    return outputsToSharedMemory(request, outputs, (ref, data, what) => this.#sharedMemory.write(ref, data, what));
  }

  #postprocess(mv: ModelVersion, raw: Tensor[], names: string[], classification: ReadonlyMap<string, number>): Tensor[] {
    return classifyOutputs(orderedOutputs(mv.signature, raw, names), classification, mv.signature.maxBatchSize > 0, mv.labels);
  }
}

/**
 * The output bytes one streamed request's responses may hold while they wait for the
 * client to take them (Nereid's): past it, or past `--max-queued-bytes` for everything
 * held together, the request is cancelled with UNAVAILABLE (SECURITY.md).
 */
export const MAX_STREAM_HELD_BYTES = 256 * 1024 * 1024;

/** Output bytes a streamed response holds (data in shared memory counts nothing). */
function responseBytes(r: StreamedResponse): number {
  let n = 0;
  for (const o of r.response?.outputs ?? []) n += o.data.byteLength;
  return n;
}

/** The model a frontend's request names, as InferenceServer.resolve found it. */
export class ResolvedModel {
  /** @internal The version, when one was found (not while the server is stopping). */
  readonly version: ModelVersion | undefined;
  /** Whether the model is decoupled (0..N responses a request): only the streaming entries serve it. */
  readonly decoupled: boolean;
  readonly #signature: () => ModelSignature;

  constructor(version: ModelVersion | undefined, decoupled: boolean, signature: () => ModelSignature) {
    this.version = version;
    this.decoupled = decoupled;
    this.#signature = signature;
  }

  /** The model's inputs, outputs and batching (to decode a raw binary or generate body): looked up when the server is stopping. */
  signature(): ModelSignature {
    return this.#signature();
  }
}
