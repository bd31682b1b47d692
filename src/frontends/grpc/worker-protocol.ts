/**
 * @module The messages between the main thread and the gRPC frontend's worker threads
 * (--grpc-infer-thread-count > 1, under Bun). A worker runs grpc-js on the shared port:
 * it takes each call's HTTP/2 and protobuf work, and for ModelInfer the conversion to
 * an InferenceRequest and back, so the main thread only runs the core (and for a model
 * in the worker's table, server/direct-models.ts, not even that). A ModelStreamInfer
 * stream is served in the worker while its requests are for that table (worker-stream.ts).
 * Every other RPC, a ModelInfer the worker cannot convert (so that the main thread reports
 * its errors in Triton's order), and a stream from its first request for another model
 * are relayed to the main thread's handlers (service.ts, stream.ts), which answer them as
 * on one thread. The worker
 * acknowledges each message written to a stream once grpc-js has sent it, and the main
 * thread keeps at most a window of them unacknowledged (SendWindow).
 */
import type { InferenceResponse } from "../../core/request.ts";
import type { FromWorkerDirect, ToWorkerDirect, WorkerInfer } from "../worker-threads.ts";
import type { WireError } from "../../core/threads/wire-error.ts";
import type { LifecycleFrom, LifecycleTo } from "../../core/threads/worker-thread.ts";
import type { GrpcListenOptions } from "./server.ts";
import { workerUrl } from "../../core/worker-url.ts";

/** Where a worker's entry (worker-entry.ts) is started from; this module does not import grpc-js, so start-up can start workers before the frontend is imported. */
export const grpcWorkerEntry = (): string => workerUrl("src/frontends/grpc/worker-entry.ts", new URL("./worker-entry.ts", import.meta.url));

/** What a worker needs to serve: the listener's options, and the RPCs the main thread implements. */
export interface GrpcWorkerConfig {
  listen: GrpcListenOptions;
  inferenceMethods: string[];
  healthMethods: string[];
  /**
   * The server's health (server/shared-health.ts), from which the worker answers
   * ServerLive, ServerReady and Check itself (behind --grpc-restricted-protocol's check, as
   * every call here).
   */
  health?: SharedArrayBuffer;
}

/** A gRPC status as it crosses threads (grpc-js's metadata object does not). */
export interface WireStatus {
  code: number;
  details: string;
}

/** Call metadata as [key, value] pairs; `-bin` keys carry bytes. */
export type WireMetadata = [string, string | Uint8Array][];

export type ToGrpcWorker =
  | LifecycleTo<GrpcWorkerConfig>
  /** The models the worker runs itself (#30; server/direct-models.ts). */
  | ToWorkerDirect
  | { t: "response"; id: number; response: InferenceResponse }
  | { t: "failed"; id: number; error: WireError }
  | { t: "reply"; id: number; value: unknown }
  | { t: "status"; id: number; status: WireStatus }
  | { t: "write"; id: number; message: unknown }
  /** A request of stream `id` settled on the main thread (the worker reads at most MAX_STREAM_PENDING ahead of these). */
  | { t: "settled"; id: number }
  | { t: "end"; id: number };

export type FromGrpcWorker =
  | LifecycleFrom
  | FromWorkerDirect
  | ({ t: "infer"; id: number } & WorkerInfer)
  | { t: "unary"; id: number; service: "inference" | "health"; method: string; request: unknown; metadata: WireMetadata }
  | { t: "open"; id: number; metadata: WireMetadata }
  | { t: "data"; id: number; request: unknown }
  | { t: "halfClose"; id: number }
  | { t: "cancel"; id: number }
  /** Stream `id` has sent `count` more of the messages written to it. */
  | { t: "ack"; id: number; count: number };
