/**
 * @module The HTTP frontend across threads (--http-thread-count > 1, under Bun): that
 * many worker threads (worker-entry.ts) listen on the HTTP port with SO_REUSEPORT, so the
 * kernel spreads connections over them; each decodes inference bodies and encodes
 * answers, and the main thread runs the core (scheduling, batching, sequences, the
 * cache, statistics) for all of them, so the server keeps one view; the models in the
 * DirectModels table the workers run themselves. Requests the workers
 * post whole go through the same handler (routes.ts) as on one thread. The first worker
 * binds the port (a free one for port 0), the others then join it.
 */
import { getLogger } from "../../core/logger.ts";
import { tooLarge } from "./body.ts";
import type { InferenceServer } from "../../server/server.ts";
import type { DirectModels } from "../../server/direct-models.ts";
import type { HttpHandler } from "./routes.ts";
import type { HttpListener } from "./server.ts";
import type { HttpRequest, HttpResponse } from "./types.ts";
import { httpWorkerEntry, type FromWorker, type ToWorker, type WorkerConfig } from "./worker-protocol.ts";
import { DirectLink, inferForWorker, startWorkers } from "../worker-threads.ts";
import { WorkerThread } from "../../core/threads/worker-thread.ts";
import type { WorkerLike } from "../../core/threads/thread.ts";
import { SendWindow } from "../../core/threads/window.ts";
import { fromWireError } from "../../core/threads/wire-error.ts";

const log = getLogger("src/frontends/http/workers.ts");
const EMPTY = new Uint8Array(0);

/** One worker thread and the requests of its clients that the main thread is working on. */
class FrontendWorker {
  readonly #thread: WorkerThread<WorkerConfig, ToWorker, FromWorker>;
  readonly #server: InferenceServer;
  readonly #handler: HttpHandler;
  readonly #running = new Map<number, AbortController>();
  /** The flow control of each streamed body being relayed, by request id. */
  readonly #windows = new Map<number, SendWindow>();
  readonly #direct: DirectLink;

  /** `worker`: one started early (while the models loaded); otherwise one is started here. `ended`: called once its thread has ended. */
  constructor(server: InferenceServer, handler: HttpHandler, direct: DirectModels | undefined, worker?: WorkerLike, ended?: () => void) {
    this.#server = server;
    this.#handler = handler;
    // Before the thread: a worker started early that has already ended reports it while the thread is made.
    this.#direct = new DirectLink(direct, (m, transfer) => this.#thread.send(m, transfer), log);
    this.#thread = new WorkerThread(
      worker ?? httpWorkerEntry(),
      "HTTP",
      log,
      (m) => this.#onMessage(m),
      () => {
        this.#direct.ended();
        this.#abandon();
        ended?.();
      },
    );
  }

  async start(config: WorkerConfig): Promise<number> {
    const port = await this.#thread.start(config);
    this.#direct.start();
    return port;
  }

  stop(): Promise<void> {
    this.#direct.stop();
    return this.#thread.stop();
  }

  #send(m: ToWorker): void {
    this.#thread.send(m);
  }

  #onMessage(m: FromWorker): void {
    switch (m.t) {
      case "cancel":
        this.#running.get(m.id)?.abort();
        return;
      case "ack":
        this.#windows.get(m.id)?.acked(m.count);
        return;
      case "infer":
        void this.#infer(m);
        return;
      case "http":
        void this.#http(m);
        return;
      default:
        this.#direct.receive(m);
    }
  }

  /** The worker's thread ended: what the main thread runs for it is cancelled, as for clients gone (no one reads the answers). */
  #abandon(): void {
    for (const c of [...this.#running.values()]) c.abort();
    for (const w of this.#windows.values()) w.close();
  }

  #track(id: number): AbortSignal {
    const c = new AbortController();
    this.#running.set(id, c);
    return c.signal;
  }

  /** What handleInfer (infer.ts) does after the body is decoded: the model first, then the core. */
  async #infer(m: Extract<FromWorker, { t: "infer" }>): Promise<void> {
    const answer = await inferForWorker(
      this.#server,
      m,
      this.#track(m.id),
      "HTTP end point doesn't support models with decoupled transaction policy",
      log,
      () => `POST /v2/models/${m.model}/infer`,
    );
    this.#running.delete(m.id);
    this.#send({ ...answer, id: m.id });
  }

  /** A request the worker posted whole: the same handler as on one thread answers it. */
  async #http(m: Extract<FromWorker, { t: "http" }>): Promise<void> {
    const headers = new Map(m.headers);
    const signal = this.#track(m.id);
    const req: HttpRequest = {
      method: m.method,
      path: m.path,
      header: (name) => headers.get(name),
      headers: () => m.headers,
      body: async (limit) => {
        if (m.bodyError) throw fromWireError(m.bodyError);
        const body = m.body ?? EMPTY;
        if (body.byteLength > limit) throw tooLarge(body.byteLength, limit);
        return body;
      },
      signal,
    };
    let r: HttpResponse;
    try {
      r = await this.#handler(req);
    } catch (err) {
      r = { status: 500, headers: { "content-type": "application/json" }, body: JSON.stringify({ error: (err as Error).message }) };
    }
    if (!r.stream) {
      this.#running.delete(m.id);
      this.#send({ t: "reply", id: m.id, status: r.status, headers: r.headers, ...(r.body !== undefined ? { body: r.body } : {}) });
      return;
    }
    this.#send({ t: "head", id: m.id, status: r.status, headers: r.headers });
    // The next chunk is pulled only while the worker's window is open, as the one-thread
    // listener pulls it only once the socket has drained.
    const window = new SendWindow();
    this.#windows.set(m.id, window);
    const it = r.stream[Symbol.asyncIterator]();
    const stop = () => {
      window.close();
      void it.return?.();
    };
    signal.addEventListener("abort", stop, { once: true });
    try {
      for (;;) {
        if (!window.open) await window.ready();
        if (signal.aborted) break;
        const next = await it.next();
        if (next.done || signal.aborted) break;
        window.sent(next.value.length);
        this.#send({ t: "chunk", id: m.id, data: next.value });
      }
    } catch (err) {
      log.error(`${m.method} ${m.path}: the stream failed: ${(err as Error).message}`);
    } finally {
      signal.removeEventListener("abort", stop);
      this.#running.delete(m.id);
      this.#windows.delete(m.id);
      this.#send({ t: "end", id: m.id });
    }
  }
}

/**
 * Starts `count` worker threads serving HTTP on `config`'s address and port; those in
 * `early` (started while the models loaded) are used first. With `answerHealth` the workers
 * answer the health probes themselves from the server's shared health (shareHealth).
 */
export function listenHttpWorkers(
  count: number,
  server: InferenceServer,
  handler: HttpHandler,
  config: Omit<WorkerConfig, "health">,
  direct?: DirectModels,
  early: WorkerLike[] = [],
  answerHealth = false,
): Promise<HttpListener> {
  const health = answerHealth ? server.shareHealth() : undefined;
  const withHealth: WorkerConfig = health ? { ...config, health: health.buffer } : config;
  return startWorkers(
    count,
    (ended) => {
      const w = new FrontendWorker(server, handler, direct, early.shift(), ended);
      return { start: (port) => w.start({ ...withHealth, port }), stop: () => w.stop() };
    },
    config.port,
    log,
    "HTTP",
    health,
  );
}
