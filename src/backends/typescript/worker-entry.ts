/**
 * @module One worker-thread instance of a `typescript` model (worker.ts starts it; the
 * compiled binary carries it as an entry point of its own, scripts/build.ts). It imports
 * the model's module, runs `initialize`, `execute` and `finalize`, and talks to the main
 * thread by message (worker-protocol.ts, served with core/threads/serve.ts): requests in,
 * responses, logger lines, BLS calls and decoupled sends out. A fault the model leaves behind (an unhandled rejection, an uncaught exception, a
 * call to `process.exit`) is posted as `fatal` before the worker ends, so the main
 * thread fails the instance's requests with the reason and starts a fresh worker (which
 * runs the executes that had not started, handed back with it).
 */
import { receiveMessageOnPort } from "node:worker_threads";
import { registerEmbeddedPackages } from "./embedded-packages.ts";
import { metricsClient } from "./metrics.ts";
import { serveThread, type ThreadScope } from "../../core/threads/serve.ts";
import type {
  BlsCall,
  FromInstancePort,
  FromModelWorker,
  ModelError,
  PlainBlsResponse,
  PlainRequest,
  ToInstancePort,
  ToModelWorker,
} from "./worker-protocol.ts";
import { endedSlot } from "./worker-protocol.ts";
import type { InferenceResponse } from "./api.ts";

type Model = { initialize?(args: unknown): unknown; execute(requests: unknown[]): unknown; finalize?(): unknown };
type StreamMessage = Extract<ToModelWorker, { t: "blsStreamItem" | "blsStreamEnd" }>;

let model: Model | undefined;
let modelName = "";
let decoupled = false;
const calls = new Map<number, { resolve: (r: unknown) => void; reject: (e: unknown) => void }>();
const streams = new Map<number, (m: StreamMessage) => void>();
/** Each request's cancellation (`exec:index`), until it is answered: at the end of its execute, or a decoupled one's final send. */
const controllers = new Map<string, AbortController>();
/** Decoupled requests whose final has not been sent. */
const open = new Set<string>();
/** Executes that have not returned. */
const running = new Set<number>();
let nextCall = 0;
// Each message at once, not batched: `fatal` must leave before the worker ends.
const { post } = serveThread<ToModelWorker, FromModelWorker>(receive);
/** Custom metrics: each call posted to the main thread, whose replies come back as metricReply. */
const metrics = metricsClient((m) => post({ t: "metric", m }));

const logger = {
  info: (msg: unknown) => post({ t: "log", level: "info", msg: String(msg) }),
  warn: (msg: unknown) => post({ t: "log", level: "warn", msg: String(msg) }),
  error: (msg: unknown) => post({ t: "log", level: "error", msg: String(msg) }),
  verbose: (msg: unknown) => post({ t: "log", level: "verbose", msg: String(msg) }),
};

const errorOf = (err: any): ModelError => ({
  message: err instanceof Error ? err.message : typeof err === "string" ? err : String(err?.message ?? err),
  code: typeof err?.code === "string" ? err.code : undefined,
  stack: typeof err?.stack === "string" ? err.stack : undefined,
});
const describe = (err: any): string => (typeof err?.stack === "string" ? err.stack : err instanceof Error ? `${err.name}: ${err.message}` : String(err));
const withOutput = (r: PlainBlsResponse) => ({ ...r, output: (n: string) => r.outputs.find((t) => t.name === n) });

// The model's faults end this worker, reported first: the main thread cannot otherwise
// tell an exit from a crash under every runtime. process.exit itself is kept working.
const exit = process.exit.bind(process) as (code?: number) => never;
let ending = false;
/** Executes that have not started, in arrival order from `head`. */
interface Fifo<T> {
  waiting: (T | undefined)[];
  head: number;
}
/** A frontend worker's port (servePort): where it is answered, and the executes it sent that have not started. */
interface ServedPort extends Fifo<Extract<ToInstancePort, { t: "execute" }>> {
  port: MessagePort;
  reply: { post(m: FromInstancePort, transfer?: ArrayBuffer[]): void };
}
/** The id of the main thread's last execute that started here (-1: none). Its ids rise and start in order, so every later one, read or not, never started: `fatal` hands them back. */
let mainStarted = -1;
/** The frontend workers' ports: each is told of a fault too (tellFatal). */
const servedPorts: ServedPort[] = [];
/** The instance's shared ENDED slot, once a port came: set before the fault is reported, so that no frontend worker sends here once it is; `live`: its value while this worker serves (endedSlot). */
let ended: Int32Array | undefined;
let live = 0;
function fatal(reason: string, code: number): never {
  if (!ending) {
    ending = true;
    if (ended) endedSlot.endIf(ended, 0, live);
    // The ports first: a frontend worker hears of the fault (and takes back what never started) before the main thread's word of it.
    for (let i = 0; i < servedPorts.length; i++) tellFatal(servedPorts[i]!, reason);
    post({ t: "fatal", reason, started: mainStarted });
  }
  return exit(code);
}

/** Tells a port of the fault, handing back the executes it sent that never started, with their buffers (plain loops: the model's realm). */
function tellFatal(p: ServedPort, reason: string): void {
  drain(p);
  const back: { id: number; buffers: ArrayBuffer[] }[] = [];
  const transfer: ArrayBuffer[] = [];
  for (let i = p.head; i < p.waiting.length; i++) {
    const m = p.waiting[i]!;
    back[back.length] = { id: m.id, buffers: m.buffers };
    for (let k = 0; k < m.buffers.length; k++) transfer[transfer.length] = m.buffers[k]!;
  }
  try {
    p.reply.post({ t: "fatal", reason, back }, transfer);
  } catch {
    p.reply.post({ t: "fatal", reason, back: [] });
  }
}

/**
 * Takes the executes posted to `p` that this worker has not read yet: they never started,
 * and go back with the rest (a port's unread messages are lost when the worker ends).
 */
function drain(p: ServedPort): void {
  try {
    for (let r = receiveMessageOnPort(p.port); r; r = receiveMessageOnPort(p.port)) {
      const batch = r.message as ToInstancePort[];
      for (let i = 0; i < batch.length; i++) {
        const m = batch[i]!;
        if (m.t === "execute") p.waiting[p.waiting.length] = m;
      }
    }
  } catch {
    // A runtime without receiveMessageOnPort for this port: what was unread fails with the reason.
  }
}

/** `p`'s oldest waiting execute starts (executes start in arrival order, whichever thread sent them); the queue is kept short. */
function started<T>(p: Fifo<T>): void {
  p.waiting[p.head++] = undefined;
  if (p.head === p.waiting.length) {
    p.waiting.length = 0;
    p.head = 0;
  } else if (p.head >= 1024) {
    let k = 0;
    for (let i = p.head; i < p.waiting.length; i++) p.waiting[k++] = p.waiting[i];
    p.waiting.length = k;
    p.head = 0;
  }
}
process.on("unhandledRejection", (reason) => fatal(`unhandled rejection: ${describe(reason)}`, 1));
process.on("uncaughtException", (err) => fatal(`uncaught exception: ${describe(err)}`, 1));
process.exit = ((code?: number) => fatal(`the model called process.exit(${code ?? ""})`, typeof code === "number" ? code : 0)) as typeof process.exit;

function modelRequest(r: Omit<PlainRequest, "cancelled">, index: number, exec: number, controller: AbortController) {
  return {
    ...r,
    input: (n: string) => r.inputs.find((t: { name: string }) => t.name === n),
    isCancelled: () => controller.signal.aborted,
    signal: controller.signal,
    infer: ({ signal, ...call }: BlsCall & { signal?: AbortSignal }) =>
      new Promise((resolve, reject) => {
        const id = nextCall++;
        calls.set(id, { resolve, reject });
        post({ t: "bls", id, exec, index, call });
        if (signal) {
          const cancel = () => post({ t: "blsCancel", id });
          if (signal.aborted) cancel();
          else signal.addEventListener("abort", cancel, { once: true });
        }
      }),
    stream: ({ signal, ...call }: BlsCall & { signal?: AbortSignal }) => {
      // The main thread runs the stream and posts each response; an early return or the
      // signal cancels it there.
      const id = nextCall++;
      const queue: unknown[] = [];
      let ended = false;
      let failed: Error | undefined;
      let wake: (() => void) | undefined;
      const cancel = () => post({ t: "blsCancel", id });
      streams.set(id, (msg) => {
        if (msg.t === "blsStreamItem") queue.push(withOutput(msg.response));
        else {
          ended = true;
          if (msg.error) failed = Object.assign(new Error(msg.error.message), { code: msg.error.code });
          streams.delete(id);
        }
        const w = wake;
        wake = undefined;
        w?.();
      });
      post({ t: "blsStream", id, exec, index, call });
      if (signal) {
        if (signal.aborted) cancel();
        else signal.addEventListener("abort", cancel, { once: true });
      }
      return {
        [Symbol.asyncIterator]() {
          return {
            next: async () => {
              while (queue.length === 0 && !ended) await new Promise<void>((r) => (wake = r));
              if (queue.length > 0) return { value: queue.shift(), done: false };
              if (failed) throw failed;
              return { value: undefined, done: true };
            },
            return: async () => {
              if (!ended) {
                ended = true;
                streams.delete(id);
                cancel();
              }
              return { value: undefined, done: true };
            },
          };
        },
      };
    },
    getResponseSender: () => {
      if (!decoupled)
        throw Object.assign(new Error(`model '${modelName}' is not decoupled: getResponseSender() needs model_transaction_policy { decoupled: true }`), {
          code: "UNSUPPORTED",
        });
      const key = `${exec}:${index}`;
      if (controllers.has(key)) open.add(key);
      return {
        send: (response?: InferenceResponse, options?: { final?: boolean }) => {
          const final = !!options?.final;
          if (final && open.delete(key) && !running.has(exec)) controllers.delete(key);
          post({ t: "send", exec, index, response, final });
        },
      };
    },
  };
}

async function init(m: Extract<ToModelWorker, { t: "init" }>): Promise<void> {
  modelName = String(m.args.modelName);
  decoupled = (m.args.modelConfig as { model_transaction_policy?: { decoupled?: boolean } } | undefined)?.model_transaction_policy?.decoupled === true;
  try {
    registerEmbeddedPackages();
    const mod = (await import(m.url)) as { default?: unknown };
    if (typeof mod.default !== "function") throw new Error(`'${m.path}' has no default export class`);
    model = new (mod.default as new () => Model)();
    if (typeof model.execute !== "function") throw new Error("the default export has no execute(requests) method");
    if (model.initialize) await model.initialize({ ...m.args, logger, metrics: metrics.api });
    post({ t: "ready" });
  } catch (err) {
    post({ t: "initError", error: errorOf(err) });
  }
}

/** The module's static autoCompleteConfig, run here so that its top level never runs on the main thread. */
async function autoComplete(m: Extract<ToModelWorker, { t: "autoComplete" }>): Promise<void> {
  registerEmbeddedPackages();
  let cls: (((...a: unknown[]) => unknown) & { autoCompleteConfig?(config: object): unknown }) | undefined;
  try {
    cls = ((await import(m.url)) as { default?: typeof cls }).default;
  } catch (err) {
    return post({ t: "configError", stage: "import", error: errorOf(err) });
  }
  if (typeof cls !== "function") return post({ t: "configError", stage: "class", error: { message: "no default export class" } });
  try {
    const config = typeof cls.autoCompleteConfig === "function" ? await cls.autoCompleteConfig(m.config) : undefined;
    post({ t: "config", found: typeof cls.autoCompleteConfig === "function", config });
  } catch (err) {
    post({ t: "configError", stage: "autoComplete", error: errorOf(err) });
  }
}

/**
 * Executes run one at a time, in the order they arrived, whichever thread sent them (the
 * main thread's scheduler, or a frontend worker over its port): the instance's rule that
 * one request runs in it at a time holds without the main thread in between (#30).
 */
let tail: Promise<void> = Promise.resolve();
/** Set by finalize: executes that come over a port from now on are handed back (`retired`). */
let finalizing = false;
const queued = (run: () => Promise<void>): Promise<void> => (tail = tail.then(run));

/** The model's requests of an execute, each with its cancellation (`key:index`), made as it arrives (a cancel may come while it waits). */
function accept(key: string, blsExec: number, plain: PlainRequest[]): unknown[] {
  // Plain loops: the model may have replaced Array.prototype's methods in this realm.
  const requests: unknown[] = [];
  for (let index = 0; index < plain.length; index++) {
    const { cancelled, ...r } = plain[index]!;
    const c = new AbortController();
    if (cancelled) c.abort();
    controllers.set(`${key}:${index}`, c);
    requests.push(modelRequest(r, index, blsExec, c));
  }
  return requests;
}

type Ran = { responses: InferenceResponse[] | undefined; thrown?: undefined } | { thrown: ModelError; responses?: undefined };

/** Runs the model's execute on requests accepted under `key`; `exec`: the main thread's execute id. */
async function run(requests: unknown[], key: string, exec: number | undefined): Promise<Ran> {
  if (exec !== undefined) running.add(exec);
  try {
    return { responses: (await model!.execute(requests)) as InferenceResponse[] | undefined };
  } catch (err) {
    return { thrown: errorOf(err) };
  } finally {
    if (exec !== undefined) running.delete(exec);
    for (let index = 0; index < requests.length; index++) if (!open.has(`${key}:${index}`)) controllers.delete(`${key}:${index}`);
  }
}

function execute(m: Extract<ToModelWorker, { t: "execute" }>): Promise<void> {
  const requests = accept(String(m.id), m.id, m.requests);
  return queued(async () => {
    mainStarted = m.id;
    const r = await run(requests, String(m.id), m.id);
    post(r.thrown ? { t: "done", id: m.id, thrown: r.thrown } : { t: "done", id: m.id, responses: r.responses });
  });
}

let ports = 0;

/** Whether every request accepted under `key` was cancelled (they are forgotten then). */
function allCancelled(key: string, count: number): boolean {
  for (let index = 0; index < count; index++) if (!controllers.get(`${key}:${index}`)?.signal.aborted) return false;
  for (let index = 0; index < count; index++) controllers.delete(`${key}:${index}`);
  return true;
}

/** A frontend worker's port (#30): its executes join the same queue; their BLS calls go to the main thread as exec -1. */
function servePort(port: MessagePort): void {
  const n = ports++;
  const served: ServedPort = { port, reply: undefined!, waiting: [], head: 0 };
  const reply: { post(m: FromInstancePort, transfer?: ArrayBuffer[]): void } = serveThread<ToInstancePort, FromInstancePort>(
    (m): void | Promise<void> => {
      const key = `p${n}.${m.id}`;
      if (m.t === "cancel") {
        controllers.get(`${key}:${m.index}`)?.abort();
        return;
      }
      if (finalizing) return reply.post({ t: "retired", id: m.id, buffers: m.buffers }, m.buffers);
      const arrived = performance.now();
      const requests = accept(key, -1, m.requests);
      served.waiting[served.waiting.length] = m;
      return queued(async () => {
        started(served);
        const waitNs = Math.round((performance.now() - arrived) * 1e6);
        if (allCancelled(key, requests.length)) return reply.post({ t: "cancelled", id: m.id });
        const r = await run(requests, key, undefined);
        reply.post(r.thrown ? { t: "done", id: m.id, waitNs, thrown: r.thrown } : { t: "done", id: m.id, waitNs, responses: r.responses });
      });
    },
    // Each answer at once: one still batched when the main thread ends this worker (after finalize) would be lost.
    { scope: port as unknown as ThreadScope },
  );
  served.reply = reply;
  servedPorts[servedPorts.length] = served;
  // A frontend worker closes its port only once nothing it sent is pending (a version swap),
  // or by ending: then its clients are gone, and what it sent is cancelled (the model sees
  // its requests' signals abort; those that have not started are dropped unrun).
  // Its entry goes with it: a fault has nothing to tell a closed port, and the list would
  // otherwise grow with each frontend worker's restart and each version swap.
  port.addEventListener("close", () => {
    const at = servedPorts.indexOf(served);
    if (at >= 0) servedPorts.splice(at, 1);
    cancelPort(`p${n}.`);
  });
  // From now on a fault tells this port and takes back what is unread on it: the frontend worker sends nothing before.
  reply.post({ t: "serving" });
}

/** Aborts every request accepted under keys starting with `prefix` (a port's). */
function cancelPort(prefix: string): void {
  controllers.forEach((c, key) => {
    if (key.slice(0, prefix.length) === prefix) c.abort();
  });
}

async function receive(m: ToModelWorker): Promise<void> {
  switch (m.t) {
    case "init":
      return init(m);
    case "autoComplete":
      return autoComplete(m);
    case "execute":
      return execute(m);
    case "cancel":
      controllers.get(`${m.id}:${m.index}`)?.abort();
      return;
    case "metricReply":
      metrics.receive(m.m);
      return;
    case "blsStreamItem":
    case "blsStreamEnd":
      streams.get(m.id)?.(m);
      return;
    case "blsResult": {
      const c = calls.get(m.id);
      calls.delete(m.id);
      if (m.error) c?.reject(Object.assign(new Error(m.error.message), { code: m.error.code }));
      else c?.resolve(withOutput(m.response));
      return;
    }
    case "port":
      ended = m.ended;
      live = m.live;
      servePort(m.port);
      return;
    case "finalize":
      // What is queued here (a frontend worker's requests included) runs first.
      finalizing = true;
      await tail;
      try {
        if (model?.finalize) await model.finalize();
      } catch (err) {
        logger.error(`finalize failed: ${describe(err)}`);
      }
      post({ t: "finalized" });
      return;
  }
}
