/**
 * @module ModelRepositoryManager: scans the repositories, answers lookups by name and
 * version, lists the repository index, and (re)loads and unloads models for the
 * explicit and poll control modes, one model at a time. The ModelLoader turns a folder
 * into a config and versions into served ones; a reload builds the new versions beside
 * the served ones and swaps them in only once they have settled; replaced versions
 * drain before they are freed.
 */
import { join } from "node:path";
import { ServerError, notFound, unavailable, invalidArg } from "../core/errors.ts";
import { ModelVersion, type ModelState } from "./model-version.ts";
import { getLogger } from "../core/logger.ts";
import { scanRepositories as scanFolders, listVersions, fingerprint, modelKey, type ModelLocation } from "./layout.ts";
import { clientReason } from "./load-reason.ts";
import { checkModelName, checkOverride, writeOverrideFiles, removeOverrideFiles } from "./override-files.ts";
import { selectVersions, missingSpecificVersions } from "./version-policy.ts";
import { ModelLoader, type LoaderOptions, type ResolvedModel } from "./loader.ts";
import { ensembleDecoupled, ensembleSteps, type ModelRunner, type ModelStreamRunner } from "../scheduler/ensemble-scheduler.ts";
import { isEnsemble } from "../model-config/normalize.ts";
import type { BackendRegistry } from "../backends/registry.ts";
import type { ModelConfig } from "../core/model-config-types.ts";

const log = getLogger("src/repository/manager.ts");

/** The model name a key stands for (see modelKey). */
const nameOf = (key: string): string => key.slice(key.indexOf("\0") + 1);

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

/** At most `limit` tasks at once, the rest waiting in order (Triton's model load thread pool). */
class LoadSlots {
  #free: number;
  readonly #waiting: (() => void)[] = [];
  constructor(limit: number) {
    this.#free = Math.max(1, limit);
  }
  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#free > 0) this.#free--;
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    try {
      return await task();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#free++;
    }
  }
}

/** How an ensemble calls its composing models (the server's inference path). */
export type { ModelRunner } from "../scheduler/ensemble-scheduler.ts";

export interface IndexEntry {
  name: string;
  version?: string;
  state?: ModelState;
  reason?: string;
}

/** A repository-extension load's overrides: a config (JSON form) and files relative to the model folder. */
export interface LoadOverride {
  config?: ModelConfig;
  files?: Record<string, Uint8Array>;
}

/** Triton's answer to a name that more than one namespace serves (ModelRepositoryManager::FindModelIdentifier). */
const ambiguous = (name: string, n: number) =>
  invalidArg(`There are ${n} identifiers of model '${name}' in global map, model namespace must be provided to resolve ambiguity.`);

interface ModelEntry {
  location: ModelLocation;
  /** The versions being served (or the failed ones); replaced as a whole by a reload. */
  versions: Map<number, ModelVersion>;
  /** Why the model as a whole could not load (config or backend problems). */
  failure?: string;
  /** A temporary model folder written from a load's file overrides; removed with the model. */
  overrideDir?: string;
}

/**
 * The maps below are keyed by modelKey(): the model's name, or its namespace and name
 * under --model-namespacing. The public methods take names, as requests carry them.
 */
export class ModelRepositoryManager {
  readonly #opts: RepositoryOptions;
  readonly #loader: ModelLoader;
  readonly #models = new Map<string, ModelEntry>();
  #known = new Map<string, ModelLocation>();
  /** Versions being loaded, shown by the index as LOADING until the reload settles. */
  readonly #loading = new Map<string, ModelVersion[]>();
  /** Per-model chain: loads and unloads of one model run one after another. */
  readonly #locks = new Map<string, Promise<unknown>>();
  /** Unloads of replaced versions still draining; shutdown waits for them. */
  readonly #retiring = new Set<Promise<void>>();
  readonly #slots: LoadSlots;
  #runner: ModelRunner | undefined;
  #streamRunner: ModelStreamRunner | undefined;
  /** Loads waiting for another model's load to settle (a decoupled ensemble's steps): waiter → awaited. */
  readonly #waitsFor = new Map<string, Set<string>>();

  constructor(opts: RepositoryOptions, backends: BackendRegistry) {
    this.#opts = opts;
    this.#slots = new LoadSlots(opts.loadThreadCount ?? 4);
    this.#loader = new ModelLoader(opts, backends);
  }

  /** The server's inference entries, for ensembles to call their composing models (streaming: a decoupled ensemble's). */
  setModelRunner(runner: ModelRunner, streamRunner?: ModelStreamRunner): void {
    this.#runner = runner;
    this.#streamRunner = streamRunner;
  }

  #scan(): ReturnType<typeof scanFolders> {
    return scanFolders(this.#opts.repositories, this.#opts.namespacing === true, this.#opts.repositoryNames);
  }

  /** The model folders the repositories hold now; the last scan's when one cannot be read (the load reports that). */
  #listed(): Map<string, ModelLocation> {
    try {
      return this.#scan().models;
    } catch {
      return this.#known;
    }
  }

  /** The keys among `keys` that stand for a model called `name`. */
  #keysOf(name: string, keys: Iterable<string>): string[] {
    const out: string[] = [];
    for (const k of keys) if (nameOf(k) === name) out.push(k);
    return out;
  }

  /**
   * The tried model a request's `name` means: the only one of that name, or under
   * namespacing the one in `namespace` (an ensemble's own) when there is one. Undefined
   * when none has the name; INVALID_ARG when several do (Triton's FindModelIdentifier).
   */
  #resolve(name: string, namespace?: string): string | undefined {
    if (!this.#opts.namespacing) return this.#models.has(name) ? name : undefined;
    if (namespace && this.#models.has(modelKey(namespace, name))) return modelKey(namespace, name);
    const keys = this.#keysOf(name, this.#models.keys());
    if (keys.length > 1) throw ambiguous(name, keys.length);
    return keys[0];
  }

  /** The model an ensemble step in `namespace` calls: its own namespace's, else the only one of that name (Triton's fuzzy match). */
  #stepKey(namespace: string | undefined, name: string, scan: ReturnType<typeof scanFolders>): string {
    if (!this.#opts.namespacing) return name;
    const own = modelKey(namespace, name);
    if (scan.models.has(own) || this.#models.has(own)) return own;
    const keys = this.#keysOf(name, new Set([...scan.models.keys(), ...this.#models.keys()]));
    return keys.length === 1 ? keys[0]! : own;
  }

  /** Scans the repositories and loads the start-up models; resolves when all have settled. */
  async loadAll(): Promise<void> {
    const scan = this.#scan();
    this.#known = scan.models;
    let keys = [...scan.models.keys()];
    if (this.#opts.controlMode === "explicit") {
      const wanted = this.#opts.startupModels ?? [];
      if (!wanted.includes("*")) keys = [...new Set(wanted.flatMap((n) => this.#keysOfOr(n, scan.models.keys())))];
    }
    await Promise.all(
      keys.map((key) =>
        this.#serialized(key, async () => {
          for (const e of await this.#loadModel(key, undefined, scan)) log.error(e);
        }),
      ),
    );
  }

  /** The keys of `name` among `keys`, or the name alone when there are none (its load then reports it missing). */
  #keysOfOr(name: string, keys: Iterable<string>): string[] {
    const found = this.#keysOf(name, keys);
    return found.length > 0 ? found : [name];
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
    const scan = this.#scan();
    const files = override?.files !== undefined && Object.keys(override.files).length > 0;
    // With file overrides the model is built from them alone, whatever the repositories hold.
    const keys = files ? [name] : this.#keysOfOr(name, scan.models.keys());
    const errors = await Promise.all(keys.map((key) => this.#serialized(key, () => this.#loadModel(key, override, scan))));
    if (errors.flat().length > 0) throw invalidArg(errors.flat().join("; "));
  }

  /** The repository extension's unload: drains and frees every version of `name` (of every namespace). */
  async unloadModel(name: string): Promise<void> {
    const keys = this.#keysOfOr(name, new Set([...this.#models.keys(), ...this.#known.keys()]));
    await Promise.all(
      keys.map((key) =>
        this.#serialized(key, async () => {
          const entry = this.#models.get(key);
          if (!entry) {
            if (this.#known.has(key)) return;
            throw invalidArg(`failed to unload '${name}': model not found in any model repository`);
          }
          await Promise.all([...entry.versions.values()].map((v) => v.unload()));
          delete entry.failure;
          log.info(`successfully unloaded '${name}'${entry.location.namespace ? ` (namespace '${entry.location.namespace}')` : ""}`);
        }),
      ),
    );
  }

  /** Loaded ensembles with a step that calls `name` (for unload_dependents). */
  dependentsOf(name: string): string[] {
    const out = new Set<string>();
    for (const [key, entry] of this.#models) {
      const uses = [...entry.versions.values()].some((v) => v.ready && isEnsemble(v.config) && ensembleSteps(v.config).some((s) => s.model_name === name));
      if (uses) out.add(nameOf(key));
    }
    return [...out];
  }

  /**
   * Poll mode: refreshes and rescans the repositories; new and changed models are
   * (re)loaded, removed ones unloaded. Unchanged versions keep serving untouched.
   */
  async poll(): Promise<void> {
    await this.#opts.refresh?.();
    const scan = this.#scan();
    const removed = [...this.#models.keys()].filter((n) => !scan.models.has(n));
    this.#known = scan.models;
    await Promise.all([
      ...[...scan.models.keys()].map((key) =>
        this.#serialized(key, async () => {
          for (const e of await this.#loadModel(key, undefined, scan)) log.error(e);
        }),
      ),
      ...removed.map((key) =>
        this.#serialized(key, async () => {
          const entry = this.#models.get(key);
          if (!entry) return;
          this.#models.delete(key);
          await Promise.all([...entry.versions.values()].map((v) => v.unload()));
          log.info(`successfully unloaded '${nameOf(key)}' (removed from the repository)`);
        }),
      ),
    ]);
  }

  /** True when every model that was tried has all its versions READY (explicitly unloaded ones aside). */
  allReady(): boolean {
    for (const entry of this.#models.values()) {
      if (entry.failure) return false;
      for (const v of entry.versions.values()) if (!v.ready && !v.unloaded) return false;
    }
    return true;
  }

  /** Failures, for startup's --exit-on-error check. */
  failures(): string[] {
    const out: string[] = [];
    for (const [key, entry] of this.#models) {
      const name = nameOf(key);
      if (entry.failure) out.push(`${name}: ${entry.failure}`);
      for (const v of entry.versions.values()) if (v.state === "UNAVAILABLE" && !v.unloaded) out.push(`${name} version ${v.version}: ${v.reason}`);
    }
    return out;
  }

  /**
   * The version to serve: the named one, or the highest READY version.
   * Throws NOT_FOUND for unknown models and versions, UNAVAILABLE for ones not ready.
   */
  /** The model control mode (`--model-control-mode`); only explicit allows load and unload requests. */
  get controlMode(): "none" | "poll" | "explicit" {
    return this.#opts.controlMode ?? "none";
  }

  /** `namespace`: an ensemble step's own namespace, preferred under --model-namespacing. */
  getModel(name: string, version?: string, namespace?: string): ModelVersion {
    const key = this.#resolve(name, namespace);
    const entry = key === undefined ? undefined : this.#models.get(key);
    if (!entry) throw notFound(`Request for unknown model: '${name}' is not found`);
    if (version) {
      if (!/^[0-9]+$/.test(version)) throw invalidArg(`Request for unknown model: '${name}' version '${version}' is not a valid version`);
      const mv = entry.versions.get(Number(version));
      if (!mv) {
        if (entry.failure) throw unavailable(`Request for unknown model: '${name}' is not available: ${entry.failure}`);
        throw notFound(`Request for unknown model: '${name}' version ${version} is not found`);
      }
      if (!mv.ready) {
        throw unavailable(`Request for unknown model: '${name}' version ${version} is not at ready state${mv.reason ? `: ${mv.reason}` : ""}`);
      }
      return mv;
    }
    let best: ModelVersion | undefined;
    for (const mv of entry.versions.values()) if (mv.ready && (!best || mv.version > best.version)) best = mv;
    if (!best) {
      const reason = entry.failure ?? [...entry.versions.values()].map((v) => v.reason).find((r) => r);
      throw unavailable(`Request for unknown model: '${name}' has no available versions${reason ? `: ${reason}` : ""}`);
    }
    return best;
  }

  /** Ready versions of a model, ascending. */
  readyVersions(name: string): ModelVersion[] {
    const key = this.#resolve(name);
    return key === undefined ? [] : this.#ready(key);
  }

  #ready(key: string): ModelVersion[] {
    const entry = this.#models.get(key);
    return entry ? [...entry.versions.values()].filter((v) => v.ready).sort((a, b) => a.version - b.version) : [];
  }

  /** Every model version the manager serves or holds as failed, for statistics. */
  allVersions(): ModelVersion[] {
    return [...this.#models.values()].flatMap((e) => [...e.versions.values()]);
  }

  /**
   * The repository index extension's entries. The repositories are read again each time,
   * as Triton's RepositoryIndex reads their folders (P-17): in explicit mode a model
   * folder added after the start is listed before anything loads it.
   */
  index(readyOnly = false): IndexEntry[] {
    const out: IndexEntry[] = [];
    const keys = new Set([...this.#listed().keys(), ...this.#models.keys(), ...this.#loading.keys()]);
    const byName = (a: string, b: string) => (nameOf(a) < nameOf(b) ? -1 : nameOf(a) > nameOf(b) ? 1 : a < b ? -1 : a > b ? 1 : 0);
    for (const key of [...keys].sort(byName)) {
      const name = nameOf(key);
      const entry = this.#models.get(key);
      const served = entry ? [...entry.versions.values()] : [];
      const loading = (this.#loading.get(key) ?? []).filter((l) => !entry?.versions.get(l.version)?.ready);
      const shown = [...served.filter((v) => !loading.some((l) => l.version === v.version)), ...loading];
      if (shown.length === 0) {
        if (entry?.failure) {
          if (!readyOnly) out.push({ name, state: "UNAVAILABLE", reason: entry.failure });
        } else if (!readyOnly) {
          out.push({ name });
        }
        continue;
      }
      for (const mv of shown.sort((a, b) => a.version - b.version)) {
        if (readyOnly && !mv.ready) continue;
        const e: IndexEntry = { name, version: String(mv.version), state: mv.state };
        if (mv.reason) e.reason = mv.reason;
        out.push(e);
      }
    }
    return out;
  }

  /** Unloads everything, waiting for in-flight work to drain. */
  async unloadAll(): Promise<void> {
    await Promise.all([...this.allVersions().map((v) => v.unload()), ...this.#retiring]);
    for (const entry of this.#models.values()) if (entry.overrideDir) removeOverrideFiles(entry.overrideDir);
  }

  #serialized<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.#locks.get(name) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const tail = run.catch(() => {});
    this.#locks.set(name, tail);
    void tail.then(() => {
      if (this.#locks.get(name) === tail) this.#locks.delete(name);
    });
    return run;
  }

  /** One version's load in a load slot, tried again up to --model-load-retry-count times while it fails (Triton's ModelLifeCycle). */
  async #loadVersion(mv: ModelVersion, resolved: ResolvedModel, context: Parameters<ModelLoader["loadVersion"]>[2]): Promise<void> {
    const retries = this.#opts.loadRetryCount ?? 0;
    await this.#slots.run(async () => {
      for (let attempt = 0; ; attempt++) {
        await this.#loader.loadVersion(mv, resolved, context);
        if (mv.ready || attempt >= retries) return;
        log.info(`retrying the load of '${mv.name}' version ${mv.version} (${attempt + 1} of ${retries}) after: ${mv.reason}`);
      }
    });
  }

  /**
   * Explicit mode: an ensemble's load loads its composing models that have no ready
   * version first, as Triton's dependency graph does (nested ensembles too). Returns
   * Triton's reason when a step model cannot be served, else undefined.
   */
  async #loadComposingModels(
    key: string,
    namespace: string | undefined,
    config: ModelConfig,
    scan: ReturnType<typeof scanFolders>,
    chain: readonly string[],
  ): Promise<string | undefined> {
    if (this.controlMode !== "explicit" || !isEnsemble(config)) return undefined;
    const name = nameOf(key);
    for (const step of ensembleSteps(config)) {
      const model = step.model_name ?? "";
      const stepKey = this.#stepKey(namespace, model, scan);
      if (!model || chain.includes(stepKey) || stepKey === key) continue;
      if (this.#ready(stepKey).length === 0) {
        const errors = await this.#serialized(stepKey, () => this.#loadModel(stepKey, undefined, scan, [...chain, key]));
        if (this.#ready(stepKey).length === 0) {
          const why = errors.length > 0 ? ` Model '${model}' loading failed with error: ${errors.join("; ")}` : "";
          return `ensemble '${name}' depends on '${model}' which has no loaded version.${why}`;
        }
      }
      const required = Number(step.model_version ?? -1);
      if (required !== -1 && !this.#ready(stepKey).some((v) => v.version === required)) {
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
  async #decoupling(
    key: string,
    namespace: string | undefined,
    config: ModelConfig,
    scan: ReturnType<typeof scanFolders>,
    chain: readonly string[],
  ): Promise<string | undefined> {
    if (!isEnsemble(config)) return undefined;
    const decoupled = new Set<string>();
    for (const step of ensembleSteps(config)) {
      const model = step.model_name ?? "";
      const stepKey = this.#stepKey(namespace, model, scan);
      if (!model || stepKey === key || chain.includes(stepKey)) continue;
      await this.#settled(stepKey, key);
      const ready = this.#ready(stepKey);
      const required = Number(step.model_version ?? -1);
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
    const pending = this.#locks.get(target);
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

  /**
   * Loads `name` beside whatever serves it now and swaps when the new versions have
   * settled: a version whose files and config are unchanged keeps serving as it is; a
   * version that fails to reload keeps its old instance. Returns the errors.
   */
  async #loadModel(key: string, override?: LoadOverride, scan = this.#scan(), chain: readonly string[] = []): Promise<string[]> {
    this.#known = scan.models;
    const name = nameOf(key);
    const old = this.#models.get(key);
    const dup = scan.duplicates.get(key);
    if (dup) {
      const failure = `model '${name}' appears in multiple repositories: ${dup.join(", ")}`;
      if (!old) this.#models.set(key, { location: { name, dir: "", repository: "" }, versions: new Map(), failure });
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
      if (!hasReady) this.#models.set(key, { location, versions: old?.versions ?? new Map(), failure });
      return [`failed to load '${name}': ${failure}${hasReady ? " (the loaded versions keep serving)" : ""}`];
    }
    const { config } = resolved;
    const missing =
      (await this.#loadComposingModels(key, location.namespace, config, scan, chain)) ?? (await this.#decoupling(key, location.namespace, config, scan, chain));
    if (missing) {
      if (overrideDir && overrideDir !== old?.overrideDir) removeOverrideFiles(overrideDir);
      if (!hasReady) this.#models.set(key, { location, versions: old?.versions ?? new Map(), failure: missing });
      return [`failed to load '${name}': ${missing}${hasReady ? " (the loaded versions keep serving)" : ""}`];
    }
    const available = listVersions(location.dir);
    const selected = selectVersions(available, config.version_policy);
    if (selected.length === 0) {
      const failure = `at least one version must be available under the version policy of model '${name}'`;
      if (!hasReady) this.#models.set(key, { location, versions: new Map(), failure });
      return [`failed to load '${name}': ${failure}`];
    }

    const configKey = JSON.stringify(config);
    const versions = new Map<number, ModelVersion>();
    const fresh: ModelVersion[] = [];
    for (const v of selected) {
      const prev = old?.versions.get(v);
      const fp = fingerprint(join(location.dir, String(v)));
      if (prev?.ready && prev.configKey === configKey && prev.fingerprint === fp && prev.modelDir === location.dir) {
        versions.set(v, prev);
        continue;
      }
      const mv = new ModelVersion(name, v, location.dir, config, location.namespace);
      mv.configKey = configKey;
      mv.fingerprint = fp;
      fresh.push(mv);
    }
    this.#loading.set(key, fresh);
    const knows = this.#opts.namespacing
      ? (m: string) => this.#keysOf(m, this.#known.keys()).length > 0 || this.#keysOf(m, this.#models.keys()).length > 0
      : (m: string) => this.#known.has(m) || this.#models.has(m);
    await Promise.all(fresh.map((mv) => this.#loadVersion(mv, resolved, { runner: this.#runner, streamRunner: this.#streamRunner, knows })));
    this.#loading.delete(key);

    const errors: string[] = [];
    for (const mv of fresh) {
      const prev = old?.versions.get(mv.version);
      if (!mv.ready) {
        errors.push(`failed to load '${name}' version ${mv.version}: ${mv.reason}`);
        if (prev?.ready) {
          versions.set(mv.version, prev); // a failed reload keeps the old version serving
          continue;
        }
      }
      versions.set(mv.version, mv);
    }
    for (const v of missingSpecificVersions(available, config.version_policy)) {
      const mv = new ModelVersion(name, v, location.dir, config, location.namespace);
      mv.transition("UNAVAILABLE", `version ${v} of model '${name}' is not in the model repository`);
      versions.set(v, mv);
    }
    // Retire what is no longer served: in-flight requests finish on it first.
    const kept = new Set(versions.values());
    const retired = old ? [...old.versions.values()].filter((v) => !kept.has(v)) : [];
    // A served version the policy no longer selects stays listed, UNAVAILABLE "unloaded"
    // once drained, as Triton's ModelLifeCycle keeps it (one that had failed goes: its
    // failure no longer holds the server's readiness back).
    for (const v of old?.versions.values() ?? []) if (!versions.has(v.version) && (v.ready || v.unloaded)) versions.set(v.version, v);
    this.#models.set(key, { location, versions, ...(overrideDir ? { overrideDir } : {}) });
    const oldDir = old?.overrideDir !== overrideDir ? old?.overrideDir : undefined;
    if (retired.length > 0 || oldDir) {
      const done = Promise.all(retired.map((v) => v.unload())).then(() => {
        if (oldDir) removeOverrideFiles(oldDir);
      });
      this.#retiring.add(done);
      void done.finally(() => this.#retiring.delete(done));
    }
    return errors;
  }
}
