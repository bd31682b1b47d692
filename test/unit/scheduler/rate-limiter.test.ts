/** The rate limiter's rules (S-19, #17): resources per device and global, capacity, priority, release. */
import { describe, expect, it } from "vitest";
import { RateLimiter } from "../../../src/scheduler/rate-limiter.ts";
import { RateLimiterHost, ThreadRateLimiter } from "../../../src/server/batch-rate-limiter.ts";
import type { ToBatch } from "../../../src/server/batch-protocol.ts";

const tick = () => new Promise((r) => setImmediate(r));

describe("RateLimiter", () => {
  it("runs one instance at a time on a resource of count 1, the next as soon as it is released", async () => {
    const rl = new RateLimiter([]);
    const a = rl.register("a", { resources: [{ name: "R", count: 1 }] }, 0);
    const b = rl.register("b", { resources: [{ name: "R", count: 1 }] }, 0);
    await rl.acquire(a);
    let bRan = false;
    const pb = rl.acquire(b).then(() => (bRan = true));
    await tick();
    expect(bRan).toBe(false);
    rl.release(a);
    await pb;
    expect(bRan).toBe(true);
    rl.release(b);
  });

  it("keeps per-device resources apart and shares a global one across devices", async () => {
    const rl = new RateLimiter([]);
    const d0 = rl.register("m", { resources: [{ name: "R", count: 1 }] }, 0);
    const d1 = rl.register("m", { resources: [{ name: "R", count: 1 }] }, 1);
    await rl.acquire(d0);
    await rl.acquire(d1); // another device: its own R
    const g0 = rl.register("g", { resources: [{ name: "G", count: 1, global: true }] }, 0);
    const g1 = rl.register("g", { resources: [{ name: "G", count: 1, global: true }] }, 1);
    await rl.acquire(g0);
    let g1Ran = false;
    void rl.acquire(g1).then(() => (g1Ran = true));
    await tick();
    expect(g1Ran).toBe(false);
    rl.release(g0);
    await tick();
    expect(g1Ran).toBe(true);
  });

  it("takes the larger of --rate-limit-resource and the most any instance asks for, and refuses a flag below a need", async () => {
    const rl = new RateLimiter([{ name: "R", count: 2 }]);
    const a = rl.register("a", { resources: [{ name: "R", count: 1 }] }, 0);
    const b = rl.register("b", { resources: [{ name: "R", count: 1 }] }, 0);
    await rl.acquire(a);
    await rl.acquire(b); // both fit in 2
    expect(() => new RateLimiter([{ name: "R", count: 1 }]).register("c", { resources: [{ name: "R", count: 3 }] }, 0)).toThrow(
      "Resource count for 'R' is limited to 1 which will prevent scheduling of one or more model instances, the minimum required count is 3",
    );
  });

  it("gives an instance of priority 2 half the chances of one of priority 1", async () => {
    const rl = new RateLimiter([]);
    const p1 = rl.register("p1", { resources: [{ name: "R", count: 1 }], priority: 1 }, 0);
    const p2 = rl.register("p2", { resources: [{ name: "R", count: 1 }], priority: 2 }, 0);
    const order: string[] = [];
    // Two loops each, so that both always have a claim waiting when the resource frees; 30 grants in all.
    const loop = async (claim: typeof p1, name: string) => {
      while (order.length < 30) {
        await rl.acquire(claim);
        order.push(name);
        await tick();
        rl.release(claim);
      }
    };
    await Promise.all([loop(p1, "p1"), loop(p1, "p1"), loop(p2, "p2"), loop(p2, "p2")]);
    const first = order.slice(0, 30);
    const n1 = first.filter((x) => x === "p1").length;
    expect([n1, 30 - n1]).toEqual([20, 10]);
  });

  it("lets an instance with no resources run at once", async () => {
    const rl = new RateLimiter([]);
    const free = rl.register("f", { priority: 3 }, 0);
    await rl.acquire(free);
    await rl.acquire(free);
    expect(free.executions).toBe(2);
  });
});

/**
 * The limiter on the scheduling thread (#30; server/batch-rate-limiter.ts): the main
 * thread's ThreadRateLimiter and the thread's RateLimiterHost, their messages passed a
 * turn later each way as between threads.
 */
describe("ThreadRateLimiter and RateLimiterHost", () => {
  function pair(flags: { name: string; count: number }[] = []) {
    const host = new RateLimiterHost();
    const sent: ToBatch[] = [];
    const main: ThreadRateLimiter = new ThreadRateLimiter(flags, (m) => {
      sent.push(m);
      if (m.t === "claim" || m.t === "acquire" || m.t === "release" || m.t === "unclaim")
        setImmediate(() => host.receive(m, (ticket) => setImmediate(() => main.granted(ticket))));
    });
    return { main, sent, host };
  }
  const settle = async () => {
    for (let i = 0; i < 6; i++) await tick();
  };

  it("takes turns on the thread's limiter: a second claim on R waits until the first is released there, and so does an instance on the thread", async () => {
    const { main, host } = pair();
    const a = main.register("a", { resources: [{ name: "R", count: 1 }] }, 0);
    const b = main.register("b", { resources: [{ name: "R", count: 1 }] }, 0);
    const t = main.register("t", { resources: [{ name: "R", count: 1 }] }, 0);
    expect([a.id, b.id, t.id]).toEqual([1, 2, 3]);
    await main.acquire(a);
    let bRan = false;
    const pb = main.acquire(b).then(() => (bRan = true));
    await settle();
    expect(bRan).toBe(false);
    // Claim 3 as the thread's own instance of it takes it (batch-thread-entry.ts).
    const onThread = host.claim(3)!;
    let tRan = false;
    void host.limiter.acquire(onThread).then(() => (tRan = true));
    main.release(a);
    await pb;
    expect([bRan, tRan]).toEqual([true, false]);
    main.release(b);
    await settle();
    expect(tRan).toBe(true);
    expect([1, 2, 3].map((id) => host.claim(id)!.executions)).toEqual([1, 1, 1]);
    host.limiter.release(onThread);
  });

  it("refuses a claim the flags cannot hold on the main thread, with Triton's reason, and sends the thread nothing", () => {
    const { main, sent } = pair([{ name: "R", count: 1 }]);
    expect(() => main.register("c", { resources: [{ name: "R", count: 3 }] }, 0)).toThrow(
      "Resource count for 'R' is limited to 1 which will prevent scheduling of one or more model instances, the minimum required count is 3",
    );
    expect(sent).toEqual([]);
  });

  it("forgets a closed instance's claim only once its turns are released, so the resource is given back", async () => {
    const { main, host } = pair();
    const a = main.register("a", { resources: [{ name: "R", count: 1 }] }, 0);
    const b = main.register("b", { resources: [{ name: "R", count: 1 }] }, 0);
    await main.acquire(a);
    main.unregister(a);
    await settle();
    expect(host.claim(1)).toBeDefined();
    let bRan = false;
    const pb = main.acquire(b).then(() => (bRan = true));
    await settle();
    expect(bRan).toBe(false);
    main.release(a);
    await pb;
    expect(host.claim(1)).toBeUndefined();
    main.unregister(b);
    await settle();
    expect(host.claim(2)).toBeDefined();
    main.release(b);
    await settle();
    expect(host.claim(2)).toBeUndefined();
  });

  it("when the thread fails, the main thread's turns come from its own limiter, the waiting first, and nothing more is sent", async () => {
    const { main, sent } = pair();
    const a = main.register("a", { resources: [{ name: "R", count: 1 }] }, 0);
    const b = main.register("b", { resources: [{ name: "R", count: 1 }] }, 0);
    await main.acquire(a);
    const waiting = main.acquire(b);
    await settle();
    const count = sent.length;
    main.fail();
    await waiting;
    // a's turn came from the thread: its release is not the main thread's limiter's to count.
    main.release(a);
    let aRan = false;
    const pa = main.acquire(a).then(() => (aRan = true));
    await settle();
    expect(aRan).toBe(false);
    main.release(b);
    await pa;
    main.release(a);
    expect(sent.length).toBe(count);
  });
});
