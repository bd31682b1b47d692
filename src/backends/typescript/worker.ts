/**
 * @module Worker-thread instances of the `typescript` backend (the default; model config
 * parameter `execution_thread`): each instance imports the model's module inside a Worker
 * of its own (worker-entry.ts), so the model has its own globals, a CPU-bound `execute`
 * leaves the server's event loop free, and the model's faults end its worker, not the
 * server. On the main thread the instance is a proxy TritonModel: requests go to the
 * worker as plain data (structured clone; the messages are typed in worker-protocol.ts
 * and carried by the worker-thread kit, core/threads/), responses come back the same way and are
 * checked on the main thread like any other model's, and BLS calls are posted back and
 * run through the main thread's `request.infer` or `request.stream` (chain check, server
 * path), a stream's responses posted to the worker one by one.
 *
 * A worker that ends (an unhandled rejection or uncaught exception in the model, a call
 * to process.exit, a message the server cannot read) fails the requests it held with
 * INTERNAL naming the model, instance and reason, is logged, and is replaced by a fresh
 * one (`initialize` again), which runs the executes a faulting worker had not started. When that initialize fails, or the worker keeps dying before
 * it completes an execute, the instance gives up and the model is reported unavailable.
 */
import { workerUrl } from "../../core/worker-url.ts";
import { internal, unavailable, unsupported, type ServerError } from "../../core/errors.ts";
import { getLogger } from "../../core/logger.ts";
import { Thread } from "../../core/threads/thread.ts";
import type { InferenceRequest, InferenceResponse, InitializeArgs, ModelLogger, TritonModel } from "./api.ts";
import type { CustomMetrics, MetricsScope } from "../custom-metrics.ts";
import type { SharedChannel } from "../connect.ts";
import {
  endedSlot,
  workerEnded,
  type FromModelWorker,
  type ModelError,
  type PlainBlsResponse,
  type PlainInitializeArgs,
  type PlainRequest,
  type ToModelWorker,
} from "./worker-protocol.ts";

const log = getLogger("src/backends/typescript/worker.ts");

const entry = () => workerUrl("src/backends/typescript/worker-entry.ts", new URL("./worker-entry.ts", import.meta.url));

/** Whether this runtime has Web Workers (Bun, Deno; not Node). */
export const hasWorkers = (): boolean => typeof Worker === "function";

const FINALIZE_LIMIT_MS = 10_000;
/** Deaths in a row, with no execute completed in between, after which an instance gives up. */
export const MAX_RESTARTS = 3;
const LOG_LEVELS = new Set(["info", "warn", "error", "verbose"]);

interface Pending {
  requests: InferenceRequest[];
  resolve: (r: InferenceResponse[] | void) => void;
  reject: (e: unknown) => void;
}

/** Who the instance is, for messages, and whom it tells when it gives up. */
export interface WorkerOwner {
  model: string;
  instance: string;
  logger: ModelLogger;
  /** The instance cannot serve any more (its restart failed): the model should be marked UNAVAILABLE with `reason` (and it is logged there). */
  unavailable(reason: string): void;
}

type ModelThread = Thread<ToModelWorker, FromModelWorker>;

/** A model's error (its stack when it has one), as an Error with its code. Read defensively: the model's realm posted it. */
const fromWire = (e: Partial<ModelError> | undefined) => Object.assign(new Error(String(e?.stack ?? e?.message ?? "unknown error")), { code: e?.code });
/** An error the main thread caught (a BLS call's), for the worker. */
const toWire = (err: unknown): ModelError => ({ message: (err as Error)?.message ?? String(err), code: (err as { code?: string })?.code });
/** A BLS response as posted to the worker. */
const plainResponse = (r: PlainBlsResponse): PlainBlsResponse => ({ model: r.model, version: r.version, outputs: r.outputs, parameters: r.parameters });

/**
 * Starts a model's BLS call on a later turn of the event loop. A model that calls a fast
 * model run inline here (ONNX Runtime's `auto` or `sync` run mode) over and over sends its
 * next call as soon as the last is answered; started at once, under Bun that chain held back
 * this thread's immediates (the frontend workers' batched answers) and the other workers'
 * messages (a client's cancel) until it ended: a generation's tokens reached a gRPC stream
 * all at its end, and a cancel came too late to stop it.
 */
const startLater = (start: () => unknown): void => {
  setImmediate(start);
};

/**
 * One worker thread (a module worker, each message posted at once): started, its
 * messages handed on, its end (an error event, or Bun's close event with the exit code)
 * and anything it posts that is not a batch reported as `onEnd`'s reason.
 */
function startThread(onMessage: (m: FromModelWorker) => void, onEnd: (reason: string) => void): ModelThread {
  return new Thread<ToModelWorker, FromModelWorker>(
    entry(),
    {
      message: onMessage,
      error: (message) => onEnd(`failed: ${message}`),
      exit: (code) => onEnd(`exited with code ${code ?? "?"}`),
      malformed: () => onEnd("sent a message the server cannot handle (not a batch of messages)"),
    },
    { module: true },
  );
}

/** What autoCompleteInWorker found: the completed config, or where it failed. */
export type AutoCompleteResult = { found: boolean; config: unknown } | { stage: "import" | "class" | "autoComplete"; error: Error };

/** Runs a model class's static autoCompleteConfig in a worker of its own (the module's top level never runs on the main thread). */
export function autoCompleteInWorker(url: string, path: string, config: object): Promise<AutoCompleteResult> {
  if (!hasWorkers()) throw unsupported("execution_thread 'worker' needs a runtime with Web Workers (Bun or Deno)");
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (f: () => void) => {
      if (settled) return;
      settled = true;
      worker.terminate();
      f();
    };
    const worker = startThread(
      (m) => {
        if (m?.t === "config") settle(() => resolve({ found: m.found === true, config: m.config }));
        else if (m?.t === "configError") settle(() => resolve({ stage: m.stage, error: fromWire(m.error) }));
        else if (m?.t === "fatal") settle(() => reject(new Error(String(m.reason))));
      },
      (reason) => settle(() => reject(new Error(`the worker ${reason}`))),
    );
    worker.send({ t: "autoComplete", url, path, config });
  });
}

/** A TritonModel whose module lives in a Worker; `create` resolves once its initialize has. */
export class WorkerModel implements TritonModel {
  readonly #url: string;
  readonly #path: string;
  readonly #args: PlainInitializeArgs;
  readonly #owner: WorkerOwner;
  readonly #metrics: CustomMetrics;
  /** The custom metrics the current worker made: released when it ends, so a restarted worker starts afresh. */
  #scope: MetricsScope | undefined;
  readonly #decoupled: boolean;
  #worker: ModelThread | undefined;
  /** Settles when the current worker has initialized (or could not). */
  #ready: Promise<void> = Promise.resolve();
  #starting: { resolve: () => void; reject: (e: Error) => void } | undefined;
  readonly #pending = new Map<number, Pending>();
  /** BLS calls the worker made that are still running, by the worker's call id. */
  readonly #blsCalls = new Map<number, AbortController>();
  #next = 0;
  /** Decoupled models: the main-thread requests whose senders the worker's sends go to, until their final. */
  readonly #senders = new Map<string, InferenceRequest>();
  /** Each request's relay of its cancellation to the worker (`exec:index`), until it is answered (a decoupled one: until its final). */
  readonly #relays = new Map<string, () => void>();
  /** Deaths since the last completed execute. */
  #deaths = 0;
  /** completedElsewhere() at the last death. */
  #completedSeen = 0;
  /** Set once the instance no longer serves (given up, aborted or finalized): executes fail with it. */
  #gone: ServerError | undefined;
  #finalized: (() => void) | undefined;

  private constructor(url: string, path: string, args: PlainInitializeArgs, owner: WorkerOwner, metrics: CustomMetrics) {
    if (!hasWorkers()) throw unsupported("execution_thread 'worker' needs a runtime with Web Workers (Bun or Deno)");
    this.#url = url;
    this.#path = path;
    this.#args = args;
    this.#owner = owner;
    this.#metrics = metrics;
    this.#decoupled = (args.modelConfig as { model_transaction_policy?: { decoupled?: boolean } }).model_transaction_policy?.decoupled === true;
  }

  static async create(url: string, path: string, args: Omit<InitializeArgs, "metrics">, owner: WorkerOwner, metrics: CustomMetrics): Promise<WorkerModel> {
    const { logger: _, ...plain } = args;
    const m = new WorkerModel(url, path, plain, owner, metrics);
    await m.#start();
    return m;
  }

  /** A fresh worker, initialized; rejects (the worker ended) when initialize fails. */
  #start(): Promise<void> {
    const worker: ModelThread = startThread(
      (m) => this.#onMessage(worker, m),
      (reason) => this.#ended(worker, reason),
    );
    this.#worker = worker;
    this.#scope?.release();
    this.#scope = this.#metrics.scope();
    this.#ready = new Promise<void>((resolve, reject) => {
      this.#starting = { resolve, reject };
      worker.send({ t: "init", url: this.#url, path: this.#path, args: this.#args });
    });
    return this.#ready;
  }

  async execute(requests: InferenceRequest[]): Promise<InferenceResponse[] | void> {
    await this.#ready.catch(() => undefined);
    // A worker that reported a fault to a frontend worker's port (ENDED) ends soon: the next one runs this execute.
    while (this.#worker && !this.#gone && this.endedFlag && endedSlot.isEnded(this.endedFlag, 0)) {
      await new Promise<void>((resolve) => this.#afterEnd.push(resolve));
      await this.#ready.catch(() => undefined);
    }
    if (this.#gone) throw this.#gone;
    return new Promise((resolve, reject) => this.#send({ requests, resolve, reject }));
  }

  /** Sends `p`'s requests to the current worker as an execute, pending until its `done`. */
  #send(p: Pending): void {
    const { requests } = p;
    const worker = this.#worker!;
    const id = this.#next++;
    const plain = requests.map(
      (r): PlainRequest => ({
        id: r.id,
        inputs: r.inputs,
        requestedOutputNames: r.requestedOutputNames,
        parameters: r.parameters,
        correlationId: r.correlationId,
        flags: r.flags,
        cancelled: r.signal.aborted,
      }),
    );
    if (this.#decoupled) requests.forEach((r, i) => this.#senders.set(`${id}:${i}`, r));
    // A request's cancellation is relayed to the worker, where its isCancelled() and signal read it.
    requests.forEach((r, index) => {
      if (r.signal.aborted) return;
      const cancel = () => this.#worker?.send({ t: "cancel", id, index });
      r.signal.addEventListener("abort", cancel, { once: true });
      this.#relays.set(`${id}:${index}`, () => r.signal.removeEventListener("abort", cancel));
    });
    this.#pending.set(id, p);
    worker.send({ t: "execute", id, requests: plain });
  }

  /**
   * The executes a worker that reported a fault had not started (those after `started`, its
   * last started one, read or not): taken from what fails, to run again once the next
   * worker is ready (as one thread's scheduler keeps them); they fail only if the instance
   * gives up.
   */
  #takeBack(started: unknown): Pending[] {
    const held: Pending[] = [];
    if (typeof started !== "number") return held;
    for (const [id, p] of [...this.#pending]) {
      if (id <= started) continue;
      this.#pending.delete(id);
      for (let i = 0; i < p.requests.length; i++) {
        this.#senders.delete(`${id}:${i}`);
        this.#forget(`${id}:${i}`);
      }
      held.push(p);
    }
    return held;
  }

  /** Runs `held` again on the next worker once it is ready, ahead of executes that come later (or fails them as the instance gives up). */
  #rerun(held: Pending[]): void {
    for (const p of held) this.execute(p.requests).then(p.resolve, p.reject);
  }

  /** What runs the BLS calls of executes a frontend worker sent over its port (exec -1): the instance's, with a call chain of this model alone. */
  direct: Pick<InferenceRequest, "infer" | "stream"> | undefined;
  /** The executes the frontend workers sent straight to the worker that it completed so far (the main thread hears nothing of them). */
  completedElsewhere: (() => number) | undefined;
  /** The instance's shared ENDED slot (direct.ts), which a worker that reports a fault sets first; cleared once a fresh one is ready (`started`). */
  endedFlag: Int32Array | undefined;
  /** Executes waiting for the end of a worker that set ENDED to be handled here (#stop). */
  #afterEnd: (() => void)[] = [];
  /** Told when a fresh worker has initialized (it serves from now on). */
  started: (() => void) | undefined;
  /** Told whenever a worker that served stops, before it is ended: with the error its executes fail with (it ended by itself, or was aborted), none after finalize. */
  ended: ((error: ServerError | undefined) => void) | undefined;

  /**
   * A fresh channel to the worker for a frontend worker thread (#30): the worker serves
   * executes on one end, the other is returned. Undefined while no initialized worker
   * serves (starting, restarting, gone, or ended: ENDED set). A worker that ends closes its
   * ports; one that reports a fault sets ENDED (endedFlag) first.
   */
  connect(): SharedChannel | undefined {
    const worker = this.#worker;
    const ended = this.endedFlag;
    if (!worker || !ended || this.#starting || this.#gone) return undefined;
    const live = Atomics.load(ended, 0);
    if ((live & 1) === 1) return undefined;
    const { port1, port2 } = new MessageChannel();
    worker.send({ t: "port", port: port1, ended, live }, [port1]);
    return { port: port2, live };
  }

  /** Runs the model's finalize in the worker, then ends the worker (after 10 s at most, for a worker stuck in execute). */
  finalize(): Promise<void> {
    this.#gone ??= unavailable(`model '${this.#owner.model}' instance ${this.#owner.instance} is unloaded`);
    const worker = this.#worker;
    if (!worker) return Promise.resolve();
    let timer: ReturnType<typeof setTimeout> | undefined;
    return new Promise<void>((resolve) => {
      this.#finalized = resolve;
      timer = setTimeout(resolve, FINALIZE_LIMIT_MS);
      (timer as { unref?: () => void }).unref?.();
      worker.send({ t: "finalize" });
    }).finally(() => {
      clearTimeout(timer);
      this.#stop(worker);
    });
  }

  /** Ends the worker now: what it holds fails with `error`, and the instance serves no more. */
  abort(error: ServerError): void {
    this.#gone ??= error;
    const worker = this.#worker;
    if (worker) this.#stop(worker, error);
    this.#failAll(error);
  }

  #stop(worker: ModelThread, error?: ServerError): void {
    if (this.#worker === worker) {
      this.#worker = undefined;
      this.#scope?.release();
      this.#scope = undefined;
      // The frontend workers' ports to it fail what they hold with the same error (direct.ts).
      this.ended?.(error);
      // Run after the caller (#ended) has started the next worker or given up.
      const after = this.#afterEnd;
      this.#afterEnd = [];
      for (const resolve of after) resolve();
    }
    worker.terminate();
  }

  /** Everything the instance holds fails with `error`: its executes, the BLS calls they made, open decoupled streams. */
  #failAll(error: ServerError): number {
    const n = this.#pending.size;
    for (const p of this.#pending.values()) p.reject(error);
    this.#pending.clear();
    for (const c of this.#blsCalls.values()) c.abort();
    this.#blsCalls.clear();
    for (const request of this.#senders.values()) {
      try {
        request.getResponseSender().send({ error: { message: error.message, code: error.code as "INTERNAL" } }, { final: true });
      } catch {
        // Its sender was closed already.
      }
    }
    this.#senders.clear();
    for (const forget of this.#relays.values()) forget();
    this.#relays.clear();
    return n;
  }

  /** The worker ended (or must): fail what it held, then start a fresh one unless the instance gave up. */
  #ended(worker: ModelThread, reason: string, started?: unknown): void {
    if (this.#worker !== worker) return; // ended on purpose, or already handled
    const held = this.#takeBack(started);
    const who = `model '${this.#owner.model}' instance ${this.#owner.instance}`;
    const error = internal(workerEnded(this.#owner.model, this.#owner.instance, reason));
    this.#stop(worker, error);
    this.#finalized?.();
    const starting = this.#starting;
    this.#starting = undefined;
    if (starting) {
      // During initialize: the start fails (create() reports it; a restart gives up).
      starting.reject(new Error(`the worker ${reason}`));
      return;
    }
    const failed = this.#failAll(error);
    if (this.#gone) return this.#rerun(held);
    // An execute a frontend worker sent completed since the last death: the count starts again, as after a "done".
    const completed = this.completedElsewhere?.() ?? 0;
    if (completed !== this.#completedSeen) {
      this.#completedSeen = completed;
      this.#deaths = 0;
    }
    this.#deaths++;
    if (this.#deaths > MAX_RESTARTS) {
      this.#giveUp(`${who}: the worker ended ${this.#deaths} times in a row without completing an execute (last: ${reason.split("\n")[0]})`);
      return this.#rerun(held);
    }
    log.error(`${who}: the worker ${reason}; ${failed} execution(s) failed; restarting it`);
    this.#start().then(
      () => log.info(`${who}: worker restarted`),
      (err) => this.#giveUp(`${who}: the worker ${reason.split("\n")[0]}, and its restart failed: ${(err as Error)?.message ?? String(err)}`),
    );
    this.#rerun(held);
  }

  #giveUp(reason: string): void {
    if (this.#gone) return;
    this.#gone = unavailable(reason);
    this.#failAll(this.#gone);
    this.#owner.unavailable(reason);
  }

  #onMessage(worker: ModelThread, m: FromModelWorker): void {
    if (this.#worker !== worker) return;
    try {
      this.#handle(worker, m);
    } catch (err) {
      // The model posted something the protocol does not know: its worker is not trusted further.
      this.#ended(worker, `sent a message the server cannot handle (${(err as Error)?.message ?? String(err)})`);
    }
  }

  #forget(key: string): void {
    this.#relays.get(key)?.();
    this.#relays.delete(key);
  }

  /** The request a worker's BLS call was made for: one of an execute still running, or a decoupled one whose sender is still open. */
  #requestOf(exec: number, index: number): Pick<InferenceRequest, "infer" | "stream"> | undefined {
    if (exec === -1) return this.direct;
    return this.#pending.get(exec)?.requests[index] ?? this.#senders.get(`${exec}:${index}`);
  }

  #answered(): ModelError {
    return { message: `model '${this.#owner.model}': BLS call refused: its request has been answered`, code: "UNAVAILABLE" };
  }

  #handle(worker: ModelThread, m: FromModelWorker): void {
    switch (m.t) {
      case "ready":
        this.started?.();
        this.#starting?.resolve();
        this.#starting = undefined;
        break;
      case "initError": {
        const starting = this.#starting;
        this.#starting = undefined;
        this.#stop(worker);
        starting?.reject(fromWire(m.error));
        break;
      }
      case "fatal":
        this.#ended(worker, `ended: ${String(m.reason)}`, m.started);
        break;
      case "log":
        if (!LOG_LEVELS.has(m.level)) throw new Error(`log level '${String(m.level)}'`);
        this.#owner.logger[m.level](String(m.msg));
        break;
      case "done": {
        const p = this.#pending.get(m.id);
        this.#pending.delete(m.id);
        if (!p) return;
        this.#deaths = 0;
        // A decoupled request may still be answering: its cancellation is relayed until its final.
        p.requests.forEach((_, i) => this.#senders.has(`${m.id}:${i}`) || this.#forget(`${m.id}:${i}`));
        if (m.thrown) p.reject(Object.assign(new Error(String(m.thrown.message)), { code: m.thrown.code }));
        else p.resolve(m.responses);
        break;
      }
      case "bls": {
        const request = this.#requestOf(m.exec, m.index);
        if (!request) {
          this.#worker?.send({ t: "blsResult", id: m.id, error: this.#answered() });
          return;
        }
        // The worker's signal cannot cross; a blsCancel message aborts this one instead.
        const controller = new AbortController();
        this.#blsCalls.set(m.id, controller);
        // Started on a turn of its own (startLater): a cancel that comes first starts it aborted.
        startLater(() =>
          request
            .infer({ ...m.call, signal: controller.signal })
            .then(
              (r) => this.#worker?.send({ t: "blsResult", id: m.id, response: plainResponse(r) }),
              (err) => this.#worker?.send({ t: "blsResult", id: m.id, error: toWire(err) }),
            )
            .finally(() => this.#blsCalls.delete(m.id)),
        );
        break;
      }
      case "blsStream": {
        const request = this.#requestOf(m.exec, m.index);
        if (!request) {
          this.#worker?.send({ t: "blsStreamEnd", id: m.id, error: this.#answered() });
          return;
        }
        const controller = new AbortController();
        this.#blsCalls.set(m.id, controller);
        startLater(async () => {
          try {
            for await (const r of request.stream({ ...m.call, signal: controller.signal })) {
              if (controller.signal.aborted) break;
              this.#worker?.send({ t: "blsStreamItem", id: m.id, response: plainResponse(r) });
            }
            this.#worker?.send({ t: "blsStreamEnd", id: m.id });
          } catch (err) {
            this.#worker?.send({ t: "blsStreamEnd", id: m.id, error: toWire(err) });
          } finally {
            this.#blsCalls.delete(m.id);
          }
        });
        break;
      }
      case "blsCancel":
        this.#blsCalls.get(m.id)?.abort();
        break;
      case "send": {
        const key = `${m.exec}:${m.index}`;
        const request = this.#senders.get(key);
        if (!request) return;
        if (m.final) {
          this.#senders.delete(key);
          if (!this.#pending.has(m.exec)) this.#forget(key);
        }
        try {
          request.getResponseSender().send(m.response ?? undefined, { final: m.final === true });
        } catch (err) {
          this.#owner.logger.error(`response sender: ${(err as Error)?.message ?? String(err)}`);
        }
        break;
      }
      case "metric": {
        // The model's custom-metrics call (metrics.ts), answered by this worker's scope.
        const msg = m.m;
        if (typeof msg !== "object" || msg === null || typeof msg.t !== "string") throw new Error("metric message without a type");
        if (!this.#scope?.handle(msg, (reply) => worker.send({ t: "metricReply", m: reply }))) throw new Error(`metric message type '${String(msg.t)}'`);
        break;
      }
      case "finalized":
        this.#finalized?.();
        break;
      default:
        throw new Error(`message type '${String((m as { t?: unknown })?.t)}'`);
    }
  }
}

export function workerUnavailable(model: string, instance: string, err: unknown): Error {
  return unavailable(`model '${model}' instance ${instance}: initialize failed (worker): ${(err as Error)?.message ?? String(err)}`, err);
}
