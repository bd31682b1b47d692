/**
 * @module The in-process API, as Triton's C API is for applications that embed the
 * server: createServer() loads a repository and returns a Nereid whose calls go straight
 * to the core (InferenceServer) with typed tensors, no socket and no JSON. The HTTP,
 * gRPC and metrics listeners are optional (`listen()`); they serve the same core, and
 * `fetch()` answers an HTTP request as the HTTP listener would, without one.
 */
import { startServer, httpFrontendOptions, type RunningServer, type ListenPlaces } from "./startup/start.ts";
import { createHttpHandler } from "./frontends/http/routes.ts";
import { fetchHandler } from "./frontends/http/fetch.ts";
import { defaultOptions, type ServerOptions } from "./options.ts";
import { configureLog, type LogSettings } from "./core/logger.ts";
import { ServerError, invalidArg } from "./core/errors.ts";
import { ELEMENT_SIZE, isDataType, joinBytes, splitBytes, type DataType } from "./core/tensor.ts";
import type { InferenceRequest, Parameters, ParameterValue } from "./core/request.ts";
import type { ModelMetadata } from "./server/server.ts";
import type { IndexEntry } from "./repository/manager.ts";
import type { ModelStats } from "./core/stats.ts";

/** The element type each datatype is read into; FP16 and BF16 as their raw 16-bit patterns. */
export interface TypedData {
  BOOL: Uint8Array;
  UINT8: Uint8Array;
  UINT16: Uint16Array;
  UINT32: Uint32Array;
  UINT64: BigUint64Array;
  INT8: Int8Array;
  INT16: Int16Array;
  INT32: Int32Array;
  INT64: BigInt64Array;
  FP16: Uint16Array;
  FP32: Float32Array;
  FP64: Float64Array;
  BF16: Uint16Array;
  /** One Uint8Array per element. */
  BYTES: Uint8Array[];
}

/** What an input's `data` may be besides raw little-endian bytes in a Uint8Array. */
interface InputData extends Omit<TypedData, "BOOL" | "BYTES"> {
  BOOL: Uint8Array | readonly boolean[];
  BYTES: readonly (string | Uint8Array)[];
}

/**
 * An input tensor: `data` is the datatype's typed array (`Int32Array` for INT32), or raw
 * little-endian bytes in a Uint8Array (for BYTES, 4-byte length-prefixed elements).
 */
export type InferInput = {
  [D in DataType]: { name: string; datatype: D; shape: readonly number[]; data: InputData[D] | Uint8Array; parameters?: Parameters };
}[DataType];

/**
 * An output tensor: `data` is a typed view of the values (copied only when the bytes are
 * misaligned for it), `bytes` the raw little-endian bytes. An output written into shared
 * memory carries `sharedMemory` and no data.
 */
export type InferOutput<D extends DataType = DataType> = {
  [K in D]: {
    name: string;
    datatype: K;
    shape: number[];
    data: TypedData[K];
    bytes: Uint8Array;
    sharedMemory?: { region: string; offset: number; byteSize: number };
  };
}[D];

export interface InferRequest {
  model: string;
  /** A version number; latest ready when omitted. */
  version?: string | number;
  id?: string;
  inputs: readonly InferInput[];
  /** The outputs wanted, by name or with parameters (`classification`, shared memory); all when omitted. */
  outputs?: readonly (string | { name: string; parameters?: Parameters })[];
  /** Request parameters as the protocol names them: sequence_id, sequence_start, priority, timeout, ... */
  parameters?: Parameters;
}

export interface InferResult {
  model: string;
  version: string;
  id?: string;
  parameters?: Parameters;
  outputs: InferOutput[];
  /** The output called `name`; with `datatype`, typed as it (and checked). Throws when absent. */
  output<D extends DataType = DataType>(name: string, datatype?: D): InferOutput<D>;
}

export type ModelStatistics = ReturnType<ModelStats["toJSON"]>;

export interface ServerMetadata {
  name: string;
  version: string;
  extensions: string[];
}

/** Where `listen()` puts a listener: `true` takes the port and address from the server's options. */
export type ListenerSpec = boolean | { port?: number; address?: string };

/** The listeners running, as URLs (HTTP, metrics) and host:port (gRPC). */
export interface Endpoints {
  http?: string;
  grpc?: string;
  metrics?: string;
}

export interface CreateServerOptions extends Partial<Omit<ServerOptions, "modelRepositories">> {
  /** One or more model repository folders (`--model-repository`). */
  modelRepository: string | readonly string[];
}

/**
 * Starts a server on a repository. Unlike the command line, the defaults are: no HTTP,
 * gRPC or metrics listener (see `listen()`), the listeners' frontends on the calling
 * thread (`httpThreadCount` and `grpcInferThreadCount` 1; under Bun more are worker
 * threads, whose requests `statistics()` counts only once they have posted them, within
 * 50 ms), and explicit model control with every model loaded at start, so that `load()`
 * and `unload()` work. Any other option is the CLI flag's (src/options.ts). Log settings
 * given here apply to the whole process.
 */
export async function createServer(options: CreateServerOptions): Promise<Nereid> {
  const { modelRepository, ...rest } = options;
  const merged: ServerOptions = {
    ...defaultOptions(),
    allowHttp: false,
    allowGrpc: false,
    allowMetrics: false,
    httpThreadCount: 1,
    grpcInferThreadCount: 1,
    modelControlMode: "explicit",
    loadModels: rest.modelControlMode === undefined || rest.modelControlMode === "explicit" ? ["*"] : [],
    ...rest,
    modelRepositories: typeof modelRepository === "string" ? [modelRepository] : [...modelRepository],
  };
  const log: Partial<LogSettings> = {};
  if (rest.logInfo !== undefined) log.info = rest.logInfo;
  if (rest.logWarning !== undefined) log.warning = rest.logWarning;
  if (rest.logError !== undefined) log.error = rest.logError;
  if (rest.logVerbose !== undefined) log.verbose = rest.logVerbose;
  if (rest.logFormat !== undefined) log.format = rest.logFormat;
  if (Object.keys(log).length > 0) configureLog(log);
  return new Nereid(await startServer(merged));
}

/** A running server in this process. Every call throws ServerError (with Triton's `code`) on failure. */
export class Nereid {
  readonly #running: RunningServer;
  #fetch: ((request: Request) => Promise<Response>) | undefined;

  /** Use createServer(). */
  constructor(running: RunningServer) {
    this.#running = running;
  }

  /**
   * Answers one HTTP request of the KServe v2 / Triton protocol as the HTTP listener
   * would (the same routes, --http-max-input-size and --http-restricted-api), with no
   * socket: `await nereid.fetch("/v2/health/ready")` (a path is taken relative to
   * http://localhost; `init` as for the global fetch), or a web `Request`. Bound to this
   * server, so it can also be handed to an application's own Bun.serve or Deno.serve as its handler. Errors come back as
   * responses with Triton's status and `{"error": ...}` body; it never throws for them.
   */
  readonly fetch = (input: Request | string | URL, init?: RequestInit): Promise<Response> => {
    // With a Request, the second argument is not read: Bun.serve and Deno.serve pass their server or connection info there.
    const request = input instanceof Request ? input : new Request(new URL(input, "http://localhost").href, init);
    this.#fetch ??= fetchHandler(createHttpHandler(this.#running.server, httpFrontendOptions(this.#running.options, this.#running.statusBoard)));
    return this.#fetch(request);
  };

  get live(): boolean {
    return this.#running.server.isLive();
  }

  get ready(): boolean {
    return this.#running.server.isReady();
  }

  metadata(): ServerMetadata {
    return this.#running.server.serverMetadata();
  }

  modelMetadata(model: string, version?: string | number): ModelMetadata {
    return this.#running.server.modelMetadata(model, versionString(version));
  }

  /** The model's configuration in Triton's JSON form. */
  modelConfig(model: string, version?: string | number): Record<string, unknown> {
    return this.#running.server.modelConfig(model, versionString(version)) as Record<string, unknown>;
  }

  /** Whether the model (the version, or its latest) is ready; false also for an unknown model. */
  modelReady(model: string, version?: string | number): boolean {
    try {
      return this.#running.server.modelReady(model, versionString(version));
    } catch (err) {
      if (err instanceof ServerError) return false;
      throw err;
    }
  }

  /** The repository index: every model found, with its versions' states. */
  index(options: { ready?: boolean } = {}): IndexEntry[] {
    return this.#running.server.repositoryIndex(options.ready === true);
  }

  /**
   * The statistics extension's model_stats: one entry per ready version, of `model` or of
   * all. A snapshot: the counters the core keeps on counting are copied.
   */
  statistics(model?: string, version?: string | number): ModelStatistics[] {
    return structuredClone(this.#running.server.modelStatistics(model, versionString(version)).model_stats);
  }

  /** Runs one inference through the same path as HTTP and gRPC requests (InferenceServer.inferAsync). */
  async infer(request: InferRequest): Promise<InferResult> {
    const response = await this.#running.server.inferAsync(toCoreRequest(request));
    const outputs = response.outputs.map((t) => typedOutput(t.name, t.datatype, t.shape, t.data, t.sharedMemory));
    const result: InferResult = {
      model: response.modelName,
      version: response.modelVersion,
      outputs,
      output<D extends DataType>(name: string, datatype?: D): InferOutput<D> {
        const t = outputs.find((o) => o.name === name);
        if (!t) throw invalidArg(`the response has no output '${name}'`);
        if (datatype !== undefined && t.datatype !== datatype) throw invalidArg(`output '${name}' is ${t.datatype}, not ${datatype}`);
        return t as InferOutput<D>;
      },
    };
    if (response.id !== undefined) result.id = response.id;
    if (response.parameters !== undefined) result.parameters = response.parameters;
    return result;
  }

  /**
   * The repository extension's load (explicit model control only): loads or reloads the
   * model, optionally with a config (Triton's JSON form) and files relative to the model
   * folder (`"1/model.onnx"`) that replace what the repository holds.
   */
  async load(model: string, overrides: { config?: string | object; files?: Record<string, Uint8Array> } = {}): Promise<void> {
    const params: Record<string, string | Uint8Array> = {};
    if (overrides.config !== undefined) params.config = typeof overrides.config === "string" ? overrides.config : JSON.stringify(overrides.config);
    for (const [path, bytes] of Object.entries(overrides.files ?? {})) params[`file:${path}`] = bytes;
    await this.#running.server.repositoryLoad(model, params);
  }

  /** The repository extension's unload (explicit model control only); with `unloadDependents`, the ensembles using it go too. */
  async unload(model: string, options: { unloadDependents?: boolean } = {}): Promise<void> {
    await this.#running.server.repositoryUnload(model, options.unloadDependents === undefined ? {} : { unload_dependents: options.unloadDependents });
  }

  /**
   * Starts listeners on the same core: `{ http: { port: 0, address: "127.0.0.1" } }`
   * for an HTTP listener on a free port. One already running is left as it is.
   */
  async listen(which: { http?: ListenerSpec; grpc?: ListenerSpec; metrics?: ListenerSpec }): Promise<Endpoints> {
    const places: ListenPlaces = {};
    const place = (
      spec: ListenerSpec | undefined,
      port: "httpPort" | "grpcPort" | "metricsPort",
      address: "httpAddress" | "grpcAddress" | "metricsAddress",
    ) => {
      if (typeof spec !== "object") return;
      if (spec.port !== undefined) places[port] = spec.port;
      if (spec.address !== undefined) places[address] = spec.address;
    };
    place(which.http, "httpPort", "httpAddress");
    place(which.grpc, "grpcPort", "grpcAddress");
    place(which.metrics, "metricsPort", "metricsAddress");
    await this.#running.listen({ http: !!which.http, grpc: !!which.grpc, metrics: !!which.metrics }, places);
    return this.endpoints;
  }

  /** The listeners running now. A wildcard address is reported as 127.0.0.1. */
  get endpoints(): Endpoints {
    const r = this.#running.listeners;
    const host = (address = "") =>
      address === "" || address === "0.0.0.0" || address === "::" ? "127.0.0.1" : address.includes(":") ? `[${address}]` : address;
    const out: Endpoints = {};
    if (r.http) out.http = `http://${host(r.addresses.http)}:${r.http.port}`;
    if (r.grpc) out.grpc = `${host(r.addresses.grpc)}:${r.grpc.port}`;
    if (r.metrics) out.metrics = `http://${host(r.addresses.metrics)}:${r.metrics.port}`;
    return out;
  }

  /**
   * Stops as the CLI does on SIGTERM: new requests are refused, in-flight ones drain for
   * up to `exitTimeoutSecs`, models unload, listeners close. 0 when everything drained.
   */
  stop(): Promise<number> {
    return this.#running.shutdown();
  }
}

function versionString(version: string | number | undefined): string | undefined {
  return version === undefined ? undefined : String(version);
}

type TypedArrayCtor = { new (buffer: ArrayBufferLike, byteOffset: number, length: number): ArrayBufferView; readonly name: string };

const TYPED: Readonly<Record<Exclude<DataType, "BYTES">, TypedArrayCtor>> = {
  BOOL: Uint8Array,
  UINT8: Uint8Array,
  UINT16: Uint16Array,
  UINT32: Uint32Array,
  UINT64: BigUint64Array,
  INT8: Int8Array,
  INT16: Int16Array,
  INT32: Int32Array,
  INT64: BigInt64Array,
  FP16: Uint16Array,
  FP32: Float32Array,
  FP64: Float64Array,
  BF16: Uint16Array,
};

const encoder = new TextEncoder();

function inputBytes(input: InferInput): Uint8Array {
  const { name, datatype, data } = input;
  if (!isDataType(datatype)) throw invalidArg(`input '${name}': unknown datatype '${datatype}'`);
  if (datatype === "BYTES") {
    if (data instanceof Uint8Array) return data;
    if (Array.isArray(data)) return joinBytes(data.map((e: string | Uint8Array) => (typeof e === "string" ? encoder.encode(e) : e)));
    throw invalidArg(`input '${name}': BYTES data must be an array of strings or Uint8Arrays (or serialized bytes in a Uint8Array)`);
  }
  if (datatype === "BOOL" && Array.isArray(data)) return Uint8Array.from(data, (b: boolean) => (b ? 1 : 0));
  const ctor = TYPED[datatype];
  if (data instanceof Uint8Array || data instanceof ctor) {
    const view = data as ArrayBufferView;
    return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  }
  const got = ArrayBuffer.isView(data) ? data.constructor.name : Array.isArray(data) ? "an Array" : typeof data;
  throw invalidArg(`input '${name}': ${datatype} data must be a ${ctor.name} (or raw bytes in a Uint8Array), got ${got}`);
}

function toCoreRequest(request: InferRequest): InferenceRequest {
  const core: InferenceRequest = {
    modelName: request.model,
    modelVersion: versionString(request.version),
    parameters: { ...request.parameters },
    inputs: request.inputs.map((input) => {
      const t = { name: input.name, datatype: input.datatype, shape: [...input.shape], data: inputBytes(input) };
      return input.parameters ? { ...t, parameters: input.parameters } : t;
    }),
  };
  if (request.id !== undefined) core.id = request.id;
  if (request.outputs) core.outputs = request.outputs.map((o) => (typeof o === "string" ? { name: o } : o));
  return core;
}

function typedOutput(name: string, datatype: DataType, shape: number[], bytes: Uint8Array, sharedMemory?: InferOutput["sharedMemory"]): InferOutput {
  let data: TypedData[DataType];
  if (datatype === "BYTES") {
    data = splitBytes(bytes, `output '${name}'`);
  } else {
    const ctor = TYPED[datatype];
    const size = ELEMENT_SIZE[datatype];
    const aligned = bytes.byteOffset % size === 0 ? bytes : bytes.slice();
    data = new ctor(aligned.buffer, aligned.byteOffset, aligned.byteLength / size) as TypedData[DataType];
  }
  const out = { name, datatype, shape, data, bytes } as InferOutput;
  if (sharedMemory) out.sharedMemory = sharedMemory;
  return out;
}

export type { DataType, Parameters, ParameterValue, ModelMetadata, IndexEntry };
