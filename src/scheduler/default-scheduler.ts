/**
 * @module Triton's default scheduler: no batching across requests; each request runs on
 * the next free instance, so at most `instances.length` run at once and the rest wait in
 * arrival order. A waiting request that is cancelled leaves the queue at once (S-20).
 */
import { InflightDrain } from "./drain.ts";
import { nowNs } from "../core/clock.ts";
import { cancelled, unavailable } from "../core/errors.ts";
import { whenCancelled } from "../core/cancel.ts";
import type { BackendInstance } from "../backends/backend.ts";
import type { PreparedRequest } from "../core/request-validate.ts";
import type { ModelStats } from "../core/stats.ts";
import type { Scheduler, ScheduledResult } from "./scheduler.ts";

interface Waiting {
  request: PreparedRequest;
  enqueuedAt: number;
  resolve: (r: ScheduledResult) => void;
  reject: (e: unknown) => void;
  /** Stops listening for the request's cancellation. */
  forget: () => void;
}

export class DefaultScheduler implements Scheduler {
  readonly #free: BackendInstance[];
  readonly #queue: Waiting[] = [];
  readonly #drain = new InflightDrain();
  readonly #modelName: string;
  readonly #stats: Pick<ModelStats, "recordExecution">;

  constructor(modelName: string, instances: readonly BackendInstance[], stats: Pick<ModelStats, "recordExecution">) {
    this.#modelName = modelName;
    this.#stats = stats;
    this.#free = [...instances];
  }

  enqueue(request: PreparedRequest): Promise<ScheduledResult> {
    if (this.#drain.stopping) {
      return Promise.reject(unavailable(`Server is stopping, scheduler for model '${this.#modelName}' has stopped accepting new inference requests`));
    }
    const signal = request.request.signal;
    if (signal?.aborted) return Promise.reject(cancelled(request.request.id));
    this.#drain.enter();
    const enqueuedAt = nowNs();
    // A free instance and nobody waiting: run now, without a queue entry.
    if (this.#queue.length === 0 && this.#free.length > 0) return this.#run(this.#free.pop()!, request, enqueuedAt, nowNs());
    return new Promise<ScheduledResult>((resolve, reject) => {
      const job: Waiting = { request, enqueuedAt, resolve, reject, forget: () => {} };
      job.forget = whenCancelled(signal, () => this.#cancel(job));
      this.#queue.push(job);
      this.#dispatch();
    });
  }

  /** A waiting request was cancelled: out of the queue, answered CANCELLED. */
  #cancel(job: Waiting): void {
    const i = this.#queue.indexOf(job);
    if (i < 0) return;
    this.#queue.splice(i, 1);
    job.reject(cancelled(job.request.request.id));
    this.#drain.leave();
  }

  #dispatch(): void {
    while (this.#free.length > 0 && this.#queue.length > 0) {
      const instance = this.#free.pop()!;
      const job = this.#queue.shift()!;
      job.forget();
      this.#run(instance, job.request, job.enqueuedAt, nowNs()).then(job.resolve, job.reject);
    }
  }

  async #run(instance: BackendInstance, request: PreparedRequest, enqueuedAt: number, start: number): Promise<ScheduledResult> {
    try {
      if (instance.executeRequests) {
        const rr = await instance.executeRequests([request]);
        const outcome = rr.outcomes[0]!;
        const computeInputNs = rr.computeInputNs ?? 0;
        const computeOutputNs = rr.computeOutputNs ?? 0;
        const computeInferNs = rr.computeInferNs ?? Math.max(0, nowNs() - start - computeInputNs - computeOutputNs);
        this.#stats.recordExecution(request.batchSize, computeInputNs, computeInferNs, computeOutputNs);
        if (outcome.error) throw outcome.error;
        return { outputs: outcome.outputs, parameters: outcome.parameters, queueNs: start - enqueuedAt, computeInputNs, computeInferNs, computeOutputNs };
      }
      const r = await instance.execute(request.inputs, request.outputNames);
      const computeInputNs = r.computeInputNs ?? 0;
      const computeOutputNs = r.computeOutputNs ?? 0;
      const computeInferNs = r.computeInferNs ?? Math.max(0, nowNs() - start - computeInputNs - computeOutputNs);
      this.#stats.recordExecution(request.batchSize, computeInputNs, computeInferNs, computeOutputNs);
      return { outputs: r.outputs, queueNs: start - enqueuedAt, computeInputNs, computeInferNs, computeOutputNs };
    } finally {
      this.#free.push(instance);
      this.#dispatch();
      this.#drain.leave();
    }
  }

  inflightCount(): number {
    return this.#drain.count;
  }

  pendingCount(): number {
    return this.#queue.length;
  }

  stop(): Promise<void> {
    return this.#drain.stop();
  }
}
