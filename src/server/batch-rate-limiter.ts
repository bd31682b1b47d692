/**
 * @module The rate limiter (S-19) while the scheduling thread runs (#30 item 2), the main
 * thread's side. One RateLimiter, on that thread (batch-thread-entry.ts), holds every
 * resource, so that the rate-limited ONNX Runtime versions scheduled there and the
 * instances that stay on the main thread (TypeScript, Python, OpenVINO models) take their
 * turns from one view, in Triton's order. register() checks the flags here, so a load
 * fails with Triton's reason as on one thread, and gives the thread the claim;
 * acquire() and release() are messages to it, acquire answered with `granted`.
 */
import { internal } from "../core/errors.ts";
import { RateLimiter, type Limiter, type RateLimitClaim, type RateLimitResourceFlag } from "../scheduler/rate-limiter.ts";
import type { ModelRateLimiter } from "../core/model-config-types.ts";
import type { ToBatch } from "./batch-protocol.ts";

export class ThreadRateLimiter implements Limiter {
  readonly #flags: readonly RateLimitResourceFlag[];
  /** The flags' check and each claim's resource keys, as the thread's limiter makes them. */
  readonly #check: RateLimiter;
  readonly #send: (m: ToBatch) => void;
  readonly #waiting = new Map<number, { resolve: () => void; reject: (e: unknown) => void }>();
  #nextClaim = 1;
  #nextTicket = 0;
  #failed: string | undefined;

  /** `send`: to the scheduling thread (which starts with the first claim). */
  constructor(flags: readonly RateLimitResourceFlag[], send: (m: ToBatch) => void) {
    this.#flags = flags;
    this.#check = new RateLimiter(flags);
    this.#send = send;
  }

  register(model: string, spec: ModelRateLimiter | undefined, device: number): RateLimitClaim {
    const { needs, priority } = this.#check.register(model, spec, device);
    const id = this.#nextClaim++;
    this.#send({ t: "claim", id, flags: this.#flags, model, spec: spec ?? {}, device });
    return { needs, priority, executions: 0, id };
  }

  acquire(claim: RateLimitClaim): Promise<void> {
    if (this.#failed) return Promise.reject(failed(this.#failed));
    const ticket = this.#nextTicket++;
    return new Promise((resolve, reject) => {
      this.#waiting.set(ticket, { resolve, reject });
      this.#send({ t: "acquire", claim: claim.id!, ticket });
    });
  }

  release(claim: RateLimitClaim): void {
    if (!this.#failed) this.#send({ t: "release", claim: claim.id! });
  }

  /** The thread gave `ticket`'s claim its resources. */
  granted(ticket: number): void {
    this.#waiting.get(ticket)?.resolve();
    this.#waiting.delete(ticket);
  }

  /** The scheduling thread failed: what waits is refused, and so is every later turn. */
  fail(message: string): void {
    this.#failed = message;
    for (const w of this.#waiting.values()) w.reject(failed(message));
    this.#waiting.clear();
  }
}

const failed = (message: string) => internal(`the rate limiter's thread failed: ${message}`);
