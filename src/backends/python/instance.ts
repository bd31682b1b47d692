/**
 * @module One instance of a Python model: its stub process and shared memory, the
 * requests it is executing, the response senders of a decoupled model, and the BLS calls
 * its model makes back into the server. A stub that dies (or is killed for not answering
 * a health check) fails what it had with INTERNAL naming the model and instance, and is
 * started again. Unless the model is decoupled, the stub also listens on a Unix socket
 * where the frontend worker threads send it requests themselves (direct.ts, #30); the
 * state shared with them (executes out, retired, the stub's generation) is kept here.
 */
import { ServerError, unavailable } from "../../core/errors.ts";
import { getLogger } from "../../core/logger.ts";
import { nowNs } from "../../core/clock.ts";
import type { Tensor } from "../../core/tensor.ts";
import type { InferenceRequest as CoreRequest, ResponseSink } from "../../core/request.ts";
import type { PreparedRequest } from "../../core/request-validate.ts";
import type { BackendInstance, BackendLoadContext, ExecuteResult, RequestOutcome, RequestsResult } from "../backend.ts";
import { StubMemory } from "./arena.ts";
import type { Interpreter } from "./interpreter.ts";
import { StubProcess, stubFailed, type Message } from "./stub-process.ts";
import type { CustomMetrics } from "../custom-metrics.ts";
import { ResponseChecker, execEntry, wireError, type Desc, type WireResponse } from "./wire.ts";
import { BUSY, ENDED, RETIRED, STATE_BYTES, type SharedPythonInstance } from "./direct.ts";
import { endedSlot } from "../typescript/worker-protocol.ts";
import { sharedEnded } from "../connect.ts";
import { wireError as toWire } from "../../core/threads/wire-error.ts";
import { directSocketPath } from "./python-files.ts";
import type { SharedInstance } from "../backend.ts";

const log = getLogger("src/backends/python/instance.ts");

/** How often an unload's drain looks at the BUSY count (idle()). */
const IDLE_POLL_MS = 10;

/** Instances made in this process: their keys (SharedPythonInstance.key). */
let sharedInstances = 0;

/** How long copied response blocks may wait for an exec message to carry their release to the stub. */
const FREE_DELAY_MS = 20;

export interface InstanceSetup {
  ctx: BackendLoadContext;
  name: string;
  kind: "KIND_CPU" | "KIND_GPU" | "KIND_MODEL";
  deviceId: number;
  interpreter: Interpreter;
  shmSize: number;
  timeoutMs: number;
  metrics: CustomMetrics;
}

interface PendingExec {
  requests: readonly PreparedRequest[];
  blocks: number[];
  resolve: (m: Message) => void;
  forget: () => void;
}

export class PythonInstance implements BackendInstance {
  readonly name: string;
  readonly #s: InstanceSetup;
  readonly #label: string;
  readonly #checker: ResponseChecker;
  readonly #batched: boolean;
  readonly #decoupled: boolean;
  #stub: StubProcess | undefined;
  #memory: StubMemory | undefined;
  #starting: Promise<void> | undefined;
  #init: { resolve: () => void; reject: (e: unknown) => void; fatal?: string } | undefined;
  readonly #execs = new Map<number, PendingExec>();
  readonly #senders = new Map<string, { p: PreparedRequest; sink: ResponseSink | undefined; forget: () => void }>();
  #next = 0;
  #closed = false;
  /** Offsets of the stub's blocks the server has copied: sent with the next exec, or after FREE_DELAY_MS. */
  #toFree: number[] = [];
  #freeTimer: ReturnType<typeof setTimeout> | undefined;
  /** Shared with the frontend workers (SharedPythonInstance.state): executes waiting or running in the stub, any thread's; retired; the stub's generation. */
  readonly #state = new Int32Array(new SharedArrayBuffer(STATE_BYTES));
  /** Where the stub listens for the frontend workers; none where they cannot reach it (a decoupled model, no Bun). */
  readonly #socket: string | undefined;
  readonly #key = `python:${++sharedInstances}`;
  /** The instance as the frontend workers reach it directly (#30); none without a socket. */
  readonly share?: () => SharedInstance;

  private constructor(s: InstanceSetup) {
    this.#s = s;
    this.name = s.name;
    this.#label = `model '${s.ctx.modelName}' instance '${s.name}'`;
    this.#checker = new ResponseChecker(s.ctx.modelName, this.#label, s.ctx.config);
    this.#batched = (s.ctx.config.max_batch_size ?? 0) > 0;
    this.#decoupled = s.ctx.config.model_transaction_policy?.decoupled === true;
    this.#socket = this.#decoupled ? undefined : directSocketPath();
    if (this.#socket) {
      const spec: SharedPythonInstance = {
        key: this.#key,
        model: s.ctx.modelName,
        label: this.#label,
        config: s.ctx.config,
        socket: this.#socket,
        regionSize: s.shmSize,
        state: this.#state,
      };
      this.share = () => ({ backend: "python", spec });
    }
  }

  static async create(s: InstanceSetup): Promise<PythonInstance> {
    const i = new PythonInstance(s);
    await i.#start();
    return i;
  }

  /** Starts a stub and runs the model's initialize; rejects with the reason it failed. */
  async #start(): Promise<void> {
    const s = this.#s;
    const memory = new StubMemory(s.shmSize);
    const metrics = s.metrics.scope();
    const stub: StubProcess = new StubProcess({
      label: this.#label,
      interpreter: s.interpreter,
      modelPath: s.ctx.modelPath,
      memory,
      timeoutMs: s.timeoutMs,
      socket: this.#socket,
      busy: () => Atomics.load(this.#state, BUSY) > 0,
      onMessage: (m) => {
        if (!metrics.handle(m, (reply) => stub.send(reply))) this.#onMessage(stub, m);
      },
      onExit: (reason) => {
        metrics.release();
        this.#onExit(stub, reason);
      },
    });
    this.#stub = stub;
    this.#memory = memory;
    const end = stub.wait();
    try {
      await new Promise<void>((resolve, reject) => {
        this.#init = { resolve, reject };
        stub.send({ t: "init", decoupled: this.#decoupled, args: this.#initArgs() });
      });
      // A fresh generation: the frontend workers connect to this stub from now on.
      endedSlot.started(this.#state, ENDED);
    } catch (err) {
      stub.kill("was stopped after its initialize failed");
      throw err;
    } finally {
      end();
      this.#init = undefined;
      memory.unlink();
    }
  }

  /** initialize(args) as Triton passes it: every value a string. */
  #initArgs(): Record<string, string> {
    const { ctx, name, kind, deviceId } = this.#s;
    return {
      model_config: JSON.stringify(ctx.config),
      model_instance_kind: kind.replace("KIND_", ""),
      model_instance_name: name,
      model_instance_device_id: String(deviceId),
      model_repository: ctx.modelDir,
      model_version: String(ctx.version),
      model_name: ctx.modelName,
    };
  }

  async #ready(): Promise<StubProcess> {
    if (this.#closed) throw unavailable(`${this.#label} is closed`);
    if (this.#starting) await this.#starting;
    if (this.#stub?.alive) return this.#stub;
    this.#starting = this.#start().finally(() => (this.#starting = undefined));
    await this.#starting;
    return this.#stub!;
  }

  /** One batch as one request: what warmup runs. */
  async execute(inputs: Tensor[], outputNames: readonly string[]): Promise<ExecuteResult> {
    const batchSize = this.#batched ? (inputs[0]?.shape[0] ?? 1) : 1;
    const control = { sequenceStart: false, sequenceEnd: false, priority: 0, timeoutUs: 0 };
    const request = { modelName: this.#s.ctx.modelName, parameters: {}, inputs };
    const r = await this.executeRequests([{ request, control, batchSize, inputs, outputNames: [...outputNames], classification: new Map() }]);
    const first = r.outcomes[0]!;
    if (first.error) throw first.error;
    return { ...r, outputs: first.outputs };
  }

  /** Runs `requests` through the main thread's pipes, counted in BUSY as the frontend workers' are. */
  async executeRequests(requests: readonly PreparedRequest[]): Promise<RequestsResult> {
    Atomics.add(this.#state, BUSY, 1);
    try {
      return await this.#executeRequests(requests);
    } finally {
      Atomics.sub(this.#state, BUSY, 1);
    }
  }

  async #executeRequests(requests: readonly PreparedRequest[]): Promise<RequestsResult> {
    const t0 = nowNs();
    const failAll = (error: ServerError): RequestsResult => ({
      outcomes: requests.map(() => ({ error })),
      computeInputNs: nowNs() - t0,
      computeInferNs: 0,
      computeOutputNs: 0,
    });
    let stub: StubProcess;
    try {
      stub = await this.#ready();
    } catch (err) {
      return failAll(ServerError.from(err));
    }
    const memory = this.#memory!;
    const id = ++this.#next;
    const blocks: number[] = [];
    let reqs: unknown[];
    try {
      reqs = requests.map((p) =>
        execEntry(p, (t) => {
          const o = memory.put(t.data, `input '${t.name}'`);
          blocks.push(o);
          return o;
        }),
      );
    } catch (err) {
      for (const b of blocks) memory.blocks.release(b);
      return failAll(ServerError.from(err));
    }
    const listeners = requests.map((p, i) => {
      const signal = p.request.signal;
      if (!signal || signal.aborted) return undefined;
      const cancel = () => stub.send({ t: "cancel", id, i });
      signal.addEventListener("abort", cancel, { once: true });
      return () => signal.removeEventListener("abort", cancel);
    });
    const forgetAll = () => listeners.forEach((l) => l?.());
    if (this.#decoupled) {
      requests.forEach((p, i) => this.#senders.set(`${id}:${i}`, { p, sink: p.request.responseSink, forget: listeners[i] ?? (() => {}) }));
    }
    const t1 = nowNs();
    const end = stub.wait();
    const done = await new Promise<Message>((resolve) => {
      this.#execs.set(id, { requests, blocks, resolve, forget: this.#decoupled ? () => {} : forgetAll });
      stub.send({ t: "exec", id, reqs, fr: this.#takeFrees() });
    }).finally(end);
    const t2 = nowNs();
    const result = (outcomes: RequestOutcome[]): RequestsResult => ({
      outcomes,
      computeInputNs: t1 - t0,
      computeInferNs: t2 - t1,
      computeOutputNs: nowNs() - t2,
    });
    if (done.t === "failed") return result(requests.map(() => ({ error: done.error as ServerError })));
    if (done.err) {
      if (this.#decoupled) requests.forEach((_, i) => this.#closeSender(`${id}:${i}`));
      return result(requests.map(() => ({ error: wireError(done.err) })));
    }
    if (this.#decoupled) return result(requests.map(() => ({ outputs: [] })));
    const resps = done.resps as WireResponse[];
    return result(requests.map((p, i) => this.#outcome(stub, p, resps[i]!)));
  }

  /** Forgets a decoupled request's sender (an execute that failed as a whole answers it instead). */
  #closeSender(key: string): void {
    const s = this.#senders.get(key);
    if (!s) return;
    s.forget();
    this.#senders.delete(key);
  }

  /** Copies the stub's tensors out of its region and tells it to free them. */
  #take(stub: StubProcess, descs: Desc[]): Tensor[] {
    try {
      return this.#checker.tensors(descs, (o, b) => this.#memory!.take(o, b));
    } finally {
      for (const d of descs) this.#toFree.push(d.o);
      this.#freeTimer ??= setTimeout(() => {
        this.#freeTimer = undefined;
        if (this.#toFree.length > 0 && this.#stub === stub) stub.send({ t: "free", o: this.#takeFrees() });
      }, FREE_DELAY_MS);
      (this.#freeTimer as { unref?: () => void }).unref?.();
    }
  }

  #takeFrees(): number[] {
    const out = this.#toFree;
    this.#toFree = [];
    return out;
  }

  #outcome(stub: StubProcess, p: PreparedRequest, r: WireResponse): RequestOutcome {
    return this.#checker.outcome(p, r, (descs) => this.#take(stub, descs));
  }

  #onMessage(stub: StubProcess, m: Message): void {
    switch (m.t) {
      case "ready":
        this.#init?.resolve();
        break;
      case "init_err":
        if (m.tb) log.error(`${this.#label}: initialize failed:\n${String(m.tb)}`);
        this.#init?.reject(unavailable(`${this.#label}: initialize failed: ${String(m.m)}`));
        break;
      case "fatal":
        if (this.#init) this.#init.fatal = String(m.m);
        break;
      case "done": {
        const e = this.#execs.get(m.id);
        if (!e) return;
        this.#execs.delete(m.id);
        for (const b of e.blocks) this.#memory?.blocks.release(b);
        e.forget();
        e.resolve(m);
        break;
      }
      case "send":
        this.#onSend(stub, m);
        break;
      case "free":
        for (const o of m.o as number[]) this.#memory?.blocks.release(o);
        break;
      case "bls":
        void this.#bls(stub, m);
        break;
      case "log": {
        const text = `${this.#label}: ${String(m.m)}`;
        if (m.l === "error") log.error(text);
        else if (m.l === "warn") log.warn(text);
        else if (m.l === "verbose") log.verbose(1, text);
        else log.info(text);
        break;
      }
      case "fini_done":
        stub.endInput();
        break;
      default:
        log.warn(`${this.#label}: unknown message '${String(m.t)}' from the stub`);
    }
  }

  #onSend(stub: StubProcess, m: Message): void {
    const key = `${m.k[0]}:${m.k[1]}`;
    const s = this.#senders.get(key);
    if (!s) {
      if (m.outs) stub.send({ t: "free", o: (m.outs as Desc[]).map((d) => d.o) });
      return;
    }
    const final = m.final === true;
    if (final) this.#closeSender(key);
    if (!m.outs && !m.err) {
      s.sink?.({ final: true });
      return;
    }
    const o = this.#outcome(stub, s.p, m as WireResponse);
    if (o.error) s.sink?.({ error: o.error, final });
    else s.sink?.({ outputs: o.outputs, ...(o.parameters ? { parameters: o.parameters } : {}), final });
  }

  /** A BLS call from the model: through the server like any request, results written into the server's region. */
  async #bls(stub: StubProcess, m: Message): Promise<void> {
    const reply = (r: { outs?: Tensor[]; err?: ServerError; final: boolean }) => {
      let outs: Desc[] | undefined;
      let err = r.err;
      if (r.outs) {
        const blocks: number[] = [];
        try {
          outs = r.outs.map((t) => {
            const o = this.#memory!.put(t.data, `BLS output '${t.name}'`);
            blocks.push(o);
            return { n: t.name, d: t.datatype, s: t.shape, o, b: t.data.byteLength };
          });
        } catch (e) {
          for (const b of blocks) this.#memory?.blocks.release(b);
          outs = undefined;
          err = ServerError.from(e);
        }
      }
      stub.send({ t: "blsr", c: m.c, outs, err: err ? { m: err.message, c: err.code } : undefined, final: r.final });
    };
    try {
      const runner = this.#s.ctx.runner;
      const inputs = this.#take(stub, m.in as Desc[]);
      const parameters = { ...(m.p as CoreRequest["parameters"]) };
      if (m.corr) parameters.sequence_id = m.corr;
      if (m.to) parameters.timeout = m.to;
      const request: CoreRequest = {
        modelName: String(m.m),
        modelVersion: typeof m.v === "number" && m.v >= 0 ? String(m.v) : "",
        id: m.id ? String(m.id) : undefined,
        parameters,
        inputs,
        outputs: (m.out as string[]).length ? (m.out as string[]).map((name) => ({ name })) : undefined,
      };
      if (!m.dec) {
        const r = await runner.inferStep(request);
        reply({ outs: r.outputs, final: true });
        return;
      }
      let ended = false;
      for await (const r of runner.inferStepStream(request)) {
        if (r.error) {
          reply({ err: r.error, final: r.final });
        } else reply({ outs: r.response?.outputs, final: r.final });
        if (r.final) ended = true;
      }
      if (!ended) reply({ final: true });
    } catch (err) {
      reply({ err: ServerError.from(err), final: true });
    }
  }

  #onExit(stub: StubProcess, reason: string): void {
    if (stub !== this.#stub) return;
    // Nothing more goes to the stub from the frontend workers; what they sent fails below, with the main thread's.
    endedSlot.end(this.#state, ENDED);
    this.#stub = undefined;
    this.#toFree = [];
    this.#memory?.close();
    this.#memory = undefined;
    if (this.#init) {
      const why = this.#init.fatal ? `${this.#init.fatal} (interpreter '${this.#s.interpreter.command}')` : `the Python stub process ${reason}`;
      this.#init.reject(unavailable(`${this.#label}: initialize failed: ${why}`));
      return;
    }
    if (this.#closed) {
      sharedEnded(this.#key, undefined);
      return;
    }
    const error = stubFailed(this.#label, reason);
    log.error(error.message);
    for (const [id, e] of this.#execs) {
      this.#execs.delete(id);
      e.forget();
      e.resolve({ t: "failed", error });
    }
    for (const [key, s] of this.#senders) {
      this.#closeSender(key);
      s.sink?.({ error, final: true });
    }
    sharedEnded(this.#key, toWire(error));
    this.#starting = this.#start()
      .then(() => {
        log.info(`${this.#label}: the Python stub process was restarted`);
      })
      .catch((err) => {
        log.error(`${this.#label}: restarting the Python stub failed: ${ServerError.from(err).message}`);
      })
      .finally(() => {
        this.#starting = undefined;
      });
  }

  /**
   * Resolves once no execute is waiting or running in the stub (BUSY: the frontend
   * workers' too, which the scheduler's drain does not see), or once the instance is
   * closed. Polled: an unload is rare, and the count is other threads' too.
   */
  async idle(): Promise<void> {
    while (Atomics.load(this.#state, BUSY) > 0 && !this.#closed) await new Promise((r) => setTimeout(r, IDLE_POLL_MS));
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    // A frontend worker's next request goes to the main thread, which answers it as unloaded.
    Atomics.store(this.#state, RETIRED, 1);
    const stub = this.#stub;
    if (!stub) return;
    stub.wait();
    stub.send({ t: "fini" });
    const timer = setTimeout(() => stub.kill("did not finish finalize in time and was killed"), this.#s.timeoutMs);
    (timer as { unref?: () => void }).unref?.();
  }
}
