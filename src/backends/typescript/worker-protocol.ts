/**
 * @module The messages between the main thread and a worker-thread instance of a
 * `typescript` model (worker.ts the main side, worker-entry.ts the worker's), carried by
 * the worker-thread kit (core/threads/). The worker imports the model's module and runs
 * its initialize, execute and finalize; requests go in as plain data (structured clone),
 * responses, logger lines, custom-metrics calls, BLS calls and decoupled sends come out.
 * Each message is posted at once (not batched): `fatal` must leave before the worker ends.
 * What the worker posts comes from a realm the model's code runs in, so the main side
 * checks what it relies on (a message it cannot handle ends the worker).
 */
import type { Message as MetricMessage } from "../custom-metrics.ts";
import type { BlsRequest, BlsResponse, InferenceRequest, InferenceResponse, InitializeArgs } from "./api.ts";

/** An error as it crosses from the model's realm: its message, and the code and stack when it had them. */
export interface ModelError {
  message: string;
  code?: string;
  stack?: string;
}

/** A request as the worker receives it: plain data, and whether it was already cancelled. */
export type PlainRequest = Pick<InferenceRequest, "id" | "inputs" | "requestedOutputNames" | "parameters" | "correlationId" | "flags"> & {
  cancelled: boolean;
};

/** A BLS call as posted (its signal stays in the worker: `blsCancel` aborts it). */
export type BlsCall = Omit<BlsRequest, "signal">;

/** A BLS response as posted (the worker adds `output`). */
export type PlainBlsResponse = Omit<BlsResponse, "output">;

/** The model's initialize arguments that cross (its logger and metrics are the worker's own). */
export type PlainInitializeArgs = Omit<InitializeArgs, "logger" | "metrics">;

export type LogLevel = "info" | "warn" | "error" | "verbose";

/** Main thread to worker. */
export type ToModelWorker =
  /** Import the module and run initialize: answered by `ready` or `initError`. */
  | { t: "init"; url: string; path: string; args: PlainInitializeArgs }
  /** Import the module and run its static autoCompleteConfig: answered by `config` or `configError`. */
  | { t: "autoComplete"; url: string; path: string; config: object }
  /** Run execute on these requests: answered by `done` with the same id. */
  | { t: "execute"; id: number; requests: PlainRequest[] }
  /** Request `index` of execute `id` is cancelled. */
  | { t: "cancel"; id: number; index: number }
  /** The custom-metrics scope's reply to a `metric` call. */
  | { t: "metricReply"; m: MetricMessage }
  | { t: "blsResult"; id: number; response: PlainBlsResponse; error?: undefined }
  | { t: "blsResult"; id: number; error: ModelError; response?: undefined }
  | { t: "blsStreamItem"; id: number; response: PlainBlsResponse }
  /** The BLS stream `id` is over (with `error` when it failed). */
  | { t: "blsStreamEnd"; id: number; error?: ModelError }
  /** Run finalize (after the executes queued here, a frontend worker's included): answered by `finalized`. */
  | { t: "finalize" }
  /** Serve a frontend worker's requests on this port (ToInstancePort in, FromInstancePort out; #30); `ended[0]`'s bit 0 is set when a fault ends the worker, before it is reported, if it still holds `live` (endedSlot). */
  | { t: "port"; port: MessagePort; ended: Int32Array; live: number };

/**
 * A frontend worker to the instance, over a port of its own (#30): the requests of a
 * model version the frontend workers serve themselves, without the main thread. Executes
 * run one at a time, in arrival order, whichever thread sent them.
 */
export type ToInstancePort =
  /** Run execute on these requests: answered by `done` or `retired` with the same id. `buffers`: those transferred with it. */
  { t: "execute"; id: number; requests: PlainRequest[]; buffers: ArrayBuffer[] } | { t: "cancel"; id: number; index: number };

export type FromInstancePort =
  /** The worker serves the port now (its first message): a fault from here on is told on it, and what is unread on it handed back. */
  | { t: "serving" }
  /** `waitNs`: how long the execute waited behind others here. */
  | { t: "done"; id: number; waitNs: number; responses: InferenceResponse[] | undefined; thrown?: undefined }
  | { t: "done"; id: number; waitNs: number; thrown: ModelError; responses?: undefined }
  /** Every request of it was cancelled while it waited here: nothing ran (the default scheduler's queue drops such a request too). */
  | { t: "cancelled"; id: number }
  /** The instance is finalizing: nothing ran; the request's transferred buffers come back, for the main thread to run it. */
  | { t: "retired"; id: number; buffers: ArrayBuffer[] }
  /**
   * The model left a fault (as FromModelWorker's `fatal`): the worker ends next, and what it
   * held fails with `reason`, but for `back`: the executes that had not started, their
   * transferred buffers returned (the main thread runs them, as one thread's queue keeps them).
   */
  | { t: "fatal"; reason: string; back: { id: number; buffers: ArrayBuffer[] }[] };

/**
 * The instance's ENDED slot (direct.ts), one Int32 shared by every thread: bit 0 is set
 * from the moment its worker ends until a fresh one is ready; the bits above count the
 * workers that became ready (a generation). A worker marks the slot only while it still
 * holds the value it was connected under (`live`), so a worker the main thread already
 * ended that reports a fault after its successor is ready leaves the slot alone.
 */
export const endedSlot = {
  /** Whether the current worker has ended and no fresh one is ready yet. */
  isEnded: (slot: Int32Array, i: number): boolean => (Atomics.load(slot, i) & 1) === 1,
  /** The owner ends the current worker. */
  end: (slot: Int32Array, i: number): void => void Atomics.or(slot, i, 1),
  /** A worker connected under `live` reports its own fault: marked only if it is still the current one. */
  endIf: (slot: Int32Array, i: number, live: number): void => void Atomics.compareExchange(slot, i, live, live | 1),
  /** A fresh worker is ready: the next generation, not ended (the owner only, after end). */
  started: (slot: Int32Array, i: number): void => void Atomics.store(slot, i, (Atomics.load(slot, i) | 1) + 1),
};

/** The error message of the requests an instance's worker held when it ended, `how` it ended ("ended: <reason>" after a fatal), on every thread alike. */
export const workerEnded = (model: string, instance: string, how: string): string => `model '${model}' instance ${instance}: the worker ${how}`;

/** Worker to main thread. */
export type FromModelWorker =
  | { t: "ready" }
  | { t: "initError"; error: ModelError }
  | { t: "config"; found: boolean; config: unknown }
  /** Where autoComplete failed: importing the module, finding its class, or in autoCompleteConfig. */
  | { t: "configError"; stage: "import" | "class" | "autoComplete"; error: ModelError }
  /** The model left a fault (unhandled rejection, uncaught exception, process.exit): the worker ends next. `started`: the id of the last execute that started (-1: none); every later one never started, read or not (the restarted worker runs them). */
  | { t: "fatal"; reason: string; started: number }
  | { t: "log"; level: LogLevel; msg: string }
  | { t: "done"; id: number; responses: InferenceResponse[] | undefined; thrown?: undefined }
  | { t: "done"; id: number; thrown: ModelError; responses?: undefined }
  /** A BLS call for request `index` of execute `exec` (-1: an execute a frontend worker sent over its port): answered by `blsResult`. */
  | { t: "bls"; id: number; exec: number; index: number; call: BlsCall }
  /** A streamed BLS call: answered by `blsStreamItem`s, then `blsStreamEnd`. */
  | { t: "blsStream"; id: number; exec: number; index: number; call: BlsCall }
  | { t: "blsCancel"; id: number }
  /** A decoupled response of request `index` of execute `exec`. */
  | { t: "send"; exec: number; index: number; response: InferenceResponse | undefined; final: boolean }
  /** A custom-metrics call (../custom-metrics.ts), answered by `metricReply` where it asks a value. */
  | { t: "metric"; m: MetricMessage }
  | { t: "finalized" };
