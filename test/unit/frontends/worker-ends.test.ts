/**
 * A real HTTP or gRPC frontend worker thread that ends (Bun ends a worker on an uncaught
 * error) is replaced on the same port, and the server goes on answering (#30): a client on a
 * fresh connection gets the right answer after one worker ended and after both first workers
 * of its frontend ended, and `simple`'s statistics count every answer. A request an ended
 * worker had sent to a TypeScript model's instance is cancelled there (the model's signal
 * aborts), its client's connection closes, and the instance serves the next. Before this
 * test, only stand-ins for the workers had been ended (start-workers.test.ts,
 * port-close.test.ts). Run under Bun (worker-ends-check.ts): the workers need Web Workers
 * and SO_REUSEPORT.
 */
import { describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "../../..");

describe("a frontend worker thread that ends", () => {
  it("is replaced on the same port: every later request is answered right and counted; what it held in a TypeScript instance is cancelled there", async () => {
    const { stdout } = await promisify(execFile)(join(ROOT, "node_modules", ".bin", "bun"), [join(ROOT, "test/unit/frontends/worker-ends-check.ts")], {
      timeout: 90_000,
    });
    const r = JSON.parse(stdout.trim().split("\n").at(-1)!) as { logged: string[] };
    expect({ ...r, logged: r.logged.map((l) => l.replace(/port \d+/, "port P")) }).toEqual({
      workers: [2, 2],
      before: { right: 20 },
      afterOne: { right: 40 },
      afterBoth: { right: 40 },
      // The request to the TypeScript model held in an ended worker: its client's connection
      // closed with the worker (Bun's fetch throws a TypeError), the model saw its signal abort,
      // and the instance answered the next request.
      heldStarted: true,
      heldAnswer: "TypeError",
      heldAborted: true,
      holdAfter: "Y 2",
      // The same for the gRPC workers, each call on a connection of its own; the held call
      // ends UNAVAILABLE (14) with its connection.
      grpc: {
        before: { right: 20 },
        heldStarted: true,
        afterOne: { right: 40 },
        afterBoth: { right: 40 },
        heldAnswer: "code 14",
        heldAborted: true,
        holdAfter: "Y 4",
      },
      logged: [
        "HTTP worker thread ended; starting another on port P",
        "HTTP worker thread ended; starting another on port P",
        "gRPC worker thread ended; starting another on port P",
        "gRPC worker thread ended; starting another on port P",
      ],
      stats: 200,
    });
  }, 120_000);
});
