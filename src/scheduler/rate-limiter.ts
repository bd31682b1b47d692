/**
 * @module Triton's rate limiter (S-19, `--rate-limit=execution_count`): an instance runs
 * a batch only when every resource its instance group's `rate_limiter` names is free,
 * per device or, for a `global` resource, across devices. A resource has the larger of
 * `--rate-limit-resource` and the most any instance asks for. When several waiting
 * instances could run, the one with the lowest executions × priority goes first (a
 * priority of 2 gets half the chances of 1), then the one waiting longest.
 *
 * The schedulers form a batch first and the instance then waits here; Triton's picks
 * the instance before the batch is formed, so batches may differ in size, never in
 * what runs at once.
 */
import { invalidArg } from "../core/errors.ts";
import type { ModelRateLimiter } from "../core/model-config-types.ts";

export interface RateLimitResourceFlag {
  name: string;
  count: number;
  device?: number;
}

/** One instance's claim: resource keys and counts, and its priority. */
export interface RateLimitClaim {
  readonly needs: readonly (readonly [key: string, count: number])[];
  readonly priority: number;
  executions: number;
  /** Where the limiter runs on the scheduling thread (server/batch-rate-limiter.ts): the claim's number there. */
  readonly id?: number;
}

/** What the loader asks of a rate limiter, wherever it runs: this thread's RateLimiter or the scheduling thread's. */
export interface Limiter {
  register(model: string, spec: ModelRateLimiter | undefined, device: number): RateLimitClaim;
  acquire(claim: RateLimitClaim): Promise<void>;
  release(claim: RateLimitClaim): void;
  /** The claim's instance is closed (the limiter may forget it). */
  unregister?(claim: RateLimitClaim): void;
}

interface Waiter {
  claim: RateLimitClaim;
  resolve: () => void;
}

const keyOf = (name: string, global: boolean, device: number) => (global ? `global:${name}` : `${device}:${name}`);

export class RateLimiter implements Limiter {
  readonly #flags: readonly RateLimitResourceFlag[];
  /** The most any registered instance asks of each resource. */
  readonly #asked = new Map<string, number>();
  readonly #inUse = new Map<string, number>();
  readonly #waiting: Waiter[] = [];

  constructor(flags: readonly RateLimitResourceFlag[]) {
    this.#flags = flags;
  }

  /** What --rate-limit-resource gives `name` on `device` (a flag without a device applies to every device). */
  #flagCount(name: string, global: boolean, device: number): number | undefined {
    const f = this.#flags.find((r) => r.name === name && (global || r.device === undefined || r.device === device));
    return f?.count;
  }

  #capacity(key: string): number {
    const [where, ...rest] = key.split(":");
    const name = rest.join(":");
    const global = where === "global";
    return Math.max(this.#flagCount(name, global, global ? 0 : Number(where)) ?? 0, this.#asked.get(key) ?? 0);
  }

  /**
   * The claim of an instance of `model` on `device` with this `rate_limiter`; throws
   * INVALID_ARG when --rate-limit-resource leaves less than it needs.
   */
  register(model: string, spec: ModelRateLimiter | undefined, device: number): RateLimitClaim {
    const needs: [string, number][] = [];
    for (const r of spec?.resources ?? []) {
      const name = r.name ?? "";
      const count = r.count ?? 0;
      if (!name) throw invalidArg(`model '${model}': a rate_limiter resource needs a name`);
      const flag = this.#flagCount(name, !!r.global, device);
      if (flag !== undefined && flag < count) {
        throw invalidArg(
          `Resource count for '${name}' is limited to ${flag} which will prevent scheduling of one or more model instances, the minimum required count is ${count}`,
        );
      }
      const key = keyOf(name, !!r.global, device);
      needs.push([key, count]);
      this.#asked.set(key, Math.max(this.#asked.get(key) ?? 0, count));
    }
    return { needs, priority: Math.max(1, spec?.priority ?? 0), executions: 0 };
  }

  /** Resolves once `claim`'s resources are held for it; pair with release(). */
  acquire(claim: RateLimitClaim): Promise<void> {
    if (claim.needs.length === 0) {
      claim.executions++;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.#waiting.push({ claim, resolve });
      this.#dispatch();
    });
  }

  release(claim: RateLimitClaim): void {
    for (const [key, count] of claim.needs) this.#inUse.set(key, (this.#inUse.get(key) ?? 0) - count);
    this.#dispatch();
  }

  #fits(claim: RateLimitClaim): boolean {
    return claim.needs.every(([key, count]) => (this.#inUse.get(key) ?? 0) + count <= this.#capacity(key));
  }

  #dispatch(): void {
    for (;;) {
      let best = -1;
      for (let i = 0; i < this.#waiting.length; i++) {
        const c = this.#waiting[i]!.claim;
        if (!this.#fits(c)) continue;
        if (best < 0 || c.executions * c.priority < this.#waiting[best]!.claim.executions * this.#waiting[best]!.claim.priority) best = i;
      }
      if (best < 0) return;
      const [w] = this.#waiting.splice(best, 1);
      for (const [key, count] of w!.claim.needs) this.#inUse.set(key, (this.#inUse.get(key) ?? 0) + count);
      w!.claim.executions++;
      w!.resolve();
    }
  }
}
