/**
 * @module Triton's scheduler queue (scheduler_utils.cc PriorityQueue): one FIFO per
 * priority level, level 1 first; each level has its ModelQueuePolicy (max_queue_size,
 * default timeout, REJECT or DELAY on expiry). Expired DELAY requests move to the
 * level's delayed queue, behind every unexpired request of that level.
 */
import { ServerError } from "../core/errors.ts";
import type { ModelDynamicBatching, ModelQueuePolicy } from "../core/model-config-types.ts";
import { logPrefix } from "../core/request.ts";

export interface Queued {
  /** Batch size the request carries (1 for non-batching models). */
  readonly batchSize: number;
  readonly enqueuedAt: number;
  /** Absolute ns deadline; 0 for none. Cleared when the request is delayed. */
  deadline: number;
}

class PolicyQueue<T extends Queued> {
  readonly main: T[] = [];
  readonly delayed: T[] = [];
  readonly #policy: Required<ModelQueuePolicy>;

  constructor(policy: ModelQueuePolicy | undefined) {
    this.#policy = {
      timeout_action: policy?.timeout_action ?? "REJECT",
      default_timeout_microseconds: policy?.default_timeout_microseconds ?? 0,
      allow_timeout_override: policy?.allow_timeout_override ?? false,
      max_queue_size: policy?.max_queue_size ?? 0,
    };
  }

  get size(): number {
    return this.main.length + this.delayed.length;
  }

  /** The deadline for a request asking for `timeoutUs` (0: none), per Triton's shorten-only rule. */
  deadlineFor(now: number, timeoutUs: number): number {
    let us = this.#policy.default_timeout_microseconds;
    if (this.#policy.allow_timeout_override && timeoutUs !== 0 && timeoutUs < us) us = timeoutUs;
    return us === 0 ? 0 : now + us * 1000;
  }

  full(): boolean {
    return this.#policy.max_queue_size !== 0 && this.size >= this.#policy.max_queue_size;
  }

  /** Moves or removes expired requests of the main queue; returns those to reject. */
  expire(now: number): T[] {
    const rejected: T[] = [];
    let kept = 0;
    for (const item of this.main) {
      if (item.deadline !== 0 && now > item.deadline) {
        if (this.#policy.timeout_action === "DELAY") {
          item.deadline = 0;
          this.delayed.push(item);
        } else {
          rejected.push(item);
        }
      } else {
        this.main[kept++] = item;
      }
    }
    this.main.length = kept;
    return rejected;
  }

  at(i: number): T | undefined {
    return i < this.main.length ? this.main[i] : this.delayed[i - this.main.length];
  }

  /** Removes `item` wherever it waits; false when it is not here. */
  remove(item: T): boolean {
    for (const list of [this.main, this.delayed]) {
      const i = list.indexOf(item);
      if (i >= 0) {
        list.splice(i, 1);
        return true;
      }
    }
    return false;
  }

  /** Removes the first `n` requests in queue order. */
  take(n: number): T[] {
    const fromMain = this.main.splice(0, Math.min(n, this.main.length));
    return n > fromMain.length ? fromMain.concat(this.delayed.splice(0, n - fromMain.length)) : fromMain;
  }
}

export class PriorityQueue<T extends Queued> {
  /** Index 0 is priority level 1 (or the only level when priority_levels is 0). */
  readonly #levels: PolicyQueue<T>[];
  readonly #defaultLevel: number;
  #size = 0;

  constructor(config: ModelDynamicBatching) {
    const levels = config.priority_levels ?? 0;
    this.#levels = [];
    if (levels === 0) {
      this.#levels.push(new PolicyQueue(config.default_queue_policy));
    } else {
      for (let l = 1; l <= levels; l++) {
        this.#levels.push(new PolicyQueue(config.priority_queue_policy?.[String(l)] ?? config.default_queue_policy));
      }
    }
    this.#defaultLevel = levels === 0 ? 0 : Math.min(Math.max(config.default_priority_level ?? 1, 1), levels) - 1;
  }

  get size(): number {
    return this.#size;
  }

  /** The level index a request with `priority` goes to: 0 or out of range means the default. */
  levelOf(priority: number): number {
    if (this.#levels.length === 1) return 0;
    return priority === 0 || priority > this.#levels.length ? this.#defaultLevel : priority - 1;
  }

  /**
   * Adds `make(deadline)` at `priority`; throws UNAVAILABLE "Exceeds maximum queue size"
   * (Triton's wording, with its request-id prefix) when that level is full.
   */
  enqueue(priority: number, timeoutUs: number, now: number, requestId: string | undefined, make: (deadline: number) => T): T {
    const queue = this.#levels[this.levelOf(priority)]!;
    if (queue.full()) {
      throw new ServerError("UNAVAILABLE", `${logPrefix(requestId)}Exceeds maximum queue size`, { reason: "REJECTED" });
    }
    const item = make(queue.deadlineFor(now, timeoutUs));
    queue.main.push(item);
    this.#size++;
    return item;
  }

  /** Applies the timeout policies at `now`; returns the requests to reject. */
  expire(now: number): T[] {
    const rejected: T[] = [];
    for (const q of this.#levels) rejected.push(...q.expire(now));
    this.#size -= rejected.length;
    return rejected;
  }

  /** The earliest deadline still pending, or 0. */
  closestDeadline(): number {
    let min = 0;
    for (const q of this.#levels) {
      for (const item of q.main) if (item.deadline !== 0 && (min === 0 || item.deadline < min)) min = item.deadline;
    }
    return min;
  }

  /** Requests in dequeue order: level by level, each level's main queue, then its delayed queue. */
  *ordered(): Generator<T> {
    for (const q of this.#levels) {
      for (let i = 0, item = q.at(0); item; item = q.at(++i)) yield item;
    }
  }

  /** Removes one request (a cancelled one, S-20) from whichever level holds it; false when none does. */
  remove(item: T): boolean {
    for (const q of this.#levels) {
      if (q.remove(item)) {
        this.#size--;
        return true;
      }
    }
    return false;
  }

  /** Removes the first `n` requests in dequeue order. */
  take(n: number): T[] {
    const out: T[] = [];
    for (const q of this.#levels) {
      if (out.length === n) break;
      out.push(...q.take(n - out.length));
    }
    this.#size -= out.length;
    return out;
  }
}
