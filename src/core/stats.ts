/**
 * @module Per-model-version counters in the shape of Triton's statistics extension
 * (ModelStatistics: inference_stats, batch_stats, counts, last_inference).
 */

export interface Duration {
  count: number;
  ns: number;
}

const zero = (): Duration => ({ count: 0, ns: 0 });

export interface BatchStat {
  batch_size: number;
  compute_input: Duration;
  compute_infer: Duration;
  compute_output: Duration;
}

/** Triton's nv_inference_request_failure reasons. */
export type FailureReason = "REJECTED" | "CANCELED" | "BACKEND" | "OTHER";
export const FAILURE_REASONS: readonly FailureReason[] = ["REJECTED", "CANCELED", "BACKEND", "OTHER"];

/** A decoupled model's statistics for the responses at one index of their requests (Triton's InferResponseStatistics). */
export interface ResponseStat {
  compute_infer: Duration;
  compute_output: Duration;
  success: Duration;
  fail: Duration;
  empty_response: Duration;
  cancel: Duration;
}

export type ResponseOutcomeKind = "success" | "fail" | "empty_response" | "cancel";

export class ModelStats {
  success = zero();
  fail = zero();
  queue = zero();
  computeInput = zero();
  computeInfer = zero();
  computeOutput = zero();
  cacheHit = zero();
  cacheMiss = zero();
  inferenceCount = 0;
  executionCount = 0;
  lastInference = 0;
  readonly batch = new Map<number, BatchStat>();
  readonly failures: Record<FailureReason, number> = { REJECTED: 0, CANCELED: 0, BACKEND: 0, OTHER: 0 };
  /** Decoupled models: response index → its statistics. */
  readonly responses = new Map<number, ResponseStat>();
  /**
   * The nv_inference_*_duration_us and nv_cache_*_duration_per_model counters: as Triton's
   * InferenceStatsAggregator increments them, each request's duration in whole
   * microseconds (truncated), summed.
   */
  readonly metricUs = { request: 0, queue: 0, computeInput: 0, computeInfer: 0, computeOutput: 0, cacheHit: 0, cacheMiss: 0 };

  /**
   * The `index`-th response of a decoupled model's request: `inferNs` is the time the
   * model took to produce it (since the request's execution began or its previous
   * response), `outputNs` the server's time to convert it; `kind` says how it ended.
   */
  recordResponse(index: number, kind: ResponseOutcomeKind, inferNs: number, outputNs: number): void {
    let r = this.responses.get(index);
    if (!r) {
      r = { compute_infer: zero(), compute_output: zero(), success: zero(), fail: zero(), empty_response: zero(), cancel: zero() };
      this.responses.set(index, r);
    }
    if (kind === "success") {
      add(r.compute_infer, inferNs);
      add(r.compute_output, outputNs);
    }
    add(r[kind], inferNs + outputNs);
  }

  /** One successful request: its end-to-end, queue and (batch's) compute durations. */
  recordSuccess(requestNs: number, queueNs: number, inNs: number, inferNs: number, outNs: number): void {
    add(this.success, requestNs);
    add(this.queue, queueNs);
    add(this.computeInput, inNs);
    add(this.computeInfer, inferNs);
    add(this.computeOutput, outNs);
    const us = this.metricUs;
    us.request += wholeUs(requestNs);
    us.queue += wholeUs(queueNs);
    us.computeInput += wholeUs(inNs);
    us.computeInfer += wholeUs(inferNs);
    us.computeOutput += wholeUs(outNs);
    this.lastInference = Date.now();
  }

  /** One backend execution of `batchSize` inferences (Triton's UpdateInferBatchStats). */
  recordExecution(batchSize: number, inNs: number, inferNs: number, outNs: number): void {
    this.inferenceCount += batchSize;
    this.executionCount += 1;
    let b = this.batch.get(batchSize);
    if (!b) {
      b = { batch_size: batchSize, compute_input: zero(), compute_infer: zero(), compute_output: zero() };
      this.batch.set(batchSize, b);
    }
    add(b.compute_input, inNs);
    add(b.compute_infer, inferNs);
    add(b.compute_output, outNs);
  }

  /** A request answered from the response cache: success and queue, not compute (Triton's UpdateSuccessCacheHit). */
  recordCacheHit(requestNs: number, queueNs: number, lookupNs: number): void {
    add(this.success, requestNs);
    add(this.queue, queueNs);
    add(this.cacheHit, lookupNs);
    const us = this.metricUs;
    us.request += wholeUs(requestNs);
    us.queue += wholeUs(queueNs);
    us.cacheHit += wholeUs(lookupNs);
    this.lastInference = Date.now();
  }

  /** A cache miss: the time spent looking up and inserting. */
  recordCacheMiss(lookupAndInsertNs: number): void {
    add(this.cacheMiss, lookupAndInsertNs);
    this.metricUs.cacheMiss += wholeUs(lookupAndInsertNs);
  }

  recordFailure(requestNs: number, reason: FailureReason): void {
    add(this.fail, requestNs);
    this.failures[reason]++;
    this.lastInference = Date.now();
  }

  toJSON(name: string, version: string) {
    return {
      name,
      version,
      last_inference: this.lastInference,
      inference_count: this.inferenceCount,
      execution_count: this.executionCount,
      inference_stats: {
        success: this.success,
        fail: this.fail,
        queue: this.queue,
        compute_input: this.computeInput,
        compute_infer: this.computeInfer,
        compute_output: this.computeOutput,
        cache_hit: this.cacheHit,
        cache_miss: this.cacheMiss,
      },
      batch_stats: [...this.batch.values()].sort((a, b) => a.batch_size - b.batch_size),
      memory_usage: [],
      response_stats: Object.fromEntries([...this.responses].sort((a, b) => a[0] - b[0]).map(([i, r]) => [String(i), r])),
    };
  }
}

function add(d: Duration, ns: number): void {
  d.count += 1;
  d.ns += Math.round(ns); // a share of a batch's time may be fractional; the wire wants uint64
}

/** A duration in whole microseconds, as Triton's metrics take it (ns / 1000 in integers). */
export function wholeUs(ns: number): number {
  return ns > 0 ? Math.floor(ns / 1000) : 0;
}
