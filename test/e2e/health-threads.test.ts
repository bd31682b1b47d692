/**
 * The frontends' worker threads answer the health probes themselves, from the server's
 * health in shared memory (#30, P-01, P-02, G-01, G-08): HTTP GET /v2/health/live and
 * /ready, gRPC ServerLive, ServerReady and grpc.health.v1 Check. A probe is answered while
 * the main thread is busy, and the answers follow the server's strict readiness as the
 * main thread's would. Run under Bun (health-threads-check.ts): the worker threads need it.
 */
import { describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "../..");

describe("health probes on the frontends' worker threads", () => {
  it("are answered while the main thread is busy, and follow a failed load and its unload", async () => {
    const { stdout } = await promisify(execFile)(join(ROOT, "node_modules", ".bin", "bun"), [join(ROOT, "test/e2e/health-threads-check.ts")], {
      timeout: 60_000,
    });
    const seen = JSON.parse(stdout.trim().split("\n").at(-1)!) as {
      whileBusy: [unknown, number][];
      before: unknown[];
      loadFailed: boolean;
      afterFailedLoad: unknown[];
      afterUnload: unknown[];
    };
    // HTTP live and ready, gRPC ServerLive, ServerReady and Check, made at once while the
    // main thread was busy for 4 s, each answered within its 1.5 s limit (before, each
    // timed out: HTTP's fetch, gRPC's deadline).
    expect(seen.whileBusy.map(([answer]) => answer)).toEqual([200, 200, { live: true }, { ready: true }, { status: "SERVING" }]);
    // [HTTP ready, HTTP live, gRPC Check] from here on.
    expect(seen.before).toEqual([200, 200, "SERVING"]);
    expect(seen.loadFailed).toBe(true);
    // Strict readiness: a model that failed to load keeps the server not ready; live stays 200.
    expect(seen.afterFailedLoad).toEqual([400, 200, "NOT_SERVING"]);
    // Its unload clears the failure, and the workers see it.
    expect(seen.afterUnload).toEqual([200, 200, "SERVING"]);
  }, 90_000);
});
