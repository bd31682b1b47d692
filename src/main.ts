/**
 * @module CLI entry: read options, build the server, load the repository, start the
 * frontends, handle signals and shut down in order (Triton's main.cc).
 */
import { availableParallelism } from "node:os";
import { readFileSync } from "node:fs";
import { parseArgs, usage, UsageError, VERSION, TRITON_PROTOCOL_VERSION, SAGEMAKER_ADDRESS, VERTEX_AI_ADDRESS, type ServerOptions } from "./options.ts";
import { configureLog, getLogger, setLogFile } from "./core/logger.ts";
import { InferenceServer } from "./server/server.ts";
import { unavailable } from "./core/errors.ts";
import { BackendRegistry } from "./backends/registry.ts";
import { OnnxRuntimeBackend } from "./backends/onnxruntime/backend.ts";
import { TensorRtBackend } from "./backends/tensorrt/backend.ts";
import { OpenVinoBackend } from "./backends/openvino/backend.ts";
import { TypeScriptBackend } from "./backends/typescript/backend.ts";
import { PythonBackend } from "./backends/python/backend.ts";
import { installStrayErrorHandlers } from "./backends/typescript/stray-errors.ts";
import { ModelRepositoryManager } from "./repository/manager.ts";
import { RateLimiter } from "./scheduler/rate-limiter.ts";
import { modelSummary } from "./repository/model-summary.ts";
import { removeAllOverrideFiles } from "./repository/override-files.ts";
import { RepositoryPoller } from "./repository/poller.ts";
import { RepositorySources } from "./repository/remote-repository.ts";
import { createHttpHandler, type HttpFrontendOptions, type HttpHandler } from "./frontends/http/routes.ts";
import { listenHttp, type HttpListener } from "./frontends/http/server.ts";
import { listenHttpWorkers } from "./frontends/http/workers.ts";
import { DirectModels } from "./server/direct-models.ts";
import { listenGrpcWorkers } from "./frontends/grpc/workers.ts";
import { frontendWorkersSupported } from "./frontends/worker-threads.ts";
import { listenGrpc, type GrpcListener, type GrpcListenOptions } from "./frontends/grpc/server.ts";
import { createMetricsRegistry, parseSummaryQuantiles } from "./metrics/model-metrics.ts";
import { createMetricsHandler } from "./frontends/metrics.ts";
import { LocalResponseCache } from "./cache/response-cache.ts";
import { RedisResponseCache } from "./cache/redis-cache.ts";
import type { ResponseCache } from "./cache/cache.ts";
import { SharedMemoryManager } from "./server/shared-memory.ts";
import { TraceManager } from "./server/trace.ts";
import { StatusBoard } from "./server/status-board.ts";
import { restrictionMap } from "./frontends/restricted.ts";
import { compileHeaderForwardPattern } from "./frontends/header-forward.ts";
import { createSagemakerHandler } from "./frontends/sagemaker.ts";
import { createVertexAiHandler } from "./frontends/vertex-ai.ts";
import { startOpenAiFrontend } from "./frontends/openai/frontend.ts";
import { sdNotify } from "../ffi/libc/notify.ts";
import { runDevices } from "./devices.ts";
import { runPerf } from "./perf/perf.ts";
import { runHealthCheck } from "./health-check.ts";

const log = getLogger("src/main.ts");

/** The certificate files of --grpc-use-ssl(-mutual), read once at start; a file that cannot be read stops the start. */
function grpcTls(o: ServerOptions): { cert: Buffer; key: Buffer; root: Buffer | null; mutual: boolean } | undefined {
  if (!o.grpcUseSsl && !o.grpcUseSslMutual) return undefined;
  const read = (flag: string, path: string): Buffer => {
    if (!path) throw new Error(`--${flag} is required with --grpc-use-ssl${o.grpcUseSslMutual ? "-mutual" : ""}`);
    try {
      return readFileSync(path);
    } catch (err) {
      throw new Error(`failed to read --${flag} '${path}': ${(err as Error).message}`);
    }
  };
  const mutual = o.grpcUseSslMutual;
  return {
    cert: read("grpc-server-cert", o.grpcServerCert),
    key: read("grpc-server-key", o.grpcServerKey),
    root: mutual || o.grpcRootCert ? read("grpc-root-cert", o.grpcRootCert) : null,
    mutual,
  };
}

/** The model Vertex AI predicts with: the one named, which must be ready, or the repository's only ready model (Triton's rules and messages). */
function vertexAiDefaultModel(server: InferenceServer, named: string): string {
  const ready = server.repositoryIndex(true);
  if (!named) {
    const names = [...new Set(ready.map((m) => m.name))];
    if (names.length !== 1) throw new Error("Expect the model repository contains only a single model if default model is not specified");
    return names[0]!;
  }
  if (!ready.some((m) => m.name === named)) throw new Error(`Expect the default model '${named}' is loaded`);
  return named;
}

/**
 * A frontend's threads when --http-thread-count or --grpc-infer-thread-count is given:
 * that many, at most the cores this process may use, and 1, the main thread as without
 * the flag, where the runtime has no worker threads for it (Node, Deno). Without the flag
 * the frontend stays on the main thread: moving a small request between threads costs
 * the main thread more than decoding it there (scripts/results/frontend-threads.md).
 */
function frontendThreads(requested: number): number {
  if (requested <= 1 || !frontendWorkersSupported()) return 1;
  return Math.min(requested, availableParallelism());
}

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

/** Which listeners `listen()` starts; each uses the port and address its options name. */
export interface ListenRequest {
  http?: boolean;
  grpc?: boolean;
  metrics?: boolean;
}

/** Ports and addresses `listen()` may take instead of the server's options. */
export type ListenPlaces = Partial<Pick<ServerOptions, "httpPort" | "httpAddress" | "grpcPort" | "grpcAddress" | "metricsPort" | "metricsAddress">>;

export interface RunningServer {
  server: InferenceServer;
  /** The options the server runs with; `listen()` reads the frontends' settings from here. */
  readonly options: ServerOptions;
  /** The status page's data when --allow-status-page is on. */
  readonly statusBoard?: StatusBoard;
  http?: HttpListener;
  grpc?: GrpcListener;
  metrics?: HttpListener;
  /** The SageMaker frontend (--allow-sagemaker), started with the server's listeners, with or without HTTP. */
  sagemaker?: HttpListener;
  /** The Vertex AI frontend (--allow-vertex-ai), started with the server's listeners. */
  vertexAi?: HttpListener;
  /** The OpenAI-compatible frontend (--openai-port), started with the server's listeners. */
  openai?: HttpListener;
  /** The address each running listener was bound to. */
  readonly addresses: { http?: string; grpc?: string; metrics?: string };
  /** Starts the listeners asked for that are not running yet (metrics, then gRPC, then HTTP). */
  listen(which: ListenRequest, places?: ListenPlaces): Promise<void>;
  shutdown(): Promise<number>;
}

/** The HTTP frontend's settings from the server's options: the listener's and the in-process `fetch`'s. */
export function httpFrontendOptions(o: ServerOptions, statusBoard?: StatusBoard): HttpFrontendOptions {
  return {
    maxInputSize: o.httpMaxInputSize,
    restricted: restrictionMap(o.httpRestrictedApi),
    statusBoard,
    headerForward: compileHeaderForwardPattern("http-header-forward-pattern", o.httpHeaderForwardPattern),
  };
}

/**
 * Builds the core on `options`, loads the repository, and starts the listeners the
 * options allow (`allowHttp`, `allowGrpc`, `allowMetrics`); with all three off the
 * server runs with no socket, as the in-process API (src/embedded.ts) uses it.
 */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const backends = new BackendRegistry();
  backends.register(new OnnxRuntimeBackend());
  backends.register(new TensorRtBackend());
  backends.register(new OpenVinoBackend());
  const typescript = new TypeScriptBackend();
  backends.register(typescript);
  const python = new PythonBackend({ ...options.backendConfig[""], ...options.backendConfig["python"] });
  backends.register(python);
  // Object-storage repositories are copied into local folders; the rest of the server sees only those.
  const sources = await RepositorySources.open(options.modelRepositories);
  const refresh = sources.remote.length > 0 ? () => sources.refresh() : undefined;
  try {
    return await startWithRepositories(options, backends, { typescript, python }, sources, refresh);
  } catch (err) {
    sources.close();
    throw err;
  }
}

/** startServer() once the repositories are local folders; `refresh` re-syncs the object-storage copies (undefined without any). */
async function startWithRepositories(
  options: ServerOptions,
  backends: BackendRegistry,
  /** The backends whose models make BLS calls into the server (python's custom metrics join /metrics). */
  blsBackends: { typescript: TypeScriptBackend; python: PythonBackend },
  sources: RepositorySources,
  refresh: (() => Promise<boolean>) | undefined,
): Promise<RunningServer> {
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
      rateLimiter: options.rateLimit === "execution_count" ? new RateLimiter(options.rateLimitResources) : undefined,
      loadRetryCount: options.modelLoadRetryCount,
      allowModelCodeOverrides: options.allowModelCodeOverrides,
      unloadAbortMs: options.exitTimeoutSecs * 1000,
    },
    backends,
  );
  const responseCache: ResponseCache | undefined = options.redisCacheConfig
    ? await RedisResponseCache.connect(options.redisCacheConfig)
    : options.cacheSizeBytes === undefined
      ? undefined
      : new LocalResponseCache(options.cacheSizeBytes);
  const server = new InferenceServer(
    { id: options.id, version: TRITON_PROTOCOL_VERSION, extensions: EXTENSIONS, strictReadiness: options.strictReadiness },
    repository,
    responseCache,
    new SharedMemoryManager(options.allowClientShm),
  );
  try {
    server.trace = new TraceManager(options.traceConfig as never);
  } catch (err) {
    throw new Error(`invalid --trace-config: ${(err as Error).message}`);
  }
  server.maxQueuedBytes = options.maxQueuedBytes;
  repository.setModelRunner(
    (request) => server.inferStep(request),
    (request) => server.inferStepStream(request),
  );
  const { python } = blsBackends;
  for (const b of [blsBackends.typescript, python])
    b.setRunner(
      (request) => server.inferStep(request),
      (request) => server.inferStepStream(request),
    );
  await repository.loadAll();
  log.infoLines(modelSummary(repository.index()));
  const failures = repository.failures();
  if (failures.length > 0 && options.exitOnError) {
    await repository.unloadAll();
    await responseCache?.close?.();
    throw new Error(`failed to load all models (--exit-on-error=true):\n  ${failures.join("\n  ")}`);
  }
  let poller: RepositoryPoller | undefined;
  if (options.modelControlMode === "poll") {
    poller = new RepositoryPoller({
      repositories: sources.folders,
      intervalSecs: options.repositoryPollSecs,
      onChange: () => repository.poll(),
      check: refresh,
    });
    await poller.start();
  }

  const statusBoard = options.allowStatusPage ? new StatusBoard(server) : undefined;
  statusBoard?.start();
  let metricsHandler: HttpHandler | undefined;
  let direct: DirectModels | undefined;
  // Stateless models run in the frontend workers themselves (#30); under --model-namespacing
  // a name may mean several models, which the main thread tells apart.
  const directModels = (o: ServerOptions): void => {
    if (direct || o.modelNamespacing) return;
    const d = new DirectModels(server);
    direct = d;
    server.settleStatistics = () => d.settle();
  };
  let metricsRegistry: ReturnType<typeof createMetricsRegistry> | undefined;
  let exiting: Promise<number> | undefined;
  let listening: Promise<void> = Promise.resolve();

  const startListeners = async (which: ListenRequest, o: ServerOptions): Promise<void> => {
    // Metrics and gRPC start first so that "Started HTTPService" is the last line of a good start.
    if (which.metrics && !running.metrics) {
      metricsRegistry ??= createMetricsRegistry(
        { versions: () => repository.allVersions().filter((v) => v.ready) },
        {
          cpu: o.allowCpuMetrics,
          gpu: o.allowGpuMetrics,
          intervalMs: o.metricsIntervalMs,
          cacheEnabled: (v) => server.cacheEnabled(v),
          counterLatencies: o.metricsConfig.counter_latencies?.toLowerCase() !== "false",
          summaryQuantiles: o.metricsConfig.summary_latencies?.toLowerCase() === "true" ? parseSummaryQuantiles(o.metricsConfig.summary_quantiles) : undefined,
          histogramLatencies: o.metricsConfig.histogram_latencies?.toLowerCase() === "true",
          namespacing: o.modelNamespacing,
        },
      );
      python.metrics.attach(metricsRegistry.registry);
      server.onSuccess = metricsRegistry.observe;
      server.onFirstResponse = metricsRegistry.firstResponse;
      const registry = metricsRegistry;
      metricsHandler = createMetricsHandler({ metrics: () => server.statisticsSettled().then(() => registry.metrics()) });
      running.metrics = await listenHttp(metricsHandler, o.metricsAddress, o.metricsPort);
      running.addresses.metrics = o.metricsAddress;
      log.info(`Started Metrics Service at ${o.metricsAddress}:${running.metrics.port}`);
    }
    if (which.grpc && !running.grpc) {
      const threads = o.grpcInferThreadCountGiven ? frontendThreads(o.grpcInferThreadCount) : 1;
      if (threads > 1) directModels(o);
      const listen =
        threads > 1 ? (opts: GrpcListenOptions) => listenGrpcWorkers(threads, server, opts, direct) : (opts: GrpcListenOptions) => listenGrpc(server, opts);
      running.grpc = await listen({
        restricted: restrictionMap(o.grpcRestrictedProtocol),
        headerForward: compileHeaderForwardPattern("grpc-header-forward-pattern", o.grpcHeaderForwardPattern),
        address: o.grpcAddress,
        port: o.grpcPort,
        keepaliveTimeMs: o.grpcKeepaliveTimeMs,
        keepaliveTimeoutMs: o.grpcKeepaliveTimeoutMs,
        keepalivePermitWithoutCalls: o.grpcKeepalivePermitWithoutCalls,
        http2MaxPingsWithoutData: o.grpcHttp2MaxPingsWithoutData,
        http2MinRecvPingIntervalWithoutDataMs: o.grpcHttp2MinRecvPingIntervalWithoutDataMs,
        http2MaxPingStrikes: o.grpcHttp2MaxPingStrikes,
        maxConnectionAgeMs: o.grpcMaxConnectionAgeMs,
        maxConnectionAgeGraceMs: o.grpcMaxConnectionAgeGraceMs,
        maxConnections: o.grpcMaxConnections,
        handshakeTimeoutMs: o.grpcHandshakeTimeoutSecs * 1000,
        idleTimeoutMs: o.grpcIdleTimeoutSecs * 1000,
        tls: grpcTls(o),
        reusePort: o.reuseGrpcPort,
      });
      if (threads > 1) log.info(`gRPC frontend on ${threads} worker threads`);
      running.addresses.grpc = o.grpcAddress;
      log.info(`Started GRPCInferenceService at ${o.grpcAddress}:${running.grpc.port}`);
    }
    if (which.http && !running.http) {
      const handler = createHttpHandler(server, httpFrontendOptions(o, statusBoard));
      const threads = o.httpThreadCountGiven ? frontendThreads(o.httpThreadCount) : 1;
      if (threads > 1) directModels(o);
      running.http =
        threads > 1
          ? await listenHttpWorkers(
              threads,
              server,
              handler,
              {
                address: o.httpAddress,
                port: o.httpPort,
                maxInputSize: o.httpMaxInputSize,
                headerForwardPattern: o.httpHeaderForwardPattern,
                decodeInfer: restrictionMap(o.httpRestrictedApi).size === 0,
              },
              direct,
            )
          : await listenHttp(handler, o.httpAddress, o.httpPort, o.reuseHttpPort);
      if (threads > 1) log.info(`HTTP frontend on ${threads} worker threads`);
      running.addresses.http = o.httpAddress;
      if (statusBoard) log.info(`Status page at http://${o.httpAddress}:${running.http.port}/nereid/status`);
      log.info(`Started HTTPService at ${o.httpAddress}:${running.http.port}`);
    }
  };

  /**
   * Triton's graceful shutdown: new inference is refused and live/ready answer 503 while
   * the listeners stay up; in-flight requests drain for up to --exit-timeout-secs; then
   * models are unloaded and the listeners close. 0 when everything drained, 1 otherwise.
   */
  const shutdown = (): Promise<number> =>
    (exiting ??= (async () => {
      server.state = "EXITING";
      direct?.stop();
      log.info("Waiting for in-flight requests to complete.");
      await listening.catch(() => undefined);
      await poller?.close();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timedOut = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), options.exitTimeoutSecs * 1000)));
      const drained = await Promise.race([repository.unloadAll().then(() => true as const), timedOut]);
      clearTimeout(timer);
      if (!drained) {
        log.error("Exit timeout expired. Exiting immediately.");
        removeAllOverrideFiles(); // the models still loaded keep theirs otherwise
      } else log.info("All models are stopped, unloading models");
      const closing = Promise.all([
        running.http?.close(),
        running.grpc?.close(),
        running.metrics?.close(),
        running.sagemaker?.close(),
        running.vertexAi?.close(),
        running.openai?.close(),
      ]);
      await Promise.race([closing, new Promise((r) => setTimeout(r, 3000).unref())]);
      metricsRegistry?.close();
      statusBoard?.stop();
      server.closeSharedMemory();
      await responseCache?.close?.();
      sources.close();
      try {
        server.trace?.flush();
      } catch (err) {
        log.error(`cannot write the trace file: ${(err as Error).message}`);
      }
      return drained ? 0 : 1;
    })());

  const running: RunningServer = {
    server,
    options,
    statusBoard,
    addresses: {},
    shutdown,
    listen(which, places = {}) {
      if (exiting) return Promise.reject(unavailable("Server is stopping"));
      // One start at a time, so that two calls cannot both open the same listener.
      const o = { ...options, ...places };
      const next = listening.catch(() => undefined).then(() => startListeners(which, o));
      listening = next;
      return next;
    },
  };
  try {
    await running.listen({ http: options.allowHttp, grpc: options.allowGrpc, metrics: options.allowMetrics });
    // SageMaker and Vertex AI start whether or not HTTP does (Triton's SageMaker image runs
    // --allow-http=false); as in Triton they take --http-max-input-size and
    // --http-restricted-api, but forward no headers (#17).
    const alternate = () => createHttpHandler(server, { ...httpFrontendOptions(options), headerForward: undefined });
    if (options.allowSagemaker) {
      const { sagemakerModel: model, sagemakerPingMode: pingMode, sagemakerInferenceType: inferenceType } = options;
      const handler = createSagemakerHandler(alternate(), { model, pingMode, inferenceType });
      running.sagemaker = await listenHttp(handler, SAGEMAKER_ADDRESS, options.sagemakerPort);
      log.info(`Started Sagemaker HTTPService at ${SAGEMAKER_ADDRESS}:${running.sagemaker.port}`);
    }
    if (options.allowVertexAi) {
      const model = vertexAiDefaultModel(server, options.vertexAiDefaultModel);
      const handler = createVertexAiHandler(alternate(), {
        predictRoute: options.vertexAiPredictRoute,
        healthRoute: options.vertexAiHealthRoute,
        model,
        metrics: metricsHandler,
      });
      running.vertexAi = await listenHttp(handler, VERTEX_AI_ADDRESS, options.vertexAiPort);
      log.info(`Started Vertex AI HTTPService at ${VERTEX_AI_ADDRESS}:${running.vertexAi.port}`);
    }
    running.openai = await startOpenAiFrontend(server, { port: options.openaiPort, address: options.openaiAddress, maxInputSize: options.httpMaxInputSize });
  } catch (err) {
    await shutdown();
    throw err;
  }
  server.state = "READY";
  return running;
}

export async function main(argv: readonly string[]): Promise<number> {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs(argv);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`error: ${err.message}\n\n${usage()}\n`);
      return 1;
    }
    throw err;
  }
  if (parsed.kind === "help") {
    process.stdout.write(usage() + "\n");
    return 0;
  }
  if (parsed.kind === "devices") return runDevices(parsed);
  if (parsed.kind === "perf") return runPerf(parsed.argv);
  if (parsed.kind === "health") return runHealthCheck(parsed.url);
  if (parsed.kind === "version") {
    process.stdout.write(`nereid ${VERSION} (Triton protocol ${TRITON_PROTOCOL_VERSION})\n`);
    return 0;
  }
  const o = parsed.options;
  for (const w of o.warnings) process.stderr.write(`${w}\n`);
  configureLog({ info: o.logInfo, warning: o.logWarning, error: o.logError, verbose: o.logVerbose, format: o.logFormat });
  if (o.logFile) {
    try {
      setLogFile(o.logFile);
    } catch (err) {
      process.stderr.write(`error: failed to open log file '${o.logFile}': ${(err as Error).message}\n`);
      return 1;
    }
  }
  for (const f of o.inertFlags) log.info(`--${f.flag}=${f.value} accepted; it has no effect here: ${f.meaning}`);
  // Signals are handled from the start: one that arrives while models load stops the
  // server as soon as it is up, instead of killing the process mid-load.
  let running: RunningServer | undefined;
  let stopRequested: ((code: number) => void) | undefined;
  let pendingSignal: string | undefined;
  const stopped = new Promise<number>((resolve) => (stopRequested = resolve));
  const onSignal = (sig: string) => {
    log.info(`received ${sig}`);
    if (!running) {
      pendingSignal = sig;
      return;
    }
    notifyServiceManager("STOPPING=1\nSTATUS=draining in-flight requests");
    void running.shutdown().then(stopRequested);
  };
  // A model's stray error (a rejection nobody handles, a throw from a timer) is logged, not fatal.
  installStrayErrorHandlers();
  process.once("SIGINT", () => onSignal("SIGINT"));
  process.once("SIGTERM", () => onSignal("SIGTERM"));
  try {
    running = await startServer(o);
  } catch (err) {
    log.error((err as Error).message);
    return 1;
  }
  notifyServiceManager(`READY=1\nSTATUS=serving ${running.server.repositoryIndex(true).length} model version(s)`);
  if (pendingSignal) onSignal(pendingSignal);
  return stopped;
}

/** systemd Type=notify: tells the service manager when serving starts and stops (no-op outside systemd). */
function notifyServiceManager(state: string): void {
  if (!process.env.NOTIFY_SOCKET) return;
  try {
    sdNotify(state);
  } catch (err) {
    log.warn(`cannot notify the service manager: ${(err as Error).message}`);
  }
}

/** Runs main() and exits with its code; used by `bun src/main.ts` and the compiled entry. */
export function runCli(): void {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err) => {
      log.error(`fatal: ${(err as Error).stack ?? err}`);
      process.exit(1);
    },
  );
}

if (import.meta.main) runCli();
