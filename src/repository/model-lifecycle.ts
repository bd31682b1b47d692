/**
 * @module The models' lifecycle (Triton's ModelLifeCycle): one model's loads and unloads
 * run one after another (a lock per model), versions load in a bounded pool and are
 * tried again while they fail, and a reload builds its versions beside the served ones
 * and swaps them in only once all have settled; replaced versions drain before they are
 * freed, and shutdown waits for them.
 */
import { join } from "node:path";
import { getLogger } from "../core/logger.ts";
import { ModelVersion } from "./model-version.ts";
import { fileStamp, fingerprint, listVersions, type ModelLocation } from "./layout.ts";
import { labelFiles } from "./text-file.ts";
import { selectVersions, missingSpecificVersions } from "./version-policy.ts";
import { removeOverrideFiles } from "./override-files.ts";
import { nameOf, type ModelIndex, type ModelEntry } from "./model-index.ts";
import type { LoadContext, ModelLoader, ResolvedModel } from "./loader.ts";

const log = getLogger("src/repository/model-lifecycle.ts");

/** At most `limit` tasks at once, the rest waiting in order (Triton's model load thread pool). */
export class LoadSlots {
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

/** A chain per key: the tasks of one key run one after another, whatever each ends in. */
export class KeyedLocks {
  readonly #tails = new Map<string, Promise<unknown>>();

  /** Runs `fn` after the tasks of `key` queued before it have settled. */
  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.#tails.get(key) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const tail = run.catch(() => {});
    this.#tails.set(key, tail);
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    });
    return run;
  }

  /** Settles once every task of `key` queued so far has; undefined when none is queued. */
  pending(key: string): Promise<unknown> | undefined {
    return this.#tails.get(key);
  }
}

/** One model's versions to load: where from, with what config, beside what serves now. */
export interface VersionsLoad {
  key: string;
  location: ModelLocation;
  resolved: ResolvedModel;
  /** What serves the model now; undefined on its first load. */
  old: ModelEntry | undefined;
  /** The folder of a load's file overrides the new versions come from. */
  overrideDir?: string | undefined;
  context: LoadContext;
}

export interface LifecycleOptions {
  /** `--model-load-thread-count`: model versions loading at once (default 4). */
  loadThreadCount?: number;
  /** `--model-load-retry-count`: further tries of a version whose load failed (default 0). */
  loadRetryCount?: number;
}

export class ModelLifecycle {
  readonly #index: ModelIndex;
  readonly #loader: Pick<ModelLoader, "loadVersion">;
  readonly #retries: number;
  readonly #slots: LoadSlots;
  /** Per-model chain: loads and unloads of one model run one after another. */
  readonly #locks = new KeyedLocks();
  /** Unloads of replaced versions still draining; shutdown waits for them. */
  readonly #retiring = new Set<Promise<void>>();

  constructor(index: ModelIndex, loader: Pick<ModelLoader, "loadVersion">, opts: LifecycleOptions = {}) {
    this.#index = index;
    this.#loader = loader;
    this.#retries = opts.loadRetryCount ?? 0;
    this.#slots = new LoadSlots(opts.loadThreadCount ?? 4);
  }

  /** Runs `fn` in `key`'s turn: after the loads and unloads of that model queued before it. */
  serialized<T>(key: string, fn: () => Promise<T>): Promise<T> {
    return this.#locks.run(key, fn);
  }

  /** The loads and unloads of `key` in progress; undefined when none. */
  pending(key: string): Promise<unknown> | undefined {
    return this.#locks.pending(key);
  }

  /** One version's load in a load slot, tried again up to --model-load-retry-count times while it fails (Triton's ModelLifeCycle). */
  async #loadVersion(mv: ModelVersion, resolved: ResolvedModel, context: LoadContext): Promise<void> {
    await this.#slots.run(async () => {
      for (let attempt = 0; ; attempt++) {
        await this.#loader.loadVersion(mv, resolved, context);
        if (mv.ready || attempt >= this.#retries) return;
        log.info(`retrying the load of '${mv.name}' version ${mv.version} (${attempt + 1} of ${this.#retries}) after: ${mv.reason}`);
      }
    });
  }

  /**
   * Loads the versions the config's policy selects beside whatever serves them now and
   * swaps when all have settled: a version whose files and config are unchanged keeps
   * serving as it is; a version that fails to reload keeps its old instance. Returns the
   * errors.
   */
  async load({ key, location, resolved, old, overrideDir, context }: VersionsLoad): Promise<string[]> {
    const name = nameOf(key);
    const { config } = resolved;
    const available = listVersions(location.dir);
    const selected = selectVersions(available, config.version_policy);
    if (selected.length === 0) {
      const failure = `at least one version must be available under the version policy of model '${name}'`;
      if (!old || ![...old.versions.values()].some((v) => v.ready)) this.#index.set(key, { location, versions: new Map(), failure });
      return [`failed to load '${name}': ${failure}`];
    }

    const configKey = JSON.stringify(config);
    const versions = new Map<number, ModelVersion>();
    const fresh: ModelVersion[] = [];
    for (const v of selected) {
      const prev = old?.versions.get(v);
      // The label files, which the load reads, count too: one changed is read again.
      const fp = [fingerprint(join(location.dir, String(v))), ...labelFiles(config).map((f) => fileStamp(join(location.dir, f)))].join("|");
      if (prev?.ready && prev.configKey === configKey && prev.fingerprint === fp && prev.modelDir === location.dir) {
        versions.set(v, prev);
        continue;
      }
      const mv = new ModelVersion(name, v, location.dir, config, location.namespace);
      mv.configKey = configKey;
      mv.fingerprint = fp;
      fresh.push(mv);
    }
    this.#index.loading(key, fresh);
    await Promise.all(fresh.map((mv) => this.#loadVersion(mv, resolved, context)));
    this.#index.loaded(key);

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
    this.#index.set(key, { location, versions, ...(overrideDir ? { overrideDir } : {}) });
    this.#retire(retired, old?.overrideDir !== overrideDir ? old?.overrideDir : undefined);
    return errors;
  }

  /** Unloads `versions` in the background (each drains first), then removes `oldDir`; shutdown waits for both. */
  #retire(versions: ModelVersion[], oldDir: string | undefined): void {
    if (versions.length === 0 && !oldDir) return;
    const done = Promise.all(versions.map((v) => v.unload())).then(() => {
      if (oldDir) removeOverrideFiles(oldDir);
    });
    this.#retiring.add(done);
    void done.finally(() => this.#retiring.delete(done));
  }

  /** Drains and frees every version of `entry`. */
  async unload(entry: ModelEntry): Promise<void> {
    await Promise.all([...entry.versions.values()].map((v) => v.unload()));
  }

  /** Unloads everything, waiting for in-flight work and retiring versions to drain, and removes the override folders. */
  async unloadAll(): Promise<void> {
    await Promise.all([...this.#index.allVersions().map((v) => v.unload()), ...this.#retiring]);
    for (const [, entry] of this.#index.entries()) if (entry.overrideDir) removeOverrideFiles(entry.overrideDir);
  }
}
