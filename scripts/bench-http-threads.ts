/**
 * The HTTP frontend on worker threads (--http-thread-count, #19): requests per second
 * with the HTTP frontend on the main thread (1) and on 2 worker threads, on the same
 * binary, in interleaved rounds (medians), unpinned: `simple` over JSON at c=64 (wrk -t 2)
 * and a 1 MB FP32 identity tensor over JSON at c=4 (wrk -t 1).
 *
 *   npm run build && bun scripts/bench-http-threads.ts [--duration=8] [--rounds=3] [--out=scripts/results/http-threads.md]
 */
import { spawn, spawnSync } from "node:child_process";
import { appendFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { encodeModel, valueInfo, node, ElemType } from "./lib/onnx-builder.ts";
import { machineHeading, waitReady } from "./lib/bench.ts";

const root = resolve(import.meta.dir, "..");
const arg = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? def;
const DURATION = Number(arg("duration", "8"));
const ROUNDS = Number(arg("rounds", "3"));
const OUT = resolve(root, arg("out", "scripts/results/http-threads.md"));
const BINARY = join(root, "dist", "nereid");
if (!existsSync(BINARY)) throw new Error("dist/nereid is missing: npm run build");
if (spawnSync("wrk", ["--version"]).error) throw new Error("wrk is not installed");

const work = mkdtempSync(join(tmpdir(), "nereid-bench-threads-"));
const repo = join(work, "models");
cpSync(join(root, "model_repository", "simple"), join(repo, "simple"), { recursive: true });
mkdirSync(join(repo, "fp32_identity", "1"), { recursive: true });
writeFileSync(join(repo, "fp32_identity", "config.pbtxt"), 'name: "fp32_identity"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 0\ninput [ { name: "X" data_type: TYPE_FP32 dims: [ -1 ] } ]\noutput [ { name: "Y" data_type: TYPE_FP32 dims: [ -1 ] } ]\ninstance_group [ { count: 1 kind: KIND_CPU } ]\n');
writeFileSync(join(repo, "fp32_identity", "1", "model.onnx"), encodeModel({ name: "id", inputs: [valueInfo("X", ElemType.FLOAT, ["n"])], outputs: [valueInfo("Y", ElemType.FLOAT, ["n"])], nodes: [node("Identity", ["X"], ["Y"])] }));
const A = Array.from({ length: 16 }, (_, i) => i);
const N1M = 262_144;
const big = Array.from({ length: N1M }, (_, i) => (i % 1000) / 7);
writeFileSync(join(work, "simple.json"), JSON.stringify({ inputs: [{ name: "INPUT0", shape: [1, 16], datatype: "INT32", data: A }, { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: A }] }));
writeFileSync(join(work, "big.json"), JSON.stringify({ inputs: [{ name: "X", shape: [N1M], datatype: "FP32", data: big }] }));
const lua = (file: string) => {
  const p = join(work, `${file}.lua`);
  writeFileSync(p, `wrk.method = "POST"\nlocal f = io.open("${join(work, file)}", "rb"); wrk.body = f:read("*a"); f:close()\n`);
  return p;
};
const PORT = 18750;

function wrk(path: string, script: string, threads: number, c: number): { rps: number; non2xx: number } {
  const out = spawnSync("wrk", ["-t", String(threads), "-c", String(c), "-d", `${DURATION}s`, "-s", script, `http://127.0.0.1:${PORT}${path}`], { encoding: "utf8" }).stdout;
  return { rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0), non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0) };
}

async function measure(threads: number): Promise<{ simple: number; big: number; non2xx: number }> {
  const server = spawn(BINARY, [`--model-repository=${repo}`, `--http-port=${PORT}`, "--allow-grpc=false", "--allow-metrics=false", "--log-info=false", `--http-thread-count=${threads}`], { stdio: "ignore" });
  try {
    await waitReady(`http://127.0.0.1:${PORT}/v2/health/ready`);
    const simple = wrk("/v2/models/simple/infer", lua("simple.json"), 2, 64);
    const bigRun = wrk("/v2/models/fp32_identity/infer", lua("big.json"), 1, 4);
    return { simple: simple.rps, big: bigRun.rps, non2xx: simple.non2xx + bigRun.non2xx };
  } finally {
    server.kill("SIGTERM");
    await new Promise((r) => server.once("exit", r));
  }
}

const runs: Record<number, { simple: number[]; big: number[]; non2xx: number }> = { 1: { simple: [], big: [], non2xx: 0 }, 2: { simple: [], big: [], non2xx: 0 } };
for (let r = 0; r < ROUNDS; r++) {
  for (const threads of [1, 2]) {
    const m = await measure(threads);
    runs[threads]!.simple.push(m.simple);
    runs[threads]!.big.push(m.big);
    runs[threads]!.non2xx += m.non2xx;
    console.log(`round ${r + 1}, ${threads} thread(s): simple ${m.simple.toFixed(0)} req/s, 1 MB JSON ${m.big.toFixed(1)} req/s`);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const s1 = median(runs[1]!.simple), s2 = median(runs[2]!.simple), b1 = median(runs[1]!.big), b2 = median(runs[2]!.big);
const text = `
${machineHeading()}

One dist/nereid per cell, unpinned, wrk on the same machine; ${ROUNDS} interleaved rounds of ${DURATION} s per cell, medians. "1": the HTTP frontend on the main thread (\`--http-thread-count=1\`); "2": on two worker threads (\`--http-thread-count=2\`), the core on the main thread.

| measure | 1 thread req/s | 2 threads req/s | 2 ÷ 1 | goal |
| --- | ---: | ---: | ---: | ---: |
| \`simple\`, JSON, c=64 | ${s1.toFixed(0)} | ${s2.toFixed(0)} | ${(s2 / s1).toFixed(2)} | ≥ 1.4 |
| 1 MB FP32 identity, JSON, c=4 | ${b1.toFixed(1)} | ${b2.toFixed(1)} | ${(b2 / b1).toFixed(2)} | |

Non-2xx answers: ${runs[1]!.non2xx} (1 thread), ${runs[2]!.non2xx} (2 threads).
`;
appendFileSync(OUT, text);
console.log(text);
