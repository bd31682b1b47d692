/** M-01..M-04, M-08: Prometheus metrics with Triton's names, labels and exact counts. */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { readFileSync, rmSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { ensureDebianProgram } from "../helpers/debian.ts";
import { join } from "node:path";
import { startServerProcess, type ServerProcess } from "../helpers/server-process.ts";
import { makeRepository } from "../helpers/repo.ts";

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;

const infer = (batch: number, datatype = "INT32") =>
  fetch(`${server.url}/v2/models/simple/infer`, {
    method: "POST",
    body: JSON.stringify({
      inputs: ["INPUT0", "INPUT1"].map((name) => ({ name, shape: [batch, 16], datatype, data: Array(16 * batch).fill(1) })),
    }),
  });

function sample(text: string, name: string, labels: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${name}{${labels}}`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

beforeAll(async () => {
  repo = makeRepository(["simple", "simple_identity"]);
  server = await startServerProcess([`--model-repository=${repo.dir}`, "--metrics-interval-ms=100"]);
});

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

describe("metrics endpoint", () => {
  it("counts a known sequence of requests exactly", async () => {
    for (const batch of [1, 2, 1]) expect((await infer(batch)).status).toBe(200);
    expect((await infer(1, "FP32")).status).toBe(400); // validation failure → reason OTHER
    expect((await fetch(`${server.url}/v2/models/nope/infer`, { method: "POST", body: "{}" })).status).toBe(404);

    const res = await fetch(`${server.metricsUrl}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    const text = await res.text();
    const simple = 'model="simple",version="1"';
    expect(text).toContain("# TYPE nv_inference_request_success counter");
    expect(text).toContain("# TYPE nv_inference_pending_request_count gauge");
    expect(sample(text, "nv_inference_request_success", simple)).toBe(3);
    expect(sample(text, "nv_inference_count", simple)).toBe(4);
    expect(sample(text, "nv_inference_exec_count", simple)).toBe(3);
    expect(sample(text, "nv_inference_pending_request_count", simple)).toBe(0);
    const load = sample(text, "nv_model_load_duration_secs", simple)!;
    expect(load).toBeGreaterThan(0);
    expect(load).toBeLessThan(60);
    for (const [reason, n] of [
      ["REJECTED", 0],
      ["CANCELED", 0],
      ["BACKEND", 0],
      ["OTHER", 1],
    ] as const) {
      expect(sample(text, "nv_inference_request_failure", `${simple},reason="${reason}"`)).toBe(n);
    }
    expect(sample(text, "nv_inference_request_success", 'model="simple_identity",version="1"')).toBe(0);
    // The request and the run always take whole microseconds; the queue wait and the tensor
    // conversions of three `simple` requests may sum to less than one (counters are whole µs).
    const duration = (family: string) => sample(text, `nv_inference_${family}_duration_us`, simple)!;
    expect(duration("request")).toBeGreaterThan(0);
    expect(duration("compute_infer")).toBeGreaterThan(0);
    for (const family of ["queue", "compute_input", "compute_output", "compute_infer"]) {
      expect(Number.isInteger(duration(family)), `${family}: ${duration(family)}`).toBe(true);
      expect(duration(family)).toBeGreaterThanOrEqual(0);
      expect(duration(family)).toBeLessThanOrEqual(duration("request"));
    }
    const total = Number(/^nv_cpu_memory_total_bytes (\S+)$/m.exec(text)?.[1]);
    const used = Number(/^nv_cpu_memory_used_bytes (\S+)$/m.exec(text)?.[1]);
    const util = Number(/^nv_cpu_utilization (\S+)$/m.exec(text)?.[1]);
    expect(total).toBeGreaterThan(used);
    expect(used).toBeGreaterThan(0);
    expect(util).toBeGreaterThanOrEqual(0);
    expect(util).toBeLessThanOrEqual(1);
  });

  it("answers other paths like Triton's metrics server", async () => {
    const other = await fetch(`${server.metricsUrl}/anything`);
    expect(other.status).toBe(200);
    expect(await other.text()).toBe("");
    expect((await fetch(`${server.metricsUrl}/metrics/`)).status).toBe(200);
    expect((await fetch(`${server.metricsUrl}/metrics`, { method: "POST" })).status).toBe(405);
  });
});

describe("nv_pinned_memory_pool_* (M-08, #17)", () => {
  it("reports a pinned pool of 0 bytes, used and total: Nereid allocates none", async () => {
    const text = await (await fetch(`${server.metricsUrl}/metrics`)).text();
    expect(text).toContain("# TYPE nv_pinned_memory_pool_total_bytes gauge\nnv_pinned_memory_pool_total_bytes 0\n");
    expect(text).toContain("# TYPE nv_pinned_memory_pool_used_bytes gauge\nnv_pinned_memory_pool_used_bytes 0\n");
  });
});

describe("--metrics-config histogram_latencies=true (M-06, #17)", () => {
  it("exports nv_inference_first_response_histogram_ms with Triton's buckets, one observation per request", async () => {
    expect(await (await fetch(`${server.metricsUrl}/metrics`)).text()).not.toContain("nv_inference_first_response_histogram_ms");
    const s = await startServerProcess([`--model-repository=${repo.dir}`, "--metrics-config=histogram_latencies=true"]);
    try {
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${s.url}/v2/models/simple/infer`, {
          method: "POST",
          body: JSON.stringify({ inputs: ["INPUT0", "INPUT1"].map((name) => ({ name, shape: [1, 16], datatype: "INT32", data: Array(16).fill(1) })) }),
        });
        expect(res.status).toBe(200);
      }
      const text = await (await fetch(`${s.metricsUrl}/metrics`)).text();
      expect(text).toContain("# TYPE nv_inference_first_response_histogram_ms histogram");
      const buckets = text
        .split("\n")
        .filter((l) => l.startsWith("nv_inference_first_response_histogram_ms_bucket{") && l.includes('model="simple"'))
        .map((l) => /le="([^"]+)"/.exec(l)![1]);
      expect(buckets).toEqual(["100", "500", "2000", "5000", "+Inf"]);
      expect(sample(text, "nv_inference_first_response_histogram_ms_bucket", 'le="+Inf",model="simple",version="1"')).toBe(3);
      expect(sample(text, "nv_inference_first_response_histogram_ms_count", 'model="simple",version="1"')).toBe(3);
    } finally {
      await s.stop();
    }
  });
});

describe("nv_inference_first_response_histogram_ms per model (M-06, #17)", () => {
  /** A decoupled TypeScript model: three responses per request, the first after 30 ms, then a flag-only final. */
  const THREE = `
export default class Three {
  execute(requests) {
    for (const r of requests) {
      const sender = r.getResponseSender();
      const out = (i) => ({ outputs: [{ name: "OUT", datatype: "INT32", shape: [1], data: [i] }] });
      setTimeout(() => { sender.send(out(0)); sender.send(out(1)); sender.send(out(2)); sender.send(undefined, { final: true }); }, 30);
    }
  }
}
`;

  it("takes a model's buckets from model_metrics, and observes a decoupled request's first response once", async () => {
    const config = readFileSync(join(repo.dir, "simple", "config.pbtxt"), "utf8");
    repo.add(
      "simple_buckets/config.pbtxt",
      config.replace(/name: "simple"/, 'name: "simple_buckets"') +
        'model_metrics { metric_control [ { metric_identifier { family: "nv_inference_first_response_histogram_ms" } histogram_options { buckets: [ 10, 1, 100 ] } } ] }\n',
    );
    repo.add("simple_buckets/1/model.onnx", readFileSync(join(repo.dir, "simple", "1", "model.onnx")));
    repo.add(
      "three/config.pbtxt",
      'name: "three"\nbackend: "typescript"\nmax_batch_size: 0\nmodel_transaction_policy { decoupled: true }\n' +
        'input [ { name: "N" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]\n',
    );
    repo.add("three/1/model.js", THREE);
    const s = await startServerProcess([`--model-repository=${repo.dir}`, "--metrics-config=histogram_latencies=true"]);
    try {
      const body = JSON.stringify({ inputs: ["INPUT0", "INPUT1"].map((name) => ({ name, shape: [1, 16], datatype: "INT32", data: Array(16).fill(1) })) });
      for (const m of ["simple", "simple_buckets", "simple_buckets"])
        expect((await fetch(`${s.url}/v2/models/${m}/infer`, { method: "POST", body })).status).toBe(200);
      for (let i = 0; i < 2; i++) {
        const res = await fetch(`${s.url}/v2/models/three/generate_stream`, { method: "POST", body: JSON.stringify({ N: 3 }) });
        expect((await res.text()).split("data: ").length - 1).toBe(3);
      }
      const text = await (await fetch(`${s.metricsUrl}/metrics`)).text();
      const buckets = (model: string) =>
        text
          .split("\n")
          .filter((l) => l.startsWith("nv_inference_first_response_histogram_ms_bucket{") && l.includes(`model="${model}"`))
          .map((l) => /le="([^"]+)"/.exec(l)![1]);
      expect(buckets("simple")).toEqual(["100", "500", "2000", "5000", "+Inf"]);
      expect(buckets("simple_buckets")).toEqual(["1", "10", "100", "+Inf"]);
      expect(sample(text, "nv_inference_first_response_histogram_ms_count", 'model="simple_buckets",version="1"')).toBe(2);
      expect(sample(text, "nv_inference_first_response_histogram_ms_count", 'model="three",version="1"')).toBe(2);
      // The first of three responses comes 30 ms after each request: both within 100 ms, at least 60 ms in all.
      expect(sample(text, "nv_inference_first_response_histogram_ms_bucket", 'le="100",model="three",version="1"')).toBe(2);
      expect(sample(text, "nv_inference_first_response_histogram_ms_sum", 'model="three",version="1"')).toBeGreaterThanOrEqual(60);
    } finally {
      await s.stop();
      for (const m of ["simple_buckets", "three"]) rmSync(join(repo.dir, m), { recursive: true, force: true });
    }
  });
});

describe("metric_tags (M-01, #17)", () => {
  /** name{labels} value lines of a family, each as its label map and value. */
  function series(text: string, name: string): { labels: Record<string, string>; value: number }[] {
    return text
      .split("\n")
      .filter((l) => l.startsWith(`${name}{`))
      .map((l) => ({
        labels: Object.fromEntries(
          [...l.slice(l.indexOf("{") + 1, l.lastIndexOf("}")).matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]),
        ),
        value: Number(l.slice(l.lastIndexOf(" ") + 1)),
      }));
  }

  it("adds each tag as an _<key> label to the model's series, and a model loaded later with a new key gets its label too", async () => {
    const config = readFileSync(join(repo.dir, "simple", "config.pbtxt"), "utf8");
    const model = readFileSync(join(repo.dir, "simple", "1", "model.onnx"));
    const tagged = (name: string, tags: string) => {
      repo.add(`${name}/config.pbtxt`, config.replace(/name: "simple"/, `name: "${name}"`) + tags);
      repo.add(`${name}/1/model.onnx`, model);
    };
    tagged("simple_tagged", 'metric_tags { key: "team" value: "ocr" }\nmetric_tags { key: "tier" value: "gold" }\n');
    tagged("simple_site", 'metric_tags { key: "site" value: "eu" }\n');
    const s = await startServerProcess([
      `--model-repository=${repo.dir}`,
      "--model-control-mode=explicit",
      "--load-model=simple",
      "--load-model=simple_tagged",
      "--metrics-config=summary_latencies=true",
      "--metrics-config=histogram_latencies=true",
    ]);
    try {
      const body = JSON.stringify({ inputs: ["INPUT0", "INPUT1"].map((name) => ({ name, shape: [1, 16], datatype: "INT32", data: Array(16).fill(1) })) });
      for (const m of ["simple", "simple_tagged"]) expect((await fetch(`${s.url}/v2/models/${m}/infer`, { method: "POST", body })).status).toBe(200);
      let text = await (await fetch(`${s.metricsUrl}/metrics`)).text();
      expect(series(text, "nv_inference_request_success").sort((a, b) => a.labels.model!.localeCompare(b.labels.model!))).toEqual([
        { labels: { model: "simple", version: "1" }, value: 1 },
        { labels: { model: "simple_tagged", version: "1", _team: "ocr", _tier: "gold" }, value: 1 },
      ]);
      expect(
        series(text, "nv_inference_request_failure")
          .filter((x) => x.labels.model === "simple_tagged")
          .map((x) => x.labels._team),
      ).toEqual(["ocr", "ocr", "ocr", "ocr"]);
      // The families observed per request carry the tags too.
      for (const family of ["nv_inference_queue_summary_us_count", "nv_inference_first_response_histogram_ms_count"]) {
        expect(
          series(text, family).find((x) => x.labels.model === "simple_tagged"),
          family,
        ).toEqual({ labels: { model: "simple_tagged", version: "1", _team: "ocr", _tier: "gold" }, value: 1 });
      }

      expect((await fetch(`${s.url}/v2/repository/models/simple_site/load`, { method: "POST" })).status).toBe(200);
      text = await (await fetch(`${s.metricsUrl}/metrics`)).text();
      const site = series(text, "nv_inference_count").find((x) => x.labels.model === "simple_site");
      expect(site).toEqual({ labels: { model: "simple_site", version: "1", _site: "eu" }, value: 0 });
      expect(series(text, "nv_inference_count").find((x) => x.labels.model === "simple_tagged")!.value).toBe(1);
    } finally {
      await s.stop();
      for (const m of ["simple_tagged", "simple_site"]) rmSync(join(repo.dir, m), { recursive: true, force: true });
    }
  });
});

describe("promtool check metrics (#17)", () => {
  /** The lints promtool makes of Triton's own names, which are kept for compatibility. */
  const TRITON_NAME_LINT =
    /^nv_\S+ (counter metrics should have "_total" suffix|metric names should not contain abbreviated units|metric name should not include type '(summary|histogram)'|non-histogram and non-summary metrics should not have "_count" suffix)$/;

  it("finds nothing in the exposition but the lints of Triton's own metric names", async () => {
    const promtool = ensureDebianProgram("/usr/bin/promtool", "prometheus", "The promtool check of the metrics");
    const config = readFileSync(join(repo.dir, "simple", "config.pbtxt"), "utf8");
    repo.add("simple_cached/config.pbtxt", config.replace(/name: "simple"/, 'name: "simple_cached"') + "response_cache { enable: true }\n");
    repo.add("simple_cached/1/model.onnx", readFileSync(join(repo.dir, "simple", "1", "model.onnx")));
    const s = await startServerProcess([
      `--model-repository=${repo.dir}`,
      "--cache-config=local,size=1048576",
      "--metrics-config=summary_latencies=true",
      "--metrics-config=histogram_latencies=true",
    ]);
    try {
      const body = JSON.stringify({ inputs: ["INPUT0", "INPUT1"].map((name) => ({ name, shape: [1, 16], datatype: "INT32", data: Array(16).fill(2) })) });
      for (const m of ["simple", "simple_cached", "simple_cached"])
        expect((await fetch(`${s.url}/v2/models/${m}/infer`, { method: "POST", body })).status).toBe(200);
      const text = await (await fetch(`${s.metricsUrl}/metrics`)).text();
      expect(text).toContain("nv_cache_hit_summary_per_model_count");
      expect(text).toContain("nv_inference_first_response_histogram_ms_bucket");
      const r = spawnSync(promtool, ["check", "metrics"], { input: text, encoding: "utf8" });
      const findings = (r.stdout + r.stderr)
        .split("\n")
        .map((l) => l.trim())
        .filter(Boolean);
      expect(findings.filter((l) => !TRITON_NAME_LINT.test(l))).toEqual([]);
      expect([0, 3]).toContain(r.status); // 3: lint findings only; 1 would be a parse error
    } finally {
      await s.stop();
      rmSync(join(repo.dir, "simple_cached"), { recursive: true, force: true });
    }
  });
});
