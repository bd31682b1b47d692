/**
 * @module What the HTTP and gRPC frontends' worker threads share (--http-thread-count,
 * --grpc-infer-thread-count, under Bun), on top of the worker-thread kit (core/threads/:
 * typed threads, batches, flow control, wire errors, transfer lists): the main thread's
 * half of an inference request whose body a worker decoded (the model first, then the
 * core, as the one-thread handlers do it), and the models the workers run themselves.
 */
import { ServerError, type ErrorCode } from "../core/errors.ts";
import { fromWireError, wireError, type WireError } from "../core/threads/wire-error.ts";
import { addStepTimes, type ComputeTimes, type InferenceRequest, type InferenceResponse } from "../core/request.ts";
import type { InferenceServer } from "../server/server.ts";
import { forwardLog, logEntry, logFailure, sharedLogLevel, type LogEntry, type Logger } from "../core/logger.ts";
import { DirectRunner } from "../server/direct-runner.ts";
import type { DirectModels, Subscriber } from "../server/direct-models.ts";
import type { DirectTable } from "../server/direct-table.ts";
import type { Transfer } from "../core/threads/batcher.ts";
import { connectShared, onSharedEnded } from "../backends/connect.ts";
import { BatchClient } from "../server/batch-client.ts";
import type { BatchChannel } from "../server/batch-thread.ts";
import type { ChannelPort } from "../server/batch-slots.ts";

/** An inference request a worker decoded, as posted to the main thread. */
export interface WorkerInfer {
  model: string;
  version?: string;
  request: InferenceRequest;
  /** A ModelStreamInfer stream's request: its failure goes back in-band, and is not logged (the stream handler logs none). */
  streamed?: true;
}

/**
 * Runs a worker's decoded request on the main thread: resolves the model (an unknown one
 * is reported first), refuses a decoupled model with the frontend's message, then
 * queues it. Errors come back as WireErrors, logged as the one-thread frontends log them:
 * `where` names the route a failure is logged under, none when that frontend does not log it.
 */
export async function inferForWorker(
  server: InferenceServer,
  m: WorkerInfer,
  signal: AbortSignal,
  decoupledMessage: string,
  log: Logger,
  where: (e: ServerError) => string | undefined,
): Promise<{ t: "response"; response: InferenceResponse } | { t: "failed"; error: WireError }> {
  const request = m.request;
  request.modelName = m.model;
  if (m.version !== undefined) request.modelVersion = m.version;
  else delete request.modelVersion;
  request.signal = signal;
  try {
    const resolved = server.resolve(m.model, m.version, { unary: decoupledMessage });
    return { t: "response", response: await server.inferAsync(request, resolved) };
  } catch (err) {
    const e = ServerError.from(err);
    const at = where(e);
    if (at !== undefined) logFailure(log, at, e.code, e.message);
    return { t: "failed", error: wireError(e) };
  }
}

/** A frontend worker thread as startWorkers drives it: start it on a port (0: any), get the port it listens on; stop it. */
export interface StartableWorker {
  start(port: number): Promise<number>;
  stop(): Promise<void>;
}

/**
 * How many started workers may end on their own within RESTART_WINDOW_MS and be replaced:
 * past that, the ones that end are not (a worker that ends at every start would otherwise
 * start again without end).
 */
export const RESTARTS_PER_WINDOW = 8;
const RESTART_WINDOW_MS = 60_000;
/** A replacement starts this long after the end (Bun 1.4.4 crashes when a worker is started from another worker's close event). */
export const RESTART_DELAY_MS = 100;

/**
 * Starts `count` workers on `port`. For port 0 the first binds a free port and the others
 * then join it (SO_REUSEPORT); on a port given they all start at once. When one fails,
 * every one is stopped and the start fails with the first failure in the workers' order.
 * Returns the port and a close that stops them all. `make` gets the function its worker
 * calls when its thread ends (the frontend's WorkerThread exit): a started worker that
 * ends on its own (Bun ends a worker on an uncaught error) is logged and replaced by a new
 * one on the port, so the frontend keeps its threads, RESTARTS_PER_WINDOW at most a window.
 * `held`: what the workers read while they run (the server's shared health), released once
 * every one has stopped, after a close or a failed start.
 */
export async function startWorkers(
  count: number,
  make: (ended: () => void) => StartableWorker,
  port: number,
  log: Logger,
  what: string,
  held?: { release(): void },
): Promise<{ port: number; close(): Promise<void> }> {
  const workers: StartableWorker[] = [];
  let closing = false;
  const restarts: number[] = [];
  const start = (on: number) => {
    let started = false;
    const w = make(() => {
      if (!started || closing || !workers.includes(w)) return;
      workers.splice(workers.indexOf(w), 1);
      const now = Date.now();
      while (restarts.length > 0 && restarts[0]! <= now - RESTART_WINDOW_MS) restarts.shift();
      if (restarts.length >= RESTARTS_PER_WINDOW) {
        log.error(`${what} worker thread ended; ${restarts.length} were started again in the last minute, so this one is not (${workers.length} left)`);
        return;
      }
      restarts.push(now);
      log.error(`${what} worker thread ended; starting another on port ${port}`);
      setTimeout(() => {
        if (closing) return;
        const again = start(port);
        const replacement = workers.at(-1)!;
        again.catch((err: unknown) => {
          if (closing) return;
          log.error(`${what} worker thread could not be started again: ${(err as Error).message}`);
          const i = workers.indexOf(replacement);
          if (i >= 0) workers.splice(i, 1);
          void replacement.stop();
        });
      }, RESTART_DELAY_MS);
    });
    workers.push(w);
    return w.start(on).then((bound) => {
      started = true;
      return bound;
    });
  };
  try {
    if (port === 0 && count > 0) port = await start(0);
    const starts: Promise<number>[] = [];
    while (workers.length < count) starts.push(start(port));
    const failed = (await Promise.allSettled(starts)).find((r) => r.status === "rejected");
    if (failed) throw failed.reason;
  } catch (err) {
    closing = true;
    await stopAll(workers, held);
    throw err;
  }
  return {
    port,
    close: async () => {
      closing = true;
      await stopAll(workers, held);
    },
  };
}

async function stopAll(workers: readonly StartableWorker[], held: { release(): void } | undefined): Promise<void> {
  try {
    await Promise.all(workers.map((w) => w.stop()));
  } finally {
    held?.release();
  }
}

/** What the main thread says to a frontend worker about the models the worker runs itself (server/direct-models.ts). */
export type ToWorkerDirect =
  /** `slot`: the worker's in the entries' shared counters; none: it posts records. */
  | { t: "models"; table: DirectTable; slot?: number }
  /** Sent first: the count of record batches the worker has begun that the main thread has not applied yet (an Int32). */
  | { t: "recordBatches"; buffer: SharedArrayBuffer; log: SharedArrayBuffer }
  /** Post the statistics records held, then `flushed` with this id. */
  | { t: "flush"; id: number }
  /** The answer to `connect`: a channel to the instance (transferred), or none when it cannot take one now. */
  | { t: "port"; key: string; port?: MessagePort; live?: number }
  /** The thread of the instance known by `key` ended (backends/connect.ts sharedEnded): the error its requests fail with, none when its owner stopped it. */
  | { t: "ended"; key: string; error?: WireError }
  /** The worker's channel to the scheduling thread (server/batch-thread.ts), for dynamically batched versions; `port` transferred. */
  | { t: "batch"; buffer: SharedArrayBuffer; port: ChannelPort }
  /** The answer to an ensemble step the worker relayed (`step`). */
  | { t: "stepped"; id: number; response?: InferenceResponse; error?: WireError; times?: ComputeTimes };

/** What a frontend worker says back: statistics records, flushes done, and failures for the main thread's log. */
export type FromWorkerDirect =
  | { t: "records"; records: number[] }
  | { t: "flushed"; id: number }
  | { t: "failure"; code: ErrorCode; message: string; where: string }
  /** A channel to the shared instance known by `key` (a typescript model's worker), asked once (backends/connect.ts). */
  | { t: "connect"; key: string }
  /** An ensemble's step the worker cannot run itself (DirectModels.step); `stepCancel` when its ensemble is cancelled. */
  | { t: "step"; id: number; request: InferenceRequest }
  | { t: "stepCancel"; id: number }
  /** What a logger in the worker logged (its Redis cache client), for the main thread's log under its settings. */
  | { t: "log"; entry: LogEntry };

/**
 * The main thread's side of one worker's DirectRunner: the worker gets every table the
 * DirectModels publishes, its records are applied, and a statistics read waits for its
 * flush while it holds records. Without a DirectModels (one thread, or models the
 * workers cannot run) it does nothing.
 */
export class DirectLink {
  readonly #direct: DirectModels | undefined;
  readonly #send: (m: ToWorkerDirect, transfer?: Transfer[]) => void;
  readonly #log: Logger;
  #batch: BatchChannel | undefined;
  readonly #flushes = new Map<number, () => void>();
  #nextFlush = 0;
  /** Record batches the worker has begun that are not applied here yet: a statistics read waits for a flush only while there are some. */
  readonly #pending = new Int32Array(new SharedArrayBuffer(4));
  /** Relayed ensemble steps running here, by the worker's id: aborted when the worker cancels them. */
  readonly #steps = new Map<number, AbortController>();
  #subscriber: Subscriber | undefined;
  #unsubscribe: (() => void) | undefined;
  #unsubscribeEnded: (() => void) | undefined;

  constructor(direct: DirectModels | undefined, send: (m: ToWorkerDirect, transfer?: Transfer[]) => void, log: Logger) {
    this.#direct = direct;
    this.#send = send;
    this.#log = log;
  }

  /** The worker is listening: it takes tables from now on. */
  start(): void {
    this.#batch = this.#direct?.batchChannel();
    if (this.#direct) this.#send({ t: "recordBatches", buffer: this.#pending.buffer as SharedArrayBuffer, log: sharedLogLevel() });
    const b = this.#batch;
    if (b) this.#send({ t: "batch", buffer: b.buffer, port: b.port }, [b.port as unknown as MessagePort]);
    // Sent in order with the ports (`port`): a worker hears of an end after the port it concerns.
    if (this.#direct) this.#unsubscribeEnded = onSharedEnded((key, error) => this.#send(error ? { t: "ended", key, error } : { t: "ended", key }));
    this.#subscriber = {
      publish: (table, slot) => this.#send(slot === undefined ? { t: "models", table } : { t: "models", table, slot }),
      flush: () =>
        Atomics.load(this.#pending, 0) === 0
          ? Promise.resolve()
          : new Promise<void>((resolve) => {
              const id = this.#nextFlush++;
              this.#flushes.set(id, resolve);
              this.#send({ t: "flush", id });
            }),
    };
    this.#unsubscribe = this.#direct?.subscribe(this.#subscriber);
  }

  stop(): void {
    this.#batch?.close();
    this.#unsubscribe?.();
    this.#unsubscribeEnded?.();
    for (const resolve of this.#flushes.values()) resolve();
    this.#flushes.clear();
    for (const step of this.#steps.values()) step.abort();
  }

  /**
   * The worker's thread ended (stopped, or failed): nothing waits on it any more, what it
   * submitted to the scheduling thread is cancelled, and what it held in shared memory goes back.
   */
  ended(): void {
    this.#batch?.abandon();
    this.stop();
    if (this.#subscriber) this.#direct?.ended(this.#subscriber);
  }

  /** Runs a worker's relayed ensemble step (DirectModels.step) and sends its answer back. */
  #step(id: number, request: InferenceRequest): void {
    const direct = this.#direct;
    const controller = new AbortController();
    this.#steps.set(id, controller);
    request.signal = controller.signal;
    const answer = direct ? direct.step(request) : Promise.reject(new ServerError("UNAVAILABLE", "the frontend workers run no models"));
    answer.then(
      (response) => {
        this.#steps.delete(id);
        // The step's compute durations, for its ensemble's statistics in the worker.
        this.#send({ t: "stepped", id, response, ...(request.stepTimes ? { times: request.stepTimes } : {}) });
      },
      (err: unknown) => {
        this.#steps.delete(id);
        this.#send({ t: "stepped", id, error: wireError(err) });
      },
    );
  }

  /** Handles `m` when it is one of the worker's direct messages; false otherwise. */
  receive(m: { t: string }): boolean {
    const d = m as FromWorkerDirect;
    switch (d.t) {
      case "records":
        this.#direct?.applyRecords(d.records);
        Atomics.sub(this.#pending, 0, 1);
        return true;
      case "flushed":
        this.#flushes.get(d.id)?.();
        this.#flushes.delete(d.id);
        return true;
      case "failure":
        logFailure(this.#log, d.where, d.code, d.message);
        return true;
      case "connect": {
        const channel = this.#direct ? connectShared(d.key) : undefined;
        if (channel) this.#send({ t: "port", key: d.key, port: channel.port, live: channel.live }, [channel.port]);
        else this.#send({ t: "port", key: d.key });
        return true;
      }
      case "step":
        this.#step(d.id, d.request);
        return true;
      case "stepCancel":
        this.#steps.get(d.id)?.abort();
        return true;
      case "log":
        logEntry(d.entry);
        return true;
      default:
        return false;
    }
  }
}

/**
 * Statistics records (where a worker does not count in shared memory) go from a worker
 * to the main thread at most this often (a message costs the main thread a few µs; a
 * batch of a few hundred records about as much): reading the statistics flushes them
 * first, so nobody sees them late.
 */
const RECORDS_EVERY_MS = 50;

/**
 * A frontend worker's DirectRunner wired to its messages: `receive` takes the main
 * thread's tables and flushes (true when `m` was one); records and failures are posted.
 */
export function workerDirectRunner(
  post: (m: FromWorkerDirect) => void,
  where: (model: string, request: InferenceRequest, e: ServerError) => string | undefined,
) {
  // What is logged in the worker goes to the main thread's log, under its settings (its verbose level, once known, filters here).
  const forwardTo = (entry: LogEntry) => post({ t: "log", entry });
  forwardLog(forwardTo);
  const postRecords = () => {
    const records = runner.take();
    if (records.length > 0) post({ t: "records", records });
  };
  /** The main thread's count of this worker's record batches begun and not yet applied (DirectLink). */
  let pending: Int32Array | undefined;
  const steps = new StepRelay(post);
  const runner: DirectRunner = new DirectRunner(
    () => {
      // Counted before the request it records is answered, so a statistics read after that answer waits for the batch.
      if (pending) Atomics.add(pending, 0, 1);
      setTimeout(postRecords, RECORDS_EVERY_MS);
    },
    (e, model, request) => {
      // `where` names the route the main thread would log the failure under; none: it would not log it.
      const at = where(model, request, e);
      if (at !== undefined) post({ t: "failure", code: e.code, message: e.message, where: at });
    },
    (key) => post({ t: "connect", key }),
    (request) => steps.relay(request),
  );
  const receive = (m: { t: string }): boolean => {
    const d = m as ToWorkerDirect;
    if (d.t === "models") runner.update(d.table, d.slot);
    else if (d.t === "recordBatches") {
      pending = new Int32Array(d.buffer);
      forwardLog(forwardTo, d.log);
    } else if (d.t === "stepped") steps.answer(d.id, d.response, d.error, d.times);
    else if (d.t === "port") runner.attach(d.key, d.port, d.live);
    else if (d.t === "ended") runner.ended(d.key, d.error && fromWireError(d.error));
    else if (d.t === "batch") runner.attachBatch(new BatchClient(d.buffer, d.port));
    else if (d.t === "flush") {
      postRecords();
      post({ t: "flushed", id: d.id });
    } else return false;
    return true;
  };
  return { runner, receive };
}

/**
 * A worker's ensemble steps run on the main thread (DirectRunner's relay): each posted
 * with an id, its answer matched back; the ensemble's cancel follows it ("stepCancel").
 */
class StepRelay {
  readonly #post: (m: FromWorkerDirect) => void;
  readonly #waiting = new Map<number, { resolve(r: InferenceResponse): void; reject(e: ServerError): void; forget(): void; times?: ComputeTimes }>();
  #nextId = 0;

  constructor(post: (m: FromWorkerDirect) => void) {
    this.#post = post;
  }

  relay(request: InferenceRequest): Promise<InferenceResponse> {
    const id = this.#nextId++;
    const { signal, ...rest } = request;
    const cancel = () => this.#post({ t: "stepCancel", id });
    return new Promise((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject, forget: () => signal?.removeEventListener("abort", cancel), times: request.stepTimes });
      // The main thread adds the step's own durations to a fresh sum, which comes back with its answer.
      const times = rest.stepTimes;
      this.#post({ t: "step", id, request: times ? { ...rest, stepTimes: { input: 0, infer: 0, output: 0 } } : rest });
      if (signal?.aborted) cancel();
      else signal?.addEventListener("abort", cancel, { once: true });
    });
  }

  answer(id: number, response: InferenceResponse | undefined, error: WireError | undefined, times?: ComputeTimes): void {
    const w = this.#waiting.get(id);
    if (!w) return;
    this.#waiting.delete(id);
    w.forget();
    if (response && times) addStepTimes({ stepTimes: w.times }, times.input, times.infer, times.output);
    if (response) w.resolve(response);
    else w.reject(fromWireError(error ?? { code: "INTERNAL", message: "the main thread did not answer the step" }));
  }
}
