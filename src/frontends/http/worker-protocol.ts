/**
 * @module The messages between the main thread and the HTTP frontend's worker threads
 * (--http-thread-count > 1, under Bun). A worker accepts connections on the shared port
 * and answers inference requests itself, up to the point where the core takes over:
 * it reads and decodes the body and posts the InferenceRequest; the main thread runs it
 * and posts the InferenceResponse back for the worker to encode; for a model in the
 * worker's table (server/direct-models.ts) the worker runs it itself. Every other request,
 * and an inference request whose body the worker cannot decode (so that the main
 * thread reports its errors in Triton's order), is posted whole and answered by the
 * main thread's handler (routes.ts), a streamed body chunk by chunk: the worker
 * acknowledges each chunk once its response has taken it for the socket, and the main
 * thread keeps at most a window of them unacknowledged (SendWindow).
 */
import type { FromWorkerDirect, ToWorkerDirect } from "../worker-threads.ts";
import type { WireError } from "../../core/threads/wire-error.ts";
import type { LifecycleFrom, LifecycleTo } from "../../core/threads/worker-thread.ts";
import type { InferenceRequest, InferenceResponse } from "../../core/request.ts";
import { workerUrl } from "../../core/worker-url.ts";

/** Where a worker's entry (worker-entry.ts) is started from. */
export const httpWorkerEntry = (): string => workerUrl("src/frontends/http/worker-entry.ts", new URL("./worker-entry.ts", import.meta.url));

/** What a worker needs to serve. */
export interface WorkerConfig {
  address: string;
  port: number;
  maxInputSize: number;
  /** --http-header-forward-pattern as given (compiled again in the worker). */
  headerForwardPattern: string;
  /** False when --http-restricted-api restricts anything: then every request goes to the main thread, which checks. */
  decodeInfer: boolean;
  /**
   * The server's health (server/shared-health.ts), from which the worker answers GET
   * /v2/health/live and /ready itself; absent when --http-restricted-api restricts health
   * (then the main thread checks the header and answers).
   */
  health?: SharedArrayBuffer;
}

export type ToWorker =
  | LifecycleTo<WorkerConfig>
  /** The models the worker runs itself (#30; server/direct-models.ts). */
  | ToWorkerDirect
  | { t: "response"; id: number; response: InferenceResponse }
  | { t: "failed"; id: number; error: WireError }
  | { t: "reply"; id: number; status: number; headers: Record<string, string>; body?: Uint8Array | string }
  | { t: "head"; id: number; status: number; headers: Record<string, string> }
  | { t: "chunk"; id: number; data: string }
  | { t: "end"; id: number };

export type FromWorker =
  | LifecycleFrom
  | FromWorkerDirect
  | { t: "infer"; id: number; model: string; version?: string; request: InferenceRequest }
  | {
      t: "http";
      id: number;
      method: string;
      path: string;
      headers: [string, string][];
      body?: Uint8Array;
      /** Why the worker could not read the body (too large): the main thread's read fails the same way. */
      bodyError?: WireError;
    }
  | { t: "cancel"; id: number }
  /** The response of request `id` has taken `count` more of its chunks. */
  | { t: "ack"; id: number; count: number };
