/**
 * @module A worker thread started before its Thread exists (#30): the frontends' workers
 * are started while the models load, so that their module evaluation overlaps the load,
 * and are given their Thread (and their `start`) once the models have loaded. Until then
 * what the worker reports (a message, an error event, its end) is kept, and handed on in
 * order once the Thread has set its handlers (`attached`).
 */
import { startWorker, type ThreadOptions, type WorkerLike } from "./thread.ts";
import type { Transfer } from "./batcher.ts";

type Held = { kind: "message"; e: MessageEvent } | { kind: "error"; e: ErrorEvent } | { kind: "close"; e: Event };

export class EarlyWorker implements WorkerLike {
  onmessage: ((e: MessageEvent) => void) | null = null;
  onerror: ((e: ErrorEvent) => void) | null = null;
  readonly #worker: WorkerLike;
  readonly #closeListeners: ((e: Event) => void)[] = [];
  /** What the worker reported before the Thread attached; undefined once it has. */
  #held: Held[] | undefined = [];

  /** Starts the worker at `url` now (as a Thread with `options` would start it). */
  constructor(url: string, options: Pick<ThreadOptions, "module" | "unref"> = {}) {
    const w: WorkerLike = startWorker(url, options);
    this.#worker = w;
    w.onmessage = (e) => this.#report({ kind: "message", e });
    w.onerror = (e) => {
      // Handled here at once: under Deno an error event left alone is thrown again in the main thread.
      e.preventDefault?.();
      this.#report({ kind: "error", e });
    };
    w.addEventListener?.("close", (e) => this.#report({ kind: "close", e }));
  }

  postMessage(batch: unknown[], transfer: Transfer[]): void {
    this.#worker.postMessage(batch, transfer);
  }

  addEventListener(_type: "close", listener: (e: Event) => void): void {
    this.#closeListeners.push(listener);
  }

  terminate(): void {
    this.#held = undefined;
    this.#worker.terminate?.();
  }

  /** The Thread has set its handlers: what was held is handed on, in order, and from now on each report as it comes. */
  attached(): void {
    const held = this.#held ?? [];
    this.#held = undefined;
    for (const h of held) this.#deliver(h);
  }

  #report(h: Held): void {
    if (this.#held) this.#held.push(h);
    else this.#deliver(h);
  }

  #deliver(h: Held): void {
    if (h.kind === "message") this.onmessage?.(h.e);
    else if (h.kind === "error") this.onerror?.(h.e);
    else for (const l of this.#closeListeners) l(h.e);
  }
}
