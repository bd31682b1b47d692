/**
 * @module The frontends' worker threads started while the models load (#30): each
 * evaluates its modules (the frontend, the ONNX Runtime binding) in parallel with the
 * load, and waits. Once the repository has loaded, the listeners (listeners.ts) hand them
 * their `start`, and only then does any of them bind its port, as Triton binds its
 * ports only after the repository's models loaded; their model table (DirectModels)
 * comes with it. A start that fails before that ends them unused.
 */
import { EarlyWorker } from "../core/threads/early-worker.ts";
import { httpWorkerEntry } from "../frontends/http/worker-protocol.ts";
import { grpcWorkerEntry } from "../frontends/grpc/worker-protocol.ts";

export type Frontend = "http" | "grpc";

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
