/**
 * @module The rate limiter (S-19) while the scheduling thread runs (#30 item 2): the main
 * thread's side (ThreadRateLimiter) and the thread's (RateLimiterHost). One RateLimiter,
 * on that thread (batch-thread-entry.ts), holds every resource, so that the rate-limited
 * ONNX Runtime versions scheduled there and the instances that stay on the main thread
 * (TypeScript, Python, OpenVINO models) take their turns from one view, in Triton's order.
 * register() checks the flags on the main thread, so a load fails with Triton's reason as
 * on one thread, and gives the thread the claim; acquire() and release() are messages to
 * it, acquire answered with `granted`.
 */
import { RateLimiter, type Limiter, type RateLimitClaim, type RateLimitResourceFlag } from "../scheduler/rate-limiter.ts";
import type { ModelRateLimiter } from "../core/model-config-types.ts";
import type { ToBatch } from "./batch-protocol.ts";

export class ThreadRateLimiter implements Limiter {
  readonly #flags: readonly RateLimitResourceFlag[];
  /**
   * The flags' check and each claim's resource keys, as the thread's limiter makes them;
   * the main thread's own limiter once the thread has failed (fail()).
   */
  readonly #local: RateLimiter;
  readonly #send: (m: ToBatch) => void;
  readonly #waiting = new Map<number, { claim: RateLimitClaim; resolve: () => void }>();
  /** Turns the thread granted that are not released yet, by claim. */
  readonly #held = new Map<RateLimitClaim, number>();
  #nextClaim = 1;
  #nextTicket = 0;
  #failed = false;

  /** `send`: to the scheduling thread (which starts with the first claim). */
  constructor(flags: readonly RateLimitResourceFlag[], send: (m: ToBatch) => void) {
    this.#flags = flags;
    this.#local = new RateLimiter(flags);
    this.#send = send;
  }

  register(model: string, spec: ModelRateLimiter | undefined, device: number): RateLimitClaim {
    const { needs, priority } = this.#local.register(model, spec, device);
    const id = this.#nextClaim++;
    if (!this.#failed) this.#send({ t: "claim", id, flags: this.#flags, model, spec: spec ?? {}, device });
    return { needs, priority, executions: 0, id };
  }

  acquire(claim: RateLimitClaim): Promise<void> {
    if (this.#failed) return this.#local.acquire(claim);
    const ticket = this.#nextTicket++;
    return new Promise((resolve) => {
      this.#waiting.set(ticket, { claim, resolve });
      this.#send({ t: "acquire", claim: claim.id!, ticket });
    });
  }

  release(claim: RateLimitClaim): void {
    const held = this.#held.get(claim) ?? 0;
    if (held === 0) {
      // A turn the main thread's own limiter gave, after the thread failed.
      this.#local.release(claim);
      return;
    }
    if (held === 1) this.#held.delete(claim);
    else this.#held.set(claim, held - 1);
    if (!this.#failed) this.#send({ t: "release", claim: claim.id! });
  }

  /** The instance of `claim` is closed: the thread forgets the claim. */
  unregister(claim: RateLimitClaim): void {
    if (!this.#failed) this.#send({ t: "unclaim", claim: claim.id! });
  }

  /** The thread gave `ticket`'s claim its resources. */
  granted(ticket: number): void {
    const w = this.#waiting.get(ticket);
    if (!w) return;
    this.#waiting.delete(ticket);
    this.#held.set(w.claim, (this.#held.get(w.claim) ?? 0) + 1);
    w.resolve();
  }

  /**
   * The scheduling thread failed (its versions then refuse every request): the main
   * thread's instances take their turns from the main thread's own limiter from now on,
   * those waiting first. Turns the thread had given are not known to it, so until they
   * are released it may give more at once than the resources allow.
   */
  fail(): void {
    if (this.#failed) return;
    this.#failed = true;
    for (const w of this.#waiting.values()) void this.#local.acquire(w.claim).then(w.resolve);
    this.#waiting.clear();
  }
}

type LimiterMessage = Extract<ToBatch, { t: "claim" | "acquire" | "release" | "unclaim" }>;

/**
 * The scheduling thread's side: the server's one RateLimiter, made with the first claim,
 * and the main thread's claims by number, each with the turns of it that wait or are
 * held (a claim is forgotten after "unclaim" only once it has none).
 */
export class RateLimiterHost {
  #limiter: RateLimiter | undefined;
  readonly #claims = new Map<number, { claim: RateLimitClaim; uses: number; closed: boolean }>();

  /** The limiter, for the thread's own instances (there is one once a claim came). */
  get limiter(): RateLimiter {
    if (!this.#limiter) throw new Error("no rate limiter claim has come");
    return this.#limiter;
  }

  /** Claim `id`, for an instance on this thread. */
  claim(id: number): RateLimitClaim | undefined {
    return this.#claims.get(id)?.claim;
  }

  /** A message of the main thread's ThreadRateLimiter; `granted` answers an acquire. */
  receive(m: LimiterMessage, granted: (ticket: number) => void): void {
    if (m.t === "claim") {
      this.#limiter ??= new RateLimiter(m.flags);
      // The main thread checked the flags with the same rules: this does not throw.
      this.#claims.set(m.id, { claim: this.#limiter.register(m.model, m.spec, m.device), uses: 0, closed: false });
      return;
    }
    const c = this.#claims.get(m.claim);
    if (m.t === "acquire") {
      // Not after "unclaim" (a closed instance does not run); were it to, it would hold nothing.
      if (!c) {
        granted(m.ticket);
        return;
      }
      c.uses++;
      void this.limiter.acquire(c.claim).then(() => granted(m.ticket));
      return;
    }
    if (!c) return;
    if (m.t === "release") {
      this.limiter.release(c.claim);
      c.uses--;
    } else c.closed = true;
    if (c.closed && c.uses === 0) this.#claims.delete(m.claim);
  }
}
