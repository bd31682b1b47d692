/**
 * A frontend worker that ends (#30) closes its port to a TypeScript model's worker-thread
 * instance: what it sent there is cancelled. The request the model runs sees its signal
 * abort, the one queued behind it is dropped unrun, and the instance goes on serving other
 * ports. Before, a model that waited on its request's signal held the instance forever.
 * Run under Bun (port-close-check.ts): the instances' worker threads need Web Workers.
 */
import { describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "../../../..");

describe("a TypeScript instance's port to a frontend worker, closed", () => {
  it("cancels what the frontend worker sent: the running request's signal aborts, the queued one never runs, the instance serves on", async () => {
    const { stdout } = await promisify(execFile)(join(ROOT, "node_modules", ".bin", "bun"), [join(ROOT, "test/unit/backends/typescript/port-close-check.ts")], {
      timeout: 60_000,
    });
    expect(JSON.parse(stdout.trim().split("\n").at(-1)!)).toEqual({
      held: true,
      answeredBeforeClose: 0,
      aborted: true,
      ranQueued: false,
      ranAfter: true,
      ran3: true,
    });
  });
});
