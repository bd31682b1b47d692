/**
 * The --max-queued-bytes count (src/core/queued-bytes.ts), one for the main thread and the
 * frontend workers (#30): the bound, the request larger than the whole bound, the count
 * held through views of the same shared memory, and the refusal's error.
 */
import { describe, expect, it } from "vitest";
import { Worker } from "node:worker_threads";
import { QueuedBytes, queueFull } from "../../../src/core/queued-bytes.ts";
import { ServerError } from "../../../src/core/errors.ts";

const request = (id: string | undefined, ...sizes: number[]) => ({ id, inputs: sizes.map((n) => ({ data: new Uint8Array(n) })) }) as never;

describe("QueuedBytes", () => {
  it("admits up to the bound, a larger one only when nothing is held, and gives bytes back", () => {
    const q = new QueuedBytes(300);
    expect([q.admit(128), q.admit(128), q.admit(128), q.held]).toEqual([true, true, false, 256]);
    expect(q.wouldPass(44)).toBe(false);
    expect(q.wouldPass(45)).toBe(true);
    q.add(-256);
    expect([q.admit(1000), q.held, q.admit(1)]).toEqual([true, 1000, false]);
    q.add(-1000);
    expect(q.held).toBe(0);
    const none = new QueuedBytes(0);
    expect([none.admit(1e12), none.admit(1e12), none.held, none.wouldPass(1)]).toEqual([true, true, 2e12, false]);
  });

  it("admitRequest counts every input's bytes, or refuses with Triton's full-queue answer counted REJECTED", () => {
    const q = new QueuedBytes(300);
    expect(q.admitRequest(request("a", 64, 64))).toBe(128);
    expect(q.admitRequest(request(undefined, 64, 64))).toBe(128);
    let err: unknown;
    try {
      q.admitRequest(request("c", 64, 64));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ServerError);
    expect(err).toMatchObject({ code: "UNAVAILABLE", message: "[request id: c] Exceeds maximum queue size", reason: "REJECTED" });
    expect(queueFull()).toMatchObject({ code: "UNAVAILABLE", message: "Exceeds maximum queue size", reason: "REJECTED" });
    expect(q.held).toBe(256);
  });

  it("counts in a plain number until shared, and what it held then is in the shared count", () => {
    const q = new QueuedBytes(300);
    expect(q.admit(100)).toBe(true);
    const view = QueuedBytes.of(q.share());
    expect([view.held, q.held]).toEqual([100, 100]);
    expect(view.admit(150)).toBe(true);
    expect([q.held, q.admit(51), q.admit(50), view.held]).toEqual([250, false, true, 300]);
    q.add(-100);
    expect(view.held).toBe(200);
    // A second share() hands out the same memory.
    expect(q.share().buffer).toBe(view.share().buffer);
  });

  it("a view of the shared memory holds the same count and bound, in this thread and in a worker thread", async () => {
    const main = new QueuedBytes(300);
    const view = QueuedBytes.of(main.share());
    expect(view.limit).toBe(300);
    expect(view.admit(200)).toBe(true);
    expect([main.held, main.admit(200)]).toEqual([200, false]);
    // A worker thread adds 50 through the same memory 100,000 times and takes it back as often, while this thread does the same.
    const worker = new Worker(
      `const { workerData, parentPort } = require("node:worker_threads");
       const cell = new BigInt64Array(workerData);
       for (let i = 0; i < 100000; i++) { Atomics.add(cell, 0, 50n); Atomics.sub(cell, 0, 50n); }
       parentPort.postMessage("done");`,
      { eval: true, workerData: main.share().buffer },
    );
    const done = new Promise((resolve) => worker.once("message", resolve));
    for (let i = 0; i < 100000; i++) {
      main.add(7);
      main.add(-7);
    }
    await done;
    await worker.terminate();
    expect([main.held, view.held]).toEqual([200, 200]);
  });
});
