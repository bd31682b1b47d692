/**
 * Dynamic batching benchmark (issue #4), one run, one process tree:
 *   1. in-process ONNX Runtime: simple_fp32_mlp at batch 32, same session options as
 *      the server's instance (the ceiling);
 *   2. dist/nereid, simple_fp32_mlp with dynamic batching, binary HTTP, concurrency 32;
 *   3. the same model with batching off (no dynamic_batching block), concurrency 32;
 *   4. concurrency 1 with batching on and off (latency cost of the batcher);
 *   5. `simple` with the response cache: all-hit vs all-miss at concurrency 1.
 * wrk (Debian package `wrk`) generates the load. Results are appended to
 * scripts/results/batching.md with the date and machine.
 *
 *   npm run build && bun scripts/bench-batching.ts [--binary=dist/nereid] [--duration=10] [--warmup=30] [--out=scripts/results/batching.md]
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, writeFileSync, readFileSync, mkdirSync, appendFileSync, existsSync, cpSync, openSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve, dirname, relative } from "node:path";
import { OrtEnvironment, OrtSessionOptions } from "../ffi/onnxruntime/handles.ts";
import { OrtSession } from "../ffi/onnxruntime/session.ts";
import { sessionConfig } from "../src/backends/onnxruntime/options.ts";
import { toOrtInput } from "../src/backends/onnxruntime/tensors.ts";
import { parsePbtxt } from "../src/model-config/pbtxt.ts";
import { machineHeading, procStat, threadCpuTicks, waitReady, wrk, type WrkResult } from "./lib/bench.ts";

const root = resolve(import.meta.dir, "..");
const arg = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? def;
const DURATION = Number(arg("duration", "10"));
// Load on the batched model before its c=32 cell is measured: the server's steady state. JavaScriptCore
// is still compiling (JITWorker 20-180 µs per item in 5 s windows, the other threads slower too) through
// the first ~25 s of this load on the quiet 2-core VM and ~45 s on the VM shared (load 3-7) (2026-11-27, #30; 2 s before).
const WARMUP = Number(arg("warmup", "45"));
const OUT = resolve(root, arg("out", "scripts/results/batching.md"));
const BINARY = resolve(arg("binary", join(root, "dist", "nereid")));
const MLP = join(root, "model_repository", "simple_fp32_mlp");
const work = mkdtempSync(join(tmpdir(), "nereid-bench-batching-"));

if (!existsSync(BINARY)) throw new Error(`${BINARY} is missing: npm run build`);
if (!existsSync(join(MLP, "1", "model.onnx"))) throw new Error("model_repository is not generated: npm run models");
if (spawnSync("wrk", ["--version"]).error) throw new Error("wrk is not installed (apt-get install wrk)");

// --- repository: the example MLP (batched), a copy without batching, simple and a cached simple ---
const repo = join(work, "repo");
cpSync(MLP, join(repo, "simple_fp32_mlp"), { recursive: true });
cpSync(join(root, "model_repository", "simple"), join(repo, "simple"), { recursive: true });
const mlpConfig = readFileSync(join(MLP, "config.pbtxt"), "utf8");
const unbatched = mlpConfig.replace(/dynamic_batching \{[^}]*\}\n?/, "").replace('name: "simple_fp32_mlp"', 'name: "simple_fp32_mlp_nobatch"');
cpSync(MLP, join(repo, "simple_fp32_mlp_nobatch"), { recursive: true });
writeFileSync(join(repo, "simple_fp32_mlp_nobatch", "config.pbtxt"), unbatched);
cpSync(join(root, "model_repository", "simple"), join(repo, "simple_cached"), { recursive: true });
writeFileSync(
  join(repo, "simple_cached", "config.pbtxt"),
  readFileSync(join(root, "model_repository", "simple", "config.pbtxt"), "utf8").replace('name: "simple"', 'name: "simple_cached"') +
    "response_cache { enable: true }\n",
);

// --- 1. in-process ORT at batch 32 ---
async function inProcess(seconds: number): Promise<{ itemsPerSec: number; msPerBatch: number; cpuUsPerItem: number }> {
  const env = OrtEnvironment.get();
  const config = parsePbtxt(mlpConfig);
  using options = new OrtSessionOptions(env.api, sessionConfig(config));
  using session = await OrtSession.open(env, join(MLP, "1", "model.onnx"), options);
  const data = new Float32Array(32 * 512).map((_, i) => (i % 97) / 97);
  const input = toOrtInput({ name: "INPUT0", datatype: "FP32", shape: [32, 512], data: new Uint8Array(data.buffer) });
  for (let i = 0; i < 20; i++) await session.run([input], ["OUTPUT0"], false, true);
  let runs = 0;
  const t0 = performance.now();
  // This process's CPU, ONNX Runtime's intra-op threads included.
  const cpu0 = process.cpuUsage();
  while (performance.now() - t0 < seconds * 1000) {
    await session.run([input], ["OUTPUT0"], false, true);
    runs++;
  }
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { itemsPerSec: (runs * 32 * 1000) / ms, msPerBatch: ms / runs, cpuUsPerItem: (cpu.user + cpu.system) / (runs * 32) };
}

// --- wrk bodies ---
const mlpHeader = JSON.stringify({
  inputs: [{ name: "INPUT0", shape: [1, 512], datatype: "FP32", parameters: { binary_data_size: 2048 } }],
  parameters: { binary_data_output: true },
});
const mlpBody = Buffer.concat([Buffer.from(mlpHeader), Buffer.from(new Float32Array(512).map((_, i) => i / 512).buffer)]);
writeFileSync(join(work, "mlp.body"), mlpBody);
writeFileSync(
  join(work, "mlp.lua"),
  `wrk.method = "POST"
local f = io.open("${join(work, "mlp.body")}", "rb"); wrk.body = f:read("*a"); f:close()
wrk.headers["Content-Type"] = "application/octet-stream"
wrk.headers["Inference-Header-Content-Length"] = "${Buffer.byteLength(mlpHeader)}"
`,
);
const ones = Array(15).fill(1).join(",");
writeFileSync(
  join(work, "hit.lua"),
  `wrk.method = "POST"
wrk.body = '{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[7,${ones}]},{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[1,${ones}]}]}'
`,
);
// Every request different: a per-thread id and a counter in INPUT0.
writeFileSync(
  join(work, "miss.lua"),
  `local n = 0
setup = function(thread) thread:set("tid", n); n = n + 1 end
counter = 0
request = function()
  counter = counter + 1
  local body = '{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[' .. (tid or 0) .. ',' .. counter .. ',${Array(14).fill(1).join(",")}]},{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[1,${ones}]}]}'
  return wrk.format("POST", nil, nil, body)
end
`,
);

async function meanBatch(base: string, model: string): Promise<number> {
  const s = (await (await fetch(`${base}/v2/models/${model}/stats`)).json()) as { model_stats: { inference_count: number; execution_count: number }[] };
  return s.model_stats[0]!.inference_count / s.model_stats[0]!.execution_count;
}

// --- run ---
const ort = await inProcess(DURATION);
console.log(
  `in-process ORT batch 32: ${Math.round(ort.itemsPerSec)} items/s (${ort.msPerBatch.toFixed(2)} ms per batch, ${ort.cpuUsPerItem.toFixed(0)} µs CPU per item)`,
);

const port = 18700;
const log = openSync(join(work, "nereid.log"), "w");
const nereid: ChildProcess = spawn(
  BINARY,
  [
    `--model-repository=${repo}`,
    `--http-port=${port}`,
    "--allow-grpc=false",
    "--allow-metrics=false",
    "--log-info=false",
    "--cache-config=local,size=16777216",
  ],
  { stdio: ["ignore", log, log] },
);
const base = `http://127.0.0.1:${port}`;
await waitReady(`${base}/v2/health/ready`);
const url = (m: string) => `${base}/v2/models/${m}/infer`;
const mlp = join(work, "mlp.lua");

wrk(url("simple_fp32_mlp"), 32, WARMUP, mlp); // warm-up
wrk(url("simple_fp32_mlp_nobatch"), 32, 2, mlp);
const r: Record<string, WrkResult> = {};
const items = async () =>
  ((await (await fetch(`${base}/v2/models/simple_fp32_mlp/stats`)).json()) as { model_stats: { inference_count: number }[] }).model_stats[0]!.inference_count;
const [cpuBefore, itemsBefore, threadsBefore] = [procStat(nereid.pid!).cpuTicks, await items(), threadCpuTicks(nereid.pid!)];
const loadBefore = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
r.batched32 = wrk(url("simple_fp32_mlp"), 32, DURATION, mlp);
// The server's CPU per item over the batched run (every thread of the process; ticks of 10 ms).
const batchedItems = (await items()) - itemsBefore;
const serverCpuUsPerItem = ((procStat(nereid.pid!).cpuTicks - cpuBefore) * 10_000) / batchedItems;
// ... and by thread name: where the CPU beyond in-process ORT's goes.
const byThread = [...threadCpuTicks(nereid.pid!)]
  .map(([name, ticks]) => [name, ((ticks - (threadsBefore.get(name) ?? 0)) * 10_000) / batchedItems] as const)
  .filter(([, us]) => us >= 1)
  .sort((a, b) => b[1] - a[1]);
const batchedMean = await meanBatch(base, "simple_fp32_mlp");
r.unbatched32 = wrk(url("simple_fp32_mlp_nobatch"), 32, DURATION, mlp);
r.batched1 = wrk(url("simple_fp32_mlp"), 1, DURATION, mlp);
r.unbatched1 = wrk(url("simple_fp32_mlp_nobatch"), 1, DURATION, mlp);
// Server-side request time per phase, from the statistics before and after each one.
type Inference = Record<string, { count: number; ns: number }>;
const cacheStatsNow = async () =>
  ((await (await fetch(`${base}/v2/models/simple_cached/stats`)).json()) as { model_stats: { inference_stats: Inference }[] }).model_stats[0]!.inference_stats;
const meanUs = (a: Inference, b: Inference) => (b.success!.ns - a.success!.ns) / Math.max(1, b.success!.count - a.success!.count) / 1000;
const s0 = await cacheStatsNow();
r.miss = wrk(url("simple_cached"), 1, DURATION, join(work, "miss.lua"));
const s1 = await cacheStatsNow();
r.hit = wrk(url("simple_cached"), 1, DURATION, join(work, "hit.lua"));
const s2 = await cacheStatsNow();
const missUs = meanUs(s0, s1);
const hitUs = meanUs(s1, s2);
const cacheStats = { model_stats: [{ inference_stats: s2 }] };
nereid.kill("SIGTERM");

const fmt = (x: WrkResult) => `${Math.round(x.rps).toLocaleString("en-US")} | ${x.p50.toFixed(2)} | ${x.p99.toFixed(2)} | ${x.errors}`;
const pct = (a: number, b: number) => `${((a / b) * 100).toFixed(0)}%`;
const cs = cacheStats.model_stats[0]!.inference_stats;
const rows = [
  machineHeading(),
  "",
  `Binary: \`${relative(root, BINARY)}\`.`,
  "",
  `wrk, ${DURATION} s per cell, one run, after ${WARMUP} s of c=32 load on the batched model (warm-up). simple_fp32_mlp: FP32 [n,512] → 2048 → 2048 → 2048 → 512 with ReLU, ~21 MFLOP per item (generated), binary HTTP, one CPU instance; example config \`${(/dynamic_batching \{[^}]*\}/.exec(mlpConfig)?.[0] ?? "").replace(/\s+/g, " ")}\`.`,
  "",
  "| case | c | req/s (items/s) | p50 ms | p99 ms | errors |",
  "| --- | --- | --- | --- | --- | --- |",
  `| simple_fp32_mlp, dynamic batching | 32 | ${fmt(r.batched32!)} |`,
  `| simple_fp32_mlp, batching off | 32 | ${fmt(r.unbatched32!)} |`,
  `| simple_fp32_mlp, dynamic batching | 1 | ${fmt(r.batched1!)} |`,
  `| simple_fp32_mlp, batching off | 1 | ${fmt(r.unbatched1!)} |`,
  `| simple, response cache, every request new (miss) | 1 | ${fmt(r.miss!)} |`,
  `| simple, response cache, one request repeated (hit) | 1 | ${fmt(r.hit!)} |`,
  "",
  `- in-process ONNX Runtime, batch 32, same session options: **${Math.round(ort.itemsPerSec).toLocaleString("en-US")} items/s** (${ort.msPerBatch.toFixed(2)} ms per batch)`,
  `- batched server / in-process: **${pct(r.batched32!.rps, ort.itemsPerSec)}** (target ≥ 70%); mean batch size formed: ${batchedMean.toFixed(1)}`,
  `- server CPU per item, batched at c=32 (every thread of the server, wrk on the same machine): ${serverCpuUsPerItem.toFixed(0)} µs; in-process ONNX Runtime at batch 32: ${ort.cpuUsPerItem.toFixed(0)} µs; ratio **${(serverCpuUsPerItem / ort.cpuUsPerItem).toFixed(2)}** (target ≤ 1.3)`,
  `- that CPU by thread, µs per item: ${byThread.map(([name, us]) => `${name} ${us.toFixed(0)}`).join(", ")} (the event loop is \`${basename(BINARY)}\`; ONNX Runtime runs on Bun's pool threads); load average at the batched run's start: ${loadBefore}`,
  `- batched / unbatched at c=32: **${(r.batched32!.rps / r.unbatched32!.rps).toFixed(2)}×** (target ≥ 3×)`,
  `- c=1 p50, batching on / off: **${(r.batched1!.p50 / r.unbatched1!.p50).toFixed(2)}×** (target ≤ 1.1×)`,
  `- c=32 batched p99 / p50: **${(r.batched32!.p99 / r.batched32!.p50).toFixed(2)}×** (target ≤ 1.5×)`,
  `- cache-hit p50 / cache-miss p50 (client, c=1): **${(r.hit!.p50 / r.miss!.p50).toFixed(2)}×** (target ≤ 0.5×); in the server (statistics, mean request time inside the core): hit ${hitUs.toFixed(1)} µs / miss ${missUs.toFixed(1)} µs = **${(hitUs / missUs).toFixed(2)}×**; cache lookup ${(cs.cache_hit!.ns / Math.max(1, cs.cache_hit!.count) / 1000).toFixed(1)} µs per hit, lookup+insert ${(cs.cache_miss!.ns / Math.max(1, cs.cache_miss!.count) / 1000).toFixed(1)} µs per miss`,
  "",
];
mkdirSync(dirname(OUT), { recursive: true });
appendFileSync(OUT, rows.join("\n") + "\n");
console.log(rows.join("\n"));
process.exit(0);
