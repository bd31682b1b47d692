/**
 * Python backend benchmark (issue #32, item 5): the server's CPU per request for the
 * ONNX model `simple` (INT32 add/sub, [1,16]) and `py_simple`, the same config with
 * `backend: "python"` and a numpy model.py doing the same add/sub, in one server and one
 * run. Server CPU is the server process's own utime + stime (/proc/<pid>/stat, without
 * its stub children) over a fixed number of requests sent over HTTP at concurrency 4;
 * the stubs' CPU is reported beside it. Goal: py_simple's server CPU per request at most
 * 1.5 times simple's. The main thread's share is reported beside it: with the frontend
 * worker threads (the default), `simple` is answered in the workers while a Python model's
 * requests go through the main thread, which holds the stubs' pipes.
 *
 *   npm run build && npm run bench:python -- [--binary=dist/nereid] [--requests=3000] [--python=/usr/bin/python3]
 *       [--server-arg=--http-thread-count=1 ...] [--out=scripts/results/python.md]
 */
import { spawn, execFileSync } from "node:child_process";
import { appendFileSync, mkdtempSync, mkdirSync, readFileSync, writeFileSync, cpSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { PYTHON_ADD_SUB } from "./lib/bench-models.ts";
import { machineHeading } from "./lib/bench.ts";

const root = resolve(import.meta.dir, "..");
const arg = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? def;
const BINARY = resolve(arg("binary", join(root, "dist", "nereid")));
const REQUESTS = Number(arg("requests", "3000"));
const PYTHON = arg("python", "/usr/bin/python3");
const SERVER_ARGS = process.argv.filter((a) => a.startsWith("--server-arg=")).map((a) => a.slice("--server-arg=".length));
const OUT = resolve(root, arg("out", "scripts/results/python.md"));
const CONCURRENCY = 4;

const repo = mkdtempSync(join(tmpdir(), "nereid-bench-py-"));
cpSync(join(root, "model_repository", "simple"), join(repo, "simple"), { recursive: true });
mkdirSync(join(repo, "py_simple", "1"), { recursive: true });
const config = readFileSync(join(repo, "simple", "config.pbtxt"), "utf8");
writeFileSync(
  join(repo, "py_simple", "config.pbtxt"),
  config.replace('name: "simple"', 'name: "py_simple"').replace('platform: "onnxruntime_onnx"', 'backend: "python"'),
);
writeFileSync(join(repo, "py_simple", "1", "model.py"), PYTHON_ADD_SUB);

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

const body = JSON.stringify({
  inputs: [
    { name: "INPUT0", datatype: "INT32", shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
    { name: "INPUT1", datatype: "INT32", shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
  ],
});

async function run(model: string, n: number): Promise<void> {
  let left = n;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (left-- > 0) {
        const r = await fetch(`${url}/v2/models/${model}/infer`, { method: "POST", body });
        if (r.status !== 200) throw new Error(`${model}: ${r.status} ${await r.text()}`);
        await r.arrayBuffer();
      }
    }),
  );
}

const rows: { model: string; serverUs: number; mainUs: number; stubUs: number; wallUs: number }[] = [];
for (const model of ["simple", "py_simple", "simple", "py_simple"]) {
  await run(model, 300); // warm up
  const stubs = stubPids();
  const s0 = cpuMs(server.pid!);
  const m0 = cpuMs(server.pid!, server.pid!);
  const k0 = stubs.reduce((a, p) => a + cpuMs(p), 0);
  const t0 = performance.now();
  await run(model, REQUESTS);
  const wall = performance.now() - t0;
  const serverMs = cpuMs(server.pid!) - s0;
  const mainMs = cpuMs(server.pid!, server.pid!) - m0;
  const stubMs = stubs.reduce((a, p) => a + cpuMs(p), 0) - k0;
  rows.push({
    model,
    serverUs: (serverMs * 1000) / REQUESTS,
    mainUs: (mainMs * 1000) / REQUESTS,
    stubUs: (stubMs * 1000) / REQUESTS,
    wallUs: (wall * 1000) / REQUESTS,
  });
}
server.kill("SIGTERM");

const table = [
  `| model | server CPU µs/request | of it the main thread | stub CPU µs/request | wall µs/request (c=${CONCURRENCY}) |`,
  "|---|---:|---:|---:|---:|",
  ...rows.map(
    (r) => `| ${r.model} | ${r.serverUs.toFixed(0)} | ${r.mainUs.toFixed(0)} | ${r.model === "simple" ? "-" : r.stubUs.toFixed(0)} | ${r.wallUs.toFixed(0)} |`,
  ),
].join("\n");
const mean = (m: string) => rows.filter((r) => r.model === m).reduce((a, r) => a + r.serverUs, 0) / 2;
const ratio = `server CPU ratio py_simple / simple: **${(mean("py_simple") / mean("simple")).toFixed(2)}** (goal <= 1.5)`;
console.log(`${table}\n\n${ratio}`);
const flags = SERVER_ARGS.length > 0 ? SERVER_ARGS.map((a) => `\`${a}\``).join(" ") : "none (the default frontend threads)";
appendFileSync(
  OUT,
  `\n${machineHeading()}\n\nBinary: \`${relative(root, BINARY)}\`; extra server flags: ${flags}; ${REQUESTS} requests per row over HTTP JSON at c=${CONCURRENCY} (fetch from the benchmark's process, unpinned), after 300 of warm-up; Python ${PYTHON}.\n\n${table}\n\n- ${ratio}\n`,
);
