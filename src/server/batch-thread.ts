/**
 * @module Dynamic batching on the scheduling thread (#30 item 2), the main thread's side
 * (the thread is batch-thread-entry.ts). While frontend worker threads run, a version
 * with `dynamic_batching` whose instances other threads can run (ONNX Runtime) gets a
 * ThreadedBatchScheduler instead of the main thread's DynamicBatchScheduler: its queue
 * and batcher live on the scheduling thread, started with the first such version. The
 * frontend workers submit their requests for it there directly through their channels
 * (batch-slots.ts; direct-runner.ts), and the requests that reach the main thread (CUDA
 * shared memory, a traced model's requests chosen for a trace, a traced sequence-batched
 * version's, streams handed on, one-thread frontends) go there through the main thread's
 * own channel: one queue, one batcher, one view. The same holds for sequence-batched
 * versions, and, with --rate-limit, for rate-limited ones under the default scheduler:
 * the rate limiter itself runs there (rateLimiter()).
 *
 * Statistics: the thread counts executions in each version's shared counters
 * (core/shared-stats.ts), which settle() folds into the version's statistics, and posts
 * here only those the counters have no row for (settle() then flushes them first); the
 * requests are counted by the thread they came from, as on one thread (a worker's
 * through DirectModels). So a statistics read is exact.
 */
import { workerUrl } from "../core/worker-url.ts";
import { Thread } from "../core/threads/thread.ts";
import { getLogger, logEntry } from "../core/logger.ts";
import { cancelled, internal, unavailable } from "../core/errors.ts";
import { logPrefix } from "../core/request.ts";
import { BatchClient } from "./batch-client.ts";
import { CLOSED_ABANDONED, CLOSED, DONE_TAIL, FAILED, MAIN_SLOTS, SUB_TAIL, SlotChannel, WORKER_SLOTS, errorOf, type ChannelPort } from "./batch-slots.ts";
import { EXEC_WIDTH, type FromBatch, type SequenceAdd, type ToBatch } from "./batch-protocol.ts";
import { ThreadRateLimiter } from "./batch-rate-limiter.ts";
import { sequenceSettings } from "../scheduler/sequence/config.ts";
import { initialState } from "../scheduler/sequence/tensors.ts";
import type { BackendInstance, SharedInstance } from "../backends/backend.ts";
import type { RateLimitResourceFlag } from "../scheduler/rate-limiter.ts";
import { SharedStatsReader, sharedStatsBuffer } from "../core/shared-stats.ts";
import type { ModelStats } from "../core/stats.ts";
import type { PreparedRequest } from "../core/request-validate.ts";
import type { ScheduledModel } from "../scheduler/create.ts";
import type { Scheduler, ScheduledResult } from "../scheduler/scheduler.ts";
import type { InferenceServer } from "./server.ts";
import type { ModelVersion } from "../repository/model-version.ts";

const log = getLogger("src/server/batch-thread.ts");

/** The most distinct batch sizes a version's counters on the scheduling thread hold (executions of larger ones are posted as records). */
const BATCH_ROWS = 256;

/**
 * A frontend worker's channel to the scheduling thread: its slots, the port for what does
 * not fit, close() for when the worker stops, and abandon() for when its thread has ended.
 */
export interface BatchChannel {
  buffer: SharedArrayBuffer;
  port: ChannelPort;
  close(): void;
  abandon(): void;
}

const threads = new WeakMap<InferenceServer, BatchThread>();

/** The scheduling thread serving `server`'s batched versions, when there is one. */
export function batchThreadOf(server: InferenceServer): BatchThread | undefined {
  return threads.get(server);
}

/** The scheduling thread's id of `mv`'s version when its dynamic batcher runs there. */
export function threadedBatchId(mv: ModelVersion): number | undefined {
  if (!mv.ready) return undefined;
  const s = mv.scheduler;
  return s instanceof ThreadedBatchScheduler && !s.failed ? s.id : undefined;
}

export class BatchThread {
  #thread: Thread<ToBatch, FromBatch> | undefined;
  #main: BatchClient | undefined;
  /** Worker channels made before the thread started: given to it when it starts. */
  readonly #early: { buffer: SharedArrayBuffer; port: ChannelPort }[] = [];
  /** Every channel's control words, to tell the submitters if the thread fails. */
  readonly #controls = new Set<Int32Array>();
  /** Each version's statistics, and the reader of the counters the thread writes for it. */
  readonly #stats = new Map<number, { stats: ModelStats; shared: SharedStatsReader }>();
  /** Record batches the thread has begun that are not applied here yet: settle() flushes only while there are some. */
  readonly #recordBatches = new Int32Array(new SharedArrayBuffer(4));
  readonly #removals = new Map<number, () => void>();
  readonly #flushes = new Map<number, () => void>();
  #nextId = 1;
  #nextFlush = 0;
  #failed: string | undefined;
  #limiter: ThreadRateLimiter | undefined;

  /** Joins `server`'s statistics (statisticsSettled) and makes this its scheduling thread (batchThreadOf). */
  attach(server: InferenceServer): void {
    threads.set(server, this);
    server.addStatisticsSource(this);
  }

  /**
   * The rate limiter (--rate-limit=execution_count) on this thread: every instance's
   * claim is held there (batch-rate-limiter.ts), and rate-limited ONNX Runtime versions
   * are scheduled there (plainScheduler and the batchers), so no request of theirs needs
   * the main thread.
   */
  rateLimiter(flags: readonly RateLimitResourceFlag[]): ThreadRateLimiter {
    this.#limiter ??= new ThreadRateLimiter(flags, (m) => {
      if (this.#failed) return;
      this.#start().send(m);
    });
    return this.#limiter;
  }

  /** The scheduler for `model` on the scheduling thread, or undefined when its requests cannot be batched there. */
  scheduler(model: ScheduledModel, instances: readonly BackendInstance[]): Scheduler | undefined {
    const c = model.config;
    if (!c.dynamic_batching || c.model_transaction_policy?.decoupled === true || this.#failed) return undefined;
    const shared = sharedOnThread(instances);
    return shared && this.#add(model, shared);
  }

  /**
   * Triton's default scheduler for `model` on the scheduling thread, for a version the
   * rate limiter holds there (an instance with a claim, shareLimited); undefined for any
   * other, which the frontend workers run themselves or the main thread schedules.
   */
  plainScheduler(model: ScheduledModel, instances: readonly BackendInstance[]): Scheduler | undefined {
    const c = model.config;
    if (c.model_transaction_policy?.decoupled === true || this.#failed || !instances.some((i) => i.shareLimited)) return undefined;
    const shared = sharedOnThread(instances);
    return shared && this.#add(model, shared, undefined, true);
  }

  /**
   * The scheduler for sequence-batched `model` on the scheduling thread (its
   * SequenceBatchScheduler there: slots, state, backlog, idle reaping), or undefined when
   * it stays on the main thread. ONNX Runtime sessions only, not decoupled. The states'
   * initial values are read here, so that a bad initial_state file fails the load as on
   * one thread.
   */
  sequenceScheduler(model: ScheduledModel, instances: readonly BackendInstance[]): Scheduler | undefined {
    const c = model.config;
    if (!c.sequence_batching || c.model_transaction_policy?.decoupled === true || this.#failed) return undefined;
    const shared = sharedOnThread(instances);
    if (!shared) return undefined;
    const initial = sequenceSettings(c).states.map((s): [string, Uint8Array] => [s.inputName, initialState(s, model.modelDir)]);
    return this.#add(model, shared, { initial });
  }

  #add(model: ScheduledModel, instances: SharedInstance[], sequence?: SequenceAdd, plain = false): ThreadedBatchScheduler {
    const id = this.#nextId++;
    const counters = new SharedArrayBuffer(8);
    // Room for every batch size up to BATCH_ROWS: the batcher forms any size up to max_batch_size.
    const stats = sharedStatsBuffer(1, model.config.max_batch_size ?? 0, BATCH_ROWS);
    this.#stats.set(id, { stats: model.stats, shared: new SharedStatsReader(stats) });
    this.#start().send({
      t: "add",
      id,
      name: model.name,
      config: model.config,
      instances,
      counters,
      stats,
      ...(sequence ? { sequence } : {}),
      ...(plain ? { plain } : {}),
    });
    return new ThreadedBatchScheduler(this, id, new Int32Array(counters));
  }

  /** A channel for a frontend worker (the thread gets its end when it starts). */
  connect(): BatchChannel {
    const channel = new SlotChannel(WORKER_SLOTS);
    this.#controls.add(channel.ctrl);
    // A channel made after the thread failed says so at once (its worker's requests go to the main thread).
    if (this.#failed) Atomics.store(channel.ctrl, FAILED, 1);
    const [port1, port2] = portPair();
    if (this.#thread) this.#give(channel.buffer, port2);
    else this.#early.push({ buffer: channel.buffer, port: port2 });
    return {
      buffer: channel.buffer,
      port: port1,
      close: () => {
        this.#controls.delete(channel.ctrl);
        Atomics.compareExchange(channel.ctrl, CLOSED, 0, 1);
        Atomics.notify(channel.ctrl, SUB_TAIL);
      },
      abandon: () => {
        this.#controls.delete(channel.ctrl);
        Atomics.store(channel.ctrl, CLOSED, CLOSED_ABANDONED);
        Atomics.notify(channel.ctrl, SUB_TAIL);
      },
    };
  }

  /** Why the thread failed, once it has (its versions then refuse every request). */
  get failure(): string | undefined {
    return this.#failed;
  }

  /** The main thread's own channel, for the requests that reach it. */
  get client(): BatchClient {
    return this.#main!;
  }

  /** Stops version `id` on the thread once what it holds has drained; resolves then. */
  remove(id: number): Promise<void> {
    if (!this.#thread || this.#failed) return Promise.resolve();
    return new Promise((resolve) => {
      this.#removals.set(id, resolve);
      this.#thread!.send({ t: "remove", id });
    });
  }

  /** Folds the executions the thread counted in shared memory into the versions' statistics. */
  fold(): void {
    for (const { stats, shared } of this.#stats.values()) shared.fold(stats);
  }

  /** Resolves once every execution the thread counted is in the versions' statistics. */
  async settle(): Promise<void> {
    this.fold();
    if (!this.#thread || this.#failed || Atomics.load(this.#recordBatches, 0) === 0) return;
    await new Promise<void>((resolve) => {
      const id = this.#nextFlush++;
      this.#flushes.set(id, resolve);
      this.#thread!.send({ t: "flush", id });
    });
    this.fold();
  }

  #start(): Thread<ToBatch, FromBatch> {
    if (this.#thread) return this.#thread;
    const url = workerUrl("src/server/batch-thread-entry.ts", new URL("./batch-thread-entry.ts", import.meta.url));
    this.#thread = new Thread<ToBatch, FromBatch>(
      url,
      { message: (m) => this.#message(m), error: (m) => this.#fail(m), exit: () => this.#fail("it ended") },
      { batch: true, unref: true, name: "batch scheduler" },
    );
    this.#thread.send({ t: "recordBatches", buffer: this.#recordBatches.buffer as SharedArrayBuffer });
    const main = new SlotChannel(MAIN_SLOTS);
    const [port1, port2] = portPair();
    this.#main = new BatchClient(main.buffer, port1);
    this.#give(main.buffer, port2);
    for (const c of this.#early.splice(0)) this.#give(c.buffer, c.port);
    log.verbose(1, "the scheduling thread started: batched and rate-limited ONNX Runtime models are scheduled there, and the rate limiter runs there");
    return this.#thread;
  }

  #give(buffer: SharedArrayBuffer, port: ChannelPort): void {
    this.#thread!.send({ t: "channel", buffer, port }, [port as unknown as ArrayBuffer]);
  }

  #message(m: FromBatch): void {
    switch (m.t) {
      case "records":
        for (let i = 0; i + EXEC_WIDTH <= m.records.length; i += EXEC_WIDTH) {
          const r = m.records;
          this.#stats.get(r[i]!)?.stats.recordExecution(r[i + 1]!, r[i + 2]!, r[i + 3]!, r[i + 4]!);
        }
        Atomics.sub(this.#recordBatches, 0, 1);
        return;
      case "flushed":
        this.#flushes.get(m.id)?.();
        this.#flushes.delete(m.id);
        return;
      case "removed": {
        // The thread writes nothing more for it: what it counted last is folded now.
        const v = this.#stats.get(m.id);
        v?.shared.fold(v.stats);
        this.#stats.delete(m.id);
        this.#removals.get(m.id)?.();
        this.#removals.delete(m.id);
        return;
      }
      case "granted":
        this.#limiter?.granted(m.ticket);
        return;
      case "log":
        logEntry(m.entry);
        return;
      case "error":
        log.error(m.message);
        return;
    }
  }

  /** The thread failed: what waits on it is released (versions loaded later batch on the main thread). */
  #fail(message: string): void {
    if (this.#failed) return;
    this.#failed = message;
    log.error(`the scheduling thread failed: ${message}`);
    this.#main?.abandon(`the scheduling thread failed: ${message}`);
    this.#limiter?.fail();
    // The workers' requests waiting on it fail too, and their new ones go to the main thread (which refuses them).
    for (const ctrl of this.#controls) {
      Atomics.store(ctrl, FAILED, 1);
      Atomics.notify(ctrl, DONE_TAIL);
    }
    for (const done of [...this.#flushes.values(), ...this.#removals.values()]) done();
    this.#flushes.clear();
    this.#removals.clear();
  }
}

/**
 * A version's scheduler as the main thread holds it when its batcher runs on the
 * scheduling thread: the main thread's requests go there through its channel; stop()
 * refuses new ones, waits for its own, then has the thread drain and drop the version.
 */
export class ThreadedBatchScheduler implements Scheduler {
  readonly id: number;
  readonly #thread: BatchThread;
  readonly #counters: Int32Array;
  #inflight = 0;
  #stopping = false;
  #idle: (() => void) | undefined;
  #stopped: Promise<void> | undefined;

  constructor(thread: BatchThread, id: number, counters: Int32Array) {
    this.#thread = thread;
    this.id = id;
    this.#counters = counters;
  }

  async enqueue(prepared: PreparedRequest): Promise<ScheduledResult> {
    const id = prepared.request.id;
    if (this.#stopping) throw stopping(id);
    if (prepared.request.signal?.aborted) throw cancelled(id);
    const failure = this.#thread.failure;
    if (failure) throw internal(`${logPrefix(id)}the scheduling thread failed: ${failure}`);
    this.#inflight++;
    try {
      const r = await this.#thread.client.submit(this.id, prepared);
      if (r.t === "error") throw errorOf(r);
      if (r.t === "retired") throw stopping(id);
      const { outputs, queueNs, computeInputNs, computeInferNs, computeOutputNs } = r;
      return { outputs, queueNs, computeInputNs, computeInferNs, computeOutputNs };
    } finally {
      if (--this.#inflight === 0) this.#idle?.();
    }
  }

  /** The scheduling thread has failed: the workers hand this version's requests to the main thread, which refuses them. */
  get failed(): boolean {
    return this.#thread.failure !== undefined;
  }

  inflightCount(): number {
    return Atomics.load(this.#counters, 0);
  }

  pendingCount(): number {
    return Atomics.load(this.#counters, 1);
  }

  stop(): Promise<void> {
    this.#stopped ??= (async () => {
      this.#stopping = true;
      if (this.#inflight > 0) await new Promise<void>((resolve) => (this.#idle = resolve));
      await this.#thread.remove(this.id);
    })();
    return this.#stopped;
  }
}

/**
 * `instances` as the scheduling thread runs them, with their rate-limiter claims; undefined
 * unless every one is an ONNX Runtime session (a TypeScript instance's worker is reached
 * through the main thread's ports).
 */
function sharedOnThread(instances: readonly BackendInstance[]): SharedInstance[] | undefined {
  const shared = instances.map((i) => (i.shareLimited ? i.shareLimited() : i.share?.()));
  return shared.length > 0 && shared.every((s) => s?.backend === "onnxruntime") ? (shared as SharedInstance[]) : undefined;
}

/** The two ends of a new MessageChannel. */
function portPair(): [ChannelPort, ChannelPort] {
  const { port1, port2 } = new MessageChannel();
  return [port1 as unknown as ChannelPort, port2 as unknown as ChannelPort];
}

const stopping = (id: string | undefined) =>
  unavailable(`${logPrefix(id)}Server is stopping, scheduler for model has stopped accepting new inference requests`);
