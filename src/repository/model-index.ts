/**
 * @module The repository's index of models: what the last scan found, the models tried
 * (served versions, failures), the versions still loading, and the lookups requests
 * make by name and version (Triton's RepositoryIndex and FindModelIdentifier). It holds
 * state and answers questions; what loads when is the lifecycle's and the manager's.
 */
import { notFound, unavailable, invalidArg } from "../core/errors.ts";
import { scanRepositories, modelKey, type ModelLocation, type RepositoryScan } from "./layout.ts";
import { announceServedChange, type ModelVersion, type ModelState } from "./model-version.ts";

/** The model name a key stands for (see modelKey). */
export const nameOf = (key: string): string => key.slice(key.indexOf("\0") + 1);

/** The keys among `keys` that stand for a model called `name`. */
export function keysOf(name: string, keys: Iterable<string>): string[] {
  const out: string[] = [];
  for (const k of keys) if (nameOf(k) === name) out.push(k);
  return out;
}

/** The keys of `name` among `keys`, or the name alone when there are none (its load then reports it missing). */
export function keysOfOr(name: string, keys: Iterable<string>): string[] {
  const found = keysOf(name, keys);
  return found.length > 0 ? found : [name];
}

export interface IndexEntry {
  name: string;
  version?: string;
  state?: ModelState;
  reason?: string;
}

export interface ModelEntry {
  location: ModelLocation;
  /** The versions being served (or the failed ones); replaced as a whole by a reload. */
  versions: Map<number, ModelVersion>;
  /** Why the model as a whole could not load (config or backend problems). */
  failure?: string;
  /** A temporary model folder written from a load's file overrides; removed with the model. */
  overrideDir?: string;
}

/** Where the index finds models: the repository folders and how their names are keyed. */
export interface IndexSource {
  /** The local folders scanned, one per repository. */
  repositories: string[];
  /** What --model-repository named for each of `repositories` where it differs. */
  repositoryNames?: string[];
  /** `--model-namespacing`: keys carry the repository as the namespace. */
  namespacing?: boolean;
}

/** Triton's answer to a name that more than one namespace serves (ModelRepositoryManager::FindModelIdentifier). */
const ambiguous = (name: string, n: number) =>
  invalidArg(`There are ${n} identifiers of model '${name}' in global map, model namespace must be provided to resolve ambiguity.`);

/** Index order: by model name, then by key (namespace). */
const byName = (a: string, b: string) => (nameOf(a) < nameOf(b) ? -1 : nameOf(a) > nameOf(b) ? 1 : a < b ? -1 : a > b ? 1 : 0);

/**
 * The maps are keyed by modelKey(): the model's name, or its namespace and name under
 * --model-namespacing. The lookups take names, as requests carry them.
 */
export class ModelIndex {
  readonly #source: IndexSource;
  /** Every model tried: its served (or failed) versions. */
  readonly #models = new Map<string, ModelEntry>();
  /** The model folders of the last scan. */
  #known = new Map<string, ModelLocation>();
  /** Versions being loaded, shown by the index as LOADING until the reload settles. */
  readonly #loading = new Map<string, ModelVersion[]>();

  constructor(source: IndexSource) {
    this.#source = source;
  }

  get namespacing(): boolean {
    return this.#source.namespacing === true;
  }

  /** Reads the repositories' model folders now (throws when one cannot be read). */
  scan(): RepositoryScan {
    return scanRepositories(this.#source.repositories, this.namespacing, this.#source.repositoryNames);
  }

  /** Takes `scan` as what the repositories hold (for unloads of models never tried, and `knows`). */
  remember(scan: RepositoryScan): void {
    this.#known = scan.models;
  }

  /** The model folders of the last scan remembered. */
  get known(): ReadonlyMap<string, ModelLocation> {
    return this.#known;
  }

  /** The model folders the repositories hold now; the last scan's when one cannot be read (the load reports that). */
  listed(): ReadonlyMap<string, ModelLocation> {
    try {
      return this.scan().models;
    } catch {
      return this.#known;
    }
  }

  entry(key: string): ModelEntry | undefined {
    return this.#models.get(key);
  }

  set(key: string, entry: ModelEntry): void {
    this.#models.set(key, entry);
    announceServedChange();
  }

  delete(key: string): void {
    this.#models.delete(key);
    announceServedChange();
  }

  /** The keys of every model tried. */
  keys(): string[] {
    return [...this.#models.keys()];
  }

  entries(): [string, ModelEntry][] {
    return [...this.#models.entries()];
  }

  /** Shows `versions` as LOADING until loaded(key). */
  loading(key: string, versions: ModelVersion[]): void {
    this.#loading.set(key, versions);
  }

  loaded(key: string): void {
    this.#loading.delete(key);
  }

  /**
   * The tried model a request's `name` means: the only one of that name, or under
   * namespacing the one in `namespace` (an ensemble's own) when there is one. Undefined
   * when none has the name; INVALID_ARG when several do (Triton's FindModelIdentifier).
   */
  resolve(name: string, namespace?: string): string | undefined {
    if (!this.namespacing) return this.#models.has(name) ? name : undefined;
    if (namespace && this.#models.has(modelKey(namespace, name))) return modelKey(namespace, name);
    const keys = keysOf(name, this.#models.keys());
    if (keys.length > 1) throw ambiguous(name, keys.length);
    return keys[0];
  }

  /** The model an ensemble step in `namespace` calls: its own namespace's, else the only one of that name (Triton's fuzzy match). */
  stepKey(namespace: string | undefined, name: string, scan: RepositoryScan): string {
    if (!this.namespacing) return name;
    const own = modelKey(namespace, name);
    if (scan.models.has(own) || this.#models.has(own)) return own;
    const keys = keysOf(name, new Set([...scan.models.keys(), ...this.#models.keys()]));
    return keys.length === 1 ? keys[0]! : own;
  }

  /** Whether a model of that name is in a repository (last scan) or tried: an ensemble's step models must be. */
  knows(name: string): boolean {
    if (!this.namespacing) return this.#known.has(name) || this.#models.has(name);
    return keysOf(name, this.#known.keys()).length > 0 || keysOf(name, this.#models.keys()).length > 0;
  }

  /** The ready versions of the model under `key`, ascending. */
  ready(key: string): ModelVersion[] {
    const entry = this.#models.get(key);
    return entry ? [...entry.versions.values()].filter((v) => v.ready).sort((a, b) => a.version - b.version) : [];
  }

  /**
   * The version to serve: the named one, or the highest READY version. Throws NOT_FOUND
   * for unknown models and versions, UNAVAILABLE for ones not ready. `namespace`: an
   * ensemble step's own namespace, preferred under --model-namespacing.
   */
  getModel(name: string, version?: string, namespace?: string): ModelVersion {
    const key = this.resolve(name, namespace);
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
    const key = this.resolve(name);
    return key === undefined ? [] : this.ready(key);
  }

  /** Every model version served or held as failed, for statistics. */
  allVersions(): ModelVersion[] {
    return [...this.#models.values()].flatMap((e) => [...e.versions.values()]);
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
   * The repository index extension's entries. The repositories are read again each time,
   * as Triton's RepositoryIndex reads their folders (P-17): in explicit mode a model
   * folder added after the start is listed before anything loads it.
   */
  index(readyOnly = false): IndexEntry[] {
    const out: IndexEntry[] = [];
    const keys = new Set([...this.listed().keys(), ...this.#models.keys(), ...this.#loading.keys()]);
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
}
