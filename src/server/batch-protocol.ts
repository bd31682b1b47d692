/**
 * @module What the main thread and the scheduling thread say to each other (#30 item 2;
 * batch-thread.ts, batch-thread-entry.ts), and what a submitter and the scheduling
 * thread say over a channel's MessagePort when a request or result does not fit its
 * slot (batch-slots.ts). Requests themselves go through the slots, not these messages.
 */
import type { ModelConfig, ModelRateLimiter } from "../core/model-config-types.ts";
import type { RateLimitResourceFlag } from "../scheduler/rate-limiter.ts";
import type { SharedInstance } from "../backends/backend.ts";
import type { LogEntry } from "../core/logger.ts";
import type { ChannelPort, WireRequest, WireResult } from "./batch-slots.ts";

/** Main thread → scheduling thread. */
export type ToBatch =
  /**
   * A version to batch: its scheduler is made over borrowed `instances`; `counters` is
   * Int32 [in flight, queued], kept current; `stats` its executions' counters, one slot
   * (core/shared-stats.ts).
   */
  | {
      t: "add";
      id: number;
      name: string;
      config: ModelConfig;
      instances: SharedInstance[];
      counters: SharedArrayBuffer;
      stats: SharedArrayBuffer;
      sequence?: SequenceAdd;
      /** No batching: Triton's default scheduler (a rate-limited version; its instances carry their claims). */
      plain?: boolean;
    }
  /** Sent first: the count of record batches the thread has begun that the main thread has not applied yet (an Int32). */
  | { t: "recordBatches"; buffer: SharedArrayBuffer }
  /** Stop taking requests for `id`, drain it, release what was borrowed; answered `removed`. */
  | { t: "remove"; id: number }
  /** A submitter's channel: its slots' buffer and the MessagePort for what does not fit (transferred). */
  | { t: "channel"; buffer: SharedArrayBuffer; port: ChannelPort }
  /** Post the execution records held, then `flushed`. */
  | { t: "flush"; id: number }
  /**
   * A rate-limiter claim of an instance (S-19; batch-rate-limiter.ts): the thread's
   * RateLimiter, made with `flags` on the first claim, registers it as number `id`.
   */
  | { t: "claim"; id: number; flags: readonly RateLimitResourceFlag[]; model: string; spec: ModelRateLimiter; device: number }
  /** Hold claim `claim`'s resources when the limiter gives them; answered `granted` with `ticket`. */
  | { t: "acquire"; claim: number; ticket: number }
  | { t: "release"; claim: number }
  /** The claim's instance is closed: forget it. */
  | { t: "unclaim"; claim: number };

/** A sequence-batched version's part of `add`: its scheduler is a SequenceBatchScheduler; each state's initial value, read by the main thread. */
export interface SequenceAdd {
  initial: [string, Uint8Array][];
}

/** Scheduling thread → main thread. */
export type FromBatch =
  /** Executions the shared counters had no room for (a batch size beyond their table), EXEC_WIDTH numbers each: [version id, batch size, computeInputNs, computeInferNs, computeOutputNs]. */
  | { t: "records"; records: number[] }
  | { t: "flushed"; id: number }
  | { t: "removed"; id: number }
  /** An `acquire` holds its claim's resources now. */
  | { t: "granted"; ticket: number }
  /** What a logger on the thread logged (the sequence batcher: a restart, a reaped sequence), for the main thread's log under its settings. */
  | { t: "log"; entry: LogEntry }
  /** Something failed that no request can report (the main thread logs it). */
  | { t: "error"; message: string };

export const EXEC_WIDTH = 5;

/** Submitter → scheduling thread, over the channel's port. */
export type ToBatchPort = { t: "submit"; request: WireRequest } | { t: "cancel"; ref: number };

/** Scheduling thread → submitter, over the channel's port: a result that did not fit its slot (-1: the request came as a message). */
export type FromBatchPort = { t: "result"; ref: number; slot: number; result: WireResult };
