/**
 * #14 item 9: memory held by unanswered requests is bounded by --max-queued-bytes (a
 * Nereid flag; Triton has none). Past it a request is refused as a full queue is (503
 * "Exceeds maximum queue size", counted as REJECTED), and the bytes come back when the
 * requests they belong to are answered.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { readFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { join } from "node:path";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;

/** One simple request carries 2 × 16 INT32 = 128 input bytes; the bound lets two wait together. */
const BOUND = 300;

function body(batch: number, base: number, id: string) {
  return JSON.stringify({
    id,
    inputs: [
      { name: "INPUT0", shape: [batch, 16], datatype: "INT32", data: Array.from({ length: 16 * batch }, (_, i) => base + i) },
      { name: "INPUT1", shape: [batch, 16], datatype: "INT32", data: Array(16 * batch).fill(base) },
    ],
  });
}

async function infer(model: string, batch: number, base: number, id: string) {
  const res = await fetch(`${server.url}/v2/models/${model}/infer`, { method: "POST", body: body(batch, base, id) });
  return { status: res.status, json: (await res.json()) as { error?: string; outputs?: { name: string; data: number[] }[] } };
}

const sums = (batch: number, base: number) => Array.from({ length: 16 * batch }, (_, i) => 2 * base + i);

beforeAll(async () => {
  repo = makeRepository(["simple"]);
  const config = readFileSync(join(repo.dir, "simple", "config.pbtxt"), "utf8").replace('name: "simple"', 'name: "slow_batch"');
  repo.add("slow_batch/config.pbtxt", `${config}\ndynamic_batching { preferred_batch_size: [ 8 ] max_queue_delay_microseconds: 1500000 }\n`);
  repo.add("slow_batch/1/model.onnx", readFileSync(join(repo.dir, "simple", "1", "model.onnx")));
  server = await startServerProcess([`--model-repository=${repo.dir}`, `--max-queued-bytes=${BOUND}`]);
});

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

describe("--max-queued-bytes", () => {
  it("refuses a request past the bound while others wait, and admits again once they are answered", async () => {
    const waiting = [infer("slow_batch", 1, 10, "a"), infer("slow_batch", 1, 20, "b")];
    // Both wait in the batcher for up to 1.5 s, holding 256 bytes: a third would make 384.
    await new Promise((r) => setTimeout(r, 200));
    const refused = await infer("simple", 1, 30, "c");
    expect(refused).toEqual({ status: 503, json: { error: "[request id: c] Exceeds maximum queue size" } });
    const [a, b] = await Promise.all(waiting);
    expect(a!.status).toBe(200);
    expect(a!.json.outputs![0]!.data).toEqual(sums(1, 10));
    expect(b!.json.outputs![0]!.data).toEqual(sums(1, 20));
    const after = await infer("simple", 1, 40, "d");
    expect(after.status).toBe(200);
    expect(after.json.outputs![0]!.data).toEqual(sums(1, 40));

    const stats = ((await (await fetch(`${server.url}/v2/models/simple/stats`)).json()) as { model_stats: { inference_stats: { fail: { count: number } } }[] })
      .model_stats[0]!;
    expect(stats.inference_stats.fail.count).toBe(1);
    const metrics = await (await fetch(`${server.metricsUrl}/metrics`)).text();
    expect(metrics).toContain(`nv_inference_request_failure{model="simple",version="1",reason="REJECTED"} 1`);
  });

  it("S-20: cancelled requests give their bytes back at once: clients that disconnect while queued free the bound", async () => {
    const metrics = async () => await (await fetch(`${server.metricsUrl}/metrics`)).text();
    const value = (text: string, prefix: string) =>
      Number(
        text
          .split("\n")
          .find((l) => l.startsWith(prefix))
          ?.split(" ")
          .pop() ?? NaN,
      );
    const pending = async () => value(await metrics(), `nv_inference_pending_request_count{model="slow_batch",version="1"}`);
    const canceled = async () => value(await metrics(), `nv_inference_request_failure{model="slow_batch",version="1",reason="CANCELED"}`);
    const until = async (check: () => Promise<boolean>) => {
      while (!(await check())) await new Promise((r) => setTimeout(r, 10));
    };
    const before = await canceled();
    // Two requests wait in the batcher (up to 1.5 s), holding 256 of the 300 bytes.
    const clients = ["x", "y"].map((id, k) => {
      const req = httpRequest(`${server.url}/v2/models/slow_batch/infer`, { method: "POST" });
      req.on("error", () => {});
      req.end(body(1, 50 + k, id));
      return req;
    });
    await until(async () => (await pending()) === 2);
    for (const c of clients) c.destroy();
    await until(async () => (await canceled()) === before + 2);
    expect(await pending()).toBe(0);
    // Were their bytes still held, this would be refused (256 + 128 > 300).
    const admitted = await infer("simple", 1, 60, "e");
    expect(admitted.status).toBe(200);
    expect(admitted.json.outputs![0]!.data).toEqual(sums(1, 60));
  });

  it("lets a request larger than the whole bound in when nothing else is held", async () => {
    const big = await infer("simple", 8, 5, "big"); // 1024 input bytes
    expect(big.status).toBe(200);
    expect(big.json.outputs![0]!.data).toEqual(sums(8, 5));
  });
});
