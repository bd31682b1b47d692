/**
 * @module What the HTTP and gRPC frontends' worker threads share (--http-thread-count,
 * --grpc-infer-thread-count, under Bun): messages posted in batches, errors as they
 * cross threads, and the main thread's half of an inference request whose body a worker
 * decoded: the model first, then the core, as the one-thread handlers do it.
 */
import { ServerError, type ErrorCode } from "../core/errors.ts";
import type { InferenceRequest, InferenceResponse } from "../core/request.ts";
import type { InferenceServer } from "../server/server.ts";
import type { Logger } from "../core/logger.ts";
import { DirectRunner } from "../server/direct-runner.ts";
import type { DirectModels } from "../server/direct-models.ts";
import type { DirectTable } from "../server/direct-table.ts";

declare const Bun: unknown;

/** Whether this runtime can run a frontend on worker threads (Bun: Web Workers, and sockets bound with SO_REUSEPORT). */
export function frontendWorkersSupported(): boolean {
  return typeof Bun !== "undefined" && typeof Worker === "function";
}

/** A ServerError as it crosses threads. */
export interface WireError {
  code: ErrorCode;
  message: string;
}

export const wireError = (err: unknown): WireError => {
  const e = ServerError.from(err);
  return { code: e.code, message: e.message };
};

/**
 * Messages go in batches: what one side has to say within one turn of its event loop is
 * posted as one array (a round trip costs ~17 µs of CPU alone, ~3 µs in batches of 8).
 */
export class MessageBatcher<M> {
  #queue: M[] = [];
  #transfer: ArrayBuffer[] = [];
  readonly #post: (batch: M[], transfer: ArrayBuffer[]) => void;
  constructor(post: (batch: M[], transfer: ArrayBuffer[]) => void) {
    this.#post = post;
  }
  send(m: M, transfer?: ArrayBuffer[]): void {
    this.#queue.push(m);
    if (transfer) this.#transfer.push(...transfer);
    if (this.#queue.length === 1) setImmediate(this.#flush);
  }
  readonly #flush = (): void => {
    const batch = this.#queue;
    const transfer = this.#transfer;
    this.#queue = [];
    this.#transfer = [];
    this.#post(batch, transfer);
  };
}

/** What one relayed stream may have posted to its worker and not yet acknowledged: bytes, and messages. */
export const STREAM_WINDOW_BYTES = 1024 * 1024;
export const STREAM_WINDOW_MESSAGES = 64;

/**
 * Flow control of one stream the main thread relays to a worker (an SSE body, a
 * ModelStreamInfer call), so that a client that reads slowly holds back its stream's
 * producer as it does on one thread, where the frontend writes only while the socket
 * drains. The worker acknowledges each message once it has handed it to its socket
 * (`ack`); the main thread posts more only while the window is open: fewer than
 * STREAM_WINDOW_MESSAGES messages and STREAM_WINDOW_BYTES bytes unacknowledged (a
 * single larger message still goes, alone).
 */
export class SendWindow {
  readonly #sizes: number[] = [];
  #bytes = 0;
  #closed = false;
  #waiters: (() => void)[] = [];

  /** Whether another message may be posted now (always, once closed). */
  get open(): boolean {
    return this.#closed || (this.#sizes.length < STREAM_WINDOW_MESSAGES && this.#bytes < STREAM_WINDOW_BYTES);
  }

  /** Counts a message of about `bytes` posted; returns whether the window is still open. */
  sent(bytes: number): boolean {
    this.#sizes.push(bytes);
    this.#bytes += bytes;
    return this.open;
  }

  /** The worker has handed `count` more messages to its socket. */
  acked(count: number): void {
    for (let i = 0; i < count && this.#sizes.length > 0; i++) this.#bytes -= this.#sizes.shift()!;
    if (this.open) this.#wake();
  }

  /** Resolves once the window is open (at once if it is). */
  ready(): Promise<void> {
    return this.open ? Promise.resolve() : new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** The stream is over (ended, failed or cancelled): nothing waits any more. */
  close(): void {
    this.#closed = true;
    this.#wake();
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }
}

/** Tensors at least this large move to the main thread by transfer instead of a copy. */
const TRANSFER_MIN_BYTES = 64 * 1024;

/**
 * The buffers behind a decoded request's large input tensors, to transfer with it: they
 * were made for this request alone (a received message or body, or a decoded JSON array)
 * and the worker does not read them again. Small tensors may sit in shared slabs and are
 * copied; so are responses, whose buffers the main thread may still hold (the response
 * cache hands out its own).
 */
export function inputBuffers(request: InferenceRequest): ArrayBuffer[] {
  const out = new Set<ArrayBuffer>();
  for (const t of request.inputs) {
    const b = t.data.buffer;
    if (b instanceof ArrayBuffer && b.byteLength >= TRANSFER_MIN_BYTES) out.add(b);
  }
  return [...out];
}

/** An inference request a worker decoded, as posted to the main thread. */
export interface WorkerInfer {
  model: string;
  version?: string;
  request: InferenceRequest;
}

/**
 * Runs a worker's decoded request on the main thread: resolves the model (an unknown one
 * is reported first), refuses a decoupled model with the frontend's message, then
 * queues it. Errors come back as WireErrors, logged as the one-thread frontends log them.
 */
export async function inferForWorker(
  server: InferenceServer,
  m: WorkerInfer,
  signal: AbortSignal,
  decoupledMessage: string,
  log: Logger,
  where: string,
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
    if (e.code === "INTERNAL") log.error(`${where}: ${e.message}`);
    else log.verbose(1, `${where}: ${e.code}: ${e.message}`);
    return { t: "failed", error: wireError(e) };
  }
}

/** A frontend worker thread as startWorkers drives it: start it on a port (0: any), get the port it listens on; stop it. */
export interface StartableWorker {
  start(port: number): Promise<number>;
  stop(): Promise<void>;
}

/**
 * Starts `count` workers one after the other on `port`: the first binds it (a free one
 * for port 0) and the others join it with SO_REUSEPORT. When one fails, those started
 * are stopped. Returns the port and a close that stops them all.
 */
export async function startWorkers(count: number, make: () => StartableWorker, port: number): Promise<{ port: number; close(): Promise<void> }> {
  const workers: StartableWorker[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const w = make();
      workers.push(w);
      port = await w.start(port);
    }
  } catch (err) {
    await Promise.all(workers.map((w) => w.stop()));
    throw err;
  }
  return {
    port,
    close: async () => {
      await Promise.all(workers.map((w) => w.stop()));
    },
  };
}

type Lifecycle = { t: "listening"; port: number } | { t: "startFailed"; message: string } | { t: "stopped" };

/**
 * The main thread's side of one frontend worker thread: it starts the worker with a
 * config (`start`, answered by `listening` with the port or by `startFailed`), stops it
 * (`stop`, answered by `stopped`, or after 5 s), posts messages in batches, and hands
 * every other message to `onMessage`.
 */
export class WorkerThread<Config, To extends { t: string }, From extends { t: string }> {
  readonly #worker: Worker;
  readonly #batcher: MessageBatcher<To | { t: "start"; config: Config } | { t: "stop" }>;
  #onStarted: ((m: Exclude<Lifecycle, { t: "stopped" }>) => void) | undefined;
  #onStopped: (() => void) | undefined;

  constructor(url: string, what: string, log: Logger, onMessage: (m: From) => void) {
    this.#worker = new Worker(url);
    this.#batcher = new MessageBatcher((batch) => this.#worker.postMessage(batch));
    this.#worker.onmessage = (e: MessageEvent<(From | Lifecycle)[]>) => {
      for (const m of e.data) {
        if (m.t === "listening" || m.t === "startFailed") this.#onStarted?.(m as Exclude<Lifecycle, { t: "stopped" }>);
        else if (m.t === "stopped") this.#onStopped?.();
        else onMessage(m as From);
      }
    };
    this.#worker.onerror = (e: ErrorEvent) => {
      log.error(`${what} worker thread: ${e.message}`);
      this.#onStarted?.({ t: "startFailed", message: e.message });
    };
  }

  send(m: To): void {
    this.#batcher.send(m);
  }

  /** Starts the worker; resolves with the port it listens on. */
  start(config: Config): Promise<number> {
    return new Promise((resolve, reject) => {
      this.#onStarted = (m) => (m.t === "listening" ? resolve(m.port) : reject(new Error(m.message)));
      this.#batcher.send({ t: "start", config });
    });
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.#onStopped = resolve;
      this.#batcher.send({ t: "stop" });
      setTimeout(resolve, 5000).unref?.();
    });
    this.#worker.terminate();
  }
}

/** What the main thread says to a frontend worker about the models the worker runs itself (server/direct-models.ts). */
export type ToWorkerDirect =
  | { t: "models"; table: DirectTable }
  /** Post the statistics records held, then `flushed` with this id. */
  | { t: "flush"; id: number };

/** What a frontend worker says back: statistics records, flushes done, and failures for the main thread's log. */
export type FromWorkerDirect =
  | { t: "records"; records: number[] }
  | { t: "flushed"; id: number }
  | { t: "failure"; code: ErrorCode; message: string; where: string };

/**
 * The main thread's side of one worker's DirectRunner: the worker gets every table the
 * DirectModels publishes, its records are applied, and a statistics read waits for its
 * flush. Without a DirectModels (one thread, or models the workers cannot run) it does nothing.
 */
export class DirectLink {
  readonly #direct: DirectModels | undefined;
  readonly #send: (m: ToWorkerDirect) => void;
  readonly #log: Logger;
  readonly #flushes = new Map<number, () => void>();
  #nextFlush = 0;
  #unsubscribe: (() => void) | undefined;

  constructor(direct: DirectModels | undefined, send: (m: ToWorkerDirect) => void, log: Logger) {
    this.#direct = direct;
    this.#send = send;
    this.#log = log;
  }

  /** The worker is listening: it takes tables from now on. */
  start(): void {
    this.#unsubscribe = this.#direct?.subscribe({
      publish: (table) => this.#send({ t: "models", table }),
      flush: () =>
        new Promise<void>((resolve) => {
          const id = this.#nextFlush++;
          this.#flushes.set(id, resolve);
          this.#send({ t: "flush", id });
        }),
    });
  }

  stop(): void {
    this.#unsubscribe?.();
    for (const resolve of this.#flushes.values()) resolve();
    this.#flushes.clear();
  }

  /** Handles `m` when it is one of the worker's direct messages; false otherwise. */
  receive(m: { t: string }): boolean {
    const d = m as FromWorkerDirect;
    switch (d.t) {
      case "records":
        this.#direct?.applyRecords(d.records);
        return true;
      case "flushed":
        this.#flushes.get(d.id)?.();
        this.#flushes.delete(d.id);
        return true;
      case "failure":
        if (d.code === "INTERNAL") this.#log.error(`${d.where}: ${d.message}`);
        else this.#log.verbose(1, `${d.where}: ${d.code}: ${d.message}`);
        return true;
      default:
        return false;
    }
  }
}

/**
 * Statistics records go from a worker to the main thread at most this often (a message
 * costs the main thread a few µs; a batch of a few hundred records about as much):
 * reading the statistics flushes them first, so nobody sees them late.
 */
const RECORDS_EVERY_MS = 50;

/**
 * A frontend worker's DirectRunner wired to its messages: `receive` takes the main
 * thread's tables and flushes (true when `m` was one); records and failures are posted.
 */
export function workerDirectRunner(post: (m: FromWorkerDirect) => void, where: (model: string) => string) {
  const postRecords = () => {
    const records = runner.take();
    if (records.length > 0) post({ t: "records", records });
  };
  const runner: DirectRunner = new DirectRunner(
    () => setTimeout(postRecords, RECORDS_EVERY_MS),
    (e, model) => post({ t: "failure", code: e.code, message: e.message, where: where(model) }),
  );
  const receive = (m: { t: string }): boolean => {
    const d = m as ToWorkerDirect;
    if (d.t === "models") runner.update(d.table);
    else if (d.t === "flush") {
      postRecords();
      post({ t: "flushed", id: d.id });
    } else return false;
    return true;
  };
  return { runner, receive };
}
