/**
 * @module Triton's ensemble scheduler (reference §7.8): a request flows through the
 * steps of `ensemble_scheduling`; a step runs as soon as every ensemble tensor its
 * input_map names exists, steps that are ready together run at once, and each step's
 * outputs become ensemble tensors through its output_map. Composing models are called
 * through the server like any request (their own schedulers, batching and statistics);
 * request parameters (priority, timeout, sequence flags) pass on to them.
 * `max_inflight_requests` bounds how many requests each step has in flight at once.
 * A cancelled ensemble request (S-20) starts no further step: its step requests carry its
 * signal, so those queued or running in composing models are cancelled there too.
 *
 * An ensemble with a decoupled step is decoupled itself (ensembleDecoupled, at load), and
 * runs as Triton's EnsembleContext does: every tensor holds one value per iteration; each
 * response of a step sets its outputs' next iteration and starts the steps whose inputs
 * all have that iteration; whenever every requested output has a value of one iteration,
 * the ensemble sends a response of them; the final flag goes with the response sent when
 * no step is left in flight, or alone after it.
 */
import { InflightDrain } from "./drain.ts";
import { cancelled, invalidArg, unavailable, ServerError } from "../core/errors.ts";
import { whenCancelled } from "../core/cancel.ts";
import type { ComputeTimes, InferenceRequest, InferenceResponse } from "../core/request.ts";
import type { ModelStats } from "../core/stats.ts";
import type { ModelRunner } from "../core/runner.ts";
import type { PreparedRequest } from "../core/request-validate.ts";
import type { Tensor } from "../core/tensor.ts";
import type { ModelConfig } from "../core/model-config-types.ts";
import type { Scheduler, ScheduledResult } from "./scheduler.ts";

export interface EnsembleStep {
  model_name?: string;
  model_version?: number | string;
  input_map?: Record<string, string>;
  output_map?: Record<string, string>;
}

export function ensembleSteps(config: ModelConfig): EnsembleStep[] {
  return ((config.ensemble_scheduling as { step?: EnsembleStep[] } | undefined)?.step ?? []).map((s) => ({
    ...s,
    input_map: { ...s.input_map },
    output_map: { ...s.output_map },
  }));
}

/**
 * The version a step's request names, as the server resolves it: the step's version, or
 * none (the model's latest) for -1 or no version. The frontend workers look steps up by it
 * (server/direct-models.ts, direct-runner.ts) as the main thread does.
 */
export function stepVersion(step: EnsembleStep): string | undefined {
  const version = Number(step.model_version ?? -1);
  return version > 0 ? String(version) : undefined;
}

/** `max_inflight_requests`: how many requests each step may have in flight at once (0: no bound). */
export function stepInflightLimit(config: ModelConfig): number {
  return Number((config.ensemble_scheduling as { max_inflight_requests?: number | string } | undefined)?.max_inflight_requests ?? 0);
}

/**
 * Load-time checks of the data flow: every ensemble output is produced by exactly one
 * step output, every step input comes from an ensemble input or an earlier output.
 */
export function checkEnsembleFlow(config: ModelConfig): void {
  const name = config.name;
  const steps = ensembleSteps(config);
  const produced = new Map<string, string>();
  for (const s of steps) {
    for (const t of Object.values(s.output_map!)) {
      if (produced.has(t)) throw invalidArg(`ensemble '${name}': tensor '${t}' is produced by more than one step ('${produced.get(t)}' and '${s.model_name}')`);
      produced.set(t, s.model_name!);
    }
  }
  const available = new Set([...(config.input ?? []).map((i) => i.name!), ...produced.keys()]);
  for (const s of steps) {
    for (const t of Object.values(s.input_map!)) {
      if (!available.has(t))
        throw invalidArg(`ensemble '${name}': step '${s.model_name}' reads tensor '${t}', which is neither an ensemble input nor a step output`);
    }
  }
  for (const o of config.output ?? []) {
    if (!produced.has(o.name!)) throw invalidArg(`ensemble '${name}': output '${o.name}' is not produced by any step`);
  }
}

/**
 * Triton's decoupled data-flow rule (ensemble_utils.cc, ValidateEnsembleConfig): the
 * outputs of a decoupled step start a new lineage, the outputs of any other step carry
 * their inputs' lineage, and a step whose inputs come from two lineages (two decoupled
 * steps, or a decoupled step and the ensemble's inputs) is refused with Triton's message.
 * Returns whether any step is decoupled, which makes the ensemble decoupled.
 */
export function ensembleDecoupled(config: ModelConfig, isDecoupled: (model: string) => boolean): boolean {
  const lineage = new Map<string, number>((config.input ?? []).map((i) => [i.name!, 0]));
  let lineages = 0;
  const pending = new Set(ensembleSteps(config));
  while (pending.size > 0) {
    const ready = [...pending].filter((s) => Object.values(s.input_map!).every((t) => lineage.has(t)));
    if (ready.length === 0) break; // checkEnsembleFlow reports the tensors that never come
    for (const s of ready) {
      pending.delete(s);
      const from = new Set(Object.values(s.input_map!).map((t) => lineage.get(t)!));
      if (from.size > 1)
        throw invalidArg(`in ensemble ${config.name}, step of model '${s.model_name}' receives inputs originated from different decoupled models`);
      const own = isDecoupled(s.model_name!) ? ++lineages : ([...from][0] ?? 0);
      for (const t of Object.values(s.output_map!)) lineage.set(t, own);
    }
  }
  return lineages > 0;
}

/** A FIFO counting semaphore: at most `limit` holders at once. */
class StepGate {
  readonly #limit: number;
  #held = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Waits for a slot; gives up (rejecting CANCELLED, holding nothing) when `signal` aborts first. */
  async acquire(signal: AbortSignal | undefined, requestId: string | undefined): Promise<void> {
    if (this.#held < this.#limit) {
      this.#held++;
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const granted = () => {
        forget();
        resolve();
      };
      const forget = whenCancelled(signal, () => {
        const i = this.#waiting.indexOf(granted);
        if (i >= 0) this.#waiting.splice(i, 1);
        reject(cancelled(requestId));
      });
      this.#waiting.push(granted);
    });
  }

  release(): void {
    const next = this.#waiting.shift();
    if (next)
      next(); // the slot passes straight to the next waiter
    else this.#held--;
  }
}

export class EnsembleScheduler implements Scheduler {
  readonly #name: string;
  readonly #steps: EnsembleStep[];
  /** The server's inference entry, which each step calls (a decoupled ensemble's: its streaming one). */
  readonly #runner: ModelRunner;
  readonly #decoupled: boolean;
  /** The ensemble's namespace (--model-namespacing): each step calls that namespace's model when it has one. */
  readonly #namespace: string;
  /** max_inflight_requests: per-step back-pressure (none when 0). */
  readonly #gates: Map<EnsembleStep, StepGate> | undefined;
  readonly #drain = new InflightDrain();
  /** Where the ensemble's own executions are counted (the main thread's; a frontend worker records them apart). */
  readonly #stats: Pick<ModelStats, "recordExecution"> | undefined;

  constructor(config: ModelConfig, runner: ModelRunner, namespace = "", stats?: Pick<ModelStats, "recordExecution">) {
    this.#stats = stats;
    this.#name = config.name ?? "";
    this.#namespace = namespace;
    this.#decoupled = config.model_transaction_policy?.decoupled === true;
    this.#steps = ensembleSteps(config);
    this.#runner = runner;
    const limit = stepInflightLimit(config);
    this.#gates = limit > 0 ? new Map(this.#steps.map((s) => [s, new StepGate(limit)])) : undefined;
  }

  async enqueue(prepared: PreparedRequest): Promise<ScheduledResult> {
    if (this.#drain.stopping) throw unavailable(`Server is stopping, scheduler for model has stopped accepting new inference requests`);
    this.#drain.enter();
    try {
      if (this.#decoupled && prepared.request.responseSink) return await this.#runDecoupled(prepared);
      const tensors = new Map<string, Tensor>(prepared.inputs.map((t) => [t.name, t]));
      const pending = new Set(this.#steps);
      const signal = prepared.request.signal;
      // The steps' compute durations, summed: the ensemble's own, as Triton reports them.
      const times: ComputeTimes = { input: 0, infer: 0, output: 0 };
      while (pending.size > 0) {
        if (signal?.aborted) throw cancelled(prepared.request.id);
        const ready = [...pending].filter((s) => Object.values(s.input_map!).every((t) => tensors.has(t)));
        if (ready.length === 0)
          throw new ServerError("INTERNAL", `no step can run; missing tensors for ${[...pending].map((s) => `'${s.model_name}'`).join(", ")}`);
        for (const s of ready) pending.delete(s);
        await Promise.all(ready.map((s) => this.#runStep(s, tensors, prepared.request, times)));
      }
      const outputs = prepared.outputNames.map((n) => {
        const t = tensors.get(n);
        if (!t) throw new ServerError("INTERNAL", `output '${n}' was not produced`);
        return { ...t, name: n };
      });
      // One execution of the ensemble, as Triton's ensemble counts it once its request succeeded (batch size at least 1).
      this.#stats?.recordExecution(Math.max(1, prepared.batchSize), times.input, times.infer, times.output);
      return { outputs, queueNs: 0, computeInputNs: times.input, computeInferNs: times.infer, computeOutputNs: times.output };
    } catch (err) {
      throw this.#inEnsemble(err);
    } finally {
      this.#drain.leave();
    }
  }

  /** A step's failure as Triton's ensemble reports it ("in ensemble '<name>', ..."); a cancel stays as it is. */
  #inEnsemble(err: unknown): ServerError {
    const e = ServerError.from(err);
    if (e.code === "CANCELLED") return e;
    return new ServerError(e.code, `in ensemble '${this.#name}', ${e.message}`, { reason: e.reason, cause: e });
  }

  /** The request a step makes of its model, its inputs taken from `tensor`. */
  #stepRequest(step: EnsembleStep, tensor: (name: string) => Tensor, request: InferenceRequest, times?: ComputeTimes): InferenceRequest {
    return {
      modelName: step.model_name!,
      ...(this.#namespace ? { modelNamespace: this.#namespace } : {}),
      modelVersion: stepVersion(step),
      parameters: { ...request.parameters },
      inputs: Object.entries(step.input_map!).map(([modelInput, ensembleTensor]) => ({ ...tensor(ensembleTensor), name: modelInput })),
      outputs: Object.keys(step.output_map!).map((name) => ({ name })),
      signal: request.signal,
      ...(times ? { stepTimes: times } : {}),
    };
  }

  async #runStep(step: EnsembleStep, tensors: Map<string, Tensor>, request: InferenceRequest, times: ComputeTimes): Promise<void> {
    const gate = this.#gates?.get(step);
    await gate?.acquire(request.signal, request.id);
    let response: InferenceResponse;
    try {
      if (request.signal?.aborted) throw cancelled(request.id);
      response = await this.#runner.inferStep(this.#stepRequest(step, (t) => tensors.get(t)!, request, times));
    } finally {
      gate?.release();
    }
    for (const t of response.outputs) {
      const target = step.output_map![t.name];
      if (target) tensors.set(target, { name: target, datatype: t.datatype, shape: t.shape, data: t.data });
    }
  }

  /**
   * A decoupled ensemble's request (see the module note). Resolves when no step is left
   * in flight, having sent every response and the final flag through the request's sink;
   * rejects with the first step error (no step starts after it), as Triton's ensemble
   * answers an error once its steps in flight are done.
   */
  #runDecoupled(prepared: PreparedRequest): Promise<ScheduledResult> {
    const runner = this.#runner;
    const request = prepared.request;
    const sink = request.responseSink!;
    const readers = new Map<string, EnsembleStep[]>();
    for (const s of this.#steps) for (const t of new Set(Object.values(s.input_map!))) readers.set(t, [...(readers.get(t) ?? []), s]);
    const wanted = prepared.outputNames;
    /**
     * Each ensemble tensor's values by iteration, and the iteration its next value gets. A
     * value is kept only until every step that reads it has started with it and, for a
     * requested output, it has been sent (Triton prunes them the same way), so a long
     * stream holds only what is still to be used.
     */
    const values = new Map<string, { at: Map<number, { tensor: Tensor; uses: number }>; next: number }>();
    const put = (name: string, t: Tensor): number => {
      let v = values.get(name);
      if (!v) values.set(name, (v = { at: new Map(), next: 0 }));
      const uses = (readers.get(name)?.length ?? 0) + (wanted.includes(name) ? 1 : 0);
      if (uses > 0) v.at.set(v.next, { tensor: { name, datatype: t.datatype, shape: t.shape, data: t.data }, uses });
      return v.next++;
    };
    const get = (name: string, i: number): Tensor => values.get(name)!.at.get(i)!.tensor;
    const used = (name: string, i: number): void => {
      const at = values.get(name)!.at;
      const v = at.get(i);
      if (v && --v.uses === 0) at.delete(i);
    };
    let inflight = 0;
    let failure: ServerError | undefined;
    return new Promise<ScheduledResult>((resolve, reject) => {
      const done = () => (failure ? reject(failure) : resolve({ outputs: [], queueNs: 0, computeInputNs: 0, computeInferNs: 0, computeOutputNs: 0 }));
      /** After tensors were set: start the steps now ready, then send the response now complete, final when nothing is in flight. */
      const updated = (set: [string, number][]) => {
        if (failure) return;
        const starts = new Map<string, [EnsembleStep, number]>();
        for (const [t, i] of set) {
          for (const s of readers.get(t) ?? []) {
            if (Object.values(s.input_map!).every((name) => values.get(name)?.at.has(i))) starts.set(`${this.#steps.indexOf(s)}:${i}`, [s, i]);
          }
        }
        for (const [s, i] of starts.values()) start(s, i);
        let complete: number | undefined;
        for (const [t, i] of set) if (wanted.includes(t) && wanted.every((o) => values.get(o)?.at.has(i))) complete = i;
        const outputs = complete === undefined ? undefined : wanted.map((o) => get(o, complete!));
        if (complete !== undefined) for (const o of wanted) used(o, complete);
        if (outputs) sink({ outputs, final: inflight === 0 });
        else if (inflight === 0) sink({ final: true });
      };
      const start = (step: EnsembleStep, iteration: number) => {
        inflight++;
        const stepRequest = this.#stepRequest(step, (t) => get(t, iteration), request);
        for (const t of new Set(Object.values(step.input_map!))) used(t, iteration);
        void (async () => {
          let finished = false;
          try {
            if (request.signal?.aborted) throw cancelled(request.id);
            for await (const r of runner.inferStepStream(stepRequest)) {
              if (r.error) throw r.error;
              if (r.final) {
                finished = true;
                inflight--;
              }
              const set: [string, number][] = [];
              for (const t of r.response?.outputs ?? []) {
                const target = step.output_map![t.name];
                if (target) set.push([target, put(target, t)]);
              }
              if (set.length > 0) updated(set);
              else if (r.final && inflight === 0 && !failure) sink({ final: true });
              if (r.final) break;
            }
          } catch (err) {
            failure ??= ServerError.from(err);
          } finally {
            if (!finished) inflight--;
            if (inflight === 0) done();
          }
        })();
      };
      const set = prepared.inputs.map((t): [string, number] => [t.name, put(t.name, t)]);
      updated(set);
      if (inflight === 0) done();
    });
  }

  inflightCount(): number {
    return this.#drain.count;
  }

  pendingCount(): number {
    return 0;
  }

  stop(): Promise<void> {
    return this.#drain.stop();
  }
}
