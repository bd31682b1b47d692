/**
 * @module A model version's statistics counters in shared memory (#30): every thread
 * that counts the version's requests beside the main thread (each frontend worker, and
 * the scheduling thread for the executions it batches) writes a slot of its own, so each counter has one writer and needs no read-modify-write
 * across threads; the main thread folds each slot's growth since its last read into the
 * version's ModelStats when the statistics are read (fold). A writer counts exactly what
 * ModelStats' own record methods count (the same rounding of each duration), so the
 * folded statistics equal the one-thread path's.
 *
 * A slot is guarded by a sequence number: odd while its writer updates it, even between
 * updates. The reader waits out an odd one (an update takes well under a microsecond),
 * so it never folds half of one request's counts; only a writer whose thread ended (or
 * stalled past the wait) in the middle of an update is read as it stands, after a bounded
 * wait, and should it go on after all, the next fold adds the rest. Batch statistics live in a small table per
 * slot keyed by batch size; a writer that meets a size the table has no room for (more
 * distinct sizes than its rows) says so (recordExecution returns false), and its caller
 * counts that execution another way.
 */
import { FAILURE_REASONS, wholeUs, type FailureReason, type ModelStats } from "./stats.ts";

// The counters of one slot (Float64 indices): each Duration as its count and ns.
const SUCCESS = 0;
const FAIL = 2;
const QUEUE = 4;
const COMPUTE_INPUT = 6;
const COMPUTE_INFER = 8;
const COMPUTE_OUTPUT = 10;
const INFERENCE_COUNT = 12;
const EXECUTION_COUNT = 13;
const LAST_INFERENCE = 14;
/** FAILURE_REASONS' counts, in that order. */
const FAILURES = 15;
/** The metrics' whole-microsecond sums: request, queue, compute input, infer, output, cache hit, cache miss. */
const METRIC_US = FAILURES + FAILURE_REASONS.length;
/** The response cache's hits and misses, each a Duration as its count and ns. */
const CACHE_HIT = METRIC_US + 7;
const CACHE_MISS = CACHE_HIT + 2;
const COUNTERS = CACHE_MISS + 2;
/** A batch table's row: [batch size (0: unused), executions, compute input ns, infer ns, output ns]. */
const ROW = 5;
/** The most distinct batch sizes a slot's table holds by default (a frontend worker's: its clients' batch sizes). */
export const MAX_BATCH_ROWS = 16;

/**
 * The layout every thread reads from the buffer's head, [slots, rows]: after the head,
 * each slot's region, on a 64-byte stride of the buffer (cache lines of its own where the
 * buffer starts on a line, so that writers in different threads seldom share one): its
 * sequence number (an Int32, padded to 8 bytes), then its counters.
 */
interface Layout {
  ints: Int32Array;
  floats: Float64Array;
  slots: number;
  rows: number;
  /** Counters per slot. */
  width: number;
  /** Bytes from one slot's region to the next. */
  stride: number;
}

const LINE = 64;

function layoutOf(buffer: SharedArrayBuffer): Layout {
  const ints = new Int32Array(buffer);
  const [slots, rows] = [ints[0]!, ints[1]!];
  const width = COUNTERS + rows * ROW;
  return { ints, floats: new Float64Array(buffer), slots, rows, width, stride: strideOf(width) };
}

const strideOf = (width: number) => Math.ceil((8 + width * 8) / LINE) * LINE;
/** Slot `slot`'s sequence number, as an Int32 index. */
const sequenceAt = (l: Layout, slot: number) => (LINE + slot * l.stride) / 4;
/** Slot `slot`'s first counter, as a Float64 index. */
const countersAt = (l: Layout, slot: number) => (LINE + slot * l.stride + 8) / 8;

/**
 * A buffer for `slots` writers of one version's counters, whose configuration allows
 * batches up to `maxBatchSize` (0: none): its batch tables hold that many sizes, at most `maxRows`.
 */
export function sharedStatsBuffer(slots: number, maxBatchSize: number, maxRows = MAX_BATCH_ROWS): SharedArrayBuffer {
  const rows = Math.min(Math.max(1, maxBatchSize), maxRows);
  const buffer = new SharedArrayBuffer(LINE + slots * strideOf(COUNTERS + rows * ROW));
  new Int32Array(buffer, 0, 2).set([slots, rows]);
  return buffer;
}

/** The number of writers `buffer` has slots for. */
export function sharedStatsSlots(buffer: SharedArrayBuffer): number {
  return layoutOf(buffer).slots;
}

/** One thread's writer of its slot: the record methods of ModelStats that a frontend worker's requests need. */
export class SharedStatsWriter {
  readonly #ints: Int32Array;
  readonly #v: Float64Array;
  /** The slot's sequence number (Int32 index) and first counter (Float64 index). */
  readonly #sequence: number;
  readonly #base: number;
  readonly #rows: number;

  /** The writer of `slot`, which no other thread writes, ever (slots are never handed to a second writer). */
  constructor(buffer: SharedArrayBuffer, slot: number) {
    const l = layoutOf(buffer);
    if (!(Number.isInteger(slot) && slot >= 0 && slot < l.slots)) throw new RangeError(`no statistics slot ${slot} in a buffer of ${l.slots}`);
    this.#ints = l.ints;
    this.#v = l.floats;
    this.#sequence = sequenceAt(l, slot);
    this.#base = countersAt(l, slot);
    this.#rows = l.rows;
  }

  /** ModelStats.recordSuccess. */
  recordSuccess(requestNs: number, queueNs: number, inNs: number, inferNs: number, outNs: number): void {
    const v = this.#v;
    const b = this.#base;
    this.#begin();
    add(v, b + SUCCESS, requestNs);
    add(v, b + QUEUE, queueNs);
    add(v, b + COMPUTE_INPUT, inNs);
    add(v, b + COMPUTE_INFER, inferNs);
    add(v, b + COMPUTE_OUTPUT, outNs);
    v[b + METRIC_US] += wholeUs(requestNs);
    v[b + METRIC_US + 1] += wholeUs(queueNs);
    v[b + METRIC_US + 2] += wholeUs(inNs);
    v[b + METRIC_US + 3] += wholeUs(inferNs);
    v[b + METRIC_US + 4] += wholeUs(outNs);
    v[b + LAST_INFERENCE] = Date.now();
    this.#end();
  }

  /** ModelStats.recordCacheHit. */
  recordCacheHit(requestNs: number, queueNs: number, lookupNs: number): void {
    const v = this.#v;
    const b = this.#base;
    this.#begin();
    add(v, b + SUCCESS, requestNs);
    add(v, b + QUEUE, queueNs);
    add(v, b + CACHE_HIT, lookupNs);
    v[b + METRIC_US] += wholeUs(requestNs);
    v[b + METRIC_US + 1] += wholeUs(queueNs);
    v[b + METRIC_US + 5] += wholeUs(lookupNs);
    v[b + LAST_INFERENCE] = Date.now();
    this.#end();
  }

  /** ModelStats.recordCacheMiss. */
  recordCacheMiss(lookupAndInsertNs: number): void {
    const v = this.#v;
    const b = this.#base;
    this.#begin();
    add(v, b + CACHE_MISS, lookupAndInsertNs);
    v[b + METRIC_US + 6] += wholeUs(lookupAndInsertNs);
    this.#end();
  }

  /** ModelStats.recordExecution; false (and nothing counted) when the batch table has no room for `batchSize`. */
  recordExecution(batchSize: number, inNs: number, inferNs: number, outNs: number): boolean {
    const row = this.#row(batchSize);
    if (row < 0) return false;
    const v = this.#v;
    const b = this.#base;
    this.#begin();
    if (v[row] === 0) v[row] = batchSize;
    v[b + INFERENCE_COUNT] += batchSize;
    v[b + EXECUTION_COUNT] += 1;
    v[row + 1] += 1;
    v[row + 2] += Math.round(inNs);
    v[row + 3] += Math.round(inferNs);
    v[row + 4] += Math.round(outNs);
    this.#end();
    return true;
  }

  /** ModelStats.recordFailure. */
  recordFailure(requestNs: number, reason: FailureReason): void {
    const v = this.#v;
    const b = this.#base;
    this.#begin();
    add(v, b + FAIL, requestNs);
    v[b + FAILURES + FAILURE_REASONS.indexOf(reason)] += 1;
    v[b + LAST_INFERENCE] = Date.now();
    this.#end();
  }

  /** The index of `batchSize`'s row (claimed when new), or -1 when every row holds another size. */
  #row(batchSize: number): number {
    const v = this.#v;
    const first = this.#base + COUNTERS;
    for (let k = 0; k < this.#rows; k++) {
      const i = first + ((batchSize + k) % this.#rows) * ROW;
      if (v[i] === batchSize || v[i] === 0) return i;
    }
    return -1;
  }

  #begin(): void {
    Atomics.add(this.#ints, this.#sequence, 1);
  }

  #end(): void {
    Atomics.add(this.#ints, this.#sequence, 1);
  }
}

function add(v: Float64Array, at: number, ns: number): void {
  v[at] += 1;
  v[at + 1] += Math.round(ns); // as ModelStats' add: the wire wants whole ns
}

/**
 * The main thread's reader of one version's buffer: fold() adds to `stats` what every
 * slot counted since the last fold, as if its requests had been recorded there.
 */
export class SharedStatsReader {
  readonly #l: Layout;
  /** Each slot's counters as last folded (the slot's `width` counters from slot × width). */
  readonly #seen: Float64Array;
  /** Each slot's sequence number as last folded (-1: never). */
  readonly #seenSequence: Int32Array;
  readonly #now: Float64Array;

  constructor(buffer: SharedArrayBuffer) {
    const l = layoutOf(buffer);
    this.#l = l;
    this.#seen = new Float64Array(l.slots * l.width);
    this.#seenSequence = new Int32Array(l.slots).fill(-1);
    this.#now = new Float64Array(l.width);
  }

  fold(stats: ModelStats): void {
    for (let slot = 0; slot < this.#l.slots; slot++) {
      const sequence = this.#read(slot);
      if (sequence === this.#seenSequence[slot]) continue;
      this.#seenSequence[slot] = sequence;
      this.#apply(stats, slot * this.#l.width);
    }
  }

  /** Copies the slot's counters into #now, between two equal even sequence numbers; returns that number. */
  #read(slot: number): number {
    const l = this.#l;
    const { ints, floats, width } = l;
    const at = sequenceAt(l, slot);
    const base = countersAt(l, slot);
    let waitedSince = 0;
    for (let spins = 0; ; spins++) {
      const before = Atomics.load(ints, at);
      if (before === this.#seenSequence[slot]) return before;
      // After WRITER_WAIT_MS the writer's thread ended mid-update (terminated): what it wrote is read as it stands.
      const ended = waitedSince > 0 && performance.now() - waitedSince > WRITER_WAIT_MS;
      if ((before & 1) === 0 || ended) {
        for (let i = 0; i < width; i++) this.#now[i] = floats[base + i]!;
        // A read-modify-write (that changes nothing): no read of the counters above moves past it.
        if (Atomics.compareExchange(ints, at, before, before) === before) return before;
      }
      // A writer is mid-update: it finishes within a microsecond, or once its thread runs
      // again if it was preempted (a time slice, a few ms), so give way now and then.
      if (spins % 64 === 63) {
        waitedSince ||= performance.now();
        Atomics.wait(SPIN, 0, 0, 0.05);
      }
    }
  }

  #apply(s: ModelStats, base: number): void {
    const now = this.#now;
    const seen = this.#seen;
    const d = (i: number) => now[i]! - seen[base + i]!;
    const duration = (into: { count: number; ns: number }, i: number) => {
      into.count += d(i);
      into.ns += d(i + 1);
    };
    duration(s.success, SUCCESS);
    duration(s.fail, FAIL);
    duration(s.queue, QUEUE);
    duration(s.computeInput, COMPUTE_INPUT);
    duration(s.computeInfer, COMPUTE_INFER);
    duration(s.computeOutput, COMPUTE_OUTPUT);
    duration(s.cacheHit, CACHE_HIT);
    duration(s.cacheMiss, CACHE_MISS);
    s.inferenceCount += d(INFERENCE_COUNT);
    s.executionCount += d(EXECUTION_COUNT);
    s.lastInference = Math.max(s.lastInference, now[LAST_INFERENCE]!);
    FAILURE_REASONS.forEach((reason, k) => {
      s.failures[reason] += d(FAILURES + k);
    });
    const us = s.metricUs;
    us.request += d(METRIC_US);
    us.queue += d(METRIC_US + 1);
    us.computeInput += d(METRIC_US + 2);
    us.computeInfer += d(METRIC_US + 3);
    us.computeOutput += d(METRIC_US + 4);
    us.cacheHit += d(METRIC_US + 5);
    us.cacheMiss += d(METRIC_US + 6);
    for (let r = 0; r < this.#l.rows; r++) {
      const i = COUNTERS + r * ROW;
      const size = now[i]!;
      const executions = d(i + 1);
      // Nothing new in the row (an update read in part, after a writer's long stall, may have added durations alone).
      if (executions === 0 && d(i + 2) === 0 && d(i + 3) === 0 && d(i + 4) === 0) continue;
      if (size === 0) {
        // A row read before its size (only an update read in part leaves one): kept unseen for the next fold.
        for (let k = 0; k < ROW; k++) now[i + k] = seen[base + i + k]!;
        continue;
      }
      let b = s.batch.get(size);
      if (!b) {
        b = { batch_size: size, compute_input: { count: 0, ns: 0 }, compute_infer: { count: 0, ns: 0 }, compute_output: { count: 0, ns: 0 } };
        s.batch.set(size, b);
      }
      b.compute_input.count += executions;
      b.compute_infer.count += executions;
      b.compute_output.count += executions;
      b.compute_input.ns += d(i + 2);
      b.compute_infer.ns += d(i + 3);
      b.compute_output.ns += d(i + 4);
    }
    seen.set(now, base);
  }
}

/** How long a fold waits for a writer to finish an update before it takes the writer's thread for ended. */
const WRITER_WAIT_MS = 100;

/** Something to wait on briefly while a writer finishes (never notified). */
const SPIN = new Int32Array(new SharedArrayBuffer(4));
