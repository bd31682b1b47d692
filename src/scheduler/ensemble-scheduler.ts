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
 */
import { cancelled, invalidArg, unavailable, ServerError } from "../core/errors.ts";
import { whenCancelled } from "./cancel.ts";
import type { InferenceRequest, InferenceResponse } from "../core/request.ts";
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

export type ModelRunner = (request: InferenceRequest) => Promise<InferenceResponse>;

export function ensembleSteps(config: ModelConfig): EnsembleStep[] {
  return ((config.ensemble_scheduling as { step?: EnsembleStep[] } | undefined)?.step ?? []).map((s) => ({
    ...s,
    input_map: { ...s.input_map },
    output_map: { ...s.output_map },
  }));
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
      if (!available.has(t)) throw invalidArg(`ensemble '${name}': step '${s.model_name}' reads tensor '${t}', which is neither an ensemble input nor a step output`);
    }
  }
  for (const o of config.output ?? []) {
    if (!produced.has(o.name!)) throw invalidArg(`ensemble '${name}': output '${o.name}' is not produced by any step`);
  }
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
    if (next) next(); // the slot passes straight to the next waiter
    else this.#held--;
  }
}

export class EnsembleScheduler implements Scheduler {
  readonly #name: string;
  readonly #steps: EnsembleStep[];
  readonly #run: ModelRunner;
  /** The ensemble's namespace (--model-namespacing): each step calls that namespace's model when it has one. */
  readonly #namespace: string;
  /** max_inflight_requests: per-step back-pressure (none when 0). */
  readonly #gates: Map<EnsembleStep, StepGate> | undefined;
  #inflight = 0;
  #stopping = false;
  #drained: (() => void) | undefined;

  constructor(config: ModelConfig, run: ModelRunner, namespace = "") {
    this.#name = config.name ?? "";
    this.#namespace = namespace;
    this.#steps = ensembleSteps(config);
    this.#run = run;
    const limit = Number((config.ensemble_scheduling as { max_inflight_requests?: number | string } | undefined)?.max_inflight_requests ?? 0);
    this.#gates = limit > 0 ? new Map(this.#steps.map((s) => [s, new StepGate(limit)])) : undefined;
  }

  async enqueue(prepared: PreparedRequest): Promise<ScheduledResult> {
    if (this.#stopping) throw unavailable(`Server is stopping, scheduler for model has stopped accepting new inference requests`);
    this.#inflight++;
    try {
      const tensors = new Map<string, Tensor>(prepared.inputs.map((t) => [t.name, t]));
      const pending = new Set(this.#steps);
      const signal = prepared.request.signal;
      while (pending.size > 0) {
        if (signal?.aborted) throw cancelled(prepared.request.id);
        const ready = [...pending].filter((s) => Object.values(s.input_map!).every((t) => tensors.has(t)));
        if (ready.length === 0) throw new ServerError("INTERNAL", `ensemble '${this.#name}': no step can run; missing tensors for ${[...pending].map((s) => `'${s.model_name}'`).join(", ")}`);
        for (const s of ready) pending.delete(s);
        await Promise.all(ready.map((s) => this.#runStep(s, tensors, prepared.request)));
      }
      const outputs = prepared.outputNames.map((n) => {
        const t = tensors.get(n);
        if (!t) throw new ServerError("INTERNAL", `ensemble '${this.#name}' did not produce output '${n}'`);
        return { ...t, name: n };
      });
      return { outputs, queueNs: 0, computeInputNs: 0, computeInferNs: 0, computeOutputNs: 0 };
    } finally {
      if (--this.#inflight === 0 && this.#stopping) this.#drained?.();
    }
  }

  async #runStep(step: EnsembleStep, tensors: Map<string, Tensor>, request: InferenceRequest): Promise<void> {
    const version = Number(step.model_version ?? -1);
    const inputs = Object.entries(step.input_map!).map(([modelInput, ensembleTensor]) => ({ ...tensors.get(ensembleTensor)!, name: modelInput }));
    const outputNames = Object.keys(step.output_map!);
    const gate = this.#gates?.get(step);
    await gate?.acquire(request.signal, request.id);
    let response: InferenceResponse;
    try {
      if (request.signal?.aborted) throw cancelled(request.id);
      response = await this.#run({
        modelName: step.model_name!,
        ...(this.#namespace ? { modelNamespace: this.#namespace } : {}),
        modelVersion: version > 0 ? String(version) : undefined,
        parameters: { ...request.parameters },
        inputs,
        outputs: outputNames.map((name) => ({ name })),
        signal: request.signal,
      });
    } finally {
      gate?.release();
    }
    for (const t of response.outputs) {
      const target = step.output_map![t.name];
      if (target) tensors.set(target, { name: target, datatype: t.datatype, shape: t.shape, data: t.data });
    }
  }

  inflightCount(): number {
    return this.#inflight;
  }

  pendingCount(): number {
    return 0;
  }

  stop(): Promise<void> {
    this.#stopping = true;
    if (this.#inflight === 0) return Promise.resolve();
    return new Promise((resolve) => (this.#drained = resolve));
  }
}
