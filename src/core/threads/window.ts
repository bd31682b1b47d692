/**
 * @module Flow control of a stream relayed to a worker thread (the worker-thread kit,
 * ./thread.ts): the sender posts only while the receiver's window is open.
 */

/** What one relayed stream may have posted to its worker and not yet acknowledged: bytes, and messages. */
export const STREAM_WINDOW_BYTES = 1024 * 1024;
export const STREAM_WINDOW_MESSAGES = 64;

/**
 * Flow control of one stream the main thread relays to a worker (an SSE body, a
 * ModelStreamInfer call), so that a client that reads slowly holds back its stream's
 * producer as it does on one thread, where the frontend writes only while the socket
 * drains. The worker acknowledges each message once it has handed it to its socket
 * (`ack`); the main thread posts more only while the window is open: fewer than
 * STREAM_WINDOW_MESSAGES messages and STREAM_WINDOW_BYTES bytes unacknowledged (a
 * single larger message still goes, alone).
 */
export class SendWindow {
  readonly #sizes: number[] = [];
  #bytes = 0;
  #closed = false;
  #waiters: (() => void)[] = [];

  /** Whether another message may be posted now (always, once closed). */
  get open(): boolean {
    return this.#closed || (this.#sizes.length < STREAM_WINDOW_MESSAGES && this.#bytes < STREAM_WINDOW_BYTES);
  }

  /** Counts a message of about `bytes` posted; returns whether the window is still open. */
  sent(bytes: number): boolean {
    this.#sizes.push(bytes);
    this.#bytes += bytes;
    return this.open;
  }

  /** The worker has handed `count` more messages to its socket. */
  acked(count: number): void {
    for (let i = 0; i < count && this.#sizes.length > 0; i++) this.#bytes -= this.#sizes.shift()!;
    if (this.open) this.#wake();
  }

  /** Resolves once the window is open (at once if it is). */
  ready(): Promise<void> {
    return this.open ? Promise.resolve() : new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** The stream is over (ended, failed or cancelled): nothing waits any more. */
  close(): void {
    this.#closed = true;
    this.#wake();
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }
}
