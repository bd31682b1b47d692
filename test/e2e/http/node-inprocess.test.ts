/**
 * The same source under Node: the in-process API (startInProcess, src/index.ts) with its
 * listeners on the node:http adapter and grpc-js, through the shared frontend suite.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { readFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { join } from "node:path";
import { startInProcess, type InProcessServer } from "../../helpers/inprocess.ts";
import { frontendSuite } from "../../suites/frontend.ts";
import { MIXED, expectAnswer, pipeline } from "../../helpers/pipelining.ts";

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

  it("answers HTTP/1.1 pipelined requests all, in order (P-03, P-05, P-06; docs/compatibility.md)", async () => {
    const { answers, closed } = await pipeline(Number(new URL(s.url).port), MIXED);
    expect(closed).toBe(false);
    expect(answers.length).toBe(MIXED.length);
    answers.forEach((a, i) => expectAnswer(MIXED[i]!, a.status, a.body));
  });

  it("refuses a declared Content-Length past --http-max-input-size before reading the body, with Triton's 400", async () => {
    const declared = 64 * 1024 * 1024 + 1;
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(`${s.url}/v2/models/simple/infer`, { method: "POST", headers: { "content-length": String(declared) } }, (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode!, body }));
      });
      req.on("error", reject);
      req.write("{");
    });
    expect(answer).toEqual({
      status: 400,
      body: JSON.stringify({
        error: `Request JSON size of ${declared} exceeds the maximum allowed value of ${64 * 1024 * 1024}. Use --http-max-input-size to increase the limit.`,
      }),
    });
  });
});

describe("under Node (node:http): cancellation", () => {
  let c: InProcessServer;

  beforeAll(async () => {
    c = await startInProcess(["simple"], {
      // simple_slow: simple behind a dynamic batcher that holds a lone request for up to 10 s.
      repo: (r) => {
        const config = readFileSync(join(r.dir, "simple", "config.pbtxt"), "utf8").replace('name: "simple"', 'name: "simple_slow"');
        r.add("simple_slow/config.pbtxt", `${config}\ndynamic_batching { preferred_batch_size: [ 8 ] max_queue_delay_microseconds: 10000000 }\n`);
        r.add("simple_slow/1/model.onnx", readFileSync(join(r.dir, "simple", "1", "model.onnx")));
      },
    });
  });

  afterAll(async () => {
    if (c) expect(await c.stop()).toBe(0);
  });

  it("S-20: a client that disconnects while its request is queued cancels it (the node:http listener's 'close')", async () => {
    const metric = async (prefix: string) =>
      Number(
        (await (await fetch(`${c.metricsUrl}/metrics`)).text())
          .split("\n")
          .find((l) => l.startsWith(prefix))
          ?.split(" ")
          .pop() ?? NaN,
      );
    const pending = () => metric(`nv_inference_pending_request_count{model="simple_slow",version="1"}`);
    const canceled = () => metric(`nv_inference_request_failure{model="simple_slow",version="1",reason="CANCELED"}`);
    const until = async (check: () => Promise<boolean>) => {
      while (!(await check())) await new Promise((r) => setTimeout(r, 10));
    };
    const req = httpRequest(`${c.url}/v2/models/simple_slow/infer`, { method: "POST" });
    req.on("error", () => {});
    req.end(JSON.stringify({ inputs: ["INPUT0", "INPUT1"].map((name) => ({ name, shape: [1, 16], datatype: "INT32", data: Array(16).fill(1) })) }));
    await until(async () => (await pending()) === 1);
    req.destroy();
    await until(async () => (await canceled()) === 1);
    expect(await pending()).toBe(0);
    const stats = (await (await fetch(`${c.url}/v2/models/simple_slow/stats`)).json()) as any;
    expect(stats.model_stats[0].inference_stats.fail.count).toBe(1);
    expect(stats.model_stats[0].execution_count).toBe(0);
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
