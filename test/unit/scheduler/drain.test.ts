/**
 * #31: the drain rule the four schedulers share (S-20's stop): stop() settles when the
 * last request in flight leaves, at once when none is, and runs onDrained once each time
 * the count reaches zero while stopping.
 */
import { describe, it, expect } from "vitest";
import { InflightDrain } from "../../../src/scheduler/drain.ts";

const settled = async (p: Promise<void>) => {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((r) => setTimeout(r, 0));
  return done;
};

describe("InflightDrain", () => {
  it("stop() with nothing in flight settles at once and runs onDrained", async () => {
    let drained = 0;
    const d = new InflightDrain(() => drained++);
    expect(d.stopping).toBe(false);
    expect(await settled(d.stop())).toBe(true);
    expect(d.stopping).toBe(true);
    expect(drained).toBe(1);
  });

  it("stop() waits for every request in flight, counted one or several at a time", async () => {
    let drained = 0;
    const d = new InflightDrain(() => drained++);
    d.enter();
    d.enter();
    d.enter();
    expect(d.leave()).toBe(false); // not stopping yet
    expect(d.count).toBe(2);
    const stopped = d.stop();
    expect(await settled(stopped)).toBe(false);
    expect(d.leave()).toBe(false);
    expect(await settled(stopped)).toBe(false);
    expect(drained).toBe(0);
    expect(d.leave()).toBe(true);
    expect(await settled(stopped)).toBe(true);
    expect(drained).toBe(1);
    expect(d.count).toBe(0);
  });

  it("leave(n) drains several at once, and a second stop() returns the same promise", async () => {
    const d = new InflightDrain();
    for (let i = 0; i < 4; i++) d.enter();
    const a = d.stop();
    expect(d.stop()).toBe(a);
    expect(d.leave(4)).toBe(true);
    expect(await settled(a)).toBe(true);
  });

  it("a request let in after stop (a sequence's continuation) runs onDrained again when it leaves", async () => {
    let drained = 0;
    const d = new InflightDrain(() => drained++);
    await d.stop();
    d.enter();
    expect(d.leave()).toBe(true);
    expect(drained).toBe(2);
  });
});
