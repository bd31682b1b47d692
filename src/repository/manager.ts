/**
 * @module ModelRepositoryManager: reads the repositories, turns each model folder into a
 * validated config and loaded versions, answers lookups by name and version, and lists
 * the repository index. Control mode `none`: everything is loaded at start.
 */
import { readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { ServerError, notFound, unavailable, unsupported, invalidArg } from "../core/errors.ts";
import { ModelVersion, type ModelState } from "../core/model.ts";
import { getLogger } from "../core/logger.ts";
import { scanRepositories, listVersions, configPath, type ModelLocation } from "./layout.ts";
import { selectVersions, missingSpecificVersions } from "./version-policy.ts";
import { parsePbtxt } from "../model-config/pbtxt.ts";
import { validateModelConfig } from "../model-config/validate.ts";
import { normalizeModelConfig, autoCompleteConfig } from "../model-config/normalize.ts";
import { createScheduler } from "../scheduler/create.ts";
import type { BackendRegistry } from "../backends/registry.ts";
import type { Backend, BackendInstance } from "../backends/backend.ts";
import type { ModelConfig } from "../model-config/types.ts";

const log = getLogger("model_repository_manager.ts");

export interface RepositoryOptions {
  repositories: string[];
  modelConfigName: string;
  disableAutoCompleteConfig: boolean;
  backendConfig: Record<string, Record<string, string>>;
  /** GPUs visible to the server; 0 on CPU-only hosts. */
  gpuCount: number;
}

export interface IndexEntry {
  name: string;
  version?: string;
  state?: ModelState;
  reason?: string;
}

interface ModelEntry {
  location: ModelLocation;
  versions: Map<number, ModelVersion>;
  /** Why the model as a whole could not load (config or backend problems). */
  failure?: string;
}

export class ModelRepositoryManager {
  readonly #opts: RepositoryOptions;
  readonly #backends: BackendRegistry;
  readonly #models = new Map<string, ModelEntry>();
  #known = new Map<string, ModelLocation>();

  constructor(opts: RepositoryOptions, backends: BackendRegistry) {
    this.#opts = opts;
    this.#backends = backends;
  }

  /** Scans the repositories and loads every model; resolves when all have settled. */
  async loadAll(): Promise<void> {
    const scan = scanRepositories(this.#opts.repositories);
    this.#known = scan.models;
    const loads: Promise<void>[] = [];
    for (const [name, location] of scan.models) {
      const dup = scan.duplicates.get(name);
      if (dup) {
        const entry: ModelEntry = { location, versions: new Map(), failure: `model '${name}' appears in multiple repositories: ${dup.join(", ")}` };
        this.#models.set(name, entry);
        log.error(`failed to load '${name}': ${entry.failure}`);
        continue;
      }
      loads.push(this.#load(location));
    }
    await Promise.all(loads);
  }

  /** True when every model that was tried has all its versions READY. */
  allReady(): boolean {
    for (const entry of this.#models.values()) {
      if (entry.failure) return false;
      for (const v of entry.versions.values()) if (!v.ready) return false;
    }
    return true;
  }

  /** Failures, for startup's --exit-on-error check. */
  failures(): string[] {
    const out: string[] = [];
    for (const [name, entry] of this.#models) {
      if (entry.failure) out.push(`${name}: ${entry.failure}`);
      for (const v of entry.versions.values()) if (v.state === "UNAVAILABLE") out.push(`${name} version ${v.version}: ${v.reason}`);
    }
    return out;
  }

  /**
   * The version to serve: the named one, or the highest READY version.
   * Throws NOT_FOUND for unknown models and versions, UNAVAILABLE for ones not ready.
   */
  getModel(name: string, version?: string): ModelVersion {
    const entry = this.#models.get(name);
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
    const entry = this.#models.get(name);
    return entry ? [...entry.versions.values()].filter((v) => v.ready).sort((a, b) => a.version - b.version) : [];
  }

  /** Every model version the manager holds, for statistics. */
  allVersions(): ModelVersion[] {
    return [...this.#models.values()].flatMap((e) => [...e.versions.values()]);
  }

  /** The repository index extension's entries. */
  index(readyOnly = false): IndexEntry[] {
    const out: IndexEntry[] = [];
    const names = new Set([...this.#known.keys(), ...this.#models.keys()]);
    for (const name of [...names].sort()) {
      const entry = this.#models.get(name);
      if (!entry) {
        if (!readyOnly) out.push({ name });
        continue;
      }
      if (entry.failure && entry.versions.size === 0) {
        if (!readyOnly) out.push({ name, state: "UNAVAILABLE", reason: entry.failure });
        continue;
      }
      for (const mv of [...entry.versions.values()].sort((a, b) => a.version - b.version)) {
        if (readyOnly && !mv.ready) continue;
        const e: IndexEntry = { name, version: String(mv.version), state: mv.state };
        if (mv.reason) e.reason = mv.reason;
        out.push(e);
      }
    }
    return out;
  }

  async unloadAll(): Promise<void> {
    await Promise.all(this.allVersions().map((v) => v.unload()));
  }

  async #load(location: ModelLocation): Promise<void> {
    const { name } = location;
    const entry: ModelEntry = { location, versions: new Map() };
    this.#models.set(name, entry);
    let config: ModelConfig;
    let backend: Backend;
    try {
      ({ config, backend } = await this.#resolveConfig(location));
    } catch (err) {
      entry.failure = ServerError.from(err).message;
      log.error(`failed to load '${name}': ${entry.failure}`);
      return;
    }
    const available = listVersions(location.dir);
    const selected = selectVersions(available, config.version_policy);
    if (selected.length === 0) {
      entry.failure = `at least one version must be available under the version policy of model '${name}'`;
      log.error(`failed to load '${name}': ${entry.failure}`);
      return;
    }
    for (const v of missingSpecificVersions(available, config.version_policy)) {
      const mv = new ModelVersion(name, v, location.dir, config);
      mv.transition("UNAVAILABLE", `version ${v} of model '${name}' is not in the model repository`);
      entry.versions.set(v, mv);
    }
    await Promise.all(selected.map((v) => this.#loadVersion(entry, config, backend, v)));
  }

  async #resolveConfig(location: ModelLocation): Promise<{ config: ModelConfig; backend: Backend }> {
    const { name, dir } = location;
    const cfgFile = configPath(dir, this.#opts.modelConfigName);
    let config: ModelConfig = {};
    if (cfgFile) {
      const text = readFileSync(cfgFile, "utf8");
      try {
        config = parsePbtxt(text);
      } catch (err) {
        throw invalidArg(`failed to parse ${cfgFile}: ${ServerError.from(err).message}`, err);
      }
    } else if (this.#opts.disableAutoCompleteConfig) {
      throw invalidArg(`model '${name}' has no config.pbtxt and auto-complete is disabled (--disable-auto-complete-config)`);
    }
    const versions = listVersions(dir);
    const latestDir = versions.length > 0 ? join(dir, String(versions[versions.length - 1])) : undefined;
    const backend = this.#backends.resolve(config, latestDir);
    if (!backend) {
      const what = config.backend ? `backend '${config.backend}'` : config.platform ? `platform '${config.platform}'` : undefined;
      throw what
        ? unsupported(`model '${name}': ${what} is not supported by this server`)
        : invalidArg(`unable to determine the backend of model '${name}': set 'backend' or 'platform' in config.pbtxt, or put a model file (e.g. model.onnx) in a version folder`);
    }
    config.backend ||= backend.name;
    if (!config.platform && backend.platform) config.platform = backend.platform;

    const backendConfig = this.#backendConfig(backend.name);
    if (!this.#opts.disableAutoCompleteConfig && backend.describe && latestDir && needsAutoComplete(config)) {
      const file = join(latestDir, config.default_model_filename || backend.defaultModelFilename);
      if (!existsSync(file)) throw invalidArg(`unable to find '${file}' for model '${name}'`);
      const io = await backend.describe(file, backendConfig);
      const defaultMaxBatchSize = Number(backendConfig["default-max-batch-size"] ?? 4);
      config = autoCompleteConfig(config, io, { defaultMaxBatchSize });
    }
    config = normalizeModelConfig(config, { modelName: name, gpuCount: this.#opts.gpuCount });
    config = validateModelConfig(config, name);
    return { config, backend };
  }

  #backendConfig(backend: string): Record<string, string> {
    return { ...this.#opts.backendConfig[""], ...this.#opts.backendConfig[backend] };
  }

  async #loadVersion(entry: ModelEntry, config: ModelConfig, backend: Backend, version: number): Promise<void> {
    const { name, dir } = entry.location;
    const mv = new ModelVersion(name, version, dir, config);
    entry.versions.set(version, mv);
    mv.transition("LOADING");
    const started = performance.now();
    const instances: BackendInstance[] = [];
    let backendModel;
    try {
      const modelPath = join(dir, String(version), config.default_model_filename || backend.defaultModelFilename);
      if (!existsSync(modelPath)) throw invalidArg(`unable to find '${modelPath}' for model '${name}'`);
      backendModel = await backend.load({
        config,
        modelName: name,
        version,
        modelDir: dir,
        modelPath,
        backendConfig: this.#backendConfig(backend.name),
      });
      for (const group of config.instance_group ?? []) {
        const kind = group.kind ?? "KIND_CPU";
        if (kind === "KIND_GPU" && this.#opts.gpuCount === 0) {
          throw invalidArg(`instance group '${group.name}' of model '${name}' specifies KIND_GPU, but no GPU is available on this host`);
        }
        if (kind === "KIND_AUTO") throw invalidArg(`instance group '${group.name}' of model '${name}' was not normalized`);
        const devices = kind === "KIND_GPU" ? (group.gpus ?? [0]) : [0];
        for (const device of devices) {
          for (let i = 0; i < (group.count ?? 1); i++) {
            instances.push(await backendModel.createInstance(`${group.name}_${instances.length}`, kind, device));
          }
        }
      }
      if (instances.length === 0) throw invalidArg(`model '${name}' has no instances`);
      mv.attach(backendModel, instances, createScheduler(mv, instances));
      mv.transition("READY");
      log.info(`successfully loaded '${name}' version ${version} in ${Math.round(performance.now() - started)} ms`);
    } catch (err) {
      for (const inst of instances) inst.close();
      backendModel?.close();
      const reason = ServerError.from(err).message;
      mv.transition("UNAVAILABLE", reason);
      log.error(`failed to load '${name}' version ${version}: ${reason}`);
    }
  }
}

function needsAutoComplete(config: ModelConfig): boolean {
  if (!config.input?.length || !config.output?.length) return true;
  return [...config.input, ...config.output].some((t) => !t.data_type || !t.dims);
}
