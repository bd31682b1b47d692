/**
 * @module The models' dependency graph (Triton's ModelRepositoryManager keeps it): an
 * ensemble's steps and the models they call. In explicit mode an ensemble's load loads
 * its step models first; every ensemble's load waits for its steps' loads in progress
 * (unless they wait for it: a cycle) and then applies the load-time rules that need the
 * steps' configs: the decoupled lineage (an ensemble with a decoupled step is decoupled;
 * no step may mix two decoupled steps' outputs) and the batch-size rule. It also answers
 * which loaded ensembles call a model (unload_dependents).
 */
import { ServerError } from "../core/errors.ts";
import { ensembleDecoupled, ensembleSteps } from "../scheduler/ensemble-scheduler.ts";
import { isEnsemble } from "../model-config/normalize.ts";
import { nameOf, type ModelEntry } from "./model-index.ts";
import type { RepositoryScan } from "./layout.ts";
import type { ModelVersion } from "./model-version.ts";
import type { ModelConfig } from "../core/model-config-types.ts";

/** What the graph needs from the repository around it. */
export interface DependencyHost {
  /** Explicit control mode: an ensemble's load loads its steps' models first. */
  readonly explicit: boolean;
  /** The key of the model a step in `namespace` calls by `name`. */
  stepKey(namespace: string | undefined, name: string, scan: RepositoryScan): string;
  /** The ready versions of the model under `key`, ascending. */
  ready(key: string): ModelVersion[];
  /** Loads `key` in its turn (after its loads and unloads in progress); returns the errors. `chain`: the ensembles loading it, outermost first. */
  load(key: string, scan: RepositoryScan, chain: readonly string[]): Promise<string[]>;
  /** The loads and unloads of `key` in progress, settled when they all are; undefined when none. */
  pending(key: string): Promise<unknown> | undefined;
}

/** Loaded ensembles among `models` with a step that calls `name` (for unload_dependents), by name. */
export function dependentsOf(name: string, models: Iterable<[key: string, entry: ModelEntry]>): string[] {
  const out = new Set<string>();
  for (const [key, entry] of models) {
    const uses = [...entry.versions.values()].some((v) => v.ready && isEnsemble(v.config) && ensembleSteps(v.config).some((s) => s.model_name === name));
    if (uses) out.add(nameOf(key));
  }
  return [...out];
}

/** An ensemble step that calls another model: its name, its key, the version it requires (-1: the latest). */
interface Step {
  model: string;
  key: string;
  required: number;
}

export class DependencyGraph {
  readonly #host: DependencyHost;
  /** Loads waiting for another model's load to settle (a decoupled ensemble's steps): waiter → awaited. */
  readonly #waitsFor = new Map<string, Set<string>>();

  constructor(host: DependencyHost) {
    this.#host = host;
  }

  /**
   * What must hold before `key` (config `config`, in `namespace`) loads: its step models
   * loaded (explicit mode) and the ensemble rules. Returns Triton's reason when the load
   * is refused, else undefined. May set the config's decoupled flag.
   */
  async prepare(key: string, namespace: string | undefined, config: ModelConfig, scan: RepositoryScan, chain: readonly string[]): Promise<string | undefined> {
    if (!isEnsemble(config)) return undefined;
    // The steps' keys are read again after the composing loads: under namespacing they depend on what is loaded.
    const steps = () => this.#steps(key, namespace, config, scan, chain);
    return (await this.#loadComposingModels(key, steps(), scan, chain)) ?? (await this.#decoupling(key, config, steps()));
  }

  /** The steps that call another model: not the ensemble itself, nor one of the ensembles loading it. */
  #steps(key: string, namespace: string | undefined, config: ModelConfig, scan: RepositoryScan, chain: readonly string[]): Step[] {
    const out: Step[] = [];
    for (const step of ensembleSteps(config)) {
      const model = step.model_name ?? "";
      const stepKey = this.#host.stepKey(namespace, model, scan);
      if (!model || chain.includes(stepKey) || stepKey === key) continue;
      out.push({ model, key: stepKey, required: Number(step.model_version ?? -1) });
    }
    return out;
  }

  /**
   * Explicit mode: an ensemble's load loads its composing models that have no ready
   * version first, as Triton's dependency graph does (nested ensembles too). Returns
   * Triton's reason when a step model cannot be served, else undefined.
   */
  async #loadComposingModels(key: string, steps: Step[], scan: RepositoryScan, chain: readonly string[]): Promise<string | undefined> {
    if (!this.#host.explicit) return undefined;
    const name = nameOf(key);
    for (const { model, key: stepKey, required } of steps) {
      if (this.#host.ready(stepKey).length === 0) {
        const errors = await this.#host.load(stepKey, scan, [...chain, key]);
        if (this.#host.ready(stepKey).length === 0) {
          const why = errors.length > 0 ? ` Model '${model}' loading failed with error: ${errors.join("; ")}` : "";
          return `ensemble '${name}' depends on '${model}' which has no loaded version.${why}`;
        }
      }
      if (required !== -1 && !this.#host.ready(stepKey).some((v) => v.version === required)) {
        return `ensemble '${name}' depends on '${model}' whose required version ${required} is not loaded.`;
      }
    }
    return undefined;
  }

  /**
   * An ensemble with a decoupled step is decoupled (its config says so from here on), a
   * step may not mix the outputs of two decoupled steps (Triton's load-time rule), and no
   * batching step may allow a smaller max_batch_size than the ensemble's. The
   * steps' configs are those of their models' served versions, so a step model still
   * loading is waited for. Returns Triton's reason when the flow is refused.
   */
  async #decoupling(key: string, config: ModelConfig, steps: Step[]): Promise<string | undefined> {
    const decoupled = new Set<string>();
    for (const { model, key: stepKey, required } of steps) {
      await this.#settled(stepKey, key);
      const ready = this.#host.ready(stepKey);
      const mv = required === -1 ? ready[ready.length - 1] : ready.find((v) => v.version === required);
      if (mv?.config.model_transaction_policy?.decoupled === true) decoupled.add(model);
      // A batching step must take the ensemble's largest batch (S-15, Triton's ValidateEnsembleConfig).
      const stepMax = Number(mv?.config.max_batch_size ?? 0);
      const ensembleMax = Number(config.max_batch_size ?? 0);
      if (stepMax !== 0 && stepMax < ensembleMax) {
        return `ensemble ${nameOf(key)} allows maximum batch size ${ensembleMax}, but it contains model ${model} which only allows maximum batch size to be ${stepMax}`;
      }
    }
    try {
      if (ensembleDecoupled(config, (m) => decoupled.has(m))) config.model_transaction_policy = { ...config.model_transaction_policy, decoupled: true };
    } catch (err) {
      return ServerError.from(err).message;
    }
    return undefined;
  }

  /** Waits for `target`'s loads and unloads in progress, unless `target` waits for `waiter` (a cycle of ensembles). */
  async #settled(target: string, waiter: string): Promise<void> {
    const pending = this.#host.pending(target);
    if (!pending || this.#reaches(target, waiter, new Set())) return;
    const edges = this.#waitsFor.get(waiter) ?? new Set<string>();
    this.#waitsFor.set(waiter, edges.add(target));
    try {
      await pending;
    } finally {
      edges.delete(target);
      if (edges.size === 0) this.#waitsFor.delete(waiter);
    }
  }

  #reaches(from: string, to: string, seen: Set<string>): boolean {
    if (from === to) return true;
    if (seen.has(from)) return false;
    seen.add(from);
    for (const next of this.#waitsFor.get(from) ?? []) if (this.#reaches(next, to, seen)) return true;
    return false;
  }
}
