/**
 * @module Start-up's core (#31): the backends, the repository, the response cache, the
 * trace settings and the InferenceServer, built from the options in one place, with the
 * one model runner (ensembles and BLS) bound to the server; then the repository loaded
 * and, under --model-control-mode=poll, polled.
 */
import { TRITON_PROTOCOL_VERSION, type ServerOptions } from "../options.ts";
import { getLogger } from "../core/logger.ts";
import { LateRunner } from "../core/runner.ts";
import { InferenceServer } from "../server/server.ts";
import { SharedMemoryManager } from "../server/shared-memory.ts";
import { TraceManager } from "../server/trace.ts";
import { BackendRegistry } from "../backends/registry.ts";
import { LAZY_BACKENDS } from "../backends/lazy.ts";
import { OnnxRuntimeBackend } from "../backends/onnxruntime/backend.ts";
import { CUSTOM_METRICS, type CustomMetrics } from "../backends/custom-metrics.ts";
import { ModelRepositoryManager } from "../repository/manager.ts";
import { RateLimiter } from "../scheduler/rate-limiter.ts";
import { BatchThread } from "../server/batch-thread.ts";
import { frontendWorkersRunModels } from "./early-workers.ts";
import { modelSummary } from "../repository/model-summary.ts";
import { RepositoryPoller } from "../repository/poller.ts";
import { RepositorySources } from "../repository/remote-repository.ts";
import { LocalResponseCache } from "../cache/response-cache.ts";
import { SharedResponseCache } from "../cache/shared-cache.ts";
import type { ResponseCache } from "../cache/cache.ts";

const log = getLogger("src/startup/core.ts");

/** Extensions this build serves end to end; server metadata lists exactly these. */
export const EXTENSIONS = [
  "classification",
  "sequence",
  "model_repository",
  "model_repository(unload_dependents)",
  "schedule_policy",
  "model_configuration",
  "system_shared_memory",
  "cuda_shared_memory",
  "logging",
  "binary_tensor_data",
  "parameters",
  "statistics",
  "trace",
] as const;

/** What buildCore() made; close() releases what loading the repository did not (the cache's connection, the object-storage copies). */
export interface Core {
  server: InferenceServer;
  /** The backends' custom metric families (the typescript and python backends share them), for /metrics. */
  customMetrics: CustomMetrics;
  /** The repositories as local folders (object-storage ones copied). */
  sources: RepositorySources;
  /** Re-syncs the object-storage copies; undefined without any. */
  refresh: (() => Promise<boolean>) | undefined;
  close(): Promise<void>;
}

/** The trace extension's settings from --trace-config; a bad one stops the start. */
function traceManager(options: ServerOptions): TraceManager {
  try {
    return new TraceManager(options.traceConfig as never);
  } catch (err) {
    throw new Error(`invalid --trace-config: ${(err as Error).message}`);
  }
}

/**
 * The --cache-config response cache: Redis, local, or none. The Redis client is imported
 * only when a Redis cache is configured: evaluating it took about a quarter of the
 * binary's module start-up (#30).
 */
async function responseCache(options: ServerOptions): Promise<ResponseCache | undefined> {
  if (options.redisCacheConfig) {
    const { RedisResponseCache } = await import("../cache/redis-cache.ts");
    return RedisResponseCache.connect(options.redisCacheConfig);
  }
  const size = options.cacheSizeBytes;
  if (size === undefined) return undefined;
  // One cache for every thread (the frontend workers look up and fill it themselves); a size
  // one shared buffer cannot hold with a quarter more (above about 3.2 GiB) gets a cache of
  // the main thread's own.
  const shared = SharedResponseCache.create(size);
  if (!shared)
    log.warn(`--cache-config local,size=${size}: larger than one shared buffer holds; models with the response cache are answered on the main thread`);
  return shared ?? new LocalResponseCache(size);
}

/** Builds the server on `options`; nothing is loaded yet (loadRepository). */
export async function buildCore(options: ServerOptions): Promise<Core> {
  const backends = new BackendRegistry();
  backends.register(new OnnxRuntimeBackend());
  // The others are imported when a model first needs them.
  for (const make of LAZY_BACKENDS) backends.register(make(options.backendConfig));
  // Object-storage repositories are copied into local folders; the rest of the server sees only those.
  const sources = await RepositorySources.open(options.modelRepositories);
  const refresh = sources.remote.length > 0 ? () => sources.refresh() : undefined;
  try {
    const trace = traceManager(options);
    // The repository hands the runner to every load (ensembles, BLS); it reaches the server once bound below.
    const runner = new LateRunner();
    // Dynamic batching on the scheduling thread, fed by the frontend workers (#30).
    const batchThread = frontendWorkersRunModels(options) ? new BatchThread() : undefined;
    const repository = new ModelRepositoryManager(
      {
        repositories: [...sources.local],
        repositoryNames: options.modelRepositories,
        refresh,
        modelConfigName: options.modelConfigName,
        disableAutoCompleteConfig: options.disableAutoCompleteConfig,
        backendConfig: options.backendConfig,
        gpuCount: 0,
        controlMode: options.modelControlMode,
        startupModels: options.loadModels,
        loadThreadCount: options.modelLoadThreadCount,
        namespacing: options.modelNamespacing,
        // Beside the scheduling thread the limiter runs there, one view for both threads' instances.
        rateLimiter:
          options.rateLimit !== "execution_count"
            ? undefined
            : (batchThread?.rateLimiter(options.rateLimitResources) ?? new RateLimiter(options.rateLimitResources)),
        loadRetryCount: options.modelLoadRetryCount,
        allowModelCodeOverrides: options.allowModelCodeOverrides,
        unloadAbortMs: options.exitTimeoutSecs * 1000,
        batchThread,
      },
      backends,
      runner,
    );
    const cache = await responseCache(options);
    const server = new InferenceServer({
      info: { id: options.id, version: TRITON_PROTOCOL_VERSION, extensions: EXTENSIONS, strictReadiness: options.strictReadiness },
      repository,
      responseCache: cache,
      sharedMemory: new SharedMemoryManager(options.allowClientShm),
      trace,
      maxQueuedBytes: options.maxQueuedBytes,
    });
    runner.bind(server);
    batchThread?.attach(server);
    return {
      server,
      customMetrics: CUSTOM_METRICS,
      sources,
      refresh,
      close: async () => {
        await cache?.close?.();
        sources.close();
      },
    };
  } catch (err) {
    sources.close();
    throw err;
  }
}

/**
 * Loads the start-up models and logs the summary; with --exit-on-error a failed model
 * stops the start (everything unloaded again). Under poll control the poller starts, and
 * is returned.
 */
export async function loadRepository(core: Core, options: ServerOptions): Promise<RepositoryPoller | undefined> {
  const repository = core.server.repository;
  await repository.loadAll();
  log.infoLines(modelSummary(repository.index()));
  const failures = repository.failures();
  if (failures.length > 0 && options.exitOnError) {
    await repository.unloadAll();
    throw new Error(`failed to load all models (--exit-on-error=true):\n  ${failures.join("\n  ")}`);
  }
  if (options.modelControlMode !== "poll") return undefined;
  const poller = new RepositoryPoller({
    repositories: core.sources.folders,
    intervalSecs: options.repositoryPollSecs,
    onChange: () => repository.poll(),
    check: core.refresh,
  });
  await poller.start();
  return poller;
}
