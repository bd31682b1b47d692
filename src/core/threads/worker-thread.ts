/**
 * @module A worker thread that serves a port (the frontends' HTTP and gRPC workers), its
 * lifecycle on top of ./thread.ts: started with a config, answered with the port it
 * listens on or why it could not; stopped, answered once it has.
 */
import type { Logger } from "../logger.ts";
import { Thread, type Message, type WorkerLike } from "./thread.ts";
import type { Transfer } from "./batcher.ts";

/** The lifecycle messages to a serving worker, beside its own (its To union includes them). */
export type LifecycleTo<Config> = { t: "start"; config: Config } | { t: "stop" };

/** The lifecycle messages from a serving worker, beside its own (its From union includes them). */
export type LifecycleFrom = { t: "listening"; port: number } | { t: "startFailed"; message: string } | { t: "stopped" };

/** How long stop waits for the worker's `stopped` before it ends the worker anyway. */
export const STOP_LIMIT_MS = 5000;

/**
 * The main thread's side of one serving worker thread: it starts the worker with a config
 * (`start`, answered by `listening` with the port or by `startFailed`), stops it (`stop`,
 * answered by `stopped`, or after STOP_LIMIT_MS), posts messages in batches, and hands
 * every other message to `onMessage`.
 */
export class WorkerThread<Config, To extends Message, From extends Message> {
  readonly #thread: Thread<To | LifecycleTo<Config>, From | LifecycleFrom>;
  #onStarted: ((m: Exclude<LifecycleFrom, { t: "stopped" }>) => void) | undefined;
  #onStopped: (() => void) | undefined;
  /** Why the worker failed before `start` was called (one started early: ./early-worker.ts). */
  #failedEarly: string | undefined;

  /**
   * `worker`: the URL to start it from, or a worker already started (an EarlyWorker);
   * `onExit`: called once the worker's thread has ended, however it ended.
   */
  constructor(worker: string | WorkerLike, what: string, log: Logger, onMessage: (m: Exclude<From, LifecycleFrom>) => void, onExit?: () => void) {
    this.#thread = new Thread<To | LifecycleTo<Config>, From | LifecycleFrom>(
      worker,
      {
        message: (m) => {
          const l = m as LifecycleFrom;
          if (l.t === "listening" || l.t === "startFailed") this.#onStarted?.(l);
          else if (l.t === "stopped") this.#onStopped?.();
          else onMessage(m as Exclude<From, LifecycleFrom>);
        },
        error: (message) => {
          log.error(`${what} worker thread: ${message}`);
          if (this.#onStarted) this.#onStarted({ t: "startFailed", message });
          else this.#failedEarly ??= message;
        },
        // A worker that ended (with or without an error first) answers nothing more: a start
        // waiting on it fails, a stop waiting on it is done.
        exit: (code) => {
          const message = `the worker ended (exit code ${code ?? "?"})`;
          if (this.#onStarted) this.#onStarted({ t: "startFailed", message });
          else this.#failedEarly ??= message;
          this.#onStopped?.();
          onExit?.();
        },
      },
      // The OS thread is named after it ("HTTP worker"), so its CPU can be told from the others' (scripts/bench-batching.ts).
      { batch: true, name: `${what} worker` },
    );
  }

  /** Posts `m` in this turn's batch, transferring `transfer`. */
  send(m: To, transfer?: Transfer[]): void {
    this.#thread.send(m, transfer);
  }

  /** Starts the worker; resolves with the port it listens on. */
  start(config: Config): Promise<number> {
    if (this.#failedEarly !== undefined) return Promise.reject(new Error(this.#failedEarly));
    return new Promise((resolve, reject) => {
      this.#onStarted = (m) => (m.t === "listening" ? resolve(m.port) : reject(new Error(m.message)));
      this.#thread.sendNow({ t: "start", config });
    });
  }

  /** Stops the worker: waits for its `stopped` (STOP_LIMIT_MS at most), then ends it. */
  async stop(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.#onStopped = resolve;
      this.#thread.sendNow({ t: "stop" });
      setTimeout(resolve, STOP_LIMIT_MS).unref?.();
    });
    this.#thread.terminate();
  }
}
