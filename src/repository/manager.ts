/**
 * @module ModelRepositoryManager: the repository's face to the server. It scans the
 * repositories and (re)loads and unloads models for the explicit and poll control modes,
 * one model at a time, and answers lookups by name and version and the repository index.
 * The work is split as Triton splits it: ModelIndex (model-index.ts) holds the models and
 * answers lookups; ModelLifecycle (model-lifecycle.ts) runs loads and unloads (per-model
 * locks, the load pool, retries, version swap and retirement); DependencyGraph
 * (dependency-graph.ts) orders an ensemble's load after its steps' and applies the
 * ensemble rules; the ModelLoader turns a folder into a config and versions into served ones.
 */
import { ServerError, invalidArg } from "../core/errors.ts";
import { getLogger } from "../core/logger.ts";
import type { ModelLocation, RepositoryScan } from "./layout.ts";
import { announceServedChange, type ModelVersion } from "./model-version.ts";
import { clientReason } from "./load-reason.ts";
import { checkModelName, checkOverride, writeOverrideFiles, removeOverrideFiles } from "./override-files.ts";
import { ModelLoader, type LoaderOptions, type ResolvedModel } from "./loader.ts";
import { ModelIndex, keysOfOr, nameOf, type IndexEntry } from "./model-index.ts";
import { ModelLifecycle } from "./model-lifecycle.ts";
import { DependencyGraph, dependentsOf } from "./dependency-graph.ts";
import type { ModelRunner } from "../core/runner.ts";
import type { BackendRegistry } from "../backends/registry.ts";
import type { ModelConfig } from "../core/model-config-types.ts";

const log = getLogger("src/repository/manager.ts");

export interface RepositoryOptions extends LoaderOptions {
  /** The local folders scanned, one per repository. */
  repositories: string[];
  /** What --model-repository named for each of `repositories` where it differs (an object-storage URL): messages and namespaces use it. */
  repositoryNames?: string[];
  /**
   * Brings the repositories up to date before a poll's scan and an explicit load's (the
   * local copies of object-storage repositories); must not throw.
   */
  refresh?: () => Promise<unknown>;
  /** none and poll load everything at start; explicit loads only `startupModels`. */
  controlMode?: "none" | "poll" | "explicit";
  /** `--load-model` names; `*` means every model. */
  startupModels?: string[];
  /** `--model-load-thread-count`: model versions loading at once (default 4). */
  loadThreadCount?: number;
  /** `--model-load-retry-count`: further tries of a version whose load failed (default 0). */
  loadRetryCount?: number;
  /**
   * `--model-namespacing`: a model's namespace is its repository, so same-named models in
   * different repositories both load. A name shared by several is ambiguous to a request
   * (INVALID_ARG, Triton's text); an ensemble's step prefers its own namespace.
   */
  namespacing?: boolean;
}

export type { IndexEntry } from "./model-index.ts";

/** A repository-extension load's overrides: a config (JSON form) and files relative to the model folder. */
export interface LoadOverride {
  config?: ModelConfig;
  files?: Record<string, Uint8Array>;
}

/**
 * Models are keyed by modelKey(): the model's name, or its namespace and name under
 * --model-namespacing. The public methods take names, as requests carry them.
 */
export class ModelRepositoryManager {
  readonly #opts: RepositoryOptions;
  readonly #loader: ModelLoader;
  readonly #index: ModelIndex;
  readonly #lifecycle: ModelLifecycle;
  readonly #graph: DependencyGraph;
  /** The server's inference entry: ensembles call their steps through it, and each backend model gets it for BLS. */
  readonly #runner: ModelRunner;

  constructor(opts: RepositoryOptions, backends: BackendRegistry, runner: ModelRunner) {
    this.#opts = opts;
    this.#runner = runner;
    this.#loader = new ModelLoader(opts, backends);
    this.#index = new ModelIndex(opts);
    this.#lifecycle = new ModelLifecycle(this.#index, this.#loader, opts);
    const index = this.#index;
    this.#graph = new DependencyGraph({
      explicit: this.controlMode === "explicit",
      stepKey: (namespace, name, scan) => index.stepKey(namespace, name, scan),
      ready: (key) => index.ready(key),
      load: (key, scan, chain) => this.#lifecycle.serialized(key, () => this.#loadModel(key, undefined, scan, chain)),
      pending: (key) => this.#lifecycle.pending(key),
    });
  }

  /** The model control mode (`--model-control-mode`); only explicit allows load and unload requests. */
  get controlMode(): "none" | "poll" | "explicit" {
    return this.#opts.controlMode ?? "none";
  }

  /** Loads `key` in its turn, logging its errors (start-up and poll loads have no caller to tell). */
  #loadLogged(key: string, scan: RepositoryScan): Promise<void> {
    return this.#lifecycle.serialized(key, async () => {
      for (const e of await this.#loadModel(key, undefined, scan)) log.error(e);
    });
  }

  /** Scans the repositories and loads the start-up models; resolves when all have settled. */
  async loadAll(): Promise<void> {
    const scan = this.#index.scan();
    this.#index.remember(scan);
    let keys = [...scan.models.keys()];
    if (this.#opts.controlMode === "explicit") {
      const wanted = this.#opts.startupModels ?? [];
      if (!wanted.includes("*")) keys = [...new Set(wanted.flatMap((n) => keysOfOr(n, scan.models.keys())))];
    }
    await Promise.all(keys.map((key) => this.#loadLogged(key, scan)));
  }

  /**
   * The repository extension's load: (re)loads `name` (under namespacing, every
   * repository's model of that name, as Triton applies a load to all of them); throws when
   * a requested version could not be served.
   */
  async loadModel(name: string, override?: LoadOverride): Promise<void> {
    checkModelName(name);
    checkOverride(name, override?.config, override?.files, this.#opts.allowModelCodeOverrides === true);
    await this.#opts.refresh?.();
    const scan = this.#index.scan();
    const files = override?.files !== undefined && Object.keys(override.files).length > 0;
    // With file overrides the model is built from them alone, whatever the repositories hold.
    const keys = files ? [name] : keysOfOr(name, scan.models.keys());
    const errors = await Promise.all(keys.map((key) => this.#lifecycle.serialized(key, () => this.#loadModel(key, override, scan))));
    if (errors.flat().length > 0) throw invalidArg(errors.flat().join("; "));
  }

  /** The repository extension's unload: drains and frees every version of `name` (of every namespace). */
  async unloadModel(name: string): Promise<void> {
    const keys = keysOfOr(name, new Set([...this.#index.keys(), ...this.#index.known.keys()]));
    await Promise.all(
      keys.map((key) =>
        this.#lifecycle.serialized(key, async () => {
          const entry = this.#index.entry(key);
          if (!entry) {
            if (this.#index.known.has(key)) return;
            throw invalidArg(`failed to unload '${name}': model not found in any model repository`);
          }
          await this.#lifecycle.unload(entry);
          if (entry.failure !== undefined) {
            delete entry.failure;
            // The failure no longer holds the server's readiness back.
            announceServedChange();
          }
          log.info(`successfully unloaded '${name}'${entry.location.namespace ? ` (namespace '${entry.location.namespace}')` : ""}`);
        }),
      ),
    );
  }

  /** Loaded ensembles with a step that calls `name` (for unload_dependents). */
  dependentsOf(name: string): string[] {
    return dependentsOf(name, this.#index.entries());
  }

  /**
   * Poll mode: refreshes and rescans the repositories; new and changed models are
   * (re)loaded, removed ones unloaded. Unchanged versions keep serving untouched.
   */
  async poll(): Promise<void> {
    await this.#opts.refresh?.();
    const scan = this.#index.scan();
    const removed = this.#index.keys().filter((n) => !scan.models.has(n));
    this.#index.remember(scan);
    await Promise.all([
      ...[...scan.models.keys()].map((key) => this.#loadLogged(key, scan)),
      ...removed.map((key) =>
        this.#lifecycle.serialized(key, async () => {
          const entry = this.#index.entry(key);
          if (!entry) return;
          this.#index.delete(key);
          await this.#lifecycle.unload(entry);
          log.info(`successfully unloaded '${nameOf(key)}' (removed from the repository)`);
        }),
      ),
    ]);
  }

  /** True when every model that was tried has all its versions READY (explicitly unloaded ones aside). */
  allReady(): boolean {
    return this.#index.allReady();
  }

  /** Failures, for startup's --exit-on-error check. */
  failures(): string[] {
    return this.#index.failures();
  }

  /**
   * The version to serve: the named one, or the highest READY version. Throws NOT_FOUND
   * for unknown models and versions, UNAVAILABLE for ones not ready. `namespace`: an
   * ensemble step's own namespace, preferred under --model-namespacing.
   */
  getModel(name: string, version?: string, namespace?: string): ModelVersion {
    return this.#index.getModel(name, version, namespace);
  }

  /** Ready versions of a model, ascending. */
  readyVersions(name: string): ModelVersion[] {
    return this.#index.readyVersions(name);
  }

  /** Every model version the manager serves or holds as failed, for statistics. */
  allVersions(): ModelVersion[] {
    return this.#index.allVersions();
  }

  /** The repository index extension's entries, read from the repositories again each time (P-17). */
  index(readyOnly = false): IndexEntry[] {
    return this.#index.index(readyOnly);
  }

  /** Unloads everything, waiting for in-flight work to drain. */
  async unloadAll(): Promise<void> {
    await this.#lifecycle.unloadAll();
  }

  /**
   * Loads `key`: where from (its folder, a load's file overrides, or the override folder it
   * serves from now), its config, what its ensemble steps need, then its versions beside
   * whatever serves it now (the lifecycle swaps them in). Returns the errors.
   */
  async #loadModel(key: string, override?: LoadOverride, scan = this.#index.scan(), chain: readonly string[] = []): Promise<string[]> {
    this.#index.remember(scan);
    const name = nameOf(key);
    const old = this.#index.entry(key);
    const dup = scan.duplicates.get(key);
    if (dup) {
      const failure = `model '${name}' appears in multiple repositories: ${dup.join(", ")}`;
      if (!old) this.#index.set(key, { location: { name, dir: "", repository: "" }, versions: new Map(), failure });
      return [`failed to load '${name}': ${failure}`];
    }
    const found = scan.models.get(key);
    let location: ModelLocation | undefined = found;
    let overrideDir: string | undefined;
    if (override?.files && Object.keys(override.files).length > 0) {
      // Triton builds the model from the overrides alone; the name need not be in a repository.
      if (!override.config) return [`failed to load '${name}': a config override is required with file overrides`];
      overrideDir = writeOverrideFiles(name, override.files);
      location = { name, repository: "", dir: overrideDir, clientFiles: true };
    } else if (old?.overrideDir && !override?.config) {
      location = old.location; // keep serving from the override folder until a load replaces it
      overrideDir = old.overrideDir;
    }
    if (!location) return [`failed to load '${name}': model not found in any model repository`];
    const hasReady = old !== undefined && [...old.versions.values()].some((v) => v.ready);

    let resolved: ResolvedModel;
    try {
      resolved = await this.#loader.resolveConfig(location, override?.config);
    } catch (err) {
      const message = ServerError.from(err).message;
      const failure = clientReason(message, location.dir, name);
      if (failure !== message) log.error(`failed to load '${name}': ${message}`); // the whole message, for the operator
      if (overrideDir && overrideDir !== old?.overrideDir) removeOverrideFiles(overrideDir);
      if (!hasReady) this.#index.set(key, { location, versions: old?.versions ?? new Map(), failure });
      return [`failed to load '${name}': ${failure}${hasReady ? " (the loaded versions keep serving)" : ""}`];
    }
    const missing = await this.#graph.prepare(key, location.namespace, resolved.config, scan, chain);
    if (missing) {
      if (overrideDir && overrideDir !== old?.overrideDir) removeOverrideFiles(overrideDir);
      if (!hasReady) this.#index.set(key, { location, versions: old?.versions ?? new Map(), failure: missing });
      return [`failed to load '${name}': ${missing}${hasReady ? " (the loaded versions keep serving)" : ""}`];
    }
    const index = this.#index;
    const context = { runner: this.#runner, knows: (m: string) => index.knows(m) };
    return this.#lifecycle.load({ key, location, resolved, old, overrideDir, context });
  }
}
