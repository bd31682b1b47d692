/**
 * @module The model loader: everything it takes to turn a model folder into a served
 * model version. Config resolution (config.pbtxt or a load's override → backend choice →
 * auto-complete from the model file → normalize → validate), GPU probing, backend
 * instances, warmup, and the scheduler over them. The repository manager decides what
 * to load and when, and swaps the results in.
 */
import { existsSync } from "node:fs";
import { basename, join, relative } from "node:path";
import { ServerError, unsupported, invalidArg } from "../core/errors.ts";
import { getLogger } from "../core/logger.ts";
import { listVersions, configPath, type ModelLocation } from "./layout.ts";
import { warmUp } from "./warmup.ts";
import { checkOverrideBackend } from "./override-files.ts";
import { clientReason } from "./load-reason.ts";
import { MAX_CONFIG_BYTES, readLabelFiles, readRepositoryText } from "./text-file.ts";
import { parsePbtxt } from "../model-config/pbtxt.ts";
import { validateModelConfig, validateConfigFileNames } from "../model-config/validate.ts";
import { normalizeModelConfig, autoCompleteConfig, isEnsemble } from "../model-config/normalize.ts";
import { createScheduler, type SchedulerHost } from "../scheduler/create.ts";
import type { Limiter, RateLimitClaim } from "../scheduler/rate-limiter.ts";
import { checkEnsembleFlow, ensembleSteps } from "../scheduler/ensemble-scheduler.ts";
import type { ModelRunner } from "../core/runner.ts";
import { CudaDriver } from "../../ffi/cuda/driver.ts";
import type { ModelVersion } from "./model-version.ts";
import { modelFileIn, type BackendRegistry } from "../backends/registry.ts";
import type { Backend, BackendInstance, BackendModel } from "../backends/backend.ts";
import type { ModelConfig } from "../core/model-config-types.ts";

const log = getLogger("src/repository/loader.ts");

/**
 * Repository agents (`model_repository_agents`) are not run here: each one a config names
 * gets a warning, and the model's files load as they are (Triton would run the agent, or
 * fail the load when it has no such agent).
 */
function warnRepositoryAgents(config: ModelConfig, name: string): void {
  const agents = (config.model_repository_agents as { agents?: unknown } | undefined)?.agents;
  for (const agent of Array.isArray(agents) ? agents : agents === undefined ? [] : [agents]) {
    const agentName = String((agent as { name?: unknown } | null)?.name ?? "");
    log.warn(`model '${name}': repository agent '${agentName}' is not supported and is ignored; the model's files load unchanged`);
  }
}

export interface LoaderOptions {
  modelConfigName: string;
  disableAutoCompleteConfig: boolean;
  backendConfig: Record<string, Record<string, string>>;
  /** GPUs visible to the server; 0 on CPU-only hosts. */
  gpuCount: number;
  /** `--rate-limit=execution_count`: instances run when their rate_limiter resources are free (the limiter on this thread or the scheduling thread's). */
  rateLimiter?: Limiter;
  /** While frontend worker threads run: the scheduling thread, where dynamically batched ONNX Runtime versions batch (#30). */
  batchThread?: SchedulerHost;
  /** `--allow-model-code-overrides`: a load's file overrides may be run as code. */
  allowModelCodeOverrides?: boolean;
  /**
   * How long an unload waits for executions to finish before it aborts those of instances
   * that can be aborted (TypeScript models); the CLI passes --exit-timeout-secs. Default 30 s.
   */
  unloadAbortMs?: number;
}

/**
 * `instance`, running each batch only while the rate limiter has given it `claim`'s
 * resources. Where the limiter runs on the scheduling thread (the claim has a number
 * there), an instance that thread can run is offered to it with the claim (shareLimited),
 * so that its version is scheduled there and takes its turns there.
 */
function rateLimited(instance: BackendInstance, limiter: Limiter, claim: RateLimitClaim): BackendInstance {
  const held = async <T>(run: () => Promise<T>): Promise<T> => {
    await limiter.acquire(claim);
    try {
      return await run();
    } finally {
      limiter.release(claim);
    }
  };
  return {
    name: instance.name,
    execute: (inputs, names) => held(() => instance.execute(inputs, names)),
    ...(instance.executeRequests
      ? { executeRequests: (requests: Parameters<NonNullable<BackendInstance["executeRequests"]>>[0]) => held(() => instance.executeRequests!(requests)) }
      : {}),
    ...(instance.abort ? { abort: (error: ServerError) => instance.abort!(error) } : {}),
    ...(instance.share && claim.id !== undefined ? { shareLimited: () => ({ ...instance.share!(), claim: claim.id }) } : {}),
    close: () => {
      limiter.unregister?.(claim);
      instance.close();
    },
  };
}

/** A model's validated config and the backend that runs it; no backend for an ensemble. */
export interface ResolvedModel {
  config: ModelConfig;
  backend: Backend | undefined;
}

/** What loading a version needs from the repository around it. */
export interface LoadContext {
  /** The server's inference entry, for an ensemble's steps and a model's BLS calls. */
  runner: ModelRunner;
  /** Whether a model is in a repository or loaded: an ensemble's step models must be. */
  knows(name: string): boolean;
}

export class ModelLoader {
  readonly #opts: LoaderOptions;
  readonly #backends: BackendRegistry;

  constructor(opts: LoaderOptions, backends: BackendRegistry) {
    this.#opts = opts;
    this.#backends = backends;
  }

  /** The model's config, from its folder or a load's override, completed, normalized and validated; throws when unusable. */
  async resolveConfig(location: ModelLocation, override?: ModelConfig): Promise<ResolvedModel> {
    const { name, dir } = location;
    const cfgFile = override ? undefined : configPath(dir, this.#opts.modelConfigName);
    let config: ModelConfig = override ? structuredClone(override) : {};
    if (cfgFile) {
      const text = readRepositoryText(cfgFile, `${relative(dir, cfgFile)} of model '${name}'`, MAX_CONFIG_BYTES);
      try {
        config = parsePbtxt(text);
      } catch (err) {
        throw invalidArg(`failed to parse ${cfgFile}: ${ServerError.from(err).message}`, err);
      }
    } else if (!override && this.#opts.disableAutoCompleteConfig) {
      throw invalidArg(`model '${name}' has no config.pbtxt and auto-complete is disabled (--disable-auto-complete-config)`);
    }
    validateConfigFileNames(config, name);
    warnRepositoryAgents(config, name);
    const versions = listVersions(dir);
    const latestDir = versions.length > 0 ? join(dir, String(versions[versions.length - 1])) : undefined;
    if (isEnsemble(config)) {
      // Ensembles have no backend: their steps call other models.
      config = validateModelConfig(normalizeModelConfig(config, { modelName: name, gpuCount: this.#opts.gpuCount }), name);
      checkEnsembleFlow(config);
      return { config, backend: undefined };
    }
    const backend = this.#backends.resolve(config, latestDir);
    if (!backend) {
      const what = config.backend ? `backend '${config.backend}'` : config.platform ? `platform '${config.platform}'` : undefined;
      throw what
        ? unsupported(`model '${name}': ${what} is not supported by this server`)
        : invalidArg(
            `unable to determine the backend of model '${name}': set 'backend' or 'platform' in config.pbtxt, or put a model file (e.g. model.onnx) in a version folder`,
          );
    }
    // Before auto-complete, which may already import the model file.
    if (location.clientFiles) checkOverrideBackend(name, backend.name, this.#opts.allowModelCodeOverrides === true);
    config.backend ||= backend.name;
    if (!config.platform && backend.platform) config.platform = backend.platform;
    // As Triton's server side fills it for its known backends (AutoCompleteBackendFields),
    // whether or not auto-complete is on: model.onnx, model.plan, model.xml; here also
    // the TypeScript model's file (model.ts or model.js, whichever the version holds).
    config.default_model_filename ||= latestDir ? basename(modelFileIn(latestDir, config, backend)) : backend.defaultModelFilename;

    const backendConfig = this.#backendConfig(backend.name);
    if (!this.#opts.disableAutoCompleteConfig && backend.autoComplete && latestDir) {
      const file = modelFileIn(latestDir, config, backend);
      if (!existsSync(file)) throw invalidArg(`unable to find '${file}' for model '${name}'`);
      config = await backend.autoComplete(config, file);
    }
    if (!this.#opts.disableAutoCompleteConfig && backend.describe && latestDir && needsAutoComplete(config)) {
      const file = modelFileIn(latestDir, config, backend);
      if (!existsSync(file)) throw invalidArg(`unable to find '${file}' for model '${name}'`);
      const io = await backend.describe(file, backendConfig);
      const defaultMaxBatchSize = Number(backendConfig["default-max-batch-size"] ?? 4);
      config = autoCompleteConfig(config, io, { defaultMaxBatchSize });
    }
    // KIND_AUTO resolves against the configured GPU count (CPU for onnxruntime, whose
    // embedded build has no CUDA), except for a GPU-only backend: the CUDA driver's count.
    const gpuCount = backend.gpuOnly ? this.#gpus().count : this.#opts.gpuCount;
    config = normalizeModelConfig(config, { modelName: name, gpuCount });
    config = validateModelConfig(config, name);
    return { config, backend };
  }

  /**
   * Loads one version: backend model, instances, warmup and scheduler, then READY; or
   * UNAVAILABLE with the reason, everything it made closed again. Never throws.
   */
  async loadVersion(mv: ModelVersion, { config, backend }: ResolvedModel, ctx: LoadContext): Promise<void> {
    const { name, version } = mv;
    log.info(`loading: ${name}:${version}`);
    mv.transition("LOADING");
    const started = performance.now();
    const instances: BackendInstance[] = [];
    let backendModel: BackendModel | undefined;
    try {
      if (backend) {
        mv.labels = readLabelFiles(mv.modelDir, config);
        backendModel = await this.#instantiate(mv, config, backend, instances, ctx.runner);
      } else {
        // An ensemble has no instances: its steps call other models, which must exist.
        const missing = ensembleSteps(config)
          .map((s) => s.model_name!)
          .filter((m) => !ctx.knows(m));
        if (missing.length > 0)
          throw invalidArg(`ensemble '${name}': step model(s) ${[...new Set(missing)].map((m) => `'${m}'`).join(", ")} not in any model repository`);
        mv.labels = readLabelFiles(mv.modelDir, config);
      }
      mv.attach(backendModel, instances, createScheduler(mv, instances, ctx.runner, this.#opts.batchThread), this.#opts.unloadAbortMs);
      mv.transition("READY");
      if (backend) {
        mv.loadDurationSecs = (performance.now() - started) / 1000;
        log.info(`successfully loaded '${name}' version ${version} in ${Math.round(performance.now() - started)} ms`);
      } else {
        log.info(`successfully loaded '${name}' version ${version}`);
      }
    } catch (err) {
      for (const inst of instances) inst.close();
      backendModel?.close();
      // The log has the whole message; clients see it without stack and server paths.
      const message = ServerError.from(err).message;
      mv.transition("UNAVAILABLE", clientReason(message, mv.modelDir, name));
      log.error(`failed to load '${name}' version ${version}: ${message}`);
    }
  }

  /** Loads the backend model and creates its instances into `instances` (the caller closes them on failure), then warms them up. */
  async #instantiate(mv: ModelVersion, config: ModelConfig, backend: Backend, instances: BackendInstance[], runner: ModelRunner): Promise<BackendModel> {
    const { name, version, modelDir: dir } = mv;
    const modelPath = modelFileIn(join(dir, String(version)), config, backend);
    if (!existsSync(modelPath)) throw invalidArg(`unable to find '${modelPath}' for model '${name}'`);
    const backendModel = await backend.load({
      config,
      modelName: name,
      version,
      modelDir: dir,
      modelPath,
      backendConfig: this.#backendConfig(backend.name),
      unavailable: (reason) => mv.fail(reason),
      runner,
    });
    try {
      const planned: { group: NonNullable<ModelConfig["instance_group"]>[number]; kind: "KIND_CPU" | "KIND_GPU" | "KIND_MODEL"; device: number }[] = [];
      for (const group of config.instance_group ?? []) {
        const kind = group.kind ?? "KIND_CPU";
        if (kind === "KIND_AUTO") throw invalidArg(`instance group '${group.name}' of model '${name}' was not normalized`);
        let devices = [0];
        if (kind === "KIND_GPU") {
          // A backend with its own GPUs (OpenVINO's GPU plugin) checks the device itself.
          const gpus = backend.gpus === "own" ? { count: 1 } : this.#gpus();
          if (gpus.count === 0) {
            throw invalidArg(
              `instance group '${group.name}' of model '${name}' specifies KIND_GPU, but no GPU is available on this host${gpus.reason ? ` (${gpus.reason})` : ""}`,
            );
          }
          devices = group.gpus?.length ? group.gpus : Array.from({ length: gpus.count }, (_, i) => i);
        }
        for (const device of devices) for (let i = 0; i < (group.count ?? 1); i++) planned.push({ group, kind, device });
      }
      // Instances are created at once, as Triton's do (ONNX Runtime builds each session on
      // a thread of its own); they keep the order of the config, and every one created is
      // handed to the caller, which closes them if another failed.
      const created = await Promise.allSettled(planned.map((p, i) => backendModel.createInstance(`${p.group.name}_${i}`, p.kind, p.device)));
      const limiter = this.#opts.rateLimiter;
      created.forEach((r, i) => {
        if (r.status !== "fulfilled") return;
        const { group, device } = planned[i]!;
        instances.push(
          limiter && group.rate_limiter?.resources?.length ? rateLimited(r.value, limiter, limiter.register(name, group.rate_limiter, device)) : r.value,
        );
      });
      const failed = created.find((r): r is PromiseRejectedResult => r.status === "rejected");
      if (failed) throw failed.reason;
      if (instances.length === 0) throw invalidArg(`model '${name}' has no instances`);
      if (config.model_warmup?.length) {
        log.info(`warming up '${name}' version ${version} (${config.model_warmup.length} sample(s) on ${instances.length} instance(s))`);
        await warmUp(config.model_warmup, mv.signature, dir, instances);
      }
    } catch (err) {
      for (const inst of instances.splice(0)) inst.close();
      backendModel.close();
      throw err;
    }
    return backendModel;
  }

  /** The configured GPU count when set, else what the CUDA driver sees (0 with the reason without one). */
  #gpus(): { count: number; reason?: string } {
    return this.#opts.gpuCount > 0 ? { count: this.#opts.gpuCount } : CudaDriver.probeDevices();
  }

  #backendConfig(backend: string): Record<string, string> {
    return { ...this.#opts.backendConfig[""], ...this.#opts.backendConfig[backend] };
  }
}

function needsAutoComplete(config: ModelConfig): boolean {
  if (!config.input?.length || !config.output?.length) return true;
  return [...config.input, ...config.output].some((t) => !t.data_type || !t.dims);
}
