/**
 * @module The worker-thread kit's worker side (./thread.ts is the main thread's): a worker
 * entry calls serveThread once with its handler and posts through what it returns, so no
 * entry declares `self` of its own. Self-contained (no server imports): every worker bundle,
 * a model's included, carries it.
 */
import { MessageBatcher, transferList, type Transfer } from "./batcher.ts";
import type { Message } from "./thread.ts";

/** Where a worker receives and posts: its global scope, or a MessagePort. */
export interface ThreadScope {
  onmessage: ((e: MessageEvent) => void) | null;
  postMessage(batch: unknown[], transfer: Transfer[]): void;
}

declare const self: ThreadScope;

export interface ServeOptions {
  /** Post in batches, one per turn of the event loop (MessageBatcher); otherwise each message at once (one that must go before the thread ends). */
  batch?: boolean;
  /** Where to serve (tests: a MessagePort); the worker's global scope by default. */
  scope?: ThreadScope;
}

/**
 * The worker's side of a thread: `onMessage` takes each message the main thread posted, in
 * order; `post` answers (in the turn's batch when batched), `postNow` at once, after what the
 * turn posted before it (an answer the main thread waits on: listening, stopped).
 */
export function serveThread<To extends Message, From extends Message>(
  onMessage: (m: To) => void | Promise<void>,
  options: ServeOptions = {},
): { post(m: From, transfer?: Transfer[]): void; postNow(m: From, transfer?: Transfer[]): void } {
  const scope = options.scope ?? self;
  scope.onmessage = (e: MessageEvent) => {
    // A plain loop: code in the worker (a model's) may have replaced Array.prototype's methods in
    // this realm. A handler's rejection stays unhandled, as from an async onmessage: the
    // worker's own process handlers decide what it means.
    const batch = e.data as To[];
    for (let i = 0; i < batch.length; i++) void onMessage(batch[i]!);
  };
  if (options.batch) {
    const batcher = new MessageBatcher<From>((batch, transfer) => scope.postMessage(batch, transfer));
    const post = (m: From, transfer?: Transfer[]) => batcher.send(m, transfer);
    return {
      post,
      postNow: (m, transfer) => {
        post(m, transfer);
        batcher.flush();
      },
    };
  }
  const post = (m: From, transfer?: Transfer[]) => scope.postMessage([m], transferList(transfer ?? []));
  return { post, postNow: post };
}
