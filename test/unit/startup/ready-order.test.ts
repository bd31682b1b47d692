/**
 * The server is ready once its repository has loaded, before its listeners start, as
 * Triton's server is ready when InferenceServer::Init ends and main.cc starts the endpoints
 * after it (#30). With the HTTP frontend on worker threads, a worker that listens relays a
 * client's ready probe at once: it is answered 200 while the other worker is still starting.
 * Before, readiness waited for every listener, and that probe got 400 from a server that had
 * loaded everything. Run under Bun (ready-order-check.ts), with scripted stand-ins for the
 * workers, so that the order is fixed rather than raced.
 */
import { describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "../../..");

describe("readiness during the listeners' start", () => {
  it("answers a ready probe 200 through the first HTTP worker listening while the second is still starting", async () => {
    const { stdout } = await promisify(execFile)(join(ROOT, "node_modules", ".bin", "bun"), [join(ROOT, "test/unit/startup/ready-order-check.ts")], {
      timeout: 60_000,
    });
    expect(JSON.parse(stdout.trim().split("\n").at(-1)!)).toEqual({ answers: [200], workers: 2 });
  });
});
