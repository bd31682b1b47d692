/**
 * @module The models a frontend worker thread runs itself (#30), the worker's half (the
 * main thread's is direct-models.ts). For a version in the table it does what the main
 * thread's core does for a default-scheduled model: validate the request against the
 * config (Triton's order and wording), run a borrowed instance (an ONNX Runtime session in
 * this thread, or a TypeScript instance's worker reached over a port: runPrepared, whose
 * execution is recorded apart from its outcome; for a dynamically batched version: submit
 * it to the scheduling thread, batch-client.ts), put the outputs in the order and shapes
 * asked for, classified where asked and written into the system shared-memory regions
 * named (a version with the response cache: looked up first, and a miss's answer
 * stored, in the one cache every thread shares, cache/shared-cache.ts, or in Redis over
 * this worker's own connection, cache/redis-cache.ts), and count the statistics: in the
 * version's shared counters, this worker's slot (core/shared-stats.ts), or where the table
 * says so (or the worker has no slot) as records that go to the main thread in batches. An
 * ensemble runs here through the ensemble scheduler itself, each step as the core's
 * inferStep runs it (no bytes admitted, no failure logged): on a version in the table
 * here, or, when its model left the table or its instance was retired mid-ensemble, on the
 * main thread (the `relay`), so that it gets one thread's answer. A request it cannot
 * answer exactly as the main thread would (sequence parameters for a version without a
 * sequence batcher here, a shared-memory region it does not hold (direct-shared-memory.ts),
 * control parameters that do not parse, a version not in its table or just retired) is
 * left to the main thread: run() returns undefined. So is a traced version's request that
 * the sampling rate chooses, once counted (trace-sampler.ts; its answer rejects with
 * RETIRED), which the main thread then traces.
 */
import { nowNs } from "../core/clock.ts";
import { ServerError, cancelled } from "../core/errors.ts";
import { prepareForInference } from "../core/request-validate.ts";
import { signatureOf, type ModelSignature } from "../core/signature.ts";
import { orderedOutputs } from "../core/outputs.ts";
import { classifyOutputs } from "./classification.ts";
import { DirectSharedMemory, type RegionHolds } from "./direct-shared-memory.ts";
import { outputsToSharedMemory, readInputsFromSharedMemory, regionsNamed } from "./shared-memory.ts";
import { FAILURE_REASONS, type FailureReason } from "../core/stats.ts";
import { SharedStatsWriter } from "../core/shared-stats.ts";
import { borrowInstance } from "../backends/borrow.ts";
import { QueuedBytes } from "../core/queued-bytes.ts";
import { EXECUTION, FAILURE, HIT, MISS, MISSED, RESULT, labelsOf, routeKey, SUCCESS, type DirectEntry, type DirectTable } from "./direct-table.ts";
import { cacheKey } from "../cache/cache-key.ts";
import { SharedResponseCache } from "../cache/shared-cache.ts";
import type { ResponseCache } from "../cache/cache.ts";
import { getLogger } from "../core/logger.ts";
import { addStepTimes, parseControl, type InferenceRequest, type InferenceResponse, type OutputTensor, type Parameters } from "../core/request.ts";
import type { BorrowedInstance, ExecuteResult } from "../backends/backend.ts";
import type { BatchClient } from "./batch-client.ts";
import { errorOf } from "./batch-slots.ts";
import type { PreparedRequest } from "../core/request-validate.ts";
import type { Tensor } from "../core/tensor.ts";
import type { ModelRunner } from "../core/runner.ts";
import { EnsembleScheduler } from "../scheduler/ensemble-scheduler.ts";
import { isEnsemble } from "../model-config/normalize.ts";
import { chooseSample } from "./trace-sampler.ts";

const log = getLogger("src/server/direct-runner.ts");

/**
 * The sequence keys, which only a sequence-batched version on the scheduling thread takes
 * from a worker (its sequence batcher reads them there). `priority` and `timeout` run here
 * on every version: a batched one's scheduler reads them on the scheduling thread, as the
 * main thread's does, and every other scheduler ignores them on both.
 */
const SEQUENCE_KEYS = ["sequence_id", "sequence_start", "sequence_end"];
/** Runs one worker keeps going at once before it hands more to the main thread (which queues them). */
export const MAX_DIRECT_IN_FLIGHT = 32;

interface Served {
  entry: DirectEntry;
  signature: ModelSignature;
  /** An ensemble's scheduler, whose steps this runner runs (#step). */
  ensemble?: EnsembleScheduler;
  /** Borrowed on first use, one per instance of the owner. */
  instances: (BorrowedInstance | undefined)[];
  next: number;
  /** This worker's slot in the entry's shared counters, made on first use. */
  stats?: SharedStatsWriter;
  /** The outputs' labels (the entry's, decoded once). */
  labels?: ReadonlyMap<string, readonly string[]>;
  /** The version's trace sampling under the newest table (DirectEntry.trace): its counter and rate. */
  trace?: { counter: Int32Array; rate: number };
}

export class DirectRunner {
  readonly #served = new Map<number, Served>();
  /** Instances (by key) of versions that left the table that still hold requests: until those are answered, or the owner's word that their thread ended (ended()) fails them. */
  readonly #leaving = new Map<string, BorrowedInstance>();
  #routes = new Map<string, number>();
  /** The newest table's number the main thread has published, and this table's (DirectTable.generation). */
  #published: Int32Array | undefined;
  #generation = 0;
  #records: number[] = [];
  /** This worker's slot in the entries' shared counters, unless its requests go as records (the table's `records`, or no slot). */
  #slot: number | undefined;
  #inFlight = 0;
  /** This worker's channel to the scheduling thread, for dynamically batched versions (batch-thread.ts). */
  #batch: BatchClient | undefined;
  /** The server's --max-queued-bytes count, shared with the main thread, once a table brought it. */
  #queued: QueuedBytes | undefined;
  /** The server's response cache, shared with every thread (or this worker's client of its Redis), once a table brought it. */
  #cache: ResponseCache | undefined;
  #connecting = false;
  readonly #flushSoon: () => void;
  readonly #onError: (e: ServerError, model: string, request: InferenceRequest) => void;
  readonly #connect: (key: string) => void;
  readonly #relay: (request: InferenceRequest) => Promise<InferenceResponse>;
  /** The system shared-memory regions of the table, whose descriptors this worker borrows. */
  readonly #shm = new DirectSharedMemory();
  /** The regions each request running here holds (run()). */
  readonly #holds = new WeakMap<InferenceRequest, RegionHolds>();
  /** The inference entry an ensemble's steps call here. */
  readonly #steps: ModelRunner = {
    inferStep: (request) => this.#step(request),
    inferStepStream: () => {
      throw new ServerError("INTERNAL", "a decoupled ensemble is never run in a frontend worker");
    },
  };

  /**
   * `flushSoon` is called when the first record of a batch is taken: the worker posts
   * take() within the turn. `onError` sees every failure the main thread would log.
   * `connect` asks the main thread for a channel to an instance in a thread of its own
   * (a typescript model's worker); its answer comes to attach(). `relay` runs an
   * ensemble's step on the main thread (DirectModels.step).
   */
  constructor(
    flushSoon: () => void,
    onError: (e: ServerError, model: string, request: InferenceRequest) => void,
    connect: (key: string) => void = () => {},
    relay: (request: InferenceRequest) => Promise<InferenceResponse> = () => Promise.reject(new ServerError("INTERNAL", "no main thread to run the step")),
  ) {
    this.#flushSoon = flushSoon;
    this.#onError = onError;
    this.#connect = connect;
    this.#relay = relay;
  }

  /** The main thread's answer to connect(key): the port to the instance and the slot value it was made under, or none. */
  attach(key: string, port: MessagePort | undefined, live = 0): void {
    const i = this.#borrowed(key);
    if (i) i.attach?.(port, live);
    else port?.close();
  }

  /** The main thread's word that the thread of the instance known by `key` ended (BorrowedInstance.ended). */
  ended(key: string, error: ServerError | undefined): void {
    const leaving = this.#leaving.get(key);
    this.#leaving.delete(key);
    (this.#borrowed(key) ?? leaving)?.ended?.(error);
  }

  #borrowed(key: string): BorrowedInstance | undefined {
    for (const s of this.#served.values()) {
      for (const i of s.instances) {
        if (i?.key === key) return i;
      }
    }
    return undefined;
  }

  /** A new table from the main thread, and this worker's slot in its entries' shared counters: versions no longer in it are dropped (their runs finish first). */
  update(table: DirectTable, slot?: number): void {
    this.#slot = table.records ? undefined : slot;
    if (table.queued) this.#queued ??= QueuedBytes.of(table.queued);
    this.#shm.update(table.regions, slot);
    if (table.cache) this.#cache ??= new SharedResponseCache(table.cache);
    else if (table.redis && !this.#cache && !this.#connecting) {
      // Loaded only where a Redis cache is in use; until this worker's client is connected, cached versions go to the main thread.
      const link = table.redis;
      this.#connecting = true;
      void import("../cache/redis-cache.ts")
        .then((m) => m.RedisResponseCache.background(link, (cache) => (this.#cache = cache)))
        .catch((err: unknown) =>
          log.warn(`a frontend worker cannot use the Redis response cache (${(err as Error).message}): its requests for cached models go to the main thread`),
        );
    }
    const ids = new Set(table.entries.map((e) => e.id));
    for (const [id, s] of this.#served) {
      if (ids.has(id)) continue;
      this.#served.delete(id);
      for (const i of s.instances) {
        if (!i) continue;
        i.close();
        // Kept for the owner's word only while it holds requests: an instance that gave up never sends one.
        const key = i.key;
        if (key !== undefined && i.closing?.(() => this.#leaving.get(key) === i && this.#leaving.delete(key))) this.#leaving.set(key, i);
      }
    }
    for (const entry of table.entries) {
      let served = this.#served.get(entry.id);
      if (!served) {
        const ensemble = isEnsemble(entry.config) ? new EnsembleScheduler(entry.config, this.#steps) : undefined;
        served = { entry, signature: signatureOf(entry.config), instances: entry.instances.map(() => undefined), next: 0, ensemble };
        if (entry.labels) served.labels = labelsOf(entry.labels);
        this.#served.set(entry.id, served);
      }
      served.trace = entry.trace && { counter: new Int32Array(entry.trace.counter), rate: entry.trace.rate };
    }
    this.#routes = new Map(table.routes);
    if (table.published) {
      this.#published ??= new Int32Array(table.published);
      this.#generation = table.generation ?? 0;
    }
  }

  /** Whether a newer table than this one is on its way (then the main thread answers). */
  #stale(): boolean {
    const p = this.#published;
    return p !== undefined && Atomics.load(p, 0) !== this.#generation;
  }

  /** The channel to the scheduling thread: batched versions in the table are submitted there. */
  attachBatch(client: BatchClient): void {
    this.#batch = client;
  }

  /** The records taken since the last take(), for the main thread (DirectModels.applyRecords). */
  take(): number[] {
    const r = this.#records;
    this.#records = [];
    return r;
  }

  /**
   * Whether the table lists `model`'s version (then no request for it is decoupled:
   * DirectModels leaves those out), and no newer table is on its way (which may not).
   */
  lists(model: string, version: string | undefined): boolean {
    return !this.#stale() && this.#routes.has(routeKey(model, version));
  }

  /** Answers the request here, or undefined when the main thread must (nothing is recorded then). */
  run(model: string, version: string | undefined, request: InferenceRequest): Promise<InferenceResponse> | undefined {
    const id = this.#routes.get(routeKey(model, version));
    if (id === undefined || this.#inFlight >= MAX_DIRECT_IN_FLIGHT || this.#stale()) return undefined;
    const served = this.#served.get(id)!;
    if (!plain(request, served) || !validControl(request)) return undefined;
    // The shared-memory regions it names, held until it settles, as the main thread holds them.
    const regions = regionsNamed(request.inputs, request.outputs);
    if (!regions) return this.#dispatch(served, request, false);
    const holds = this.#shm.acquire(regions);
    if (!holds) return undefined;
    this.#holds.set(request, holds);
    let answer: Promise<InferenceResponse> | undefined;
    try {
      answer = this.#dispatch(served, request, false);
    } finally {
      if (!answer) {
        this.#holds.delete(request);
        holds.release();
      }
    }
    return answer?.finally(() => {
      this.#holds.delete(request);
      holds.release();
    });
  }

  /** Runs `request` on `served` here (a client's, or with `step` an ensemble's step); undefined when it cannot run here now. */
  #dispatch(served: Served, request: InferenceRequest, step: boolean): Promise<InferenceResponse> | undefined {
    const { ensemble, entry } = served;
    // A cached version while this worker's Redis client loads and connects: the main thread looks it up.
    if (entry.cached !== undefined && !this.#cache) return undefined;
    if (ensemble) return this.#run(served, request, step, (p) => ensemble.enqueue(p));
    const batch = entry.batch;
    if (batch !== undefined) {
      const client = this.#batch;
      return client && this.#run(served, request, step, (p) => submitted(client, batch, p));
    }
    const instance = this.#instance(served);
    if (!instance) return undefined;
    return this.#run(served, request, step, (p) => instance.executeBorrowed(p.inputs, p.outputNames), instance);
  }

  /**
   * An ensemble's step, as the core's inferStep runs it: here when its model is in this
   * worker's table now, else (or when its instance was retired under it) on the main thread,
   * which answers it as one thread would at that moment (the new version, or the refusal).
   */
  async #step(request: InferenceRequest): Promise<InferenceResponse> {
    const id = this.#routes.get(routeKey(request.modelName, request.modelVersion));
    const here = id === undefined || this.#stale() ? undefined : this.#dispatch(this.#served.get(id)!, request, true);
    if (here) {
      try {
        return await here;
      } catch (err) {
        if (!isRetired(err)) throw err;
      }
    }
    return this.#relay(request);
  }

  /**
   * The next instance round robin, the least busy first where instances tell (load);
   * undefined when none can take it here, or when every one this thread reaches is busy
   * while another it cannot reach yet may be idle (the main thread, which sees them all,
   * picks then, as one thread's scheduler would).
   */
  #instance(s: Served): BorrowedInstance | undefined {
    const n = s.instances.length;
    let best: BorrowedInstance | undefined;
    let bestLoad = Infinity;
    let unreached = false;
    for (let k = 0; k < n && bestLoad > 0; k++) {
      const i = (s.next + k) % n;
      let b: BorrowedInstance;
      try {
        b = s.instances[i] ??= borrowInstance(s.entry.instances[i]!, this.#connect);
      } catch {
        continue;
      }
      const load = b.load ? b.load() : 0;
      if (load === undefined) unreached = true;
      if (load === undefined || load >= bestLoad) continue;
      best = b;
      bestLoad = load;
      s.next = (i + 1) % n;
    }
    return unreached && bestLoad > 0 ? undefined : best;
  }

  /**
   * Runs `request` with `execute`, or with `instance`'s runPrepared where it has one (a
   * typescript instance). A `step` (an ensemble's) holds no bytes of its own and is not
   * counted in flight (its ensemble is), and its failure is its ensemble's to report.
   */
  async #run(
    s: Served,
    request: InferenceRequest,
    step: boolean,
    execute: (p: PreparedRequest) => Promise<Executed | undefined>,
    instance?: BorrowedInstance,
  ): Promise<InferenceResponse> {
    const { entry, signature } = s;
    const start = nowNs();
    let reason: FailureReason = "OTHER";
    let held = 0;
    if (!step) this.#inFlight++;
    try {
      // Inputs in shared memory are read first, as the main thread's core reads them (a step names no region).
      if (!step) readInputsFromSharedMemory(request.inputs, this.#regions(request).read);
      const prepared = prepareForInference(request, signature);
      reason = "BACKEND";
      if (request.signal?.aborted) throw cancelled(request.id);
      // Its input bytes join the main thread's under --max-queued-bytes until it is answered.
      if (this.#queued && !step) held = this.#queued.admitRequest(request);
      // The response cache (S-17, S-18), as the main thread's core looks it up: a hit runs nothing.
      const cache = entry.cached !== undefined ? this.#cache : undefined;
      let lookup: Lookup | undefined;
      if (cache) {
        const lookupStart = nowNs();
        const key = cacheKey(entry.cached!, Number(entry.version), prepared.inputs, prepared.outputNames);
        const found = cache.lookup(key, prepared.outputNames);
        // The local cache answers at once; only Redis costs an await.
        const hit = found instanceof Promise ? await found : found;
        lookup = { cache, key, ns: nowNs() - lookupStart };
        // A client gone during Redis's answer: cancelled, as the scheduler refuses it on the main thread.
        if (!hit && request.signal?.aborted) throw cancelled(request.id);
        if (hit) {
          const outputs = outputsToSharedMemory(
            request,
            classified(s, orderedOutputs(signature, hit, prepared.outputNames), prepared.classification),
            this.#regions(request).write,
          );
          this.#record(s, HIT, nowNs() - start, lookup.ns, 0, 0, 0, 0);
          return response(entry, request, outputs);
        }
      }
      // A traced version's request (never a cached or sequence-batched one: DirectModels) is counted for the
      // sampling rate where the main thread's core counts it; a chosen one is left to the main thread to trace.
      if (s.trace) {
        request.traceSampled = chooseSample(s.trace.counter, s.trace.rate);
        if (request.traceSampled) throw RETIRED;
      }
      // Queued from here to the run's start, as the default scheduler counts a request that finds its instance free.
      const enqueuedAt = nowNs();
      if (instance?.runPrepared) return await this.#runPrepared(s, instance, request, prepared, start, step, lookup);
      const queueNs = nowNs() - enqueuedAt;
      const r = await execute(prepared);
      if (!r) throw RETIRED;
      const missNs = lookup && inserted(lookup, request, r.outputs);
      const ci = r.computeInputNs ?? 0;
      const cinf = r.computeInferNs ?? 0;
      const co = r.computeOutputNs ?? 0;
      // An ensemble's one execution (its steps' summed compute) is counted with its success, as the main thread's ensemble scheduler counts it.
      const [executions, queued] = s.ensemble
        ? [Math.max(1, prepared.batchSize), r.queueNs ?? 0]
        : r.queueNs === undefined
          ? [prepared.batchSize, queueNs]
          : [undefined, r.queueNs];
      let outputs: Tensor[];
      try {
        outputs = this.#ordered(s, r.outputs, prepared, missNs);
      } catch (err) {
        // The main thread's scheduler counted the execution before its outputs failed.
        if (executions !== undefined) this.#record(s, EXECUTION, executions, ci, cinf, co, 0, 0);
        throw err;
      }
      if (missNs !== undefined) {
        // A miss goes with its success: its execution as a record of its own.
        if (executions !== undefined) this.#record(s, EXECUTION, executions, ci, cinf, co, 0, 0);
        this.#record(s, MISS, nowNs() - start, queued, ci, cinf, co, missNs);
      } else if (executions !== undefined) this.#record(s, SUCCESS, nowNs() - start, ci, cinf, co, executions, queued);
      else this.#record(s, RESULT, nowNs() - start, queued, ci, cinf, co, 0);
      addStepTimes(request, ci, cinf, co);
      return response(entry, request, outputs);
    } catch (err) {
      if (err === RETIRED) throw err;
      const e = ServerError.from(err);
      if (reason === "BACKEND") {
        e.inResponse = true;
        reason = e.reason ?? (e.code === "UNAVAILABLE" ? "REJECTED" : e.code === "CANCELLED" ? "CANCELED" : "BACKEND");
      }
      if (s.ensemble) reason = "OTHER"; // as the server counts an ensemble's failures (Triton's)
      this.#record(s, FAILURE, nowNs() - start, FAILURE_REASONS.indexOf(reason), 0, 0, 0, 0);
      if (!step) this.#onError(e, entry.name, request);
      throw e;
    } finally {
      this.#queued?.add(-held);
      if (!step) this.#inFlight--;
    }
  }

  /** A per-request instance's run (typescript): its execution is recorded before its outcome decides success or failure, as the default scheduler records it. */
  async #runPrepared(
    s: Served,
    instance: BorrowedInstance,
    request: InferenceRequest,
    prepared: PreparedRequest,
    start: number,
    step: boolean,
    lookup: Lookup | undefined,
  ): Promise<InferenceResponse> {
    // A step's inputs are its ensemble's tensors, which other steps and the outputs still read: copied, not moved.
    const r = await instance.runPrepared!(prepared, !step);
    if (!r) throw RETIRED;
    const { outcome, queueNs, computeInputNs: ci, computeInferNs: cinf, computeOutputNs: co } = r;
    this.#record(s, EXECUTION, prepared.batchSize, ci, cinf, co, 0, 0);
    if (outcome.error) throw outcome.error;
    const missNs = lookup && inserted(lookup, request, outcome.outputs);
    const outputs = this.#ordered(s, outcome.outputs, prepared, missNs);
    if (missNs !== undefined) this.#record(s, MISS, nowNs() - start, queueNs, ci, cinf, co, missNs);
    else this.#record(s, RESULT, nowNs() - start, queueNs, ci, cinf, co, 0);
    addStepTimes(request, ci, cinf, co);
    const answer = response(s.entry, request, outputs);
    if (outcome.parameters) answer.parameters = outcome.parameters;
    return answer;
  }

  /**
   * The outputs in the order and shapes asked for, classified where asked, and written into
   * shared memory where asked; where that fails (an output the model did not give, a BYTES
   * output classified, a region too small), a cache miss is counted before the failure, as
   * the main thread counts it.
   */
  #ordered(s: Served, outputs: Tensor[], prepared: PreparedRequest, missNs: number | undefined): OutputTensor[] {
    try {
      const shaped = classified(s, orderedOutputs(s.signature, outputs, prepared.outputNames), prepared.classification);
      return outputsToSharedMemory(prepared.request, shaped, this.#regions(prepared.request).write);
    } catch (err) {
      if (missNs !== undefined) this.#record(s, MISSED, missNs, 0, 0, 0, 0, 0);
      throw err;
    }
  }

  /** The regions `request` holds; none for a request that names none (its reads and writes are then never called). */
  #regions(request: InferenceRequest): RegionHolds {
    return this.#holds.get(request) ?? NO_REGIONS;
  }

  /** Counts one record (direct-table.ts' kinds and fields) in `s`'s shared counters, or takes it for the main thread. */
  #record(s: Served, kind: number, requestNs: number, a: number, b: number, c: number, d: number, e: number): void {
    const stats = this.#stats(s);
    if (stats) {
      if (kind === SUCCESS) {
        // An execution whose batch size has no row left goes as a record of its own.
        if (!stats.recordExecution(d, a, b, c)) this.#take(EXECUTION, s.entry.id, d, a, b, c, 0, 0);
        stats.recordSuccess(requestNs, e, a, b, c);
      } else if (kind === RESULT) stats.recordSuccess(requestNs, a, b, c, d);
      else if (kind === MISS) {
        stats.recordCacheMiss(e);
        stats.recordSuccess(requestNs, a, b, c, d);
      } else if (kind === HIT) stats.recordCacheHit(requestNs, 0, a);
      else if (kind === MISSED) stats.recordCacheMiss(requestNs);
      else if (kind === EXECUTION) {
        if (!stats.recordExecution(requestNs, a, b, c)) this.#take(EXECUTION, s.entry.id, requestNs, a, b, c, 0, 0);
      } else stats.recordFailure(requestNs, FAILURE_REASONS[a] ?? "OTHER");
      return;
    }
    this.#take(kind, s.entry.id, requestNs, a, b, c, d, e);
  }

  #stats(s: Served): SharedStatsWriter | undefined {
    const slot = this.#slot;
    const buffer = s.entry.stats;
    if (slot === undefined || !buffer) return undefined;
    return (s.stats ??= new SharedStatsWriter(buffer, slot));
  }

  #take(kind: number, id: number, requestNs: number, a: number, b: number, c: number, d: number, e: number): void {
    if (this.#records.length === 0) this.#flushSoon();
    this.#records.push(kind, id, requestNs, a, b, c, d, e);
  }
}

function response(entry: DirectEntry, request: InferenceRequest, outputs: Tensor[]): InferenceResponse {
  const r: InferenceResponse = { modelName: entry.name, modelVersion: entry.version, outputs };
  if (request.id) r.id = request.id;
  return r;
}

/** A response-cache lookup that missed: where to store the answer, and how long the lookup took. */
interface Lookup {
  cache: ResponseCache;
  key: string;
  ns: number;
}

/**
 * Stores a miss's answer, as the main thread's core does: never what a cancelled request
 * got (S-20). Returns the miss's lookup and insert ns.
 */
function inserted(lookup: Lookup, request: InferenceRequest, outputs: readonly Tensor[]): number {
  const start = nowNs();
  if (!request.signal?.aborted) lookup.cache.insert(lookup.key, outputs);
  return lookup.ns + (nowNs() - start);
}

/** What a request that holds no region reads and writes through: nothing (shmRef finds no region in its parameters). */
const NO_REGIONS: RegionHolds = {
  read: (ref) => {
    throw new ServerError("INTERNAL", `shared memory region '${ref.region}' is not held by this request`);
  },
  write: (ref) => {
    throw new ServerError("INTERNAL", `shared memory region '${ref.region}' is not held by this request`);
  },
  release: () => {},
};

/** An execution's outcome; with queueNs when the scheduling thread batched it (and counted the execution). */
type Executed = ExecuteResult & { queueNs?: number };

/** `prepared` batched on the scheduling thread: undefined when the thread no longer serves the version. */
async function submitted(client: BatchClient, batch: number, prepared: PreparedRequest): Promise<Executed | undefined> {
  const r = await client.submit(batch, prepared);
  if (r.t === "retired") return undefined;
  if (r.t === "error") throw errorOf(r);
  return r;
}

/**
 * Thrown by run()'s promise when the owner retired the version between the table and
 * the run: nothing ran and nothing was recorded; the caller hands the request to the
 * main thread (isRetired).
 */
export const RETIRED = new Error("the version was retired before it ran here");
export const isRetired = (err: unknown): boolean => err === RETIRED;

/** No sequence parameters, unless the version is sequence-batched here: what the worker answers exactly as the main thread does. */
function plain(request: InferenceRequest, s: Served): boolean {
  return sequenced(s.entry) || !hasSequenceParameters(request);
}

/** Whether the request names a sequence (sequence_id, sequence_start or sequence_end). */
export function hasSequenceParameters(request: InferenceRequest): boolean {
  const p: Parameters | undefined = request.parameters;
  if (p) for (const k of SEQUENCE_KEYS) if (p[k] !== undefined) return true;
  return false;
}

/** `outputs` (in the order asked for) classified where `classification` asks, as the main thread's core gives them. */
function classified(s: Served, outputs: Tensor[], classification: ReadonlyMap<string, number>): Tensor[] {
  return classifyOutputs(outputs, classification, s.signature.maxBatchSize > 0, s.labels);
}

/** A sequence-batched version whose sequence batcher runs on the scheduling thread: its requests' sequence parameters go there with them. */
function sequenced(entry: DirectEntry): boolean {
  return entry.batch !== undefined && entry.config.sequence_batching !== undefined;
}

/**
 * Whether the request's control parameters parse: the main thread refuses one that does
 * not before it counts the request (parseControl comes first in its inference), so such a
 * request is left to it.
 */
function validControl(request: InferenceRequest): boolean {
  try {
    parseControl(request.parameters);
    return true;
  } catch {
    return false;
  }
}
