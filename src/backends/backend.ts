/**
 * @module The seam every runtime plugs into: ONNX Runtime today; TensorRT, OpenVINO and
 * TypeScript (`model.ts`) backends later. A Backend turns a model version on disk into a
 * BackendModel; the model makes one BackendInstance per instance-group slot; an instance
 * executes one already-formed batch at a time.
 *
 * Ownership: a BackendModel owns its native resources until close(); an instance owns its
 * own until close(). Callers close every instance before the model, each exactly once.
 */
import type { Tensor } from "../core/tensor.ts";
import type { ModelConfig } from "../core/model-config-types.ts";
import type { ModelFileIO } from "../model-config/model-file-io.ts";
import type { PreparedRequest } from "../core/request-validate.ts";
import type { Parameters } from "../core/request.ts";
import type { ServerError } from "../core/errors.ts";
import type { ModelRunner } from "../core/runner.ts";

export type { ModelFileIO, TensorSpec } from "../model-config/model-file-io.ts";

export interface BackendLoadContext {
  /** Config after auto-complete and normalization. */
  config: ModelConfig;
  modelName: string;
  version: number;
  /** `<repo>/<model>` */
  modelDir: string;
  /** The model file or directory inside the version folder. */
  modelPath: string;
  /** `--backend-config=<this backend>,key=value` settings. */
  backendConfig: Record<string, string>;
  /**
   * The backend found, after the load, that the model can no longer serve (an instance
   * that failed and could not be restarted): the version becomes UNAVAILABLE with `reason`.
   */
  unavailable?(reason: string): void;
  /** The server's inference entry, for a model's BLS calls into other models. */
  runner: ModelRunner;
}

export interface ExecuteResult {
  outputs: Tensor[];
  /** Nanosecond durations for statistics, measured by the backend where it can. */
  computeInputNs?: number;
  computeInferNs?: number;
  computeOutputNs?: number;
}

/** One request's result from a per-request execution: its outputs (and response parameters), or the error that fails it alone. */
export type RequestOutcome =
  | { outputs: Tensor[]; parameters?: Parameters; error?: undefined }
  | { error: ServerError; outputs?: undefined; parameters?: undefined };

export interface RequestsResult {
  /** One per request, in order. */
  outcomes: RequestOutcome[];
  computeInputNs?: number;
  computeInferNs?: number;
  computeOutputNs?: number;
}

export interface BackendInstance {
  readonly name: string;
  /**
   * Runs one batch. Inputs are validated against the config and, for batching models,
   * already carry the batch dimension. Returns the requested outputs (all when empty).
   * Must not block the event loop for long.
   */
  execute(inputs: Tensor[], outputNames: readonly string[]): Promise<ExecuteResult>;
  /**
   * Optional per-request execution (the `typescript` backend): the schedulers hand the
   * requests of one batch over unmerged, and each gets its own outcome. When present the
   * schedulers call it instead of concatenating inputs and splitting outputs.
   */
  executeRequests?(requests: readonly PreparedRequest[]): Promise<RequestsResult>;
  /**
   * Optional: ends the work in flight now (an unload whose drain outlasted its grace):
   * every execution still running fails with `error`, and the instance serves no more.
   * close() still follows.
   */
  abort?(error: ServerError): void;
  /**
   * Optional: resolves once nothing another thread sent straight to the instance is waiting
   * or running in it (share: a typescript worker's executes), or once it is aborted or closed;
   * an unload's drain waits for it as for its scheduler.
   */
  idle?(): Promise<void>;
  /**
   * Optional: this instance as other threads may run it without the main thread (a
   * stateless model served straight from the frontend workers); see borrowInstance.
   */
  share?(): SharedInstance;
  /**
   * Optional, on a rate-limited instance while the limiter runs on the scheduling thread
   * (repository/loader.ts): the instance as that thread runs it, taking its claim there
   * before each execution. Never a frontend worker's: it would skip the limiter.
   */
  shareLimited?(): SharedInstance;
  close(): void;
}

/**
 * An instance another thread can run (structured-clonable): the backend that made it,
 * and what its borrowInstance needs. Only the owner releases what it points at.
 */
export interface SharedInstance {
  backend: string;
  /** The rate limiter's claim (on the scheduling thread) that each execution holds, when the instance has one. */
  claim?: number;
  spec: unknown;
}

/** Another thread's instance as a frontend worker runs it (see backends/borrow.ts). */
export interface BorrowedInstance {
  /** Runs as execute() does, inside the owner's guard; undefined (nothing run) once the owner has retired the instance. */
  executeBorrowed(inputs: Tensor[], outputNames: readonly string[]): Promise<ExecuteResult | undefined>;
  /**
   * Per-request backends (typescript, #30): runs one prepared request as the owner's
   * executeRequests would, its time waiting in the instance as `queueNs`; undefined
   * (nothing run) when the main thread must run it. With `own` false the request's input
   * buffers are not its own (an ensemble's tensors, which other steps read): they are copied
   * to the instance, never transferred.
   */
  runPrepared?(prepared: PreparedRequest, own?: boolean): Promise<PreparedRun | undefined>;
  /** How busy the instance is now, any thread's work counted (the least busy is chosen); undefined: it cannot take a request from this thread yet. */
  load?(): number | undefined;
  /** Where an instance that runs in a thread of its own takes the channel to it: the main thread's answer to a connect of `key`. */
  readonly key?: string;
  attach?(port: MessagePort | undefined, live?: number): void;
  /** The main thread's word that the instance's thread ended (`error`: what its requests fail with there; none: its owner stopped it). */
  ended?(error: ServerError | undefined): void;
  /** Frees what this thread made for it; the owner's resources stay the owner's. */
  close(): void;
  /** After close(): whether it still holds requests (which the owner's word, ended(), may fail); `done` is told once it holds none. */
  closing?(done: () => void): boolean;
}

/** One request's run on a borrowed per-request instance (runPrepared). */
export interface PreparedRun {
  outcome: RequestOutcome;
  queueNs: number;
  computeInputNs: number;
  computeInferNs: number;
  computeOutputNs: number;
}

export interface BackendModel {
  createInstance(name: string, kind: "KIND_CPU" | "KIND_GPU" | "KIND_MODEL", deviceId: number): Promise<BackendInstance>;
  close(): void;
}

export interface Backend {
  /** Triton backend name: "onnxruntime", "tensorrt", "openvino". */
  readonly name: string;
  /** Triton platform name this backend also answers to, if any ("onnxruntime_onnx"). */
  readonly platform?: string;
  /** Default model filename in a version folder ("model.onnx"). */
  readonly defaultModelFilename: string;
  /**
   * Where KIND_GPU instances run. "cuda" (the default): on the CUDA driver's devices, so a
   * KIND_GPU group on a host without one is refused before the backend sees it. "own":
   * the backend checks the device itself (OpenVINO's GPU plugin drives Intel GPUs).
   */
  readonly gpus?: "cuda" | "own";
  /** Runs only on GPUs (TensorRT): KIND_AUTO becomes KIND_GPU on every CUDA device when there are any. */
  readonly gpuOnly?: boolean;
  /** Other file names auto-detection looks for when the config names none ("model.js"). */
  readonly otherModelFilenames?: readonly string[];
  /** Completes a config in Triton's JSON form from the model file itself (the TypeScript model's static autoCompleteConfig). */
  autoComplete?(config: ModelConfig, modelPath: string): Promise<ModelConfig>;
  /** Reads the model file's declared inputs and outputs, for auto-complete. */
  describe?(modelPath: string, backendConfig: Record<string, string>): Promise<ModelFileIO>;
  load(ctx: BackendLoadContext): Promise<BackendModel>;
}
