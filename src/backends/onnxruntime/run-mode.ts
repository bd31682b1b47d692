/**
 * @module The "auto" run mode's policy: where ONNX Runtime's Run executes next, from how
 * long the last runs took. A model whose runs take under SYNC_THRESHOLD_US runs inline on
 * the calling thread; two inline runs in a row over 10× that, or one over PROBE_LIMIT_US,
 * send it back to koffi's worker.
 *
 * A run on the worker cannot tell how long the model took: its time also holds the hop to
 * the worker and back, and the calling thread's wait for its event loop to take the answer
 * (under Node ~50 µs; under Bun never under ~250 µs, and many ms on a loaded thread). So a
 * model on the worker whose runs there came back under PROBE_LIMIT_US is now and then run
 * inline once (a probe), and the probe's own time decides. A probe is made only of a
 * request with no more input bytes than the fastest run on the worker had, so that it
 * takes about as long as that run at most. A probe over the threshold, and each move back
 * to the worker, double the runs before the next probe (up to MAX_PROBE_EVERY; nothing
 * halves them again): a model that really is slow, or whose run time swings between fast
 * and slow, blocks its event loop ever more rarely.
 */

/** In "auto" mode a model whose runs finish under this many µs runs on the calling thread. */
export const SYNC_THRESHOLD_US = 200;
/** A model none of whose runs on the worker came back under this many µs is never probed inline; one inline run over it sends a model back. */
export const PROBE_LIMIT_US = 10_000;
/** Runs on the worker between two probes at most. */
export const MAX_PROBE_EVERY = 1024;

export class AutoRunMode {
  #sync = false;
  #fastestAsyncUs = Infinity;
  /** The input bytes of that fastest run on the worker. */
  #fastestBytes = 0;
  #slowSyncRuns = 0;
  /** Runs on the worker since the last probe, and how many there are to be before the next one. */
  #asyncRuns = 0;
  #probeEvery = 1;

  /** Whether a run of `inputBytes` goes on the calling thread next (inline, or as a probe). */
  syncFor(inputBytes: number): boolean {
    return this.#sync || (this.#fastestAsyncUs < PROBE_LIMIT_US && this.#asyncRuns >= this.#probeEvery && inputBytes <= this.#fastestBytes);
  }

  /** Records how long the run of `inputBytes` just made took, and whether it ran on the calling thread (syncFor's answer before it). */
  record(us: number, sync: boolean, inputBytes: number): void {
    if (!sync) {
      this.#asyncRuns++;
      if (us < this.#fastestAsyncUs) {
        this.#fastestAsyncUs = us;
        this.#fastestBytes = inputBytes;
      }
      if (this.#fastestAsyncUs < SYNC_THRESHOLD_US) this.#toSync();
    } else if (!this.#sync) {
      // A probe.
      this.#asyncRuns = 0;
      if (us < SYNC_THRESHOLD_US) this.#toSync();
      else this.#backOff();
    } else if (us > PROBE_LIMIT_US || (us > SYNC_THRESHOLD_US * 10 && ++this.#slowSyncRuns >= 2)) {
      this.#sync = false;
      this.#fastestAsyncUs = Infinity;
      this.#asyncRuns = 0;
      this.#backOff();
    } else if (us <= SYNC_THRESHOLD_US * 10) {
      this.#slowSyncRuns = 0;
    }
  }

  #toSync(): void {
    this.#sync = true;
    this.#slowSyncRuns = 0;
  }

  #backOff(): void {
    this.#probeEvery = Math.min(this.#probeEvery * 2, MAX_PROBE_EVERY);
  }
}
