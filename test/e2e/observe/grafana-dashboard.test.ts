/**
 * deploy/grafana/nereid-dashboard.json against a real Prometheus (#18, M-01..M-08):
 * Debian's prometheus (installed if missing) scrapes dist/nereid's /metrics every
 * second while requests (successes, cache hits and misses, failures) run; every
 * panel's query, with Grafana's variables filled in as Grafana would, must return
 * data through Prometheus's HTTP API. The GPU panels read NVML's nv_gpu_* series:
 * on a host without an NVIDIA driver Nereid exports none, and the test checks that
 * those queries come back empty instead (nothing is faked).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT, startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { ensureDebianProgram } from "../../helpers/debian.ts";
import { freePort } from "../../helpers/ports.ts";

interface Target {
  expr: string;
  refId: string;
}
interface Panel {
  type: string;
  title: string;
  targets?: Target[];
}
const dashboard = JSON.parse(readFileSync(join(ROOT, "deploy", "grafana", "nereid-dashboard.json"), "utf8")) as {
  panels: Panel[];
  templating: { list: { name: string; definition?: string }[] };
};
const panels = dashboard.panels.filter((p) => p.type !== "row");

/** A target's query as Grafana sends it: the model variable at "All" (.*), the rate interval fixed. */
const filled = (expr: string) => expr.replaceAll("$__rate_interval", "10s").replaceAll("$model", ".*");

let repo: ReturnType<typeof makeRepository>;
let server: ServerProcess;
let prometheus: ChildProcess;
let prometheusLog = "";
let promUrl: string;
let dataDir: string;

beforeAll(async () => {
  const binary = ensureDebianProgram("/usr/bin/prometheus", "prometheus", "The Grafana dashboard test");
  repo = makeRepository(["simple"]);
  const simpleConfig = readFileSync(join(repo.dir, "simple", "config.pbtxt"), "utf8");
  repo.add(
    "simple_cached/config.pbtxt",
    simpleConfig.replace('name: "simple"', 'name: "simple_cached"') + "response_cache { enable: true }\ndynamic_batching { }\n",
  );
  repo.add("simple_cached/1/model.onnx", readFileSync(join(repo.dir, "simple", "1", "model.onnx")));
  server = await startServerProcess([`--model-repository=${repo.dir}`, "--cache-config=local,size=1048576", "--metrics-interval-ms=500", "--allow-grpc=false"]);
  const target = server.metricsUrl!.replace("http://", "");
  dataDir = mkdtempSync(join(tmpdir(), "nereid-prometheus-"));
  writeFileSync(
    join(dataDir, "prometheus.yml"),
    `global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: nereid\n    static_configs:\n      - targets: ["${target}"]\n`,
  );
  const port = await freePort();
  promUrl = `http://127.0.0.1:${port}`;
  prometheus = spawn(
    binary,
    [`--config.file=${join(dataDir, "prometheus.yml")}`, `--storage.tsdb.path=${join(dataDir, "data")}`, `--web.listen-address=127.0.0.1:${port}`],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  prometheus.stdout!.on("data", (c: Buffer) => (prometheusLog += c.toString()));
  prometheus.stderr!.on("data", (c: Buffer) => (prometheusLog += c.toString()));
  await until(
    async () => (await fetch(`${promUrl}/-/ready`).catch(() => undefined))?.status === 200,
    60_000,
    () => prometheusLog,
  );
}, 900_000);

afterAll(async () => {
  prometheus?.kill("SIGTERM");
  await server?.stop();
  repo?.remove();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function until(check: () => Promise<boolean>, ms: number, why: () => string = () => ""): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`condition not met in ${ms} ms\n${why()}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}
async function query(expr: string): Promise<Sample[]> {
  const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
  const body = (await res.json()) as { status: string; error?: string; data: { result: Sample[] } };
  if (body.status !== "success") throw new Error(`Prometheus refused '${expr}': ${body.error}`);
  return body.data.result;
}
const hasData = (r: Sample[]) => r.some((s) => Number.isFinite(Number(s.value[1])));

const INPUT = (v: number, datatype = "INT32") =>
  JSON.stringify({ inputs: ["INPUT0", "INPUT1"].map((name) => ({ name, shape: [1, 16], datatype, data: Array(16).fill(v) })) });

/** Successes on both models (simple_cached: hits after the first of each value), and requests that fail validation. */
function load() {
  let running = true;
  let i = 0;
  const loop = (async () => {
    while (running) {
      const n = i++;
      await Promise.all([
        fetch(`${server.url}/v2/models/simple/infer`, { method: "POST", body: INPUT(n % 7) }).then((r) => r.arrayBuffer()),
        fetch(`${server.url}/v2/models/simple_cached/infer`, { method: "POST", body: INPUT(n % 3) }).then((r) => r.arrayBuffer()),
        n % 5 === 0 ? fetch(`${server.url}/v2/models/simple/infer`, { method: "POST", body: INPUT(1, "FP32") }).then((r) => r.arrayBuffer()) : undefined,
      ]);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return async () => {
    running = false;
    await loop;
  };
}

describe("Grafana dashboard against Prometheus scraping dist/nereid", () => {
  it("has the panels the issue lists, each with a Prometheus query", () => {
    expect(panels.map((p) => p.title)).toEqual([
      "Requests per second",
      "Inferences and executions per second",
      "Request latency split (average per request)",
      "End-to-end request latency (average)",
      "Average batch size",
      "Queue depth",
      "Response cache hit rate",
      "Failures by reason",
      "CPU utilization",
      "CPU memory",
      "Model load time",
      "GPU utilization",
      "GPU memory",
      "GPU power",
    ]);
    for (const p of panels) expect(p.targets?.length, p.title).toBeGreaterThan(0);
  });

  it("every panel's query returns data (the GPU ones exactly when NVML is present)", async () => {
    const noGpu = /GPU metrics unavailable/.test(server.log());
    const targets = panels.flatMap((p) => p.targets!.map((t) => ({ panel: p.title, expr: filled(t.expr), gpu: t.expr.includes("nv_gpu_") })));
    const stop = load();
    const missing = async () => {
      const out: string[] = [];
      for (const t of targets) if (!(t.gpu && noGpu) && !hasData(await query(t.expr))) out.push(`${t.panel}: ${t.expr}`);
      return out;
    };
    try {
      let last: string[] = [];
      await until(
        async () => (last = await missing()).length === 0,
        120_000,
        () => `queries without data:\n  ${last.join("\n  ")}\n${prometheusLog.slice(-2000)}`,
      );
    } finally {
      await stop();
    }
    // Values that can be checked exactly: failures are OTHER (validation), the cache has hits, the model variable lists both models.
    const failures = await query(filled('sum by (model, reason) (increase(nv_inference_request_failure{model=~"$model"}[1h]))'));
    expect(failures.filter((s) => Number(s.value[1]) > 0).map((s) => [s.metric.model, s.metric.reason])).toEqual([["simple", "OTHER"]]);
    expect(Number((await query("nv_cache_num_hits_per_model"))[0]!.value[1])).toBeGreaterThan(0);
    const labels = (await (await fetch(`${promUrl}/api/v1/label/model/values?match[]=nv_inference_request_success`)).json()) as { data: string[] };
    expect(labels.data.sort()).toEqual(["simple", "simple_cached"]);
    expect(dashboard.templating.list.find((v) => v.name === "model")!.definition).toBe("label_values(nv_inference_request_success, model)");
    for (const t of targets.filter((t) => t.gpu)) expect(hasData(await query(t.expr)), t.expr).toBe(!noGpu);
  });
});
