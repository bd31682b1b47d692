/**
 * @module The "auto" run mode's policy: where ONNX Runtime's Run executes next, from how
 * long the last runs took. A model whose runs take under SYNC_THRESHOLD_US runs inline on
 * the calling thread, for requests no more than twice the size of those proven fast inline
 * (or INLINE_FLOOR_BYTES; a bigger one, such as a larger batch, goes to koffi's worker).
 * Slow inline runs (over 10× the threshold) send it back to the worker when they outweigh
 * the fast ones: each slow run counts 1, each fast one takes 1/8 off, and 2 sends it back.
 *
 * A run on the worker cannot tell how long the model took: its time also holds the hop to
 * the worker and back, and the calling thread's wait for its event loop to take the answer
 * (under Node ~50 µs; under Bun never under ~250 µs, and many ms on a loaded thread). So a
 * model on the worker whose runs there came back under PROBE_LIMIT_US is now and then run
 * inline once (a probe), and the probe's own time decides. A probe is made only of a
 * request no larger than the worker runs that came back about as fast as the fastest, so it
 * takes about as long as they did at most. A probe over the threshold, and each move back to
 * the worker, double the runs before the next probe (up to MAX_PROBE_EVERY); every
 * MAX_PROBE_EVERY inline runs in a row without a slow one halve them again.
 */

/** In "auto" mode a model whose runs finish under this many µs runs on the calling thread. */
export const SYNC_THRESHOLD_US = 200;
/** A model none of whose runs on the worker came back under this many µs is never probed inline. */
export const PROBE_LIMIT_US = 10_000;
/** Inline runs take requests of up to this many bytes whatever the size of those proven fast. */
export const INLINE_FLOOR_BYTES = 1024;
/** Runs on the worker between two probes at most. */
export const MAX_PROBE_EVERY = 1024;

export class AutoRunMode {
  #sync = false;
  #fastestAsyncUs = Infinity;
  /** The largest input of a worker run that came back within 1.5× the fastest (under the probe limit): what a probe may have. */
  #probeBytes = 0;
  /** Inline: the largest input of an inline run under the threshold. */
  #inlineBytes = 0;
  /** Inline: slow runs, less an eighth for each fast one. */
  #slow = 0;
  /** Inline: runs in a row with no slow run weighing. */
  #clean = 0;
  /** Runs on the worker since the last probe, and how many there are to be before the next one. */
  #asyncRuns = 0;
  #probeEvery = 1;

  /** Whether a run of `inputBytes` goes on the calling thread next (inline, or as a probe). */
  syncFor(inputBytes: number): boolean {
    if (this.#sync) return inputBytes <= Math.max(2 * this.#inlineBytes, INLINE_FLOOR_BYTES);
    return this.#fastestAsyncUs < PROBE_LIMIT_US && this.#asyncRuns >= this.#probeEvery && inputBytes <= this.#probeBytes;
  }

  /** Records how long the run of `inputBytes` just made took, and whether it ran on the calling thread (syncFor's answer before it). */
  record(us: number, sync: boolean, inputBytes: number): void {
    if (!sync) {
      this.#asyncRuns++;
      this.#fastestAsyncUs = Math.min(this.#fastestAsyncUs, us);
      if (us < PROBE_LIMIT_US && us <= 1.5 * this.#fastestAsyncUs) this.#probeBytes = Math.max(this.#probeBytes, inputBytes);
      // Under the threshold even with the hop (Node's): the run itself was, so it may be inline.
      if (us < SYNC_THRESHOLD_US) {
        if (this.#sync) this.#inlineBytes = Math.max(this.#inlineBytes, inputBytes);
        else this.#toSync(inputBytes);
      }
    } else if (!this.#sync) {
      // A probe.
      this.#asyncRuns = 0;
      if (us < SYNC_THRESHOLD_US) this.#toSync(inputBytes);
      else this.#backOff();
    } else if (us > SYNC_THRESHOLD_US * 10) {
      this.#clean = 0;
      if (++this.#slow >= 2) this.#toWorker();
    } else {
      this.#slow = Math.max(0, this.#slow - 0.125);
      if (us < SYNC_THRESHOLD_US) this.#inlineBytes = Math.max(this.#inlineBytes, inputBytes);
      if (this.#slow === 0 && ++this.#clean >= MAX_PROBE_EVERY) {
        this.#clean = 0;
        this.#probeEvery = Math.max(1, this.#probeEvery / 2);
      }
    }
  }

  #toSync(inputBytes: number): void {
    this.#sync = true;
    this.#inlineBytes = inputBytes;
    this.#slow = 0;
    this.#clean = 0;
  }

  #toWorker(): void {
    this.#sync = false;
    this.#fastestAsyncUs = Infinity;
    this.#probeBytes = 0;
    this.#asyncRuns = 0;
    this.#backOff();
  }

  #backOff(): void {
    this.#probeEvery = Math.min(this.#probeEvery * 2, MAX_PROBE_EVERY);
  }
}
