/**
 * The frontends' worker threads started while the models load (src/startup/early-workers.ts,
 * #30): as many as each frontend runs on, all at once, none for a frontend on the main
 * thread; a listener takes them once; terminate ends those not taken.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { EarlyFrontendWorkers } from "../../../src/startup/early-workers.ts";

/** A stand-in Worker: records where it was started from and whether it was ended. */
class FakeWorker {
  static made: FakeWorker[] = [];
  onmessage: ((e: MessageEvent) => void) | null = null;
  onerror: ((e: ErrorEvent) => void) | null = null;
  terminated = 0;
  constructor(readonly url: string) {
    FakeWorker.made.push(this);
  }
  postMessage(): void {}
  addEventListener(): void {}
  terminate(): void {
    this.terminated++;
  }
}

const entries = () => FakeWorker.made.map((w) => /frontends\/(http|grpc)\/worker-entry/.exec(w.url)?.[1]);

afterEach(() => {
  vi.unstubAllGlobals();
  FakeWorker.made = [];
});

describe("EarlyFrontendWorkers", () => {
  it("starts every frontend's workers at once, HTTP's and gRPC's from their own entries; a listener takes them once", () => {
    vi.stubGlobal("Worker", FakeWorker);
    const early = new EarlyFrontendWorkers({ http: 2, grpc: 3 });
    expect(entries()).toEqual(["http", "http", "grpc", "grpc", "grpc"]);
    expect(early.take("grpc")).toHaveLength(3);
    expect(early.take("grpc")).toEqual([]);
    expect(early.take("http")).toHaveLength(2);
    expect(FakeWorker.made.map((w) => w.terminated)).toEqual([0, 0, 0, 0, 0]);
  });

  it("starts none for a frontend on the main thread (a count of 1)", () => {
    vi.stubGlobal("Worker", FakeWorker);
    const early = new EarlyFrontendWorkers({ http: 1, grpc: 2 });
    expect(entries()).toEqual(["grpc", "grpc"]);
    expect(early.take("http")).toEqual([]);
  });

  it("terminate ends the workers not taken, and only those", () => {
    vi.stubGlobal("Worker", FakeWorker);
    const early = new EarlyFrontendWorkers({ http: 2, grpc: 2 });
    early.take("http");
    early.terminate();
    expect(FakeWorker.made.map((w) => w.terminated)).toEqual([0, 0, 1, 1]);
    expect(early.take("grpc")).toEqual([]);
  });
});
