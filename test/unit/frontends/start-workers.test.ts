/**
 * startWorkers (src/frontends/worker-threads.ts), how a frontend's worker threads start
 * (#30): on port 0 the first binds a free port and the others are started on it only
 * then; on a port given they are all started at once (the start-up's last step once the
 * models loaded, so their round trips overlap). When one fails, every one is stopped and
 * the start fails with the first failure in the workers' order. A started worker whose
 * thread ends on its own is logged and replaced on the port, a bounded number of times;
 * one that ends while the frontend closes, or before it started, is not.
 */
import { describe, expect, it } from "vitest";
import { RESTART_DELAY_MS, RESTARTS_PER_WINDOW, startWorkers, type StartableWorker } from "../../../src/frontends/worker-threads.ts";
import type { Logger } from "../../../src/core/logger.ts";

/** Workers whose starts the test settles by hand, recording what was asked of them. */
function fakeWorkers() {
  const events: string[] = [];
  const starts: { port: number; resolve: (port: number) => void; reject: (err: Error) => void }[] = [];
  let made = 0;
  /** Each worker's `ended`: the test ends a worker's thread with it. */
  const ended: (() => void)[] = [];
  const make = (end: () => void): StartableWorker => {
    const i = made++;
    ended[i] = end;
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
  return { events, starts, make, ended };
}

const turn = () => new Promise((r) => setImmediate(r));
/** Past the delay before a replacement starts. */
const delay = () => new Promise((r) => setTimeout(r, RESTART_DELAY_MS + 20));
const logged: string[] = [];
const log = { error: (m: string) => logged.push(m) } as unknown as Logger;

describe("startWorkers", () => {
  it("on port 0: the first worker alone, then the others on the port it bound", async () => {
    const f = fakeWorkers();
    const started = startWorkers(3, f.make, 0, log, "HTTP");
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
    const started = startWorkers(3, f.make, 8000, log, "HTTP");
    await turn();
    expect(f.events).toEqual(["start 0 on 8000", "start 1 on 8000", "start 2 on 8000"]);
    for (const s of f.starts) s.resolve(8000);
    expect((await started).port).toBe(8000);
  });

  it("when workers fail: all are stopped, once every start has settled, and the first failure in their order is the start's", async () => {
    const f = fakeWorkers();
    const started = startWorkers(3, f.make, 8000, log, "HTTP");
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
    const started = startWorkers(2, f.make, 0, log, "HTTP");
    await turn();
    f.starts[0]!.reject(new Error("listen EADDRINUSE"));
    await expect(started).rejects.toThrow("listen EADDRINUSE");
    expect(f.events).toEqual(["start 0 on 0", "stop 0"]);
  });

  it("replaces a started worker whose thread ends on its own, on the bound port, and logs it", async () => {
    const f = fakeWorkers();
    logged.length = 0;
    const started = startWorkers(2, f.make, 0, log, "HTTP");
    await turn();
    f.starts[0]!.resolve(41234);
    await turn();
    f.starts[1]!.resolve(41234);
    const listener = await started;
    f.ended[1]!();
    await turn();
    expect(f.events.slice(2)).toEqual([]);
    await delay();
    expect(f.events.slice(2)).toEqual(["start 2 on 41234"]);
    expect(logged).toEqual(["HTTP worker thread ended; starting another on port 41234"]);
    f.starts[2]!.resolve(41234);
    await turn();
    // The same end reported twice replaces it once; the ended worker is not stopped at close, its replacement is.
    f.ended[1]!();
    await listener.close();
    expect(f.events.slice(3).sort()).toEqual(["stop 0", "stop 2"]);
    // Ends during and after the close start nothing.
    f.ended[0]!();
    f.ended[2]!();
    await delay();
    expect(f.events.filter((e) => e.startsWith("start")).length).toBe(3);
  });

  it("a replacement that cannot start is logged, dropped and stopped; a worker that ends before it started is not replaced", async () => {
    const f = fakeWorkers();
    logged.length = 0;
    const started = startWorkers(1, f.make, 8000, log, "gRPC");
    await turn();
    f.ended[0]!();
    f.starts[0]!.resolve(8000);
    const listener = await started;
    expect(f.events).toEqual(["start 0 on 8000"]);
    f.ended[0]!();
    await delay();
    f.starts[1]!.reject(new Error("address in use"));
    await turn();
    expect(logged).toEqual(["gRPC worker thread ended; starting another on port 8000", "gRPC worker thread could not be started again: address in use"]);
    expect(f.events).toEqual(["start 0 on 8000", "start 1 on 8000", "stop 1"]);
    await listener.close();
    expect(f.events).toEqual(["start 0 on 8000", "start 1 on 8000", "stop 1"]);
  });

  it(`replaces at most ${RESTARTS_PER_WINDOW} workers a minute, then logs that it stops replacing them`, async () => {
    const f = fakeWorkers();
    logged.length = 0;
    const started = startWorkers(1, f.make, 8000, log, "HTTP");
    await turn();
    f.starts[0]!.resolve(8000);
    const listener = await started;
    for (let i = 0; i <= RESTARTS_PER_WINDOW; i++) {
      f.ended[i]!();
      await delay();
      f.starts[i + 1]?.resolve(8000);
      await turn();
    }
    expect(f.events.filter((e) => e.startsWith("start")).length).toBe(RESTARTS_PER_WINDOW + 1);
    expect(logged.at(-1)).toBe(`HTTP worker thread ended; ${RESTARTS_PER_WINDOW} were started again in the last minute, so this one is not (0 left)`);
    await listener.close();
  });

  it("releases what the workers read (the server's shared health) once they have all stopped: after a close, and after a failed start", async () => {
    for (const fail of [false, true]) {
      const f = fakeWorkers();
      const held = {
        release: () => {
          f.events.push("release");
        },
      };
      const started = startWorkers(2, f.make, 8000, log, "HTTP", held);
      await turn();
      f.starts[0]!.resolve(8000);
      if (fail) f.starts[1]!.reject(new Error("address in use"));
      else f.starts[1]!.resolve(8000);
      if (fail) {
        await expect(started).rejects.toThrow("address in use");
      } else {
        const listener = await started;
        expect(f.events).not.toContain("release");
        await listener.close();
      }
      expect(f.events.slice(2)).toEqual(["stop 0", "stop 1", "release"]);
    }
  });
});
