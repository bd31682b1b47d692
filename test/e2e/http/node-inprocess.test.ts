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

describe("generate_stream under Node (node:http, #16, P-31)", () => {
  it("writes an ordinary model's response as one SSE event, and generate as one JSON object", async () => {
    const A = Array.from({ length: 16 }, (_, i) => i);
    const body = JSON.stringify({ id: "n", INPUT0: A, INPUT1: A });
    const expected = { id: "n", model_name: "simple", model_version: "1", OUTPUT0: A.map((v) => 2 * v), OUTPUT1: A.map(() => 0) };
    const res = await fetch(`${s.url}/v2/models/simple/generate_stream`, { method: "POST", body });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(await res.text()).toBe(`data: ${JSON.stringify(expected)}\n\n`);
    const one = await fetch(`${s.url}/v2/models/simple/generate`, { method: "POST", body });
    expect(await one.json()).toEqual(expected);
  });
});
