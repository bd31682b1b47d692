/**
 * startWorkers (src/frontends/worker-threads.ts), how a frontend's worker threads start
 * (#30): on port 0 the first binds a free port and the others are started on it only
 * then; on a port given they are all started at once (the start-up's last step once the
 * models loaded, so their round trips overlap). When one fails, every one is stopped and
 * the start fails with the first failure in the workers' order.
 */
import { describe, expect, it } from "vitest";
import { startWorkers, type StartableWorker } from "../../../src/frontends/worker-threads.ts";

/** Workers whose starts the test settles by hand, recording what was asked of them. */
function fakeWorkers() {
  const events: string[] = [];
  const starts: { port: number; resolve: (port: number) => void; reject: (err: Error) => void }[] = [];
  let made = 0;
  const make = (): StartableWorker => {
    const i = made++;
    return {
      start: (port) =>
        new Promise<number>((resolve, reject) => {
          events.push(`start ${i} on ${port}`);
          starts[i] = { port, resolve, reject };
        }),
      stop: async () => {
        events.push(`stop ${i}`);
      },
    };
  };
  return { events, starts, make };
}

const turn = () => new Promise((r) => setImmediate(r));

describe("startWorkers", () => {
  it("on port 0: the first worker alone, then the others on the port it bound", async () => {
    const f = fakeWorkers();
    const started = startWorkers(3, f.make, 0);
    await turn();
    expect(f.events).toEqual(["start 0 on 0"]);
    f.starts[0]!.resolve(41234);
    await turn();
    expect(f.events).toEqual(["start 0 on 0", "start 1 on 41234", "start 2 on 41234"]);
    f.starts[1]!.resolve(41234);
    f.starts[2]!.resolve(41234);
    const listener = await started;
    expect(listener.port).toBe(41234);
    await listener.close();
    expect(f.events.slice(3).sort()).toEqual(["stop 0", "stop 1", "stop 2"]);
  });

  it("on a port given: every worker is started at once, before any has answered", async () => {
    const f = fakeWorkers();
    const started = startWorkers(3, f.make, 8000);
    await turn();
    expect(f.events).toEqual(["start 0 on 8000", "start 1 on 8000", "start 2 on 8000"]);
    for (const s of f.starts) s.resolve(8000);
    expect((await started).port).toBe(8000);
  });

  it("when workers fail: all are stopped, once every start has settled, and the first failure in their order is the start's", async () => {
    const f = fakeWorkers();
    const started = startWorkers(3, f.make, 8000);
    await turn();
    f.starts[2]!.reject(new Error("worker 2 failed"));
    f.starts[1]!.reject(new Error("worker 1 failed"));
    await turn();
    expect(f.events.filter((e) => e.startsWith("stop"))).toEqual([]);
    f.starts[0]!.resolve(8000);
    await expect(started).rejects.toThrow("worker 1 failed");
    expect(f.events.slice(3).sort()).toEqual(["stop 0", "stop 1", "stop 2"]);
  });

  it("when the first worker fails on port 0, no other is started", async () => {
    const f = fakeWorkers();
    const started = startWorkers(2, f.make, 0);
    await turn();
    f.starts[0]!.reject(new Error("listen EADDRINUSE"));
    await expect(started).rejects.toThrow("listen EADDRINUSE");
    expect(f.events).toEqual(["start 0 on 0", "stop 0"]);
  });
});
