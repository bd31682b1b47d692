/**
 * @module The "auto" run mode's policy: where ONNX Runtime's Run executes next, from how
 * long the last runs took. The worker hop costs ~50 µs, so a model whose fastest run on
 * the worker stays under SYNC_THRESHOLD_US runs inline on the calling thread; two inline
 * runs in a row over 10× that send it back to the worker. The minimum and the
 * two-in-a-row rule keep a busy machine from flapping.
 */

/** In "auto" mode a model whose runs finish under this many µs runs on the calling thread. */
export const SYNC_THRESHOLD_US = 200;

export class AutoRunMode {
  #sync = false;
  #fastestAsyncUs = Infinity;
  #slowSyncRuns = 0;

  /** Whether the next run goes on the calling thread. */
  get sync(): boolean {
    return this.#sync;
  }

  /** Records how long the run just made (in the mode `sync` said) took. */
  record(us: number): void {
    if (!this.#sync) {
      this.#fastestAsyncUs = Math.min(this.#fastestAsyncUs, us);
      if (this.#fastestAsyncUs < SYNC_THRESHOLD_US) {
        this.#sync = true;
        this.#slowSyncRuns = 0;
      }
    } else if (us > SYNC_THRESHOLD_US * 10) {
      if (++this.#slowSyncRuns >= 2) {
        this.#sync = false;
        this.#fastestAsyncUs = Infinity;
      }
    } else {
      this.#slowSyncRuns = 0;
    }
  }
}
