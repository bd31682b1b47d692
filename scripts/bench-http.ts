/**
 * HTTP benchmark: `simple` over JSON and the binary extension at concurrency 1, 16, 64,
 * next to a bare Bun.serve hello-world measured in the same run (the ceiling). Also
 * start-to-ready time, server time outside ONNX Runtime, RSS after sustained load and
 * CPU after load stops. Uses wrk (Debian package `wrk`) as the load generator.
 *
 * A second reference runs beside the ceiling: a naive server (Bun.serve, `req.json()`, the
 * same koffi ORT session called inline, `Response.json`) with no validation, scheduling,
 * statistics or Triton encoding, i.e. what serving `simple` costs with nothing else done.
 * RSS is soaked twice: on the whole example repository (its MLP alone holds 41 MB of
 * weights) and on a repository holding only `simple`, the model under load.
 *
 *   npm run build && bun scripts/bench-http.ts [--binary=dist/nereid] [--duration=10] [--soak=60] [--out=scripts/results/http.md]
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, writeFileSync, mkdirSync, appendFileSync, existsSync, openSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname, relative } from "node:path";
import { machineHeading, procStat, sleep, waitReady, wrk, type WrkResult } from "./lib/bench.ts";
import { naiveServerSource } from "./lib/naive-server.ts";

const root = resolve(import.meta.dir, "..");
const arg = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? def;
const DURATION = Number(arg("duration", "10"));
const SOAK = Number(arg("soak", "60"));
const OUT = resolve(root, arg("out", "scripts/results/http.md"));
const BINARY = resolve(arg("binary", join(root, "dist", "nereid")));
const work = mkdtempSync(join(tmpdir(), "nereid-bench-"));

if (!existsSync(BINARY)) throw new Error(`${BINARY} is missing: npm run build`);
if (spawnSync("wrk", ["--version"]).error) throw new Error("wrk is not installed (apt-get install wrk)");

function startNereid(port: number, logFile?: string, repository = join(root, "model_repository")): ChildProcess {
  const out = logFile ? openSync(logFile, "w") : "ignore";
  const child = spawn(BINARY, [`--model-repository=${repository}`, `--http-port=${port}`, "--allow-grpc=false", "--allow-metrics=false", "--log-info=false"], {
    stdio: ["ignore", out, out],
  });
  child.once("exit", (code, signal) => {
    if (logFile) console.error(`nereid on port ${port} exited (code ${code}, signal ${signal}); log: ${logFile}`);
  });
  return child;
}

async function measureStartup(runs: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    const p = startNereid(18500 + i);
    await waitReady(`http://127.0.0.1:${18500 + i}/v2/health/ready`);
    times.push(performance.now() - t0);
    p.kill("SIGKILL");
    await new Promise((r) => p.once("exit", r));
  }
  return times;
}

const A = Array.from({ length: 16 }, (_, i) => i);
const jsonBody = JSON.stringify({
  inputs: [
    { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: A },
    { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: A },
  ],
});
const binHeader = JSON.stringify({
  inputs: [
    { name: "INPUT0", shape: [1, 16], datatype: "INT32", parameters: { binary_data_size: 64 } },
    { name: "INPUT1", shape: [1, 16], datatype: "INT32", parameters: { binary_data_size: 64 } },
  ],
  parameters: { binary_data_output: true },
});
const binBody = Buffer.concat([Buffer.from(binHeader), Buffer.from(Int32Array.from(A).buffer), Buffer.from(Int32Array.from(A).buffer)]);
writeFileSync(join(work, "json.body"), jsonBody);
writeFileSync(join(work, "bin.body"), binBody);
const lua = (bodyFile: string, headerLength?: number) => `
wrk.method = "POST"
local f = io.open("${bodyFile}", "rb"); wrk.body = f:read("*a"); f:close()
wrk.headers["Content-Type"] = "application/octet-stream"
${headerLength !== undefined ? `wrk.headers["Inference-Header-Content-Length"] = "${headerLength}"` : ""}
`;
writeFileSync(join(work, "json.lua"), lua(join(work, "json.body")));
writeFileSync(join(work, "bin.lua"), lua(join(work, "bin.body"), Buffer.byteLength(binHeader)));

async function stats(base: string) {
  const s = (await (await fetch(`${base}/v2/models/simple/stats`)).json()) as any;
  const i = s.model_stats[0].inference_stats;
  return { count: i.success.count, successNs: i.success.ns, inferNs: i.compute_infer.ns };
}

writeFileSync(join(work, "naive.ts"), naiveServerSource(root, join(root, "model_repository/simple/1/model.onnx")));
const simpleOnly = join(work, "simple-only");
mkdirSync(simpleOnly);
spawnSync("cp", ["-r", join(root, "model_repository", "simple"), simpleOnly]);

// --- run ---
const startup = await measureStartup(10);
startup.sort((a, b) => a - b);

const bare = spawn(
  process.execPath,
  [
    "-e",
    `Bun.serve({ port: 18600, fetch: () => new Response('{"live":true,"ready":true,"model":"simple","ok":1}', { headers: { "content-type": "application/json" } }) })`,
  ],
  { stdio: "ignore" },
);
const nereid = startNereid(18601, join(work, "nereid.log"));
const naive = spawn(process.execPath, [join(work, "naive.ts"), "18602"], { stdio: "ignore" });
await waitReady("http://127.0.0.1:18600/");
await waitReady("http://127.0.0.1:18602/", 20_000, "POST", jsonBody);
await waitReady("http://127.0.0.1:18601/v2/health/ready");
await sleep(300);
const inferUrl = "http://127.0.0.1:18601/v2/models/simple/infer";

wrk(inferUrl, 16, 2, join(work, "json.lua")); // warm-up
const rows: string[] = [];
const results: Record<string, WrkResult> = {};
let overheadNs = NaN;
for (const c of [1, 16, 64]) {
  results[`bare-${c}`] = wrk("http://127.0.0.1:18600/", c, DURATION);
  results[`naive-${c}`] = wrk("http://127.0.0.1:18602/", c, DURATION, join(work, "json.lua"));
  const before = await stats("http://127.0.0.1:18601");
  results[`json-${c}`] = wrk(inferUrl, c, DURATION, join(work, "json.lua"));
  const after = await stats("http://127.0.0.1:18601");
  if (c === 1) {
    const n = after.count - before.count;
    overheadNs = (after.successNs - before.successNs - (after.inferNs - before.inferNs)) / n;
  }
  results[`binary-${c}`] = wrk(inferUrl, c, DURATION, join(work, "bin.lua"));
}

// Soak: RSS after sustained load, then CPU right after load stops.
const soak = wrk(inferUrl, 16, SOAK, join(work, "json.lua"));
const afterLoad = procStat(nereid.pid!);
await sleep(100);
const later = procStat(nereid.pid!);
const cpuMsAfterStop = ((later.cpuTicks - afterLoad.cpuTicks) * 1000) / 100; // 100 ticks per second
await sleep(900);
const idle = procStat(nereid.pid!);
const cpuMsIdleSecond = ((idle.cpuTicks - later.cpuTicks) * 1000) / 100;

nereid.kill("SIGTERM");
bare.kill("SIGTERM");
naive.kill("SIGTERM");

// The same soak on a repository holding only the model under load.
const lone = startNereid(18603, join(work, "nereid-simple.log"), simpleOnly);
await waitReady("http://127.0.0.1:18603/v2/health/ready");
const loneAtStart = procStat(lone.pid!);
const loneSoak = wrk("http://127.0.0.1:18603/v2/models/simple/infer", 16, SOAK, join(work, "json.lua"));
const loneAfterLoad = procStat(lone.pid!);
lone.kill("SIGTERM");

const fmt = (r: WrkResult) => `${Math.round(r.rps).toLocaleString("en-US")} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.errors}`;
rows.push(machineHeading(), "", `Binary: \`${relative(root, BINARY)}\`.`);
rows.push(
  "",
  `wrk, ${DURATION} s per cell, one run; \`simple\` (INT32 [1,16] + [1,16]).`,
  "",
  "| server | c | req/s | p50 ms | p99 ms | non-2xx |",
  "| --- | --- | --- | --- | --- | --- |",
);
for (const c of [1, 16, 64]) {
  rows.push(`| bare Bun.serve (ceiling) | ${c} | ${fmt(results[`bare-${c}`]!)} |`);
  rows.push(`| naive Bun.serve + koffi ORT (reference) | ${c} | ${fmt(results[`naive-${c}`]!)} |`);
  rows.push(`| nereid JSON | ${c} | ${fmt(results[`json-${c}`]!)} |`);
  rows.push(`| nereid binary | ${c} | ${fmt(results[`binary-${c}`]!)} |`);
}
const ratio = results["json-16"]!.rps / results["bare-16"]!.rps;
rows.push(
  "",
  `- JSON at c=16 / bare Bun.serve at c=16: **${(ratio * 100).toFixed(1)}%** (target ≥ 30%); the naive reference reaches ${((results["naive-16"]!.rps / results["bare-16"]!.rps) * 100).toFixed(1)}%, so Nereid does ${((results["json-16"]!.rps / results["naive-16"]!.rps) * 100).toFixed(0)}% of the naive server's req/s`,
  `- core time outside ONNX Runtime (statistics: success − compute_infer, mean at c=1): **${(overheadNs / 1000).toFixed(1)} µs** (target ≤ 50 µs; HTTP parsing and encoding not included, see c=1 latency vs the bare server)`,
  `- start to ready (binary, example repository, 10 runs): median **${startup[5]!.toFixed(0)} ms**, min ${startup[0]!.toFixed(0)} ms, max ${startup[9]!.toFixed(0)} ms (target ≤ 250 ms)`,
  `- after ${SOAK} s of JSON load at c=16 (${Math.round(soak.rps)} req/s, ${soak.errors} non-2xx): RSS **${(afterLoad.rssKiB / 1024).toFixed(0)} MiB** with the whole example repository loaded; with only \`simple\` loaded: ${(loneAtStart.rssKiB / 1024).toFixed(0)} MiB at ready, **${(loneAfterLoad.rssKiB / 1024).toFixed(0)} MiB** after the same soak (${Math.round(loneSoak.rps)} req/s, ${loneSoak.errors} non-2xx) (target ≤ 128 MiB)`,
  `- CPU time used in the 100 ms after load stopped: **${cpuMsAfterStop.toFixed(0)} ms**; in the following 900 ms: ${cpuMsIdleSecond.toFixed(0)} ms (target: idle within 100 ms)`,
  "",
);
mkdirSync(dirname(OUT), { recursive: true });
appendFileSync(OUT, rows.join("\n") + "\n");
console.log(rows.join("\n"));
process.exit(0);
