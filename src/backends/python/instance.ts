/**
 * @module One instance of a Python model: its stub process and shared memory, the
 * requests it is executing, the response senders of a decoupled model, and the BLS calls
 * its model makes back into the server. A stub that dies (or is killed for not answering
 * a health check) fails what it had with INTERNAL naming the model and instance, and is
 * started again.
 */
import { responseParameters } from "../response-parameters.ts";
import { ERROR_CODES, ServerError, internal, unavailable, type ErrorCode } from "../../core/errors.ts";
import { getLogger } from "../../core/logger.ts";
import { nowNs } from "../../core/clock.ts";
import { isDataType, type Tensor } from "../../core/tensor.ts";
import { modelParameters, type InferenceRequest as CoreRequest, type ResponseSink } from "../../core/request.ts";
import type { PreparedRequest } from "../../core/request-validate.ts";
import type { ModelOutput } from "../../core/model-config-types.ts";
import type { BackendInstance, BackendLoadContext, ExecuteResult, RequestOutcome, RequestsResult } from "../backend.ts";
import { checkOutput } from "../typescript/tensors.ts";
import { StubMemory } from "./arena.ts";
import type { Interpreter } from "./interpreter.ts";
import { StubProcess, stubFailed, type Message } from "./stub-process.ts";
import type { CustomMetrics } from "../custom-metrics.ts";

const log = getLogger("src/backends/python/instance.ts");

/** How long copied response blocks may wait for an exec message to carry their release to the stub. */
const FREE_DELAY_MS = 20;

/** A tensor as the channel describes it: name, datatype, shape, offset and byte size in a region. */
interface Desc {
  n: string;
  d: string;
  s: number[];
  o: number;
  b: number;
}

interface WireError {
  m: string;
  c: string;
}

interface WireResponse {
  outs?: Desc[];
  err?: WireError;
  /** The response's parameters (pb_utils.InferenceResponse(parameters=...)), checked here. */
  p?: unknown;
}

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

function wireError(e: WireError): ServerError {
  const code = (ERROR_CODES as readonly string[]).includes(e.c) ? (e.c as ErrorCode) : "INTERNAL";
  return new ServerError(code, String(e.m));
}

export class PythonInstance implements BackendInstance {
  readonly name: string;
  readonly #s: InstanceSetup;
  readonly #label: string;
  readonly #outputs: Map<string, ModelOutput>;
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

  private constructor(s: InstanceSetup) {
    this.#s = s;
    this.name = s.name;
    this.#label = `model '${s.ctx.modelName}' instance '${s.name}'`;
    this.#outputs = new Map((s.ctx.config.output ?? []).map((o) => [o.name!, o]));
    this.#batched = (s.ctx.config.max_batch_size ?? 0) > 0;
    this.#decoupled = s.ctx.config.model_transaction_policy?.decoupled === true;
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

  async executeRequests(requests: readonly PreparedRequest[]): Promise<RequestsResult> {
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
      // Fields at their defaults are left out: the message is the per-request cost.
      reqs = requests.map((p) => {
        const r: Record<string, unknown> = {
          out: p.outputNames,
          in: p.inputs.map((t) => {
            const o = memory.put(t.data, `input '${t.name}'`);
            blocks.push(o);
            return { n: t.name, d: t.datatype, s: t.shape, o, b: t.data.byteLength };
          }),
        };
        if (p.request.id) r.id = p.request.id;
        const sid = p.control.sequenceId;
        if (sid !== undefined) r.corr = typeof sid === "bigint" ? Number(sid) : sid;
        const flags = (p.control.sequenceStart ? 1 : 0) | (p.control.sequenceEnd ? 2 : 0);
        if (flags) r.flags = flags;
        const params = Object.entries(modelParameters(p.request.parameters));
        if (params.length > 0) r.p = Object.fromEntries(params.map(([k, v]) => [k, typeof v === "bigint" ? Number(v) : v]));
        if (p.request.signal?.aborted) r.cancelled = true;
        return r;
      });
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
      return descs.map((d) => {
        if (!isDataType(d.d)) throw internal(`${this.#label} returned tensor '${d.n}' with unknown datatype '${d.d}'`);
        return { name: String(d.n), datatype: d.d, shape: d.s.map(Number), data: this.#memory!.take(d.o, d.b) };
      });
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
    if (r.err) return { error: wireError(r.err) };
    const model = this.#s.ctx.modelName;
    try {
      const all = this.#take(stub, r.outs ?? []);
      const wanted = new Set(p.outputNames);
      const outputs: Tensor[] = [];
      for (const t of all) {
        if (!wanted.has(t.name)) continue;
        checkOutput(model, t, this.#outputs.get(t.name), this.#batched ? p.batchSize : undefined);
        outputs.push(t);
      }
      for (const n of p.request.outputs?.map((o) => o.name) ?? []) {
        if (!outputs.some((t) => t.name === n)) throw internal(`model '${model}' returned no output '${n}', which the request asked for`);
      }
      outputs.sort((a, b) => p.outputNames.indexOf(a.name) - p.outputNames.indexOf(b.name));
      const parameters = responseParameters(model, r.p);
      return parameters ? { outputs, parameters } : { outputs };
    } catch (err) {
      return { error: ServerError.from(err) };
    }
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
    this.#stub = undefined;
    this.#toFree = [];
    this.#memory?.close();
    this.#memory = undefined;
    if (this.#init) {
      const why = this.#init.fatal ? `${this.#init.fatal} (interpreter '${this.#s.interpreter.command}')` : `the Python stub process ${reason}`;
      this.#init.reject(unavailable(`${this.#label}: initialize failed: ${why}`));
      return;
    }
    if (this.#closed) return;
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

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const stub = this.#stub;
    if (!stub) return;
    stub.wait();
    stub.send({ t: "fini" });
    const timer = setTimeout(() => stub.kill("did not finish finalize in time and was killed"), this.#s.timeoutMs);
    (timer as { unref?: () => void }).unref?.();
  }
}
