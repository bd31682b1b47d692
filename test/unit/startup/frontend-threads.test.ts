/**
 * The frontends' thread counts (#30 item 4, src/startup/early-workers.ts frontendThreads): under
 * a runtime with worker threads for them (Bun, stubbed here), one per core available, at
 * most 8, without the flags, and the count given with them; under Node (and Deno) the main
 * thread, whatever was asked.
 */
import { afterEach, describe, expect, it, vi } from "vitest";

let cores = 2;
vi.mock("node:os", async (original) => ({ ...(await original<typeof import("node:os")>()), availableParallelism: () => cores }));
const { frontendThreads } = await import("../../../src/startup/early-workers.ts");

afterEach(() => {
  vi.unstubAllGlobals();
});

describe("frontendThreads", () => {
  it("with worker threads (Bun): one per core without the flag, at most 8; the count given as given", () => {
    vi.stubGlobal("Bun", {});
    vi.stubGlobal("Worker", class {});
    const defaults = [1, 2, 4, 8, 16, 64].map((n) => {
      cores = n;
      return frontendThreads(undefined);
    });
    expect(defaults).toEqual([1, 2, 4, 8, 8, 8]);
    cores = 2;
    expect([1, 2, 4, 128].map(frontendThreads)).toEqual([1, 2, 4, 128]);
  });

  it("under Node: the main thread, with or without the flag", () => {
    expect(typeof (globalThis as { Bun?: unknown }).Bun).toBe("undefined");
    cores = 16;
    expect([undefined, 1, 2, 4].map(frontendThreads)).toEqual([1, 1, 1, 1]);
  });
});
