/**
 * @module The "auto" run mode's policy: where ONNX Runtime's Run executes next, from how
 * long the last runs took. A model whose runs take under SYNC_THRESHOLD_US runs inline on
 * the calling thread; two inline runs in a row over 10× that send it back to koffi's worker.
 *
 * A run on the worker cannot tell how long the model took: its time also holds the hop to
 * the worker and back, and the calling thread's wait for its event loop to take the answer
 * (under Node ~50 µs; under Bun never under ~250 µs, and many ms on a loaded thread). So a
 * model on the worker whose runs there came back under PROBE_LIMIT_US is now and then run
 * inline once (a probe, at most that long on the event loop): the probe's own time decides.
 * A probe over the threshold doubles the runs until the next one (up to MAX_PROBE_EVERY),
 * so a model that really is slow blocks its event loop ever more rarely.
 */

/** In "auto" mode a model whose runs finish under this many µs runs on the calling thread. */
export const SYNC_THRESHOLD_US = 200;
/** A model none of whose runs on the worker came back under this many µs is never probed inline. */
export const PROBE_LIMIT_US = 10_000;
/** Runs on the worker between two probes at most. */
export const MAX_PROBE_EVERY = 1024;

export class AutoRunMode {
  #sync = false;
  #fastestAsyncUs = Infinity;
  #slowSyncRuns = 0;
  /** Runs on the worker since the last probe, and how many there are to be before the next one. */
  #asyncRuns = 0;
  #probeEvery = 1;

  /** Whether the next run goes on the calling thread (inline, or as a probe). */
  get sync(): boolean {
    return this.#sync || (this.#fastestAsyncUs < PROBE_LIMIT_US && this.#asyncRuns >= this.#probeEvery);
  }

  /** Records how long the run just made took, and whether it ran on the calling thread (`sync`, as read before it). */
  record(us: number, sync: boolean): void {
    if (!sync) {
      this.#asyncRuns++;
      this.#fastestAsyncUs = Math.min(this.#fastestAsyncUs, us);
      if (this.#fastestAsyncUs < SYNC_THRESHOLD_US) this.#toSync();
    } else if (!this.#sync) {
      // A probe.
      this.#asyncRuns = 0;
      if (us < SYNC_THRESHOLD_US) this.#toSync();
      else this.#probeEvery = Math.min(this.#probeEvery * 2, MAX_PROBE_EVERY);
    } else if (us > SYNC_THRESHOLD_US * 10) {
      if (++this.#slowSyncRuns >= 2) {
        this.#sync = false;
        this.#fastestAsyncUs = Infinity;
        this.#asyncRuns = 0;
      }
    } else {
      this.#slowSyncRuns = 0;
    }
  }

  #toSync(): void {
    this.#sync = true;
    this.#slowSyncRuns = 0;
    this.#probeEvery = 1;
  }
}
