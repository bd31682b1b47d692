/**
 * The binary on a given number of frontend threads, and a pair of them (one thread and two)
 * for tests that compare the worker threads with the main thread (#30).
 */
import { afterAll, beforeAll, expect } from "vitest";
import { startServerProcess, type ServerProcess } from "./server-process.ts";

/**
 * The binary on `repoDir` with `threads` HTTP and gRPC frontend threads, logging the
 * workers' model table (--log-verbose=1). 1 is given too: the default is a worker thread
 * per core, and 1 (the main thread) is the control.
 */
export function startOnThreads(repoDir: string, threads: number, extra: string[] = []): Promise<ServerProcess> {
  return startServerProcess([
    `--model-repository=${repoDir}`,
    "--log-verbose=1",
    `--http-thread-count=${threads}`,
    `--grpc-infer-thread-count=${threads}`,
    ...extra,
  ]);
}

/**
 * In a describe block: a server on one thread and one on two, started by `start` before the
 * block's tests and handed to `set`, stopped after them (exit code 0; the log's end when not)
 * with their repositories removed.
 */
export function onOneAndTwoThreads<T extends { server: ServerProcess; repo: { remove(): void } }>(
  start: (threads: number, name: string) => Promise<T>,
  set: (one: T, two: T) => void,
): void {
  let started: T[] = [];
  beforeAll(async () => {
    started = await Promise.all([start(1, "one"), start(2, "two")]);
    set(started[0]!, started[1]!);
  });
  afterAll(async () => {
    for (const s of started) {
      expect(await s.server.stop(), s.server.log().slice(-3000)).toBe(0);
      s.repo.remove();
    }
  });
}
