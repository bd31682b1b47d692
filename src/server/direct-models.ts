/**
 * @module The models the frontend worker threads run themselves (#30), main thread's half.
 * A version qualifies when its requests need no state shared across requests: the default
 * scheduler (not decoupled), no rate limiter, traced only without the response cache or
 * sequence batching (the worker counts its requests for the sampling rate and leaves the
 * chosen ones to the main thread, which traces them: server/trace-sampler.ts), the
 * response cache only where every thread reaches the same one (the local cache in shared memory,
 * cache/shared-cache.ts, or Redis, to which each worker connects itself; the workers look
 * up and fill it themselves), and instances another thread can run (ONNX Runtime sessions:
 * OrtSession::Run is thread-safe; a TypeScript model's worker-thread instances, reached
 * over a port per frontend worker); or dynamic or sequence batching, or the rate limiter,
 * on the scheduling thread (whose requests, sequence parameters included, the workers
 * submit there); or an ensemble whose every step's model qualifies (stepsServedByWorkers).
 * The table of them is published to every subscriber (each frontend worker) after any
 * version changes state, the trace settings change, a repository control ends or a system
 * shared-memory region is registered or dropped; a worker answers a request for a
 * version in its table without a message to the main thread, and counts its requests in
 * the version's shared counters, a slot per worker (core/shared-stats.ts), which settle()
 * folds into the version's statistics when they are read. Where the server observes each
 * request (summary or histogram latencies), or a worker has no slot, the worker posts
 * records instead (applyRecords), and settle() first has each worker that holds some post
 * them. Either way the statistics and metrics equal the one-thread path's.
 *
 * Lifecycle: a version leaves the table when it leaves READY; its sessions are released
 * only after every worker's runs inside them have ended (OrtSession's shared guard), and
 * a worker whose session has been retired hands the request to the main thread instead.
 */
import { nowNs } from "../core/clock.ts";
import { getLogger } from "../core/logger.ts";
import { FAILURE_REASONS } from "../core/stats.ts";
import { SharedStatsReader, sharedStatsBuffer } from "../core/shared-stats.ts";
import { onModelStateChange } from "../repository/model-version.ts";
import { isEnsemble } from "../model-config/normalize.ts";
import { ensembleSteps, stepInflightLimit, stepVersion } from "../scheduler/ensemble-scheduler.ts";
import { EXECUTION, HIT, MISS, MISSED, RECORD_WIDTH, RESULT, routeKey, sharedLabels, SUCCESS, type DirectEntry, type DirectTable } from "./direct-table.ts";
import { batchThreadOf, threadedBatchId, type BatchChannel } from "./batch-thread.ts";
import type { ModelVersion } from "../repository/model-version.ts";
import type { InferenceServer } from "./server.ts";
import type { InferenceRequest, InferenceResponse } from "../core/request.ts";
import { SharedResponseCache } from "../cache/shared-cache.ts";
import { cacheModelName } from "../cache/cache-key.ts";
import type { RemoteCacheLink } from "../cache/cache.ts";

/** The server's response cache as every thread can reach it: the local cache's buffer, or the Redis cache's settings (each worker connects itself). */
function sharedCacheOf(server: InferenceServer): { cache: SharedArrayBuffer } | { redis: RemoteCacheLink } | undefined {
  const cache = server.responseCache;
  if (cache instanceof SharedResponseCache) return { cache: cache.buffer };
  if (cache?.link) return { redis: cache.link };
  return undefined;
}

/** Whether `mv`'s requests may run in the frontend workers (see the module comment); `depth`: how deep in ensembles it is a step. */
export function servedByWorkers(server: InferenceServer, mv: ModelVersion, depth = 0): boolean {
  const c = mv.config;
  if (!mv.ready) return false;
  if (c.model_transaction_policy?.decoupled === true) return false;
  // A traced version not with the response cache (a chosen request would be looked up twice, its miss
  // counted twice), nor with sequence batching (a chosen request, handed to the main thread, would reach
  // the sequence batcher after the requests a stream sent after it).
  if (server.trace?.mayTrace(mv.name) && (server.cacheEnabled(mv) || c.sequence_batching)) return false;
  // The response cache only where every thread reaches the same one (SharedResponseCache, or Redis).
  if (server.cacheEnabled(mv) && !sharedCacheOf(server)) return false;
  // A sequence-batched version only where its sequence batcher runs on the scheduling thread, and not as an ensemble's step.
  if (c.sequence_batching) return depth === 0 && threadedBatchId(mv) !== undefined;
  if (isEnsemble(c)) return depth < MAX_NESTING && stepsServedByWorkers(server, mv, depth);
  // A dynamically batched version only where its batcher runs on the scheduling thread (batch-thread.ts).
  if (c.dynamic_batching) return threadedBatchId(mv) !== undefined;
  // A rate-limited version whose limiter and scheduler run there (its instances have no share()).
  if (threadedBatchId(mv) !== undefined) return true;
  const instances = mv.instances;
  return instances.length > 0 && instances.every((i) => typeof i.share === "function");
}

/**
 * An ensemble runs in the workers (its steps through the worker's table, the ensemble
 * scheduler's own logic) when the model every step names, resolved as the main thread
 * resolves it now, runs there too (an ensemble step: recursively). Not with
 * max_inflight_requests: its bound counts every thread's requests.
 */
function stepsServedByWorkers(server: InferenceServer, mv: ModelVersion, depth: number): boolean {
  if (mv.namespace !== "" || stepInflightLimit(mv.config) > 0) return false;
  return ensembleSteps(mv.config).every((s) => {
    const step = resolved(server, s.model_name ?? "", stepVersion(s));
    return step !== undefined && servedByWorkers(server, step, depth + 1);
  });
}

/** Ensembles inside ensembles the workers follow (the repository refuses a cycle; this bounds the walk regardless). */
const MAX_NESTING = 8;

const log = getLogger("src/server/direct-models.ts");

export class DirectModels {
  readonly #server: InferenceServer;
  /** Each worker, and its slot in the versions' shared counters (none: it posts records). */
  readonly #subscribers = new Map<Subscriber, number | undefined>();
  /** Slots in each version's shared counters: one per worker the listeners start. */
  readonly #slots: number;
  /** Each worker's slot, kept after it unsubscribes (until it has ended, it may still hold what its slot counts). */
  readonly #slotOf = new WeakMap<Subscriber, number>();
  /** The next slot to give: a slot is never given twice (a stopped worker may still write its own for a while). */
  #nextSlot = 0;
  /** Versions by entry id, while a worker may still post records for them. */
  readonly #byId = new Map<number, ModelVersion>();
  /** The shared counters' readers, by entry id (as long as #byId holds the id). */
  readonly #readers = new Map<number, SharedStatsReader>();
  readonly #ids = new WeakMap<ModelVersion, DirectEntry>();
  /** Entry ids gone from the table, and since when (their records are still applied for a while). */
  readonly #retired = new Map<number, number>();
  #nextId = 1;
  /** The number of the newest table published (DirectTable.generation), shared with every worker. */
  readonly #published = new Int32Array(new SharedArrayBuffer(4));
  #scheduled = false;
  #stopped = false;
  readonly #unsubscribe: (() => void)[];

  /**
   * Follows `server`'s model versions and trace settings, and joins the statistics it
   * settles (server.statisticsSettled). `slots`: how many workers will subscribe (a
   * worker beyond them posts records).
   */
  constructor(server: InferenceServer, slots = 0) {
    this.#server = server;
    this.#slots = slots;
    this.#unsubscribe = [onModelStateChange(() => this.changed())];
    server.onRepositoryControlled(() => this.#publish());
    if (server.trace) this.#unsubscribe.push(server.trace.onUpdate(() => this.changed()));
    // At once, as a repository control: a client who saw a region unregistered never has a worker use it.
    this.#unsubscribe.push(server.onSharedMemoryChange(() => this.#publish()));
    server.addStatisticsSource(this);
  }

  /** A worker starts taking tables: it gets the current one now. */
  subscribe(s: Subscriber): () => void {
    const slot = this.#nextSlot < this.#slots ? this.#nextSlot++ : undefined;
    this.#subscribers.set(s, slot);
    if (slot !== undefined) this.#slotOf.set(s, slot);
    const table = this.#stopped ? this.#empty() : this.#stamped(this.#table(), Atomics.load(this.#published, 0));
    this.#describe(table);
    s.publish(table, slot);
    return () => this.#subscribers.delete(s);
  }

  /** Worker `s` ended (its thread runs no more code, stopped or not): what it held in shared memory goes back. */
  ended(s: Subscriber): void {
    this.#subscribers.delete(s);
    const slot = this.#slotOf.get(s);
    if (slot !== undefined) this.#server.frontendWorkerEnded(slot);
  }

  /** A channel from a worker to the scheduling thread, when batched versions run there (batch-thread.ts). */
  batchChannel(): BatchChannel | undefined {
    return batchThreadOf(this.#server)?.connect();
  }

  /**
   * An ensemble's step that a worker could not run itself (its model left the worker's
   * table, or its instance was retired, while the ensemble ran there): run here as the
   * main thread runs a step (ModelRunner.inferStep), so its answer and statistics are one thread's.
   */
  step(request: InferenceRequest): Promise<InferenceResponse> {
    return this.#server.inferStep(request);
  }

  /** What the workers serve now, as "name:version" (for the log, and tests). */
  #described = "";
  #describe(table: DirectTable): void {
    const names = (batched: boolean) =>
      table.entries
        .filter((e) => (e.batch !== undefined) === batched)
        .map((e) => `${e.name}:${e.version}`)
        .join(", ");
    const text = names(false);
    const batched = names(true);
    if (`${text}\n${batched}` === this.#described) return;
    this.#described = `${text}\n${batched}`;
    log.verbose(1, `frontend worker threads run these model versions themselves: ${text || "(none)"}`);
    if (batched) log.verbose(1, `frontend worker threads submit these model versions' requests to the scheduling thread: ${batched}`);
  }

  /** Something that decides the table changed: publish it again (once per turn). */
  changed(): void {
    if (this.#scheduled || this.#stopped) return;
    this.#scheduled = true;
    // Synchronously enough that no request reaches a version after its unload began:
    // a microtask runs before the unload's drain can finish.
    queueMicrotask(() => {
      if (this.#scheduled) this.#publish();
    });
  }

  /** Publishes the table now (a change waiting for its microtask goes with it). */
  #publish(): void {
    this.#scheduled = false;
    if (this.#stopped) return;
    const table = this.#stamped(this.#table(), Atomics.add(this.#published, 0, 1) + 1);
    this.#describe(table);
    for (const [s, slot] of this.#subscribers) s.publish(table, slot);
  }

  #stamped(table: DirectTable, generation: number): DirectTable {
    table.generation = generation;
    table.published = this.#published.buffer as SharedArrayBuffer;
    return table;
  }

  /** The server is stopping: the workers hand everything to the main thread, which refuses it as it should. */
  stop(): void {
    this.#stopped = true;
    for (const stop of this.#unsubscribe) stop();
    const empty = this.#empty();
    for (const [s, slot] of this.#subscribers) s.publish(empty, slot);
  }

  /** Folds the shared counters into the versions' statistics, and has every worker that holds records post them; resolves once they are applied. */
  async settle(): Promise<void> {
    this.fold();
    await Promise.all([...this.#subscribers.keys()].map((s) => s.flush()));
    // What was counted while the records came: so that a record's execution is not read without its request's success.
    this.fold();
  }

  /** Folds what the workers counted in the shared counters since the last fold into the versions' statistics. */
  fold(): void {
    for (const [id, reader] of this.#readers) {
      const mv = this.#byId.get(id);
      if (mv) reader.fold(mv.stats);
    }
  }

  /** Applies a worker's records to the versions' statistics, as the one-thread path records them. */
  applyRecords(records: ArrayLike<number>): void {
    const server = this.#server;
    for (let i = 0; i + RECORD_WIDTH <= records.length; i += RECORD_WIDTH) {
      const mv = this.#byId.get(records[i + 1]!);
      if (!mv) continue;
      const requestNs = records[i + 2]!;
      if (records[i] === SUCCESS) {
        const ci = records[i + 3]!;
        const cinf = records[i + 4]!;
        const co = records[i + 5]!;
        const queueNs = records[i + 7]!;
        mv.stats.recordExecution(records[i + 6]!, ci, cinf, co);
        mv.stats.recordSuccess(requestNs, queueNs, ci, cinf, co);
        server.observeSuccess(mv, { requestNs, queueNs, computeInputNs: ci, computeInferNs: cinf, computeOutputNs: co });
      } else if (records[i] === EXECUTION) {
        mv.stats.recordExecution(records[i + 2]!, records[i + 3]!, records[i + 4]!, records[i + 5]!);
      } else if (records[i] === RESULT || records[i] === MISS) {
        const [queueNs, ci, cinf, co] = [records[i + 3]!, records[i + 4]!, records[i + 5]!, records[i + 6]!];
        const miss = records[i] === MISS ? { cacheMissNs: records[i + 7]! } : {};
        if (miss.cacheMissNs !== undefined) mv.stats.recordCacheMiss(miss.cacheMissNs);
        mv.stats.recordSuccess(requestNs, queueNs, ci, cinf, co);
        server.observeSuccess(mv, { requestNs, queueNs, computeInputNs: ci, computeInferNs: cinf, computeOutputNs: co, ...miss });
      } else if (records[i] === MISSED) {
        mv.stats.recordCacheMiss(requestNs);
      } else if (records[i] === HIT) {
        const lookupNs = records[i + 3]!;
        mv.stats.recordCacheHit(requestNs, 0, lookupNs);
        server.observeSuccess(mv, { requestNs, queueNs: 0, cacheHitNs: lookupNs });
      } else {
        mv.stats.recordFailure(requestNs, FAILURE_REASONS[records[i + 3]!] ?? "OTHER");
      }
    }
  }

  /** A table of nothing (the server stops): requests still running in a worker are counted as before it (records where the server observes each). */
  #empty(): DirectTable {
    return this.#server.observing ? { entries: [], routes: [], records: true } : { entries: [], routes: [] };
  }

  #table(): DirectTable {
    const server = this.#server;
    const entries: DirectEntry[] = [];
    const routes: [string, number][] = [];
    const live = new Set<number>();
    const entryOf = (mv: ModelVersion): DirectEntry | undefined => {
      if (!servedByWorkers(server, mv)) return undefined;
      let e = this.#ids.get(mv);
      if (!e) {
        const batch = threadedBatchId(mv);
        const instances = batch === undefined && !isEnsemble(mv.config) ? mv.instances.map((i) => i.share!()) : [];
        e = { id: this.#nextId++, name: mv.name, version: String(mv.version), config: mv.config, instances, ...(batch !== undefined ? { batch } : {}) };
        if (server.cacheEnabled(mv)) e.cached = cacheModelName(mv.name, mv.namespace);
        if (mv.labels.size > 0) e.labels = sharedLabels(mv.labels);
        if (this.#slots > 0) {
          e.stats = sharedStatsBuffer(this.#slots, mv.config.max_batch_size ?? 0);
          this.#readers.set(e.id, new SharedStatsReader(e.stats));
        }
        this.#ids.set(mv, e);
        this.#byId.set(e.id, mv);
      }
      if (!live.has(e.id)) {
        live.add(e.id);
        // Under the trace settings of this table (they change without a new entry).
        const trace = server.trace?.sampling(mv.name);
        if (trace) e.trace = trace;
        else delete e.trace;
        entries.push(e);
      }
      return e;
    };
    for (const { name, version } of server.repositoryIndex(true)) {
      if (version === undefined) continue;
      const mv = resolved(server, name, version);
      const e = mv && entryOf(mv);
      if (e) routes.push([routeKey(name, version), e.id]);
      // The version a request that names none gets, when it qualifies.
      const latest = resolved(server, name, undefined);
      if (latest === mv && e) routes.push([routeKey(name, undefined), e.id]);
    }
    // Records of versions gone from the table may still come (posted before the worker saw
    // the new table); they are kept for a while after, then forgotten.
    const now = nowNs();
    for (const id of this.#byId.keys()) if (!live.has(id)) this.#retired.set(id, this.#retired.get(id) ?? now);
    for (const [id, since] of this.#retired) {
      if (live.has(id)) this.#retired.delete(id);
      else if (now - since > RETIRED_RECORDS_NS) {
        const mv = this.#byId.get(id);
        if (mv) {
          this.#readers.get(id)?.fold(mv.stats);
          // Should the version qualify again, it gets a new entry (id, counters and reader): this one is forgotten.
          if (this.#ids.get(mv)?.id === id) this.#ids.delete(mv);
        }
        this.#retired.delete(id);
        this.#byId.delete(id);
        this.#readers.delete(id);
      }
    }
    const table: DirectTable = { entries, routes, queued: server.queued.share(), ...(server.observing ? { records: true } : {}) };
    const regions = server.sharedMemoryRegions();
    if (regions.length > 0) table.regions = regions;
    const cache = sharedCacheOf(server);
    if (cache && entries.some((e) => e.cached !== undefined)) Object.assign(table, cache);
    return table;
  }
}

/** How long records of a version gone from the table are still applied (and its shared counters folded). */
const RETIRED_RECORDS_NS = 60e9;

/** A worker as the table sees it: it takes tables, and posts its records when asked. */
export interface Subscriber {
  /** `slot`: the worker's in every entry's shared counters (DirectEntry.stats); none: it posts records. */
  publish(table: DirectTable, slot: number | undefined): void;
  /** Resolves once the worker has posted (and the main thread applied) every record it held. */
  flush(): Promise<void>;
}

function resolved(server: InferenceServer, name: string, version: string | undefined): ModelVersion | undefined {
  try {
    return server.resolve(name, version).version;
  } catch {
    return undefined;
  }
}
