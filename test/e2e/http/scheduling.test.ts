/**
 * S-03, S-07, S-08, S-17, S-18 through the server binary: dynamic batching merges
 * concurrent requests into one execution and answers each exactly; queue policies
 * reject with Triton's messages; the response cache answers repeats without running.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;

const SIMPLE_IO = `
input [
  { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
  { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
  { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 16 ] }
]`;

function addSimpleVariant(name: string, extra: string): void {
  repo.add(`${name}/config.pbtxt`, `name: "${name}"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 8\n${SIMPLE_IO}\n${extra}\n`);
  repo.add(`${name}/1/model.onnx`, readFileSync(join(repo.dir, "simple", "1", "model.onnx")));
}

function body(batch: number, base: number, params?: object) {
  const a = Array.from({ length: 16 * batch }, (_, i) => base + i);
  const b = Array.from({ length: 16 * batch }, () => base);
  return JSON.stringify({
    ...(params ? { parameters: params } : {}),
    inputs: [
      { name: "INPUT0", shape: [batch, 16], datatype: "INT32", data: a },
      { name: "INPUT1", shape: [batch, 16], datatype: "INT32", data: b },
    ],
  });
}

async function infer(model: string, batch: number, base: number, params?: object) {
  const res = await fetch(`${server.url}/v2/models/${model}/infer`, { method: "POST", body: body(batch, base, params) });
  return { status: res.status, json: (await res.json()) as { error?: string; outputs?: { name: string; shape: number[]; data: number[] }[] } };
}

const stats = async (model: string) =>
  ((await (await fetch(`${server.url}/v2/models/${model}/stats`)).json()) as { model_stats: Record<string, any>[] }).model_stats[0]!;

beforeAll(async () => {
  repo = makeRepository(["simple"]);
  addSimpleVariant("simple_batched", "dynamic_batching { preferred_batch_size: [ 8 ] max_queue_delay_microseconds: 10000000 }");
  addSimpleVariant(
    "simple_policy",
    "dynamic_batching { preferred_batch_size: [ 8 ] max_queue_delay_microseconds: 10000000 " +
      "default_queue_policy { max_queue_size: 2 default_timeout_microseconds: 300000 } }",
  );
  addSimpleVariant("simple_cached", "dynamic_batching { }\nresponse_cache { enable: true }");
  server = await startServerProcess([`--model-repository=${repo.dir}`, "--cache-config=local,size=1048576", "--metrics-config=summary_latencies=true"]);
});

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

describe("dynamic batching through the server (S-03)", () => {
  it("merges concurrent requests into one execution of the preferred size and answers each exactly", async () => {
    const sizes = [1, 2, 1, 3, 1];
    const results = await Promise.all(sizes.map((n, i) => infer("simple_batched", n, 1000 * (i + 1))));
    results.forEach((r, i) => {
      const n = sizes[i]!;
      const base = 1000 * (i + 1);
      expect(r.status).toBe(200);
      const out0 = r.json.outputs!.find((o) => o.name === "OUTPUT0")!;
      const out1 = r.json.outputs!.find((o) => o.name === "OUTPUT1")!;
      expect(out0.shape).toEqual([n, 16]);
      expect(out0.data).toEqual(Array.from({ length: 16 * n }, (_, k) => 2 * base + k));
      expect(out1.data).toEqual(Array.from({ length: 16 * n }, (_, k) => k));
    });
    const s = await stats("simple_batched");
    expect(s.execution_count).toBe(1);
    expect(s.inference_count).toBe(8);
    expect(s.inference_stats.success.count).toBe(5);
    expect(s.batch_stats.map((b: { batch_size: number }) => b.batch_size)).toEqual([8]);
    expect(s.batch_stats[0].compute_infer.count).toBe(1);
  });
});

describe("queue policy through the server (S-07, S-08)", () => {
  it("rejects beyond max_queue_size at once and times out queued requests, both with 503 and Triton's messages", async () => {
    const queued = [infer("simple_policy", 1, 1), infer("simple_policy", 1, 2)];
    await new Promise((r) => setTimeout(r, 100));
    const full = await infer("simple_policy", 1, 3);
    expect(full.status).toBe(503);
    expect(full.json).toEqual({ error: "Exceeds maximum queue size" });
    for (const r of await Promise.all(queued)) {
      expect(r.status).toBe(503);
      expect(r.json).toEqual({ error: "Request timeout expired" });
    }
    const metrics = await (await fetch(`${server.metricsUrl}/metrics`)).text();
    expect(metrics).toContain('nv_inference_request_failure{model="simple_policy",version="1",reason="REJECTED"} 3');
    const s = await stats("simple_policy");
    expect(s.inference_stats.fail.count).toBe(3);
    expect(s.execution_count).toBe(0);
  });
});

describe("response cache (S-17, S-18)", () => {
  it("answers a repeated request from the cache: same bytes, no execution, hit and miss counted", async () => {
    const first = await infer("simple_cached", 2, 7);
    const again = await infer("simple_cached", 2, 7);
    const other = await infer("simple_cached", 1, 7);
    expect(first.status).toBe(200);
    expect(again.json).toEqual(first.json);
    expect(other.json.outputs![0]!.shape).toEqual([1, 16]);
    const s = await stats("simple_cached");
    expect(s.inference_stats.success.count).toBe(3);
    expect(s.inference_stats.cache_hit.count).toBe(1);
    expect(s.inference_stats.cache_miss.count).toBe(2);
    expect(s.execution_count).toBe(2);
    expect(s.inference_count).toBe(3);
    const metrics = await (await fetch(`${server.metricsUrl}/metrics`)).text();
    expect(metrics).toContain('nv_cache_num_hits_per_model{model="simple_cached",version="1"} 1');
    expect(metrics).toContain('nv_cache_num_misses_per_model{model="simple_cached",version="1"} 2');
    expect(metrics).not.toContain('nv_cache_num_hits_per_model{model="simple"');
  });

  it("does not cache models that do not enable it", async () => {
    await infer("simple", 1, 5);
    await infer("simple", 1, 5);
    const s = await stats("simple");
    expect(s.execution_count).toBe(2);
    expect(s.inference_stats.cache_hit.count).toBe(0);
    expect(s.inference_stats.cache_miss.count).toBe(0);
  });
});

describe("latency summaries (--metrics-config summary_latencies=true)", () => {
  it("observes each successful request; the request summary is off for cache-enabled models, as in Triton", async () => {
    const before = await stats("simple");
    await infer("simple", 1, 9);
    const text = await (await fetch(`${server.metricsUrl}/metrics`)).text();
    const n = before.inference_stats.success.count + 1;
    expect(text).toContain("# TYPE nv_inference_request_summary_us summary");
    expect(text).toContain(`nv_inference_request_summary_us_count{model="simple",version="1"} ${n}`);
    expect(text).toContain(`nv_inference_compute_infer_summary_us_count{model="simple",version="1"} ${n}`);
    expect(text).toMatch(/nv_inference_queue_summary_us\{quantile="0\.99",model="simple",version="1"\} [\d.e+-]+/);
    expect(text).not.toContain('nv_inference_request_summary_us_count{model="simple_cached"');
    expect(text).toContain('nv_inference_queue_summary_us_count{model="simple_cached",version="1"} 3');
    expect(text).toContain('nv_inference_compute_infer_summary_us_count{model="simple_cached",version="1"} 2');
    // The cache's own summaries (#17), for the model with the cache only: one hit, two misses.
    expect(text).toContain('nv_cache_hit_summary_per_model_count{model="simple_cached",version="1"} 1');
    expect(text).toContain('nv_cache_miss_summary_per_model_count{model="simple_cached",version="1"} 2');
    expect(text).not.toContain('nv_cache_hit_summary_per_model_count{model="simple"');
  });
});
