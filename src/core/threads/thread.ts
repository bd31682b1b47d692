/**
 * @module The worker-thread kit's main-thread side: a typed channel to one worker thread.
 * Every protocol between threads (the HTTP and gRPC frontend workers, the decode thread,
 * the `typescript` backend's model workers) is a pair of message unions discriminated by
 * `t`, To (main thread to worker) and From (worker to main thread); on the wire each
 * post is an array of them (a batch, ./batcher.ts, or one message). The worker's side is
 * ./serve.ts; ./worker-thread.ts adds the start/stop lifecycle of a worker that serves a port.
 */
import { MessageBatcher, transferList, type Transfer } from "./batcher.ts";

/** A message of a thread protocol: one member of a union discriminated by `t`. */
export interface Message {
  t: string;
}

/** The part of a Web Worker a Thread uses; a MessagePort has the first two. */
export interface WorkerLike {
  postMessage(batch: unknown[], transfer: Transfer[]): void;
  onmessage: ((e: MessageEvent) => void) | null;
  onerror?: ((e: ErrorEvent) => void) | null;
  addEventListener?(type: "close", listener: (e: Event) => void): void;
  terminate?(): void;
  /** Called once a Thread has set its handlers (a worker started early, ./early-worker.ts, then hands on what it held). */
  attached?(): void;
}

/** What a Thread reports of its worker. */
export interface ThreadEvents<From extends Message> {
  /** Each message the worker posted, in order. */
  message(m: From): void;
  /** The worker failed (an error event, handled here: under Deno one left alone is thrown again in the main thread). */
  error?(message: string): void;
  /** The worker ended (Bun's close event), with its exit code when known. */
  exit?(code: number | undefined): void;
  /** The worker posted something that is not a batch (code in the worker other than ./serve.ts posted it). */
  malformed?(data: unknown): void;
}

/** How a Thread starts its Worker and posts to it. */
export interface ThreadOptions {
  /** Post in batches, one per turn of the event loop (MessageBatcher); otherwise each message at once. */
  batch?: boolean;
  /** Start the Worker as a module worker (`{ type: "module" }`). */
  module?: boolean;
  /** An idle thread does not keep the process alive (where the runtime allows: Bun). */
  unref?: boolean;
  /** The worker's name (Bun also gives it to the OS thread: /proc/<pid>/task/<tid>/comm, at most 15 bytes shown). */
  name?: string;
}

/** Starts a Web Worker from `url` as `options` say. */
export function startWorker(url: string, options: Pick<ThreadOptions, "module" | "unref" | "name"> = {}): Worker {
  const init: WorkerOptions = {};
  if (options.module) init.type = "module";
  if (options.name) init.name = options.name;
  const worker = init.type || init.name ? new Worker(url, init) : new Worker(url);
  if (options.unref) (worker as Worker & { unref?: () => void }).unref?.();
  return worker;
}

/**
 * The main thread's side of one worker thread: typed messages to it (`send`, batched or
 * not, with buffers to transfer), its messages, failure and exit handed to `events`.
 */
export class Thread<To extends Message, From extends Message> {
  readonly #worker: WorkerLike;
  readonly #post: (m: To, transfer?: Transfer[]) => void;
  readonly #flush: () => void = () => {};

  /** Over a Worker (or a MessagePort) already started; `url` starts one (startWorker). */
  constructor(worker: WorkerLike | string, events: ThreadEvents<From>, options: ThreadOptions = {}) {
    const w: WorkerLike = typeof worker === "string" ? startWorker(worker, options) : worker;
    this.#worker = w;
    if (options.batch) {
      const batcher = new MessageBatcher<To>((batch, transfer) => w.postMessage(batch, transfer));
      this.#post = (m, transfer) => batcher.send(m, transfer);
      this.#flush = batcher.flush;
    } else this.#post = (m, transfer) => w.postMessage([m], transferList(transfer ?? []));
    w.onmessage = (e: MessageEvent) => {
      const data: unknown = e.data;
      if (!Array.isArray(data)) {
        events.malformed?.(data);
        return;
      }
      for (let i = 0; i < data.length; i++) events.message(data[i] as From);
    };
    w.onerror = (e: ErrorEvent) => {
      e.preventDefault?.();
      events.error?.(e.message);
    };
    w.addEventListener?.("close", (e: Event) => events.exit?.((e as { code?: number }).code));
    w.attached?.();
  }

  /** Posts `m` (in this turn's batch, when batched), transferring `transfer`: the caller must not use those buffers any more. */
  send(m: To, transfer?: Transfer[]): void {
    this.#post(m, transfer);
  }

  /** Posts `m` now, with this turn's batch before it: for a message the other side waits on (a start, a stop). */
  sendNow(m: To, transfer?: Transfer[]): void {
    this.#post(m, transfer);
    this.#flush();
  }

  /** Ends the worker now; what was not yet posted is dropped. */
  terminate(): void {
    this.#worker.terminate?.();
  }
}
