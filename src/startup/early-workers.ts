/**
 * @module The frontends' worker threads, started before the rest of the server is
 * evaluated (#30). Each evaluates its modules (the frontend, the ONNX Runtime binding) in
 * parallel with the main thread's own start and the load, and waits. Once the repository
 * has loaded, the listeners (listeners.ts) hand them their `start`, and only then does any
 * of them bind its port, as Triton binds its ports only after the repository's models
 * loaded; their model table (DirectModels) comes with it. A start that fails before that
 * ends them unused. This module stays small: the CLI starts these workers before it
 * evaluates the server's modules (main.ts).
 */
import { availableParallelism } from "node:os";
import { EarlyWorker } from "../core/threads/early-worker.ts";
import { httpWorkerEntry } from "../frontends/http/worker-protocol.ts";
import { grpcWorkerEntry } from "../frontends/grpc/worker-protocol.ts";
import { DEFAULT_FRONTEND_THREADS, type ServerOptions } from "../options.ts";
import { frontendWorkersSupported } from "../frontends/worker-support.ts";
import { disableOrtTelemetry } from "../../ffi/onnxruntime/telemetry.ts";

export type Frontend = "http" | "grpc";

/**
 * A frontend's threads: the count given (1 is the main thread), or without the flag one per
 * core available, at most DEFAULT_FRONTEND_THREADS (a 1-core host serves on the main thread).
 * Worker threads won over the main thread at every concurrency measured on 2 cores
 * (scripts/results/every-core.md), so they are the default, as Triton's threads are. Where
 * the runtime has no worker threads for the frontends (Node, Deno): 1, whatever was asked.
 */
export function frontendThreads(requested: number | undefined): number {
  if (!frontendWorkersSupported()) return 1;
  return requested ?? Math.min(availableParallelism(), DEFAULT_FRONTEND_THREADS);
}

/** The worker threads the HTTP and gRPC frontends run on together (0: both off or on the main thread). */
export function frontendWorkerThreads(o: ServerOptions): number {
  const workers = (allowed: boolean, requested: number | undefined) => {
    const n = allowed ? frontendThreads(requested) : 1;
    return n > 1 ? n : 0;
  };
  return workers(o.allowHttp, o.httpThreadCount) + workers(o.allowGrpc, o.grpcInferThreadCount);
}

/**
 * Whether a frontend will run on worker threads that run models themselves (DirectModels),
 * as the listeners decide it: dynamically batched models then batch on the scheduling
 * thread (server/batch-thread.ts), decided before the repository loads.
 */
export function frontendWorkersRunModels(o: ServerOptions): boolean {
  return !o.modelNamespacing && frontendWorkerThreads(o) > 0;
}

/**
 * The worker threads the options' HTTP and gRPC frontends will run on, started now (none
 * for a frontend off or on the main thread); ONNX Runtime's telemetry is switched off
 * first, as it must be before any thread of the server's own starts (see disableOrtTelemetry).
 */
export function startFrontendWorkersEarly(o: ServerOptions): EarlyFrontendWorkers {
  disableOrtTelemetry();
  return new EarlyFrontendWorkers({
    http: o.allowHttp ? frontendThreads(o.httpThreadCount) : 1,
    grpc: o.allowGrpc ? frontendThreads(o.grpcInferThreadCount) : 1,
  });
}

export class EarlyFrontendWorkers {
  readonly #workers: Record<Frontend, EarlyWorker[]>;

  /** Starts `threads.http` HTTP and `threads.grpc` gRPC workers now; a count of 1 (the main thread) starts none. */
  constructor(threads: Record<Frontend, number>) {
    const start = (n: number, url: () => string) => (n > 1 ? Array.from({ length: n }, () => new EarlyWorker(url())) : []);
    this.#workers = { http: start(threads.http, httpWorkerEntry), grpc: start(threads.grpc, grpcWorkerEntry) };
  }

  /** The workers started for `frontend`, once: a listener started again later starts its own. */
  take(frontend: Frontend): EarlyWorker[] {
    return this.#workers[frontend].splice(0);
  }

  /** Ends the workers not taken. */
  terminate(): void {
    for (const w of [...this.take("http"), ...this.take("grpc")]) w.terminate();
  }
}
