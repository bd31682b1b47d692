/**
 * The same source under Node: the in-process API (startInProcess, src/index.ts) with its
 * listeners on the node:http adapter and grpc-js, through the shared frontend suite.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { startInProcess, type InProcessServer } from "../../helpers/inprocess.ts";
import { frontendSuite } from "../../suites/frontend.ts";

let s: InProcessServer;

beforeAll(async () => {
  s = await startInProcess(["simple", "simple_identity"], { server: { allowClientShm: true } });
});

afterAll(async () => {
  if (s) expect(await s.stop()).toBe(0);
});

frontendSuite("Node in-process", () => s);

describe("under Node (node:http)", () => {
  it("runs 64 concurrent requests with exact answers", async () => {
    const results = await Promise.all(
      Array.from({ length: 64 }, async (_, k) => {
        const res = await fetch(`${s.url}/v2/models/simple/infer`, {
          method: "POST",
          body: JSON.stringify({
            inputs: [
              { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: Array(16).fill(k) },
              { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: Array(16).fill(1) },
            ],
          }),
        });
        return ((await res.json()) as any).outputs[0].data[0];
      }),
    );
    expect(results).toEqual(Array.from({ length: 64 }, (_, k) => k + 1));
  });
});
