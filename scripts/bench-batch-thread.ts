/**
 * Dynamic batching on the scheduling thread (#30 item 2) against the main thread's
 * batcher, both with the frontends on worker threads, in the same run: a dynamically
 * batched `simple` over JSON (wrk) and gRPC (h2load), and the example simple_fp32_mlp
 * over binary HTTP. Per cell: requests (= items) per second, the process's CPU per
 * request, the main thread's CPU per request (from /proc/<pid>/task/<pid>/stat) and the
 * mean batch size formed (the model's statistics). "before" is --baseline=<binary>, a
 * build without the scheduling thread (e.g. dist/.compare/<commit>/nereid, built by
 * bench-compare.ts); "after" is dist/nereid. Rounds interleave the two; medians.
 *
 *   npm run build && bun scripts/bench-batch-thread.ts --baseline=<binary> [--duration=6] [--warmup=4] [--rounds=3] [--threads=2] [--out=scripts/results/batching.md]
 */
import { spawnSync } from "node:child_process";
import { appendFileSync, cpSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { simpleRequestFiles } from "./lib/bench-models.ts";
import { h2load, machineHeading, procStat, threadTicks, waitReady, wrk, wrkPostScript, spawnThreadedServer } from "./lib/bench.ts";

const root = resolve(import.meta.dir, "..");
const arg = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? def;
const DURATION = Number(arg("duration", "6"));
const WARMUP = Number(arg("warmup", "4"));
const ROUNDS = Number(arg("rounds", "3"));
const THREADS = Number(arg("threads", "2"));
const OUT = resolve(root, arg("out", "scripts/results/batching.md"));
const AFTER = join(root, "dist", "nereid");
const BEFORE = resolve(arg("baseline", ""));
if (!existsSync(AFTER)) throw new Error("dist/nereid is missing: npm run build");
if (!process.argv.some((a) => a.startsWith("--baseline=")) || !existsSync(BEFORE))
  throw new Error("--baseline=<binary without the scheduling thread> is needed");
for (const tool of ["wrk", "h2load"])
  if (spawnSync(tool, ["--version"]).error) throw new Error(`${tool} is not installed (apt-get install wrk nghttp2-client)`);

// --- repository: `simple` batched (no queue delay, as the example MLP) and the example MLP ---
const work = mkdtempSync(join(tmpdir(), "nereid-bench-batch-thread-"));
const repo = join(work, "models");
cpSync(join(root, "model_repository", "simple"), join(repo, "simple_batched"), { recursive: true });
const simpleConfig = readFileSync(join(root, "model_repository", "simple", "config.pbtxt"), "utf8");
writeFileSync(join(repo, "simple_batched", "config.pbtxt"), `${simpleConfig.replace('name: "simple"', 'name: "simple_batched"')}\ndynamic_batching { }\n`);
cpSync(join(root, "model_repository", "simple_fp32_mlp"), join(repo, "simple_fp32_mlp"), { recursive: true });

const { json: simpleJson, grpc: simpleGrpc } = simpleRequestFiles(work, "simple_batched");
const simpleScript = wrkPostScript(simpleJson);
const mlpHeader = JSON.stringify({
  inputs: [{ name: "INPUT0", shape: [1, 512], datatype: "FP32", parameters: { binary_data_size: 2048 } }],
  outputs: [{ name: "OUTPUT0", parameters: { binary_data: true } }],
});
const mlpBody = join(work, "mlp.body");
writeFileSync(mlpBody, Buffer.concat([Buffer.from(mlpHeader), Buffer.from(new Float32Array(512).map((_, i) => i / 512).buffer)]));
const mlpScript = join(work, "mlp.lua");
writeFileSync(
  mlpScript,
  `wrk.method = "POST"\nlocal f = io.open("${mlpBody}", "rb"); wrk.body = f:read("*a"); f:close()\nwrk.headers["Inference-Header-Content-Length"] = "${Buffer.byteLength(mlpHeader)}"\n`,
);

const PORT = 18790;
const GRPC_PORT = 18791;
interface Load {
  label: string;
  model: string;
  c: number;
  run(seconds: number): { requests: number; failed: number };
}
const http = (model: string, c: number, script: string) => (seconds: number) => {
  const w = wrk(`http://127.0.0.1:${PORT}/v2/models/${model}/infer`, c, seconds, script, { threads: 2 });
  return { requests: w.requests, failed: w.errors };
};
const grpc = (c: number) => (seconds: number) => h2load(`http://127.0.0.1:${GRPC_PORT}/inference.GRPCInferenceService/ModelInfer`, simpleGrpc, c, seconds);
const LOADS: Load[] = [
  { label: "`simple` batched, JSON, c=16", model: "simple_batched", c: 16, run: http("simple_batched", 16, simpleScript) },
  { label: "`simple` batched, JSON, c=64", model: "simple_batched", c: 64, run: http("simple_batched", 64, simpleScript) },
  { label: "`simple` batched, gRPC, c=64", model: "simple_batched", c: 64, run: grpc(64) },
  { label: "simple_fp32_mlp, binary HTTP, c=32", model: "simple_fp32_mlp", c: 32, run: http("simple_fp32_mlp", 32, mlpScript) },
];

interface Cell {
  rps: number;
  processUs: number;
  mainUs: number;
  batch: number;
  failed: number;
}

async function counts(model: string): Promise<{ inferences: number; executions: number }> {
  const s = ((await (await fetch(`http://127.0.0.1:${PORT}/v2/models/${model}/stats`)).json()) as any).model_stats[0];
  return { inferences: Number(s.inference_count), executions: Number(s.execution_count) };
}

async function measure(binary: string): Promise<Cell[]> {
  const server = spawnThreadedServer(binary, repo, PORT, GRPC_PORT, THREADS);
  try {
    await waitReady(`http://127.0.0.1:${PORT}/v2/health/ready`);
    const pid = server.pid!;
    const cells: Cell[] = [];
    for (const load of LOADS) {
      if (WARMUP > 0) load.run(WARMUP);
      const before = await counts(load.model);
      const t0 = procStat(pid).cpuTicks;
      const m0 = threadTicks(pid);
      const r = load.run(DURATION);
      const t1 = procStat(pid).cpuTicks;
      const m1 = threadTicks(pid);
      const after = await counts(load.model);
      const n = Math.max(r.requests, 1);
      const batch = (after.inferences - before.inferences) / Math.max(after.executions - before.executions, 1);
      cells.push({ rps: r.requests / DURATION, processUs: ((t1 - t0) * 1e4) / n, mainUs: ((m1 - m0) * 1e4) / n, batch, failed: r.failed });
    }
    return cells;
  } finally {
    server.kill("SIGTERM");
    await new Promise((r) => server.once("exit", r));
  }
}

const runs: { before: Cell[][]; after: Cell[][] } = { before: [], after: [] };
for (let round = 0; round < ROUNDS; round++) {
  for (const which of ["before", "after"] as const) {
    const cells = await measure(which === "before" ? BEFORE : AFTER);
    runs[which].push(cells);
    console.log(
      `round ${round + 1}, ${which}: ${cells.map((c, i) => `${LOADS[i]!.label} ${c.rps.toFixed(0)}/s ${c.processUs.toFixed(0)}µs main ${c.mainUs.toFixed(1)}µs batch ${c.batch.toFixed(1)}${c.failed ? ` FAILED ${c.failed}` : ""}`).join("; ")}`,
    );
  }
}
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
const f = (which: "before" | "after", i: number, field: keyof Cell) => median(runs[which].map((cells) => cells[i]![field]));
let failed = 0;
for (const which of ["before", "after"] as const) for (const cells of runs[which]) for (const c of cells) failed += c.failed;
const rows = LOADS.map((load, i) => {
  const cols = (field: keyof Cell, digits: number) => `${f("before", i, field).toFixed(digits)} | ${f("after", i, field).toFixed(digits)}`;
  return `| ${load.label} | ${cols("rps", 0)} | ${(f("after", i, "rps") / f("before", i, "rps")).toFixed(2)} | ${cols("processUs", 0)} | ${cols("mainUs", 1)} | ${cols("batch", 1)} |`;
});
const loadavg = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const text = `
${machineHeading()}

\`scripts/bench-batch-thread.ts\`: dynamic batching on the scheduling thread (#30 item 2). Both frontends on ${THREADS} worker threads; "before": ${BEFORE.replace(`${root}/`, "")}, where every request of a batched model went from its worker to the main thread's batcher and back; "after": dist/nereid, where the workers submit them to the scheduling thread through shared memory. One server per setup and round, unpinned, the load generators on the same machine; ${ROUNDS} interleaved rounds of ${DURATION} s per cell after ${WARMUP} s of the same load, medians. CPU from /proc (10 ms ticks). \`simple_batched\`: \`simple\` with \`dynamic_batching { }\`; simple_fp32_mlp: the example (max_batch_size 32, no queue delay). Load average at the end: ${loadavg}.

| load | before req/s | after req/s | ÷ | before CPU µs/req | after CPU µs/req | before main thread µs/req | after main thread µs/req | before mean batch | after mean batch |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
${rows.join("\n")}

Failed requests: ${failed}.
`;
appendFileSync(OUT, text);
console.log(text);
