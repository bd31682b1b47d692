/**
 * @module One loaded (or failed) version of a model: its config, signature, lifecycle
 * state, backend instances, scheduler and statistics.
 */
import { internal, unavailable } from "../core/errors.ts";
import { getLogger } from "../core/logger.ts";
import { signatureOf, type ModelSignature } from "../core/signature.ts";
import { ModelStats } from "../core/stats.ts";
import type { ModelConfig } from "../core/model-config-types.ts";
import type { BackendInstance, BackendModel } from "../backends/backend.ts";
import type { Scheduler } from "../scheduler/scheduler.ts";

export type ModelState = "UNKNOWN" | "LOADING" | "READY" | "UNLOADING" | "UNAVAILABLE";

const ALLOWED: Record<ModelState, readonly ModelState[]> = {
  UNKNOWN: ["LOADING", "UNAVAILABLE"],
  LOADING: ["READY", "UNAVAILABLE"],
  READY: ["UNLOADING", "UNAVAILABLE"],
  UNLOADING: ["UNAVAILABLE"],
  UNAVAILABLE: ["LOADING"],
};

const log = getLogger("src/repository/model-version.ts");

const stateListeners = new Set<(mv: ModelVersion | undefined) => void>();

/**
 * Calls `fn` after every state change of any version, and after the repository changed
 * which versions serve a model (announceServedChange; `mv` undefined then), to republish
 * what other threads serve; returns the unsubscribe.
 */
export function onModelStateChange(fn: (mv: ModelVersion | undefined) => void): () => void {
  stateListeners.add(fn);
  return () => stateListeners.delete(fn);
}

/**
 * The repository's index now serves other versions of a model (model-index.ts): a
 * version's READY comes before the index lists it, so what follows it learns of it here.
 */
export function announceServedChange(): void {
  for (const fn of stateListeners) fn(undefined);
}

/** How long an unload waits for executions before it aborts the instances that can be (default). */
export const UNLOAD_ABORT_MS = 30_000;

export class ModelVersion {
  readonly name: string;
  readonly version: number;
  /** The repository it came from under --model-namespacing (Triton's namespace), else "". */
  readonly namespace: string;
  /** `<repo>/<model>`, for files the config names (labels, warmup data). */
  readonly modelDir: string;
  config: ModelConfig;
  signature: ModelSignature;
  state: ModelState = "UNKNOWN";
  reason = "";
  readonly stats = new ModelStats();
  /** The normalized config and the fingerprint of its version folder and label files it was loaded from, to tell whether a reload changes it. */
  configKey = "";
  fingerprint = "";
  /** The lines of each output's label file (the classification extension), read by the load. */
  labels: ReadonlyMap<string, readonly string[]> = new Map();
  /** How long the load took (nv_model_load_duration_secs); 0 for ensembles. */
  loadDurationSecs = 0;
  #backendModel: BackendModel | undefined;
  #instances: BackendInstance[] = [];
  #scheduler: Scheduler | undefined;
  #unloadAbortMs = UNLOAD_ABORT_MS;

  constructor(name: string, version: number, modelDir: string, config: ModelConfig, namespace = "") {
    this.name = name;
    this.namespace = namespace;
    this.modelDir = modelDir;
    this.version = version;
    this.config = config;
    this.signature = signatureOf(config);
  }

  transition(to: ModelState, reason = ""): void {
    if (!ALLOWED[this.state].includes(to)) {
      throw internal(`model '${this.name}' version ${this.version}: illegal state change ${this.state} -> ${to}`);
    }
    this.state = to;
    this.reason = reason;
    for (const fn of stateListeners) fn(this);
  }

  /** Takes ownership of the backend model, its instances and the scheduler over them. */
  attach(backendModel: BackendModel | undefined, instances: BackendInstance[], scheduler: Scheduler, unloadAbortMs = UNLOAD_ABORT_MS): void {
    this.#backendModel = backendModel;
    this.#instances = instances;
    this.#scheduler = scheduler;
    this.#unloadAbortMs = unloadAbortMs;
  }

  /** A served version whose backend can no longer serve it: UNAVAILABLE with the reason (a later load replaces it). */
  fail(reason: string): void {
    if (this.state !== "READY") return;
    this.transition("UNAVAILABLE", reason);
    log.error(`model '${this.name}' version ${this.version} is UNAVAILABLE: ${reason}`);
  }

  get scheduler(): Scheduler {
    if (!this.#scheduler) throw internal(`model '${this.name}' version ${this.version} has no scheduler`);
    return this.#scheduler;
  }

  /** The backend instances of a loaded version (none before attach or after unload). */
  get instances(): readonly BackendInstance[] {
    return this.#instances;
  }

  get ready(): boolean {
    return this.state === "READY";
  }

  /** Unloaded on purpose (explicit unload or replaced by a reload), not failed. */
  get unloaded(): boolean {
    return this.state === "UNAVAILABLE" && this.reason === "unloaded";
  }

  /** Drains the scheduler, then frees instances and the backend model, each once. */
  async unload(): Promise<void> {
    if (this.state === "READY") this.transition("UNLOADING");
    await this.#drain();
    for (const inst of this.#instances) inst.close();
    this.#instances = [];
    this.#backendModel?.close();
    this.#backendModel = undefined;
    this.#scheduler = undefined;
    if (this.state === "UNLOADING") this.transition("UNAVAILABLE", "unloaded");
  }

  /**
   * The scheduler's drain, and the instances' (idle: what other threads sent them); executions
   * still running after the grace are aborted on the instances that can abort them (an
   * execute that never returns cannot hold the unload).
   */
  async #drain(): Promise<void> {
    const stopping = this.#scheduler?.stop();
    if (!stopping || !this.#instances.some((i) => i.abort)) return stopping;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const graceOver = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), this.#unloadAbortMs)));
    // Executes the frontend workers sent straight to an instance (#30) are not the scheduler's: they are waited for, and aborted, alike.
    const idle = stopping.then(() => Promise.all(this.#instances.map((i) => i.idle?.())));
    const drained = await Promise.race([idle.then(() => true as const), graceOver]);
    clearTimeout(timer);
    if (drained) return;
    const secs = this.#unloadAbortMs / 1000;
    log.error(`model '${this.name}' version ${this.version}: executions still running ${secs} s after the unload began; aborting them`);
    const error = unavailable(`model '${this.name}' version ${this.version} was unloaded while this request ran (aborted after ${secs} s)`);
    for (const inst of this.#instances) inst.abort?.(error);
    await stopping;
  }
}
