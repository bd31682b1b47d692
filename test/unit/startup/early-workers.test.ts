/**
 * The server's threads started before the load (src/startup/early-workers.ts, #30): as
 * many frontend workers as each frontend runs on, all at once, none for a frontend on the
 * main thread; the scheduling thread when asked; each taken once; terminate ends those not
 * taken.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { EarlyThreads } from "../../../src/startup/early-workers.ts";

/** A stand-in Worker: records where it was started from and whether it was ended. */
class FakeWorker {
  static made: FakeWorker[] = [];
  onmessage: ((e: MessageEvent) => void) | null = null;
  onerror: ((e: ErrorEvent) => void) | null = null;
  terminated = 0;
  constructor(
    readonly url: string,
    readonly options?: WorkerOptions,
  ) {
    FakeWorker.made.push(this);
  }
  postMessage(): void {}
  addEventListener(): void {}
  terminate(): void {
    this.terminated++;
  }
}

const entries = () => FakeWorker.made.map((w) => /frontends\/(http|grpc)\/worker-entry|server\/(batch)-thread-entry/.exec(w.url)?.slice(1).find(Boolean));

afterEach(() => {
  vi.unstubAllGlobals();
  FakeWorker.made = [];
});

describe("EarlyThreads", () => {
  it("starts every frontend's workers at once, HTTP's and gRPC's from their own entries; a listener takes them once", () => {
    vi.stubGlobal("Worker", FakeWorker);
    const early = new EarlyThreads({ http: 2, grpc: 3 }, false);
    expect(entries()).toEqual(["http", "http", "grpc", "grpc", "grpc"]);
    expect(early.take("grpc")).toHaveLength(3);
    expect(early.take("grpc")).toEqual([]);
    expect(early.take("http")).toHaveLength(2);
    expect(FakeWorker.made.map((w) => w.terminated)).toEqual([0, 0, 0, 0, 0]);
  });

  it("starts none for a frontend on the main thread (a count of 1)", () => {
    vi.stubGlobal("Worker", FakeWorker);
    const early = new EarlyThreads({ http: 1, grpc: 2 }, false);
    expect(entries()).toEqual(["grpc", "grpc"]);
    expect(early.take("http")).toEqual([]);
  });

  it("terminate ends the workers not taken, and only those", () => {
    vi.stubGlobal("Worker", FakeWorker);
    const early = new EarlyThreads({ http: 2, grpc: 2 }, true);
    early.take("http");
    early.terminate();
    expect(FakeWorker.made.map((w) => w.terminated)).toEqual([0, 0, 1, 1, 1]);
    expect(early.take("grpc")).toEqual([]);
    expect(early.takeBatch()).toBeUndefined();
  });

  it("starts the scheduling thread when asked, named as the scheduling thread is; it is taken once", () => {
    vi.stubGlobal("Worker", FakeWorker);
    const early = new EarlyThreads({ http: 2, grpc: 1 }, true);
    expect(entries()).toEqual(["http", "http", "batch"]);
    expect(FakeWorker.made[2]!.options).toEqual({ name: "batch scheduler" });
    expect(early.takeBatch()).toBeDefined();
    expect(early.takeBatch()).toBeUndefined();
    early.terminate();
    expect(FakeWorker.made[2]!.terminated).toBe(0);
  });
});
