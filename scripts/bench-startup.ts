/**
 * Start to ready (#19 item 3): the compiled binary on `simple_fp32_mlp` with 2 CPU
 * instances, `simple` and `simple_identity`, against a naive server that opens the same
 * model files with the same koffi ONNX Runtime binding (one session per instance, all at
 * once) and then answers a ready route, run as `bun <file>`. Each: from spawn to the
 * first 200 of its ready route (polled every 2 ms), and the CPU every thread of it has
 * used by then (steadier on a busy machine than the wall time); interleaved runs, medians.
 * --compare adds other binaries (e.g. an older build copied to dist/.compare/<name>/nereid)
 * to the same rounds.
 *
 *   npm run build && bun scripts/bench-startup.ts [--runs=10] [--binary=dist/nereid] [--compare=<binary>,...] [--all-listeners] [--out=scripts/results/startup.md]
 *
 * --all-listeners also starts each binary with its default listeners (gRPC and metrics on
 * too, as a user runs it) in the same rounds: rows of their own, not compared with the
 * naive server, which serves HTTP only.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { appendFileSync, cpSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { machineHeading, waitReady } from "./lib/bench.ts";

const root = resolve(import.meta.dir, "..");
const arg = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? def;
const RUNS = Number(arg("runs", "10"));
const OUT = resolve(root, arg("out", "scripts/results/startup.md"));
const BINARY = resolve(arg("binary", join(root, "dist", "nereid")));
const COMPARE = arg("compare", "")
  .split(",")
  .filter(Boolean)
  .map((b) => resolve(b));
for (const b of [BINARY, ...COMPARE]) if (!existsSync(b)) throw new Error(`${b} is missing: npm run build`);

const work = mkdtempSync(join(tmpdir(), "nereid-bench-startup-"));
const repo = join(work, "models");
for (const m of ["simple", "simple_identity", "simple_fp32_mlp"]) cpSync(join(root, "model_repository", m), join(repo, m), { recursive: true });
const mlpConfig = join(repo, "simple_fp32_mlp", "config.pbtxt");
writeFileSync(mlpConfig, readFileSync(mlpConfig, "utf8").replace("count: 1 kind: KIND_CPU", "count: 2 kind: KIND_CPU"));
const files = [
  join(repo, "simple_fp32_mlp/1/model.onnx"),
  join(repo, "simple_fp32_mlp/1/model.onnx"),
  join(repo, "simple/1/model.onnx"),
  join(repo, "simple_identity/1/model.onnx"),
];
writeFileSync(
  join(work, "naive.ts"),
  `import { OrtEnvironment, OrtSessionOptions } from ${JSON.stringify(join(root, "ffi/onnxruntime/handles.ts"))};
import { OrtSession } from ${JSON.stringify(join(root, "ffi/onnxruntime/session.ts"))};
const env = OrtEnvironment.get();
const options = new OrtSessionOptions(env.api, { intraOpThreads: 1, interOpThreads: 1, graphOptimizationLevel: 99, allowSpinning: false, memArena: true });
await Promise.all(${JSON.stringify(files)}.map((f) => OrtSession.open(env, f, options)));
Bun.serve({ port: Number(process.argv[2]), fetch: () => new Response("") });
`,
);

/** CPU time (user + system, ms) the process has used so far, every thread counted. */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(f[11]) + Number(f[12])) * 1000) / TICKS;
}
const TICKS = 100; // sysconf(_SC_CLK_TCK) on Linux

/** Wall ms from spawn to the first 200 of `url`, and the process's CPU ms at that moment. */
async function timeToReady(start: () => ChildProcess, url: string): Promise<{ wall: number; cpu: number }> {
  const t0 = performance.now();
  const p = start();
  try {
    // Polled every 2 ms: the 10 ms of the other benchmarks' wait put up to 10 ms of noise on a ~150 ms figure.
    await waitReady(url, 60_000, "GET", undefined, 2);
    const wall = performance.now() - t0;
    return { wall, cpu: cpuMs(p.pid!) };
  } finally {
    p.kill("SIGKILL");
    await new Promise((r) => p.once("exit", r));
  }
}

const ALL_LISTENERS = process.argv.includes("--all-listeners");
const binaries = [BINARY, ...COMPARE];
const nereid: number[][] = binaries.map(() => []);
const full: number[][] = binaries.map(() => []);
const fullCpu: number[][] = binaries.map(() => []);
const naive: number[] = [];
const nereidCpu: number[][] = binaries.map(() => []);
const naiveCpu: number[] = [];
const loadavg = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const load0 = loadavg();
for (let i = 0; i < RUNS; i++) {
  const port = 18800 + (i % 50);
  for (const [b, binary] of binaries.entries()) {
    const r = await timeToReady(
      () =>
        spawn(binary, [`--model-repository=${repo}`, `--http-port=${port}`, "--allow-grpc=false", "--allow-metrics=false", "--log-info=false"], {
          stdio: "ignore",
        }),
      `http://127.0.0.1:${port}/v2/health/ready`,
    );
    nereid[b]!.push(r.wall);
    nereidCpu[b]!.push(r.cpu);
    if (!ALL_LISTENERS) continue;
    const listeners = [`--http-port=${port}`, `--grpc-port=${port + 100}`, `--metrics-port=${port + 200}`];
    const f = await timeToReady(
      () => spawn(binary, [`--model-repository=${repo}`, ...listeners, "--log-info=false"], { stdio: "ignore" }),
      `http://127.0.0.1:${port}/v2/health/ready`,
    );
    full[b]!.push(f.wall);
    fullCpu[b]!.push(f.cpu);
  }
  const r = await timeToReady(() => spawn(process.execPath, [join(work, "naive.ts"), String(port)], { stdio: "ignore" }), `http://127.0.0.1:${port}/`);
  naive.push(r.wall);
  naiveCpu.push(r.cpu);
}
const load1 = loadavg();
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const range = (xs: number[]) => `${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)}`;
const text = `
${machineHeading()}

Spawn to the first 200 of the ready route (polled every 2 ms), ${RUNS} interleaved runs each, medians: \`simple_fp32_mlp\` (41 MB of weights) with 2 CPU instances, \`simple\` and \`simple_identity\`. Naive: \`bun <file>\` opening the same four sessions with the same koffi binding and session options, all at once, then Bun.serve.

| server | median ms | range ms | CPU to ready, median ms (every thread, 10 ms ticks) |
| --- | ---: | ---: | ---: |
${binaries.map((b, i) => `| ${relative(root, b)} | ${median(nereid[i]!).toFixed(0)} | ${range(nereid[i]!)} | ${median(nereidCpu[i]!).toFixed(0)} |`).join("\n")}
| naive | ${median(naive).toFixed(0)} | ${range(naive)} | ${median(naiveCpu).toFixed(0)} |
${ALL_LISTENERS ? binaries.map((b, i) => `| ${relative(root, b)}, gRPC and metrics on too | ${median(full[i]!).toFixed(0)} | ${range(full[i]!)} | ${median(fullCpu[i]!).toFixed(0)} |`).join("\n") : ""}

${binaries.map((b, i) => `- ${relative(root, b)} ÷ naive: **${(median(nereid[i]!) / median(naive)).toFixed(2)}** (goal ≤ 1.0); CPU to ready ÷ naive's: ${(median(nereidCpu[i]!) / median(naiveCpu)).toFixed(2)}`).join("\n")}
- load average (1, 5, 15 min) at the start: ${load0}; at the end: ${load1}
`;
appendFileSync(OUT, text);
console.log(text);
