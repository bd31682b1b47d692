/**
 * @module startServer(): the core built (core.ts), the repository loaded, the listeners
 * started (listeners.ts), and the RunningServer that starts more of them and shuts it all
 * down (shutdown.ts). The CLI (src/main.ts) and the in-process API (src/embedded.ts) both
 * start a server through it.
 */
import type { ServerOptions } from "../options.ts";
import { unavailable } from "../core/errors.ts";
import type { InferenceServer } from "../server/server.ts";
import { StatusBoard } from "../server/status-board.ts";
import type { RepositoryPoller } from "../repository/poller.ts";
import { buildCore, loadRepository, type Core } from "./core.ts";
import { Listeners, prefetchListenerModules, type ListenPlaces, type ListenRequest } from "./listeners.ts";
import { startFrontendWorkersEarly, type EarlyFrontendWorkers } from "./early-workers.ts";
import { gracefulShutdown } from "./shutdown.ts";

export { httpFrontendOptions, type ListenPlaces, type ListenRequest } from "./listeners.ts";

export interface RunningServer {
  readonly server: InferenceServer;
  /** The options the server runs with; `listen()` reads the frontends' settings from here. */
  readonly options: ServerOptions;
  /** The status page's data when --allow-status-page is on. */
  readonly statusBoard?: StatusBoard;
  /** The listeners running now (HTTP, gRPC, metrics, SageMaker, Vertex AI, OpenAI) and the address each was bound to. */
  readonly listeners: Readonly<Pick<Listeners, "http" | "grpc" | "metrics" | "sagemaker" | "vertexAi" | "openai" | "addresses">>;
  /** Starts the listeners asked for that are not running yet (metrics, then gRPC, then HTTP). */
  listen(which: ListenRequest, places?: ListenPlaces): Promise<void>;
  /** Triton's graceful shutdown (shutdown.ts), once however often it is called: 0 when everything drained. */
  shutdown(): Promise<number>;
}

/**
 * Builds the core on `options`, loads the repository, and starts the listeners the
 * options allow (`allowHttp`, `allowGrpc`, `allowMetrics`); with all three off the
 * server runs with no socket, as the in-process API (src/embedded.ts) uses it. `given`:
 * the frontends' worker threads, already started for these options (startFrontendWorkersEarly);
 * without it they start now, so that their start-up overlaps the load.
 */
export async function startServer(options: ServerOptions, given?: EarlyFrontendWorkers): Promise<RunningServer> {
  const early = given ?? startFrontendWorkersEarly(options);
  let core: Core;
  let poller: RepositoryPoller | undefined;
  try {
    core = await buildCore(options);
  } catch (err) {
    early.terminate();
    throw err;
  }
  try {
    const loading = loadRepository(core, options);
    // The listeners' modules are evaluated while the sessions are created, not after the load.
    setImmediate(() => prefetchListenerModules(options));
    poller = await loading;
  } catch (err) {
    early.terminate();
    await core.close();
    throw err;
  }
  const server = core.server;
  // Ready once the repository has loaded, before the listeners start, as Triton's server is
  // ready when its Init ends and main.cc starts the endpoints after it: a listener (a frontend
  // worker thread) that is up answers ready at once, without waiting for the others.
  server.markReady();
  const statusBoard = options.allowStatusPage ? new StatusBoard(server) : undefined;
  statusBoard?.start();
  const listeners = new Listeners(server, core.customMetrics, statusBoard, early);
  let starting: Promise<void> = Promise.resolve();
  let exiting: Promise<number> | undefined;
  const shutdown = (): Promise<number> =>
    (exiting ??= gracefulShutdown({ core, listeners, poller, statusBoard, starting, exitTimeoutSecs: options.exitTimeoutSecs }));
  const running: RunningServer = {
    server,
    options,
    statusBoard,
    listeners,
    shutdown,
    listen(which, places = {}) {
      if (exiting) return Promise.reject(unavailable("Server is stopping"));
      // One start at a time, so that two calls cannot both open the same listener.
      const o = { ...options, ...places };
      const next = starting.catch(() => undefined).then(() => listeners.start(which, o));
      starting = next;
      return next;
    },
  };
  try {
    await running.listen({ http: options.allowHttp, grpc: options.allowGrpc, metrics: options.allowMetrics });
    await listeners.startAlternates(options);
  } catch (err) {
    await shutdown();
    throw err;
  } finally {
    // Those no listener took (one failed before the HTTP or gRPC listener started).
    early.terminate();
  }
  return running;
}
