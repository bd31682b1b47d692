/**
 * @module What the main thread and the frontend workers say about the models the workers
 * run themselves (#30; direct-models.ts on the main thread, direct-runner.ts in a worker):
 * the table of versions, and the statistics records a worker posts where it does not
 * count in shared memory (core/shared-stats.ts).
 */
import type { TraceSampling } from "./trace-sampler.ts";
import type { RemoteCacheLink } from "../cache/cache.ts";
import type { ModelConfig } from "../core/model-config-types.ts";
import type { SharedInstance } from "../backends/backend.ts";
import type { SharedQueuedBytes } from "../core/queued-bytes.ts";
import type { SharedRegionLink } from "./shared-memory.ts";

/** One version the workers serve (structured-clonable). */
export interface DirectEntry {
  /** Unique for the life of the process: records name their version by it. */
  id: number;
  name: string;
  version: string;
  config: ModelConfig;
  /** None for a batched version, and for an ensemble (whose steps the worker runs through this table). */
  instances: SharedInstance[];
  /** A dynamically batched version: its id on the scheduling thread, where the worker submits its requests (no instances then). */
  batch?: number;
  /** The version's counters in shared memory, a slot per worker (SharedStatsWriter, with config.max_batch_size). */
  stats?: SharedArrayBuffer;
  /**
   * The version uses the response cache (the table's `cache` or `redis`), looked up before
   * it runs and filled after a miss: the model name its keys hold, as the main thread
   * keys it (cacheModelName).
   */
  cached?: string;
  /**
   * The lines of each output's label_filename (the classification extension), as the
   * version's load read them, written once into shared memory (sharedLabels): a table goes
   * to every worker on each publish, and label files may be large.
   */
  labels?: SharedArrayBuffer;
  /**
   * The version is traced now (the trace extension): the worker counts each request it
   * would run in the counter shared with the main thread, and leaves the ones chosen to the
   * main thread, which traces them (trace-sampler.ts).
   */
  trace?: TraceSampling;
}

/** What a worker serves: each route ("name\0version", and "name\0" for a request that names no version) to an entry id. */
export interface DirectTable {
  entries: DirectEntry[];
  routes: [string, number][];
  /** The server's count of bytes held by unanswered requests (--max-queued-bytes), which the workers' requests join. */
  queued?: SharedQueuedBytes;
  /**
   * The table's number, and the shared Int32 holding the newest one published: a worker
   * whose table is older than that (the new one is still on its way) hands its requests to
   * the main thread, so that a client who saw a load or unload answered never meets the
   * version it replaced in another worker.
   */
  generation?: number;
  published?: SharedArrayBuffer;
  /**
   * Every request's durations go to the main thread as records, not into the shared
   * counters: the server observes each request (--metrics-config summary_latencies or
   * histogram_latencies), which the counters cannot tell it.
   */
  records?: boolean;
  /** The server's response cache (SharedResponseCache's buffer), where a version in the table uses it. */
  cache?: SharedArrayBuffer;
  /** Or the link to the server's Redis cache (`--cache-config redis,...`), to which each worker then connects itself. */
  redis?: RemoteCacheLink;
  /** The system shared-memory regions registered (with --allow-client-shm), whose descriptors each worker borrows (direct-shared-memory.ts). */
  regions?: SharedRegionLink[];
}

/** A worker's statistics records, RECORD_WIDTH numbers each. */
export const RECORD_WIDTH = 8;
/** [SUCCESS, id, requestNs, computeInputNs, computeInferNs, computeOutputNs, batchSize, queueNs] */
export const SUCCESS = 1;
/** [FAILURE, id, requestNs, reason index in FAILURE_REASONS, 0, 0, 0, 0] */
export const FAILURE = 2;
/** A per-request backend's (typescript) execution, recorded whether its request then succeeds or fails: [EXECUTION, id, batchSize, computeInputNs, computeInferNs, computeOutputNs, 0, 0] */
export const EXECUTION = 3;
/** A success whose execution was recorded apart (an EXECUTION record, or counted by the scheduling thread for a batched version): [RESULT, id, requestNs, queueNs, computeInputNs, computeInferNs, computeOutputNs, 0] */
export const RESULT = 4;
/** A response-cache hit (no execution): [HIT, id, requestNs, lookupNs, 0, 0, 0, 0] */
export const HIT = 5;
/** A response-cache miss that then succeeded, its execution recorded apart: [MISS, id, requestNs, queueNs, computeInputNs, computeInferNs, computeOutputNs, lookup and insert ns] */
export const MISS = 6;
/** A response-cache miss whose request then failed (its outputs could not be put in order): [MISSED, id, lookup and insert ns, 0, 0, 0, 0, 0] */
export const MISSED = 7;

export const routeKey = (name: string, version: string | undefined) => `${name}\0${version ?? ""}`;

/** `labels` (output name → lines) as UTF-8 JSON in shared memory, for DirectEntry.labels. */
export function sharedLabels(labels: ReadonlyMap<string, readonly string[]>): SharedArrayBuffer {
  const bytes = new TextEncoder().encode(JSON.stringify([...labels]));
  const buffer = new SharedArrayBuffer(bytes.byteLength);
  new Uint8Array(buffer).set(bytes);
  return buffer;
}

/** What sharedLabels wrote. */
export function labelsOf(buffer: SharedArrayBuffer): Map<string, string[]> {
  // TextDecoder refuses a view of shared memory: decoded from a copy.
  return new Map(JSON.parse(new TextDecoder().decode(new Uint8Array(buffer).slice())) as [string, string[]][]);
}
