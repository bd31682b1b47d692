/**
 * @module The gRPC frontend across threads (--grpc-infer-thread-count > 1, under Bun):
 * that many worker threads (worker-entry.ts) run grpc-js on the gRPC port with
 * SO_REUSEPORT, so the kernel spreads connections over them; each does its calls'
 * HTTP/2 and protobuf work and converts ModelInfer requests and responses, and the main
 * thread runs the core for all of them, so the server keeps one view. The calls the
 * workers relay go to the same handlers (service.ts, stream.ts) as on one thread. The
 * first worker binds the port (a free one for port 0), the others then join it.
 */
import { EventEmitter } from "node:events";
import { Metadata, status, type UntypedServiceImplementation } from "@grpc/grpc-js";
import { getLogger } from "../../core/logger.ts";
import type { InferenceServer } from "../../server/server.ts";
import { DirectLink, inferForWorker, startWorkers } from "../worker-threads.ts";
import { WorkerThread } from "../../core/threads/worker-thread.ts";
import { SendWindow } from "../../core/threads/window.ts";
import type { DirectModels } from "../../server/direct-models.ts";
import { healthService, inferenceService } from "./service.ts";
import type { GrpcListener, GrpcListenOptions } from "./server.ts";
import { grpcWorkerEntry, type FromGrpcWorker, type GrpcWorkerConfig, type ToGrpcWorker, type WireMetadata, type WireStatus } from "./worker-protocol.ts";
import type { WorkerLike } from "../../core/threads/thread.ts";
import type { RelayedCallSide } from "./stream.ts";

const log = getLogger("src/frontends/grpc/workers.ts");

type Send = (m: ToGrpcWorker) => void;
type Handler = (call: unknown, callback?: (err: { code?: number; details?: string; message?: string } | null, value?: unknown) => void) => void;

function toMetadata(entries: WireMetadata): Metadata {
  const md = new Metadata();
  for (const [k, v] of entries) md.add(k, typeof v === "string" ? v : Buffer.from(v));
  return md;
}

/** A call a worker relayed, as the one-thread handlers see a grpc-js call: its request, metadata and 'cancelled'. */
class RelayedCall extends EventEmitter {
  cancelled = false;
  constructor(
    readonly request: unknown,
    readonly metadata: Metadata,
  ) {
    super();
  }
  cancel(): void {
    this.cancelled = true;
    this.emit("cancelled");
  }
}

/** About how many bytes a ModelStreamInfer response takes: its tensors' bytes, and a little for the rest. */
function messageBytes(message: unknown): number {
  const m = message as { error_message?: string; infer_response?: { raw_output_contents?: Uint8Array[] } };
  let n = 256 + (m.error_message?.length ?? 0);
  for (const c of m.infer_response?.raw_output_contents ?? []) n += c.byteLength;
  return n;
}

/**
 * A ModelStreamInfer stream a worker relayed: writes, the end and an error status go back
 * to the worker. As grpc-js's own call does, write() returns false once the worker has
 * not yet sent a window of messages (SendWindow), and 'drain' follows when it has, so
 * stream.ts waits before it takes the next response.
 */
class RelayedStream extends RelayedCall implements RelayedCallSide {
  readonly #id: number;
  readonly #send: Send;
  readonly #done: () => void;
  readonly #window = new SendWindow();
  #draining = false;
  constructor(id: number, metadata: Metadata, send: Send, done: () => void) {
    super(undefined, metadata);
    this.#id = id;
    this.#send = send;
    this.#done = () => {
      this.#window.close();
      done();
    };
  }
  write(message: unknown): boolean {
    const open = this.#window.sent(messageBytes(message));
    this.#send({ t: "write", id: this.#id, message });
    if (!open && !this.#draining) {
      this.#draining = true;
      void this.#window.ready().then(() => {
        this.#draining = false;
        this.emit("drain");
      });
    }
    return open;
  }
  /** The worker has sent `count` more messages. */
  acked(count: number): void {
    this.#window.acked(count);
  }
  /** A request on the stream settled here: the worker, which counts the requests it relayed, may read on. */
  settled(): void {
    this.#send({ t: "settled", id: this.#id });
  }
  /** The worker stops reading by the settled counts (it has the client's messages before this thread does). */
  pause(): this {
    return this;
  }
  resume(): this {
    return this;
  }
  end(): void {
    this.#done();
    this.#send({ t: "end", id: this.#id });
  }
  override cancel(): void {
    this.#done();
    super.cancel();
  }
  override emit(event: string | symbol, ...args: unknown[]): boolean {
    // stream.ts ends a call with an error status by emitting 'error' on it, as grpc-js does.
    if (event === "error") {
      const e = args[0] as { code?: number; details?: string; message?: string };
      this.#done();
      this.#send({ t: "status", id: this.#id, status: { code: e.code ?? status.UNKNOWN, details: e.details ?? e.message ?? "" } });
    }
    return super.emit(event, ...args);
  }
}

/** One worker thread and the calls of its clients that the main thread is serving. */
class GrpcFrontendWorker {
  readonly #thread: WorkerThread<GrpcWorkerConfig, ToGrpcWorker, FromGrpcWorker>;
  readonly #server: InferenceServer;
  readonly #services: { inference: UntypedServiceImplementation; health: UntypedServiceImplementation };
  /** Cancels of the calls in progress, by id. */
  readonly #cancels = new Map<number, () => void>();
  readonly #streams = new Map<number, RelayedStream>();
  readonly #send: Send;
  readonly #direct: DirectLink;

  constructor(
    server: InferenceServer,
    services: { inference: UntypedServiceImplementation; health: UntypedServiceImplementation },
    direct: DirectModels | undefined,
    worker?: WorkerLike,
    ended?: () => void,
  ) {
    this.#server = server;
    this.#services = services;
    // Before the thread: a worker started early that has already ended reports it while the thread is made.
    this.#direct = new DirectLink(direct, (m, transfer) => this.#thread.send(m, transfer), log);
    this.#thread = new WorkerThread(
      worker ?? grpcWorkerEntry(),
      "gRPC",
      log,
      (m) => this.#onMessage(m),
      () => {
        this.#direct.ended();
        // What the main thread runs for it is cancelled, as for clients gone (no one reads the answers).
        for (const cancel of [...this.#cancels.values()]) {
          try {
            cancel();
          } catch (err) {
            log.error(`cancelling a call of an ended gRPC worker: ${(err as Error).message}`);
          }
        }
        ended?.();
      },
    );
    this.#send = (m) => this.#thread.send(m);
  }

  async start(listen: GrpcListenOptions, health?: SharedArrayBuffer): Promise<number> {
    const port = await this.#thread.start({
      listen,
      inferenceMethods: Object.keys(this.#services.inference),
      healthMethods: Object.keys(this.#services.health),
      ...(health ? { health } : {}),
    });
    this.#direct.start();
    return port;
  }

  stop(): Promise<void> {
    this.#direct.stop();
    return this.#thread.stop();
  }

  #onMessage(m: FromGrpcWorker): void {
    switch (m.t) {
      case "cancel":
        this.#cancels.get(m.id)?.();
        return;
      case "infer":
        void this.#infer(m);
        return;
      case "unary":
        this.#unary(m);
        return;
      case "open":
        this.#open(m);
        return;
      case "data":
        this.#streams.get(m.id)?.emit("data", m.request);
        return;
      case "halfClose":
        this.#streams.get(m.id)?.emit("end");
        return;
      case "ack":
        this.#streams.get(m.id)?.acked(m.count);
        return;
      default:
        this.#direct.receive(m);
    }
  }

  /** What ModelInfer's handler (service.ts) does after conversion: the model first, then the core. */
  async #infer(m: Extract<FromGrpcWorker, { t: "infer" }>): Promise<void> {
    const controller = new AbortController();
    this.#cancels.set(m.id, () => controller.abort());
    const answer = await inferForWorker(
      this.#server,
      m,
      controller.signal,
      "ModelInfer RPC doesn't support models with decoupled transaction policy",
      log,
      // As the one-thread handlers log: ModelInfer an INTERNAL error only (toGrpcError), a stream's in-band errors none.
      (e) => (m.streamed || e.code !== "INTERNAL" ? undefined : "ModelInfer"),
    );
    this.#cancels.delete(m.id);
    this.#send({ ...answer, id: m.id });
  }

  /** A unary call the worker relayed: the one-thread handler answers it. */
  #unary(m: Extract<FromGrpcWorker, { t: "unary" }>): void {
    const handler = this.#services[m.service][m.method] as Handler | undefined;
    const reply = (s: WireStatus) => this.#send({ t: "status", id: m.id, status: s });
    if (!handler) return reply({ code: status.UNIMPLEMENTED, details: `The server does not implement the method ${m.method}` });
    const call = new RelayedCall(m.request, toMetadata(m.metadata));
    this.#cancels.set(m.id, () => call.cancel());
    try {
      handler(call, (err, value) => {
        this.#cancels.delete(m.id);
        if (err) reply({ code: err.code ?? status.UNKNOWN, details: err.details ?? err.message ?? "" });
        else this.#send({ t: "reply", id: m.id, value });
      });
    } catch (err) {
      this.#cancels.delete(m.id);
      reply({ code: status.INTERNAL, details: (err as Error).message });
    }
  }

  /** A ModelStreamInfer stream the worker relayed: the one-thread stream handler serves it. */
  #open(m: Extract<FromGrpcWorker, { t: "open" }>): void {
    const done = () => {
      this.#streams.delete(m.id);
      this.#cancels.delete(m.id);
    };
    const call = new RelayedStream(m.id, toMetadata(m.metadata), this.#send, done);
    this.#streams.set(m.id, call);
    this.#cancels.set(m.id, () => call.cancel());
    (this.#services.inference.ModelStreamInfer as Handler)(call);
  }
}

/**
 * Starts `count` worker threads serving gRPC on opts' address and port. Each worker
 * enforces --grpc-max-connections on its own share: the limit divided among them; at its
 * share a worker makes room for a new connection as one listener does (listener.ts).
 * Those in `early` (started while the models loaded) are used first.
 */
export function listenGrpcWorkers(
  count: number,
  core: InferenceServer,
  opts: GrpcListenOptions,
  direct?: DirectModels,
  early: WorkerLike[] = [],
): Promise<GrpcListener> {
  const services = { inference: inferenceService(core, opts), health: healthService(core) };
  const listen: GrpcListenOptions = {
    ...opts,
    maxConnections: opts.maxConnections > 0 ? Math.ceil(opts.maxConnections / count) : 0,
    maxConnectionsFlag: opts.maxConnections,
  };
  // The workers answer the health RPCs themselves (#30).
  const health = core.shareHealth();
  return startWorkers(
    count,
    (ended) => {
      const w = new GrpcFrontendWorker(core, services, direct, early.shift(), ended);
      return { start: (port) => w.start({ ...listen, port }, health.buffer), stop: () => w.stop() };
    },
    opts.port,
    log,
    "gRPC",
    health,
  );
}
