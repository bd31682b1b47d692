/**
 * @module The model-facing API of the `typescript` backend (issue #15): what a `model.ts`
 * sees. Models may copy these types or `import type` them (erased at run time). The
 * contract is docs/models/typescript.md.
 */

export type Datatype = "BOOL" | "UINT8" | "UINT16" | "UINT32" | "UINT64" | "INT8" | "INT16" | "INT32" | "INT64" | "FP16" | "FP32" | "FP64" | "BF16" | "BYTES";

/**
 * Inputs: data is the typed array of the datatype (FP16/BF16: Uint16Array, BOOL:
 * Uint8Array, INT64/UINT64: BigInt64Array/BigUint64Array), or for BYTES an array of
 * Uint8Array. Outputs may also give BYTES elements as strings (encoded as UTF-8) and any
 * numeric data as a plain number[] (converted to the datatype).
 */
export interface Tensor {
  name: string;
  datatype: Datatype;
  shape: number[];
  data: ArrayBufferView | Uint8Array[] | (string | Uint8Array)[] | number[] | bigint[];
}

export interface ModelLogger {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
  verbose(msg: string): void;
}

export interface InitializeArgs {
  /** The model's config as Triton's JSON (what GET /config answers). */
  modelConfig: object;
  modelName: string;
  modelVersion: number;
  /** "<model>_0" ... */
  instanceName: string;
  instanceKind: "KIND_CPU" | "KIND_GPU" | "KIND_MODEL";
  deviceId: number;
  /** The model's folder: <repo>/<model> */
  repositoryPath: string;
  /** The config's `parameters` map, string values. */
  parameters: Record<string, string>;
  logger: ModelLogger;
  /** Custom metrics, exported on /metrics with the server's own families. */
  metrics: ModelMetrics;
}

export type MetricKind = "counter" | "gauge" | "histogram";

/**
 * Custom metrics (Triton's pb_utils.MetricFamily / Metric). A family is known by its name:
 * instances (and models) making the same name with the same kind and description share
 * it; another kind or description is refused. A metric is one set of labels of a family.
 * What an instance made goes when it is unloaded, unless another instance still uses it.
 */
export interface ModelMetrics {
  /** Makes (or joins) a family; rejects with an Error (`code` "INVALID_ARG") for a bad name or a clash. */
  family(options: { name: string; description: string; kind: MetricKind }): Promise<MetricFamily>;
}

export interface MetricFamily {
  readonly name: string;
  readonly kind: MetricKind;
  /** The metric with these labels (made on first use); a histogram needs increasing, finite `buckets`. */
  metric(options?: { labels?: Record<string, string>; buckets?: number[] }): Promise<Metric>;
}

/** Changes apply in the order made; a call the kind does not allow throws. */
export interface Metric {
  /** Counter (not below zero) and gauge. */
  increment(value: number): void;
  /** Gauge. */
  set(value: number): void;
  /** Histogram. */
  observe(value: number): void;
  /** Counter and gauge: the value after every change made before this call. */
  value(): Promise<number>;
}

export interface BlsRequest {
  model: string;
  version?: number;
  /** Same forms as outputs (strings, number[] allowed). */
  inputs: Tensor[];
  /** Requested outputs; default all. */
  outputs?: string[];
  parameters?: Record<string, string | number | boolean>;
  id?: string;
  /** Cancels the call when it aborts (pass the calling request's `signal` to cancel with it). */
  signal?: AbortSignal;
}

export interface BlsResponse {
  model: string;
  version: number;
  outputs: Tensor[];
  output(name: string): Tensor | undefined;
  /** The callee's response parameters ({} when it set none). */
  parameters: Record<string, ResponseParameter>;
}

export interface InferenceRequest {
  /** "" when the client gave none. */
  readonly id: string;
  readonly inputs: readonly Tensor[];
  input(name: string): Tensor | undefined;
  /** Empty: every output. */
  readonly requestedOutputNames: readonly string[];
  readonly parameters: Readonly<Record<string, string | number | boolean>>;
  /** Sequence id, when any. */
  readonly correlationId: bigint | string | undefined;
  readonly flags: { sequenceStart: boolean; sequenceEnd: boolean };
  /** True once the client has gone (cancelled gRPC call, deadline, closed HTTP connection): stop and answer CANCELLED. */
  isCancelled(): boolean;
  /** Aborts when the request is cancelled; pass it to BLS calls (`infer({ ..., signal })`) so they are cancelled too. */
  readonly signal: AbortSignal;
  /**
   * BLS: runs another model through the server's own path (validation, scheduler,
   * batching, cache, statistics). Rejects with an Error carrying `code` (Triton's code
   * name: "INVALID_ARG", "NOT_FOUND", "UNAVAILABLE", ...).
   */
  infer(call: BlsRequest): Promise<BlsResponse>;
  /**
   * BLS to a decoupled model (or any model): its responses as they come, ending after
   * its final one. Throws (with `code`) on an error response. In a worker-thread instance
   * the responses are relayed from the main thread one by one.
   */
  stream(call: BlsRequest): AsyncIterable<BlsResponse>;
  /**
   * Decoupled models (`model_transaction_policy { decoupled: true }`) only: the sender
   * of this request's responses, usable after `execute` returns. Each `send` delivers one
   * response; `{ final: true }` marks the last (with or without a response).
   */
  getResponseSender(): ResponseSender;
}

export interface ResponseSender {
  send(response?: InferenceResponse, options?: { final?: boolean }): void;
}

export type TritonCode = "INVALID_ARG" | "NOT_FOUND" | "UNAVAILABLE" | "UNSUPPORTED" | "INTERNAL" | "ALREADY_EXISTS" | "CANCELLED";

/** A response parameter: string, boolean, integer (int64 over gRPC) or other number (double over gRPC). */
export type ResponseParameter = string | number | boolean;

/**
 * One per request, same order. `error` fails that request alone (INTERNAL unless `code`).
 * `parameters` reach the client as Triton's response parameters (HTTP and gRPC
 * `parameters`, generate's top-level fields).
 */
export type InferenceResponse =
  | { outputs: Tensor[]; parameters?: Record<string, ResponseParameter> }
  | { error: string | { message: string; code?: TritonCode } };

export interface TritonModel {
  initialize?(args: InitializeArgs): void | Promise<void>;
  /** A decoupled model returns nothing (undefined) and answers through each request's sender. */
  execute(requests: InferenceRequest[]): InferenceResponse[] | void | Promise<InferenceResponse[] | void>;
  finalize?(): void | Promise<void>;
}

/** The class a model module exports by default; `autoCompleteConfig` is optional. */
export interface TritonModelClass {
  new (): TritonModel;
  autoCompleteConfig?(config: object): object | Promise<object>;
}

export const TRITON_CODES: readonly TritonCode[] = ["INVALID_ARG", "NOT_FOUND", "UNAVAILABLE", "UNSUPPORTED", "INTERNAL", "ALREADY_EXISTS", "CANCELLED"];
