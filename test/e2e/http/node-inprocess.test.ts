/**
 * The same source under Node: startServer() in-process with the node:http adapter.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { startServer, type RunningServer } from "../../../src/main.ts";
import { defaultOptions } from "../../../src/options.ts";
import { configureLog } from "../../../src/core/logger.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { inferenceClient } from "../../helpers/grpc-client.ts";

let running: RunningServer;
let repo: ReturnType<typeof makeRepository>;
let url: string;

beforeAll(async () => {
  configureLog({ info: false, warning: false });
  repo = makeRepository(["simple", "simple_identity"]);
  running = await startServer({
    ...defaultOptions(),
    modelRepositories: [repo.dir],
    httpPort: 0,
    httpAddress: "127.0.0.1",
    allowGrpc: true,
    grpcPort: 0,
    grpcAddress: "127.0.0.1",
    allowMetrics: false,
  });
  url = `http://127.0.0.1:${running.http!.port}`;
});

afterAll(async () => {
  expect(await running?.shutdown()).toBe(0);
  repo?.remove();
});

describe("under Node (node:http)", () => {
  it("serves ready, metadata and inference", async () => {
    expect((await fetch(`${url}/v2/health/ready`)).status).toBe(200);
    const res = await fetch(`${url}/v2/models/simple/infer`, {
      method: "POST",
      body: JSON.stringify({
        inputs: [
          { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: Array.from({ length: 16 }, (_, i) => i * 10) },
          { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: Array.from({ length: 16 }, (_, i) => i) },
        ],
      }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body.outputs[0].data).toEqual(Array.from({ length: 16 }, (_, i) => i * 11));
    expect(body.outputs[1].data).toEqual(Array.from({ length: 16 }, (_, i) => i * 9));
  });

  it("runs 64 concurrent requests with exact answers", async () => {
    const results = await Promise.all(
      Array.from({ length: 64 }, async (_, k) => {
        const res = await fetch(`${url}/v2/models/simple/infer`, {
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

  it("serves gRPC under Node too", async () => {
    const { client, call } = inferenceClient(`127.0.0.1:${running.grpc!.port}`);
    expect(await call("ServerReady")({})).toEqual({ ready: true });
    const a = new Uint8Array(Int32Array.from({ length: 16 }, (_, i) => i).buffer);
    const r = await call("ModelInfer")({ model_name: "simple", inputs: [{ name: "INPUT0", datatype: "INT32", shape: [1, 16] }, { name: "INPUT1", datatype: "INT32", shape: [1, 16] }], raw_input_contents: [a, a] });
    expect([...new Int32Array(new Uint8Array(r.raw_output_contents[0]).buffer)]).toEqual(Array.from({ length: 16 }, (_, i) => 2 * i));
    client.close();
  });

  it("counts successes and failures in statistics", async () => {
    const before = ((await (await fetch(`${url}/v2/models/simple/stats`)).json()) as any).model_stats[0];
    await fetch(`${url}/v2/models/simple/infer`, { method: "POST", body: JSON.stringify({ inputs: [] }) });
    const after = ((await (await fetch(`${url}/v2/models/simple/stats`)).json()) as any).model_stats[0];
    expect(after.name).toBe("simple");
    expect(after.version).toBe("1");
    expect(after.inference_stats.fail.count).toBe(before.inference_stats.fail.count + 1);
    expect(after.inference_stats.success.count).toBe(before.inference_stats.success.count);
  });
});
