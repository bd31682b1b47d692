/**
 * Python backend benchmark (issue #32, item 5; #30): the server's CPU per request for the
 * ONNX model `simple` (INT32 add/sub, [1,16]) and `py_simple`, the same config with
 * `backend: "python"` and a numpy model.py doing the same add/sub, in one server and one
 * run. wrk sends HTTP JSON at c = 4 and c = 64, two interleaved rounds per cell, each after
 * WARMUP s of the same load (a fresh server's JIT compiles for its first seconds, on
 * threads whose CPU counts as the server's). Server CPU is the server process's own utime
 * + stime (/proc/<pid>/stat, without its stub children); the main thread's share and the
 * stubs' CPU are reported beside it. Goal: py_simple's server CPU per request at most 1.5
 * times simple's. With the frontend worker threads (the default), both models are answered
 * in the workers: simple on the shared ONNX Runtime session, py_simple over each worker's
 * own connection to the stub (backends/python/direct.ts).
 *
 *   npm run build && npm run bench:python -- [--binary=dist/nereid] [--duration=6] [--warmup=3] [--python=/usr/bin/python3]
 *       [--server-arg=--http-thread-count=1 ...] [--out=scripts/results/python.md]
 *
 * Needs wrk.
 */
import { spawn, execFileSync, spawnSync } from "node:child_process";
import { appendFileSync, mkdtempSync, readFileSync, writeFileSync, cpSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { writePythonSimple } from "./lib/bench-models.ts";
import { machineHeading, wrk, wrkPostScript } from "./lib/bench.ts";

const root = resolve(import.meta.dir, "..");
const arg = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? def;
const BINARY = resolve(arg("binary", join(root, "dist", "nereid")));
const DURATION = Number(arg("duration", "6"));
const WARMUP = Number(arg("warmup", "3"));
const PYTHON = arg("python", "/usr/bin/python3");
const SERVER_ARGS = process.argv.filter((a) => a.startsWith("--server-arg=")).map((a) => a.slice("--server-arg=".length));
const OUT = resolve(root, arg("out", "scripts/results/python.md"));
const CONCURRENCIES = [4, 64];
if (spawnSync("wrk", ["--version"]).error) throw new Error("wrk is not installed (apt-get install wrk)");

const repo = mkdtempSync(join(tmpdir(), "nereid-bench-py-"));
cpSync(join(root, "model_repository", "simple"), join(repo, "simple"), { recursive: true });
writePythonSimple(repo);

const port = 18500 + Math.floor(Math.random() * 400);
const server = spawn(
  BINARY,
  [
    `--model-repository=${repo}`,
    `--http-port=${port}`,
    "--grpc-port=0",
    "--allow-metrics=false",
    `--backend-config=python,interpreter=${PYTHON}`,
    ...SERVER_ARGS,
  ],
  { stdio: ["ignore", "pipe", "pipe"] },
);
let log = "";
server.stdout!.on("data", (c) => (log += c));
server.stderr!.on("data", (c) => (log += c));
const url = `http://127.0.0.1:${port}`;
for (let i = 0; ; i++) {
  if (i > 600) throw new Error(`server did not become ready:\n${log}`);
  try {
    if ((await fetch(`${url}/v2/health/ready`)).ok) break;
  } catch {}
  await new Promise((r) => setTimeout(r, 100));
}

const TICK = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim());
/** CPU ms of a process (`/proc/<pid>/stat`) or of one of its threads (`/proc/<pid>/task/<tid>/stat`). */
function cpuMs(pid: number, tid?: number): number {
  const stat = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(f[11]) + Number(f[12])) * 1000) / TICK;
}
function stubPids(): number[] {
  const out = execFileSync("pgrep", ["-P", String(server.pid)])
    .toString()
    .trim();
  return out ? out.split("\n").map(Number) : [];
}

const body = join(repo, "body.json");
writeFileSync(
  body,
  JSON.stringify({
    inputs: [
      { name: "INPUT0", datatype: "INT32", shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
      { name: "INPUT1", datatype: "INT32", shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
    ],
  }),
);
const script = wrkPostScript(body);

interface Row {
  model: string;
  c: number;
  serverUs: number;
  mainUs: number;
  stubUs: number;
  rps: number;
}
const rows: Row[] = [];
for (const c of CONCURRENCIES) {
  for (let round = 0; round < 2; round++) {
    for (const model of ["simple", "py_simple"]) {
      const target = `${url}/v2/models/${model}/infer`;
      wrk(target, c, WARMUP, script, { threads: 1 });
      const stubs = stubPids();
      const s0 = cpuMs(server.pid!);
      const m0 = cpuMs(server.pid!, server.pid!);
      const k0 = stubs.reduce((a, p) => a + cpuMs(p), 0);
      const r = wrk(target, c, DURATION, script, { threads: 1 });
      if (r.requests === 0 || r.errors > 0) throw new Error(`${model} at c=${c}: ${r.requests} requests, ${r.errors} errors\n${log.slice(-2000)}`);
      const per = (ms: number) => (ms * 1000) / r.requests;
      rows.push({
        model,
        c,
        serverUs: per(cpuMs(server.pid!) - s0),
        mainUs: per(cpuMs(server.pid!, server.pid!) - m0),
        stubUs: per(stubs.reduce((a, p) => a + cpuMs(p), 0) - k0),
        rps: r.rps,
      });
    }
  }
}
server.kill("SIGTERM");

const table = [
  "| model | c | server CPU µs/request | of it the main thread | stub CPU µs/request | req/s |",
  "|---|---:|---:|---:|---:|---:|",
  ...rows.map(
    (r) =>
      `| ${r.model} | ${r.c} | ${r.serverUs.toFixed(0)} | ${r.mainUs.toFixed(0)} | ${r.model === "simple" ? "-" : r.stubUs.toFixed(0)} | ${r.rps.toFixed(0)} |`,
  ),
].join("\n");
const mean = (m: string, c: number) => {
  const of = rows.filter((r) => r.model === m && r.c === c);
  return of.reduce((a, r) => a + r.serverUs, 0) / of.length;
};
const ratios = CONCURRENCIES.map((c) => `c=${c} **${(mean("py_simple", c) / mean("simple", c)).toFixed(2)}**`).join(", ");
const ratio = `server CPU per request, py_simple ÷ simple: ${ratios} (goal <= 1.5)`;
console.log(`${table}\n\n${ratio}`);
const flags = SERVER_ARGS.length > 0 ? SERVER_ARGS.map((a) => `\`${a}\``).join(" ") : "none (the default frontend threads)";
appendFileSync(
  OUT,
  `\n${machineHeading()}\n\nBinary: \`${relative(root, BINARY)}\`; extra server flags: ${flags}; wrk (1 thread, unpinned) posting HTTP JSON, ${DURATION} s per row after ${WARMUP} s of the same load, two interleaved rounds; Python ${PYTHON}.\n\n${table}\n\n- ${ratio}\n`,
);
