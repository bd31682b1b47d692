/**
 * @module Start-up's listeners (#31): the metrics, gRPC and HTTP listeners (on worker
 * threads when asked, the models the workers run themselves wired through DirectModels),
 * SageMaker, Vertex AI and the OpenAI-compatible frontend; and closing them all.
 */
import { readFileSync } from "node:fs";
import { createServer as createNetServer } from "node:net";
import { SAGEMAKER_ADDRESS, VERTEX_AI_ADDRESS, type ServerOptions } from "../options.ts";
import { getLogger } from "../core/logger.ts";
import type { InferenceServer } from "../server/server.ts";
import type { StatusBoard } from "../server/status-board.ts";
import { DirectModels } from "../server/direct-models.ts";
import type { CustomMetrics } from "../backends/custom-metrics.ts";
import { createHttpHandler, type HttpFrontendOptions, type HttpHandler } from "../frontends/http/routes.ts";
import { listenHttp, type HttpListener } from "../frontends/http/server.ts";
import { listenHttpWorkers } from "../frontends/http/workers.ts";
import type { WorkerLike } from "../core/threads/thread.ts";
import type { GrpcListener, GrpcListenOptions } from "../frontends/grpc/server.ts";
import type { createMetricsRegistry } from "../metrics/model-metrics.ts";
import { createMetricsHandler } from "../frontends/metrics.ts";
import { restrictionMap } from "../frontends/restricted.ts";
import { compileHeaderForwardPattern } from "../frontends/header-forward.ts";
import { createSagemakerHandler } from "../frontends/sagemaker.ts";
import { createVertexAiHandler } from "../frontends/vertex-ai.ts";
import { frontendThreads, frontendWorkerThreads, type EarlyFrontendWorkers, type Frontend } from "./early-workers.ts";

const log = getLogger("src/startup/listeners.ts");

/** Which listeners `listen()` starts; each uses the port and address its options name. */
export interface ListenRequest {
  http?: boolean;
  grpc?: boolean;
  metrics?: boolean;
}

/** Ports and addresses `listen()` may take instead of the server's options. */
export type ListenPlaces = Partial<Pick<ServerOptions, "httpPort" | "httpAddress" | "grpcPort" | "grpcAddress" | "metricsPort" | "metricsAddress">>;

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
 * Starts evaluating the modules the listeners will import (the metrics registry, the gRPC
 * frontend), so that it overlaps the repository's load rather than following it; a failure
 * here is left to the listener's own import to report.
 */
export function prefetchListenerModules(o: ServerOptions): void {
  // The listener awaits the same promise, so a module that fails to evaluate fails its start as before.
  const quiet = (p: Promise<unknown>) => void p.catch(() => undefined);
  if (o.allowMetrics) quiet(modules.metrics());
  if (o.allowGrpc) quiet(frontendThreads(o.grpcInferThreadCount) > 1 ? modules.grpcWorkers() : modules.grpcServer());
}

/** The listeners' modules, each imported once (prefetchListenerModules may have started it). */
const once = <T>(load: () => Promise<T>): (() => Promise<T>) => {
  let p: Promise<T> | undefined;
  return () => (p ??= load());
};
const modules = {
  metrics: once(() => import("../metrics/model-metrics.ts")),
  grpcWorkers: once(() => import("../frontends/grpc/workers.ts")),
  grpcServer: once(() => import("../frontends/grpc/server.ts")),
};

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
 * A frontend's worker threads share their port among themselves (SO_REUSEPORT), which would
 * also let them join another server's listening on it. Unless --reuse-http-port or
 * --reuse-grpc-port allows that, the port is first bound once alone and let go, so a port
 * another server holds stops the start as it does on one thread ("listen EADDRINUSE").
 */
async function ensurePortFree(address: string, port: number, reuse: boolean): Promise<void> {
  if (reuse || port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = createNetServer();
    probe.once("error", reject);
    probe.listen({ port, host: address.replace(/^\[(.*)\]$/, "$1"), exclusive: true }, () => probe.close(() => resolve()));
  });
}

/** Every listener of one server, started on request and closed together. */
export class Listeners {
  http?: HttpListener;
  grpc?: GrpcListener;
  metrics?: HttpListener;
  /** The SageMaker frontend (--allow-sagemaker), started with or without HTTP. */
  sagemaker?: HttpListener;
  /** The Vertex AI frontend (--allow-vertex-ai). */
  vertexAi?: HttpListener;
  /** The OpenAI-compatible frontend (--openai-port). */
  openai?: HttpListener;
  /** The address each running listener was bound to. */
  readonly addresses: { http?: string; grpc?: string; metrics?: string } = {};
  readonly #server: InferenceServer;
  readonly #customMetrics: CustomMetrics;
  readonly #statusBoard: StatusBoard | undefined;
  #metricsRegistry: ReturnType<typeof createMetricsRegistry> | undefined;
  #metricsHandler: HttpHandler | undefined;
  /** The models the frontend worker threads run themselves, once a frontend runs on workers. */
  #direct: DirectModels | undefined;
  readonly #early: EarlyFrontendWorkers | undefined;

  /**
   * `customMetrics`: the backends' custom metric families, which join the metrics
   * listener's registry; `early`: the frontends' worker threads started while the models
   * loaded, which the first HTTP and gRPC listeners run on.
   */
  constructor(server: InferenceServer, customMetrics: CustomMetrics, statusBoard?: StatusBoard, early?: EarlyFrontendWorkers) {
    this.#server = server;
    this.#customMetrics = customMetrics;
    this.#statusBoard = statusBoard;
    this.#early = early;
  }

  /** Runs `listen` with the worker threads started early for `frontend`; those it did not use (it failed) are ended. */
  async #withEarly<T>(frontend: Frontend, listen: (early: WorkerLike[]) => Promise<T>): Promise<T> {
    const early: WorkerLike[] = this.#early?.take(frontend) ?? [];
    try {
      return await listen(early);
    } finally {
      for (const w of early) w.terminate?.();
    }
  }

  /** Starts those of metrics, gRPC and HTTP asked for that are not running yet, in that order ("Started HTTPService" is the last line of a good start). */
  async start(which: ListenRequest, o: ServerOptions): Promise<void> {
    if (which.metrics && !this.metrics) await this.#startMetrics(o);
    if (which.grpc && !this.grpc) await this.#startGrpc(o);
    if (which.http && !this.http) await this.#startHttp(o);
  }

  async #startMetrics(o: ServerOptions): Promise<void> {
    const server = this.#server;
    // Imported when started: with --allow-metrics=false prom-client is never evaluated (#30).
    const metrics = await modules.metrics();
    const registry = (this.#metricsRegistry ??= this.#createMetricsRegistry(o, metrics));
    this.#metricsHandler = createMetricsHandler({ metrics: () => server.statisticsSettled().then(() => registry.metrics()) });
    this.metrics = await listenHttp(this.#metricsHandler, o.metricsAddress, o.metricsPort);
    this.addresses.metrics = o.metricsAddress;
    log.info(`Started Metrics Service at ${o.metricsAddress}:${this.metrics.port}`);
  }

  /** The metrics registry (made once, even when its listener failed to start and is started again), fed by the server and the backends. */
  #createMetricsRegistry(
    o: ServerOptions,
    { createMetricsRegistry, parseSummaryQuantiles }: typeof import("../metrics/model-metrics.ts"),
  ): ReturnType<typeof createMetricsRegistry> {
    const server = this.#server;
    const registry = createMetricsRegistry(
      { versions: () => server.repository.allVersions().filter((v) => v.ready) },
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
    this.#customMetrics.attach(registry.registry);
    // Without summaries or histograms nothing is observed per request: the server keeps no observer.
    const { observe, firstResponse } = registry;
    if (observe || firstResponse) {
      server.observe({ success: observe ?? (() => {}), firstResponse: firstResponse ?? (() => {}) });
      // The frontend workers then post each request's durations (DirectTable.records).
      this.#direct?.changed();
    }
    return registry;
  }

  /**
   * Stateless models run in the frontend workers themselves (#30); under
   * --model-namespacing a name may mean several models, which the main thread tells apart.
   */
  #directModels(o: ServerOptions): DirectModels | undefined {
    // A slot in every version's shared statistics counters for each worker thread started.
    if (!this.#direct && !o.modelNamespacing) this.#direct = new DirectModels(this.#server, frontendWorkerThreads(o));
    return this.#direct;
  }

  async #startGrpc(o: ServerOptions): Promise<void> {
    this.grpc = await this.#withEarly("grpc", (early) => this.#listenGrpc(o, early));
    const threads = frontendThreads(o.grpcInferThreadCount);
    if (threads > 1) log.info(`gRPC frontend on ${threads} worker threads`);
    this.addresses.grpc = o.grpcAddress;
    log.info(`Started GRPCInferenceService at ${o.grpcAddress}:${this.grpc.port}`);
  }

  async #listenGrpc(o: ServerOptions, early: WorkerLike[]): Promise<GrpcListener> {
    const server = this.#server;
    const threads = frontendThreads(o.grpcInferThreadCount);
    if (threads > 1) await ensurePortFree(o.grpcAddress, o.grpcPort, o.reuseGrpcPort);
    // Imported when started: with --allow-grpc=false neither the gRPC frontend nor grpc-js is
    // evaluated, and with worker threads the main thread evaluates no gRPC server or protos (#30).
    let listen: (opts: GrpcListenOptions) => Promise<GrpcListener>;
    if (threads > 1) {
      const { listenGrpcWorkers } = await modules.grpcWorkers();
      listen = (opts) => listenGrpcWorkers(threads, server, opts, this.#directModels(o), early);
    } else {
      const { listenGrpc } = await modules.grpcServer();
      listen = (opts) => listenGrpc(server, opts);
    }
    return listen({
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
  }

  async #startHttp(o: ServerOptions): Promise<void> {
    const server = this.#server;
    const frontend = httpFrontendOptions(o, this.#statusBoard);
    const handler = createHttpHandler(server, frontend);
    const restricted = frontend.restricted ?? new Map();
    const threads = frontendThreads(o.httpThreadCount);
    this.http = await this.#withEarly("http", async (early) => {
      if (threads > 1) await ensurePortFree(o.httpAddress, o.httpPort, o.reuseHttpPort);
      return threads > 1
        ? listenHttpWorkers(
            threads,
            server,
            handler,
            {
              address: o.httpAddress,
              port: o.httpPort,
              maxInputSize: o.httpMaxInputSize,
              headerForwardPattern: o.httpHeaderForwardPattern,
              decodeInfer: restricted.size === 0,
            },
            this.#directModels(o),
            early,
            !restricted.has("health"),
          )
        : listenHttp(handler, o.httpAddress, o.httpPort, o.reuseHttpPort);
    });
    if (threads > 1) log.info(`HTTP frontend on ${threads} worker threads`);
    this.addresses.http = o.httpAddress;
    if (this.#statusBoard) log.info(`Status page at http://${o.httpAddress}:${this.http.port}/nereid/status`);
    log.info(`Started HTTPService at ${o.httpAddress}:${this.http.port}`);
  }

  /**
   * SageMaker, Vertex AI and OpenAI, as the options ask. SageMaker and Vertex AI start
   * whether or not HTTP does (Triton's SageMaker image runs --allow-http=false); as in
   * Triton they take --http-max-input-size and --http-restricted-api, but forward no
   * headers (#17). Vertex AI needs the repository loaded (its default model).
   */
  async startAlternates(options: ServerOptions): Promise<void> {
    const server = this.#server;
    const alternate = () => createHttpHandler(server, { ...httpFrontendOptions(options), headerForward: undefined });
    if (options.allowSagemaker) {
      const { sagemakerModel: model, sagemakerPingMode: pingMode, sagemakerInferenceType: inferenceType } = options;
      const handler = createSagemakerHandler(alternate(), { model, pingMode, inferenceType });
      this.sagemaker = await listenHttp(handler, SAGEMAKER_ADDRESS, options.sagemakerPort);
      log.info(`Started Sagemaker HTTPService at ${SAGEMAKER_ADDRESS}:${this.sagemaker.port}`);
    }
    if (options.allowVertexAi) {
      const model = vertexAiDefaultModel(server, options.vertexAiDefaultModel);
      const handler = createVertexAiHandler(alternate(), {
        predictRoute: options.vertexAiPredictRoute,
        healthRoute: options.vertexAiHealthRoute,
        model,
        metrics: this.#metricsHandler,
      });
      this.vertexAi = await listenHttp(handler, VERTEX_AI_ADDRESS, options.vertexAiPort);
      log.info(`Started Vertex AI HTTPService at ${VERTEX_AI_ADDRESS}:${this.vertexAi.port}`);
    }
    if (options.openaiPort === undefined) return;
    // Imported when started: without --openai-port neither it nor its tokenizer and template packages are evaluated (#30).
    const { startOpenAiFrontend } = await import("../frontends/openai/frontend.ts");
    this.openai = await startOpenAiFrontend(server, { port: options.openaiPort, address: options.openaiAddress, maxInputSize: options.httpMaxInputSize });
  }

  /** Shutdown began: the frontend workers stop running models themselves and hand every request to the main thread, which refuses it as it should. */
  stopDirect(): void {
    this.#direct?.stop();
  }

  /** Closes every listener (at most 3 s for them to finish what they answer), then the metrics registry's sampling. */
  async close(): Promise<void> {
    const closing = Promise.all([
      this.http?.close(),
      this.grpc?.close(),
      this.metrics?.close(),
      this.sagemaker?.close(),
      this.vertexAi?.close(),
      this.openai?.close(),
    ]);
    await Promise.race([closing, new Promise((r) => setTimeout(r, 3000).unref())]);
    this.#metricsRegistry?.close();
  }
}
