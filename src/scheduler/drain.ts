/**
 * @module What every scheduler's stop() waits for: its requests in flight, queued or
 * running. From stop() on the scheduler refuses new requests; stop() settles once the
 * count reaches zero, and `onDrained` runs then, once (a scheduler cancels its timer there).
 */
export class InflightDrain {
  #count = 0;
  #stopping = false;
  #stopped: Promise<void> | undefined;
  #drained: (() => void) | undefined;
  readonly #onDrained: () => void;

  constructor(onDrained: () => void = () => {}) {
    this.#onDrained = onDrained;
  }

  get count(): number {
    return this.#count;
  }

  get stopping(): boolean {
    return this.#stopping;
  }

  enter(): void {
    this.#count++;
  }

  /** `n` requests left the scheduler; true when that drained a stopping one. */
  leave(n = 1): boolean {
    this.#count -= n;
    if (this.#count !== 0 || !this.#stopping) return false;
    const drained = this.#drained;
    this.#drained = undefined;
    this.#onDrained();
    drained?.();
    return true;
  }

  stop(): Promise<void> {
    if (this.#stopped) return this.#stopped;
    this.#stopping = true;
    if (this.#count === 0) {
      this.#onDrained();
      this.#stopped = Promise.resolve();
    } else {
      this.#stopped = new Promise((resolve) => (this.#drained = resolve));
    }
    return this.#stopped;
  }
}
