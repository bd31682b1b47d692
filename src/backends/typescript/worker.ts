/**
 * @module Worker-thread instances of the `typescript` backend (model config parameter
 * `execution_thread: "worker"`): the model's module is imported inside a Worker, so a
 * CPU-bound `execute` leaves the server's event loop free. On the main thread the
 * instance is a proxy TritonModel: requests go to the worker as plain data (structured
 * clone), responses come back the same way and are checked on the main thread like any
 * other model's, and BLS calls are posted back and run through the main thread's
 * `request.infer` or `request.stream` (chain check, server path), a stream's responses
 * posted to the worker one by one.
 *
 * The worker's code is a string started from a Blob URL: it works from the compiled
 * binary (no separate entry file to bundle) under Bun and Deno; Node has no global Worker.
 */
import { unavailable, unsupported } from "../../core/errors.ts";
import type { BlsRequest, InferenceRequest, InferenceResponse, InitializeArgs, ModelLogger, TritonModel } from "./api.ts";

const WORKER_SOURCE = `
let model;
const calls = new Map();
const streams = new Map();
const executions = new Map();
let nextCall = 0;
const post = (m) => self.postMessage(m);
const logger = {
  info: (msg) => post({ type: "log", level: "info", msg: String(msg) }),
  warn: (msg) => post({ type: "log", level: "warn", msg: String(msg) }),
  error: (msg) => post({ type: "log", level: "error", msg: String(msg) }),
  verbose: (msg) => post({ type: "log", level: "verbose", msg: String(msg) }),
};
const errorOf = (err) => ({ message: err instanceof Error ? err.message : typeof err === "string" ? err : String(err?.message ?? err), code: err?.code, stack: err?.stack });
self.onmessage = async (e) => {
  const m = e.data;
  if (m.type === "init") {
    try {
      const mod = await import(m.url);
      if (typeof mod.default !== "function") throw new Error("'" + m.path + "' has no default export class");
      model = new mod.default();
      if (typeof model.execute !== "function") throw new Error("the default export has no execute(requests) method");
      if (model.initialize) await model.initialize({ ...m.args, logger });
      post({ type: "ready" });
    } catch (err) {
      post({ type: "initError", error: errorOf(err) });
    }
  } else if (m.type === "execute") {
    const controllers = m.requests.map((r) => {
      const c = new AbortController();
      if (r.cancelled) c.abort();
      return c;
    });
    executions.set(m.id, controllers);
    const requests = m.requests.map(({ cancelled, ...r }, index) => ({
      ...r,
      input: (n) => r.inputs.find((t) => t.name === n),
      isCancelled: () => controllers[index].signal.aborted,
      signal: controllers[index].signal,
      infer: ({ signal, ...call }) => new Promise((resolve, reject) => {
        const id = nextCall++;
        calls.set(id, { resolve, reject });
        post({ type: "bls", id, exec: m.id, index, call });
        if (signal) {
          const cancel = () => post({ type: "blsCancel", id });
          if (signal.aborted) cancel();
          else signal.addEventListener("abort", cancel, { once: true });
        }
      }),
      stream: ({ signal, ...call }) => {
        // The main thread runs the stream and posts each response; an early return or the
        // signal cancels it there.
        const id = nextCall++;
        const queue = [];
        let ended = false, failed, wake;
        const cancel = () => post({ type: "blsCancel", id });
        streams.set(id, (msg) => {
          if (msg.type === "blsStreamItem") queue.push({ ...msg.response, output: (n) => msg.response.outputs.find((t) => t.name === n) });
          else {
            ended = true;
            if (msg.error) failed = Object.assign(new Error(msg.error.message), { code: msg.error.code });
            streams.delete(id);
          }
          if (wake) { const w = wake; wake = undefined; w(); }
        });
        post({ type: "blsStream", id, exec: m.id, index, call });
        if (signal) {
          if (signal.aborted) cancel();
          else signal.addEventListener("abort", cancel, { once: true });
        }
        return {
          [Symbol.asyncIterator]() {
            return {
              next: async () => {
                while (queue.length === 0 && !ended) await new Promise((r) => (wake = r));
                if (queue.length > 0) return { value: queue.shift(), done: false };
                if (failed) throw failed;
                return { value: undefined, done: true };
              },
              return: async () => {
                if (!ended) { ended = true; streams.delete(id); cancel(); }
                return { value: undefined, done: true };
              },
            };
          },
        };
      },
      getResponseSender: () => ({
        send: (response, options) => post({ type: "send", exec: m.id, index, response, final: !!(options && options.final) }),
      }),
    }));
    try {
      const responses = await model.execute(requests);
      post({ type: "done", id: m.id, responses });
    } catch (err) {
      post({ type: "done", id: m.id, thrown: errorOf(err) });
    } finally {
      executions.delete(m.id);
    }
  } else if (m.type === "cancel") {
    executions.get(m.id)?.[m.index]?.abort();
  } else if (m.type === "blsStreamItem" || m.type === "blsStreamEnd") {
    streams.get(m.id)?.(m);
  } else if (m.type === "blsResult") {
    const c = calls.get(m.id);
    calls.delete(m.id);
    if (m.error) c.reject(Object.assign(new Error(m.error.message), { code: m.error.code }));
    else c.resolve({ ...m.response, output: (n) => m.response.outputs.find((t) => t.name === n) });
  } else if (m.type === "finalize") {
    try { if (model && model.finalize) await model.finalize(); } catch (err) { logger.error("finalize failed: " + (err && err.stack || err)); }
    post({ type: "finalized" });
  }
};
`;

let sourceUrl: string | undefined;

const FINALIZE_LIMIT_MS = 10_000;

interface Pending {
  requests: InferenceRequest[];
  resolve: (r: InferenceResponse[] | void) => void;
  reject: (e: unknown) => void;
  /** Stops relaying the requests' cancellation to the worker. */
  forget: () => void;
}

/** A TritonModel whose module lives in a Worker; `create` resolves once its initialize has. */
export class WorkerModel implements TritonModel {
  readonly #worker: Worker;
  readonly #logger: ModelLogger;
  readonly #pending = new Map<number, Pending>();
  /** BLS calls the worker made that are still running, by the worker's call id. */
  readonly #blsCalls = new Map<number, AbortController>();
  #next = 0;
  /** Decoupled models: the main-thread requests whose senders the worker's sends go to, until their final. */
  readonly #senders = new Map<string, InferenceRequest>();
  #decoupled = false;
  #ready: { resolve: () => void; reject: (e: unknown) => void } | undefined;
  #finalized: (() => void) | undefined;

  private constructor(logger: ModelLogger) {
    if (typeof Worker !== "function") throw unsupported("execution_thread 'worker' needs a runtime with Web Workers (Bun or Deno)");
    sourceUrl ??= URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "application/javascript" }));
    this.#worker = new Worker(sourceUrl, { type: "module" });
    this.#logger = logger;
    this.#worker.onmessage = (e: MessageEvent) => this.#onMessage(e.data);
    this.#worker.onerror = (e: ErrorEvent) => {
      const err = new Error(`worker error: ${e.message}`);
      this.#ready?.reject(err);
      for (const p of this.#pending.values()) {
        p.forget();
        p.reject(err);
      }
      this.#pending.clear();
    };
  }

  static async create(url: string, path: string, args: InitializeArgs): Promise<WorkerModel> {
    const { logger, ...plain } = args;
    const m = new WorkerModel(logger);
    m.#decoupled = (plain.modelConfig as { model_transaction_policy?: { decoupled?: boolean } }).model_transaction_policy?.decoupled === true;
    await new Promise<void>((resolve, reject) => {
      m.#ready = { resolve, reject };
      m.#worker.postMessage({ type: "init", url, path, args: plain });
    }).catch((err) => {
      m.#worker.terminate();
      throw err;
    });
    return m;
  }

  execute(requests: InferenceRequest[]): Promise<InferenceResponse[] | void> {
    const id = this.#next++;
    const plain = requests.map((r) => ({
      id: r.id,
      inputs: r.inputs,
      requestedOutputNames: r.requestedOutputNames,
      parameters: r.parameters,
      correlationId: r.correlationId,
      flags: r.flags,
    }));
    if (this.#decoupled) requests.forEach((r, i) => this.#senders.set(`${id}:${i}`, r));
    return new Promise((resolve, reject) => {
      // A request's cancellation is relayed to the worker, where its isCancelled() and signal read it.
      const listeners = requests.map((r, index) => {
        if (r.signal.aborted) return undefined;
        const cancel = () => this.#worker.postMessage({ type: "cancel", id, index });
        r.signal.addEventListener("abort", cancel, { once: true });
        return cancel;
      });
      const forget = () => listeners.forEach((l, i) => l && requests[i]!.signal.removeEventListener("abort", l));
      this.#pending.set(id, { requests, resolve, reject, forget });
      this.#worker.postMessage({ type: "execute", id, requests: plain.map((p, i) => ({ ...p, cancelled: requests[i]!.signal.aborted })) });
    });
  }

  /** Runs the model's finalize in the worker, then ends the worker (after 10 s at most, for a worker stuck in execute). */
  finalize(): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    return new Promise<void>((resolve) => {
      this.#finalized = resolve;
      timer = setTimeout(resolve, FINALIZE_LIMIT_MS);
      (timer as { unref?: () => void }).unref?.();
      this.#worker.postMessage({ type: "finalize" });
    }).finally(() => {
      clearTimeout(timer);
      this.#worker.terminate();
    });
  }

  #onMessage(m: any): void {
    switch (m.type) {
      case "ready":
        this.#ready?.resolve();
        break;
      case "initError":
        this.#ready?.reject(Object.assign(new Error(m.error.stack ?? m.error.message), { code: m.error.code }));
        break;
      case "log":
        this.#logger[m.level as keyof ModelLogger](m.msg);
        break;
      case "done": {
        const p = this.#pending.get(m.id);
        this.#pending.delete(m.id);
        if (!p) return;
        p.forget();
        if (m.thrown) p.reject(Object.assign(new Error(m.thrown.message), { code: m.thrown.code }));
        else p.resolve(m.responses);
        break;
      }
      case "bls": {
        const p = this.#pending.get(m.exec);
        const request = p?.requests[m.index];
        if (!request) return;
        // The worker's signal cannot cross; a blsCancel message aborts this one instead.
        const controller = new AbortController();
        this.#blsCalls.set(m.id, controller);
        request.infer({ ...(m.call as BlsRequest), signal: controller.signal }).then(
          (r) => this.#worker.postMessage({ type: "blsResult", id: m.id, response: { model: r.model, version: r.version, outputs: r.outputs } }),
          (err) => this.#worker.postMessage({ type: "blsResult", id: m.id, error: { message: err?.message ?? String(err), code: err?.code } }),
        ).finally(() => this.#blsCalls.delete(m.id));
        break;
      }
      case "blsStream": {
        const p = this.#pending.get(m.exec);
        const request = p?.requests[m.index];
        if (!request) return;
        const controller = new AbortController();
        this.#blsCalls.set(m.id, controller);
        void (async () => {
          try {
            for await (const r of request.stream({ ...(m.call as BlsRequest), signal: controller.signal })) {
              if (controller.signal.aborted) break;
              this.#worker.postMessage({ type: "blsStreamItem", id: m.id, response: { model: r.model, version: r.version, outputs: r.outputs } });
            }
            this.#worker.postMessage({ type: "blsStreamEnd", id: m.id });
          } catch (err) {
            this.#worker.postMessage({ type: "blsStreamEnd", id: m.id, error: { message: (err as Error)?.message ?? String(err), code: (err as { code?: string })?.code } });
          } finally {
            this.#blsCalls.delete(m.id);
          }
        })();
        break;
      }
      case "blsCancel":
        this.#blsCalls.get(m.id)?.abort();
        break;
      case "send": {
        const key = `${m.exec}:${m.index}`;
        const request = this.#senders.get(key);
        if (!request) return;
        if (m.final) this.#senders.delete(key);
        try {
          request.getResponseSender().send(m.response ?? undefined, { final: m.final });
        } catch (err) {
          this.#logger.error(`response sender: ${(err as Error)?.message ?? String(err)}`);
        }
        break;
      }
      case "finalized":
        this.#finalized?.();
        break;
    }
  }
}

export function workerUnavailable(model: string, instance: string, err: unknown): Error {
  return unavailable(`model '${model}' instance ${instance}: initialize failed (worker): ${(err as Error)?.message ?? String(err)}`, err);
}
