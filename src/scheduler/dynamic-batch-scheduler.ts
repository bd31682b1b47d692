/**
 * @module Triton's DynamicBatchScheduler (dynamic_batch_scheduler.cc, reference §7.3,
 * §7.4): requests wait in a PriorityQueue; whenever an instance is free, a batch is
 * formed by GetDynamicBatch's rules (max_batch_size cap, preferred sizes,
 * max_queue_delay_microseconds measured from the oldest pending request, no merging of
 * requests whose shapes must match), run as one execution and split back per request.
 *
 * Differences from Triton's threads: one event loop does the work; a timer wakes it for
 * the queue delay and for request deadlines, so a queue timeout is answered when it
 * expires even while every instance is busy (Triton answers it once an instance frees).
 * A queued request that is cancelled leaves the queue at once, answered CANCELLED (S-20;
 * Triton finds it at the next batch formation).
 */
import { InflightDrain } from "./drain.ts";
import { ServerError, cancelled, unavailable } from "../core/errors.ts";
import { whenCancelled } from "../core/cancel.ts";
import { batchKey, batchRules, concatInputs, splitOutputs, type BatchRules } from "./batch.ts";
import { PriorityQueue, type Queued } from "./priority-queue.ts";
import { logPrefix } from "../core/request.ts";
import { systemClock, WakeTimer, type SchedulerClock } from "./timer.ts";
import type { BackendInstance } from "../backends/backend.ts";
import type { PreparedRequest } from "../core/request-validate.ts";
import type { ModelSignature } from "../core/signature.ts";
import type { ModelStats } from "../core/stats.ts";
import type { ModelDynamicBatching } from "../core/model-config-types.ts";
import type { Scheduler, ScheduledResult } from "./scheduler.ts";

interface Entry extends Queued {
  readonly prepared: PreparedRequest;
  readonly key: string;
  readonly resolve: (r: ScheduledResult) => void;
  readonly reject: (e: unknown) => void;
  /** Stops listening for the request's cancellation (set once queued). */
  forget: () => void;
  /** With preserve_ordering: the outcome, held until every earlier batch's is released. */
  outcome?: { ok: true; value: ScheduledResult } | { ok: false; error: unknown };
}

export interface DynamicBatchSchedulerOptions {
  modelName: string;
  instances: readonly BackendInstance[];
  signature: ModelSignature;
  /** The normalized dynamic_batching block (preferred sizes already defaulted). */
  config: ModelDynamicBatching;
  /** Where executions are counted (the scheduling thread counts them for the main thread's statistics). */
  stats: Pick<ModelStats, "recordExecution">;
  clock?: SchedulerClock;
}

const TIMEOUT_EXPIRED = "Request timeout expired";

export class DynamicBatchScheduler implements Scheduler {
  readonly #modelName: string;
  readonly #free: BackendInstance[];
  readonly #queue: PriorityQueue<Entry>;
  readonly #rules: BatchRules;
  readonly #stats: Pick<ModelStats, "recordExecution">;
  readonly #clock: SchedulerClock;
  readonly #maxBatch: number;
  readonly #preferred: ReadonlySet<number>;
  readonly #maxPreferred: number;
  readonly #delayNs: number;
  readonly #preserveOrdering: boolean;
  /** Dequeued entries in dequeue order, for preserve_ordering. */
  readonly #order: Entry[] = [];
  readonly #drain = new InflightDrain(() => this.#timer.cancel());
  readonly #timer: WakeTimer;

  constructor(opts: DynamicBatchSchedulerOptions) {
    this.#modelName = opts.modelName;
    this.#free = [...opts.instances];
    this.#queue = new PriorityQueue(opts.config);
    this.#rules = batchRules(opts.signature);
    this.#stats = opts.stats;
    this.#clock = opts.clock ?? systemClock;
    this.#timer = new WakeTimer(this.#clock, () => this.#schedule());
    this.#maxBatch = Math.max(1, opts.signature.maxBatchSize);
    this.#preferred = new Set(opts.config.preferred_batch_size ?? []);
    this.#maxPreferred = Math.max(0, ...this.#preferred);
    this.#delayNs = (opts.config.max_queue_delay_microseconds ?? 0) * 1000;
    this.#preserveOrdering = opts.config.preserve_ordering ?? false;
  }

  enqueue(prepared: PreparedRequest): Promise<ScheduledResult> {
    const id = prepared.request.id;
    if (this.#drain.stopping) {
      return Promise.reject(unavailable(`${logPrefix(id)}Server is stopping, scheduler for model has stopped accepting new inference requests`));
    }
    const signal = prepared.request.signal;
    if (signal?.aborted) return Promise.reject(cancelled(id));
    return new Promise<ScheduledResult>((resolve, reject) => {
      const { priority, timeoutUs } = prepared.control;
      const now = this.#clock.now();
      const entry = this.#queue.enqueue(priority, timeoutUs, now, id, (deadline) => ({
        prepared,
        key: batchKey(prepared.inputs, this.#rules),
        batchSize: prepared.batchSize,
        enqueuedAt: now,
        deadline,
        resolve,
        reject,
        forget: () => {},
      }));
      entry.forget = whenCancelled(signal, () => this.#cancel(entry));
      this.#drain.enter();
      this.#schedule();
    });
  }

  /** A queued request was cancelled: out of its priority level, answered CANCELLED; the batch decision is made again. */
  #cancel(entry: Entry): void {
    if (!this.#queue.remove(entry)) return;
    this.#settled(1);
    entry.reject(cancelled(entry.prepared.request.id));
    this.#schedule();
  }

  inflightCount(): number {
    return this.#drain.count;
  }

  pendingCount(): number {
    return this.#queue.size;
  }

  stop(): Promise<void> {
    return this.#drain.stop();
  }

  /** Rejects expired requests, sends every batch that is due, and arms the timer for the next decision. */
  #schedule(): void {
    const now = this.#clock.now();
    for (const e of this.#queue.expire(now)) {
      e.forget();
      this.#settled(1);
      e.reject(new ServerError("UNAVAILABLE", TIMEOUT_EXPIRED, { reason: "REJECTED" }));
    }
    let waitNs = 0;
    while (this.#free.length > 0 && this.#queue.size > 0) {
      const next = this.#nextBatch(now);
      if (next.count === 0) {
        waitNs = next.waitNs;
        break;
      }
      const batch = this.#queue.take(next.count);
      for (const e of batch) e.forget();
      void this.#execute(this.#free.pop()!, batch, now);
    }
    this.#arm(now, waitNs);
  }

  /**
   * GetDynamicBatch: how many queued requests (in dequeue order) to send now, or how
   * long to wait for more. Requests are added while the total stays ≤ max_batch_size
   * and their batch keys match the first one's.
   */
  #nextBatch(now: number): { count: number; waitNs: number } {
    let pending = 0;
    let count = 0;
    let bestCount = 0;
    let sendNow = false;
    let key = "";
    let oldest = Infinity;
    for (const e of this.#queue.ordered()) {
      const size = e.batchSize;
      if (count === 0) {
        key = e.key;
      } else {
        if (pending + size > this.#maxPreferred && bestCount === 0) bestCount = count;
        if (pending + size > this.#maxBatch || e.key !== key) {
          sendNow = true;
          break;
        }
      }
      pending += size;
      count++;
      if (e.enqueuedAt < oldest) oldest = e.enqueuedAt;
      if (this.#preferred.has(pending)) bestCount = count;
    }
    const age = now - oldest;
    const delayExceeded = this.#delayNs !== 0 && age >= this.#delayNs;
    if (bestCount !== 0 && !delayExceeded) return { count: bestCount, waitNs: 0 };
    if (sendNow || pending >= this.#maxPreferred || delayExceeded || this.#delayNs === 0) return { count, waitNs: 0 };
    return { count: 0, waitNs: this.#delayNs - age };
  }

  /** One timer for the earlier of the queue-delay wake-up and the closest request deadline. */
  #arm(now: number, waitNs: number): void {
    let at = waitNs > 0 ? now + waitNs : 0;
    const deadline = this.#queue.closestDeadline();
    if (deadline !== 0) {
      const expiry = deadline + 1; // a request expires once now > deadline
      if (at === 0 || expiry < at) at = expiry;
    }
    this.#timer.set(at, now);
  }

  async #execute(instance: BackendInstance, entries: Entry[], dispatchedAt: number): Promise<void> {
    if (this.#preserveOrdering) this.#order.push(...entries);
    try {
      if (instance.executeRequests) {
        await this.#executeRequests(instance, entries, dispatchedAt);
        return;
      }
      const single = entries.length === 1;
      const inputs = single
        ? entries[0]!.prepared.inputs
        : concatInputs(
            entries.map((e) => e.prepared.inputs),
            this.#rules.ragged,
          );
      const names = single ? entries[0]!.prepared.outputNames : unionOfOutputs(entries);
      const start = this.#clock.now();
      const r = await instance.execute(inputs, names);
      const total = this.#clock.now() - start;
      const computeInputNs = r.computeInputNs ?? 0;
      const computeOutputNs = r.computeOutputNs ?? 0;
      const computeInferNs = r.computeInferNs ?? Math.max(0, total - computeInputNs - computeOutputNs);
      const sizes = entries.map((e) => e.batchSize);
      const perRequest = single ? [r.outputs] : splitOutputs(r.outputs, sizes, this.#modelName);
      this.#stats.recordExecution(
        sizes.reduce((a, b) => a + b, 0),
        computeInputNs,
        computeInferNs,
        computeOutputNs,
      );
      entries.forEach((e, i) =>
        this.#finish(e, {
          ok: true,
          value: { outputs: perRequest[i]!, queueNs: dispatchedAt - e.enqueuedAt, computeInputNs, computeInferNs, computeOutputNs },
        }),
      );
    } catch (error) {
      for (const e of entries) this.#finish(e, { ok: false, error });
    } finally {
      this.#free.push(instance);
      this.#schedule();
    }
  }

  /** Per-request execution: the requests go to the instance unmerged, each with its own outcome. */
  async #executeRequests(instance: BackendInstance, entries: Entry[], dispatchedAt: number): Promise<void> {
    const start = this.#clock.now();
    const r = await instance.executeRequests!(entries.map((e) => e.prepared));
    const total = this.#clock.now() - start;
    const computeInputNs = r.computeInputNs ?? 0;
    const computeOutputNs = r.computeOutputNs ?? 0;
    const computeInferNs = r.computeInferNs ?? Math.max(0, total - computeInputNs - computeOutputNs);
    this.#stats.recordExecution(
      entries.reduce((a, e) => a + e.batchSize, 0),
      computeInputNs,
      computeInferNs,
      computeOutputNs,
    );
    entries.forEach((e, i) => {
      const o = r.outcomes[i]!;
      this.#finish(
        e,
        o.error
          ? { ok: false, error: o.error }
          : {
              ok: true,
              value: { outputs: o.outputs, parameters: o.parameters, queueNs: dispatchedAt - e.enqueuedAt, computeInputNs, computeInferNs, computeOutputNs },
            },
      );
    });
  }

  #finish(entry: Entry, outcome: NonNullable<Entry["outcome"]>): void {
    if (!this.#preserveOrdering) {
      this.#release(entry, outcome);
      return;
    }
    entry.outcome = outcome;
    while (this.#order.length > 0 && this.#order[0]!.outcome) {
      const e = this.#order.shift()!;
      this.#release(e, e.outcome!);
    }
  }

  #release(entry: Entry, outcome: NonNullable<Entry["outcome"]>): void {
    this.#settled(1);
    if (outcome.ok) entry.resolve(outcome.value);
    else entry.reject(outcome.error);
  }

  #settled(n: number): void {
    this.#drain.leave(n);
  }
}

function unionOfOutputs(entries: readonly Entry[]): string[] {
  const names = new Set<string>();
  for (const e of entries) for (const n of e.prepared.outputNames) names.add(n);
  return [...names];
}
