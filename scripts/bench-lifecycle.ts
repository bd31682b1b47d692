/**
 * Load/unload cycles (issue #6): dist/nereid in explicit mode with simple_fp32_mlp
 * loaded; RSS after a warm-up cycle, then after 100 unload+load cycles (each followed
 * by one inference to prove the model serves). Appends to scripts/results/lifecycle.md.
 *
 *   npm run build && bun scripts/bench-lifecycle.ts [--cycles=100]
 */
import { spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { machineHeading, sleep, waitReady } from "./lib/bench.ts";

const root = resolve(import.meta.dir, "..");
const arg = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? def;
const CYCLES = Number(arg("cycles", "100"));
const OUT = resolve(root, arg("out", "scripts/results/lifecycle.md"));
const BINARY = join(root, "dist", "nereid");
if (!existsSync(BINARY)) throw new Error("dist/nereid is missing: npm run build");

const port = 18800;
const child = spawn(
  BINARY,
  [
    `--model-repository=${join(root, "model_repository")}`,
    "--model-control-mode=explicit",
    "--load-model=simple_fp32_mlp",
    `--http-port=${port}`,
    "--allow-grpc=false",
    "--allow-metrics=false",
    "--log-info=false",
  ],
  { stdio: "ignore" },
);
const base = `http://127.0.0.1:${port}`;
await waitReady(`${base}/v2/health/ready`);
const rssMiB = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))![1]) / 1024;
const body = JSON.stringify({ inputs: [{ name: "INPUT0", shape: [1, 512], datatype: "FP32", data: Array(512).fill(0.5) }] });

async function cycle(): Promise<void> {
  for (const action of ["unload", "load"]) {
    const r = await fetch(`${base}/v2/repository/models/simple_fp32_mlp/${action}`, { method: "POST" });
    if (r.status !== 200) throw new Error(`${action}: ${r.status} ${await r.text()}`);
  }
  const r = await fetch(`${base}/v2/models/simple_fp32_mlp/infer`, { method: "POST", body });
  if (r.status !== 200) throw new Error(`infer: ${r.status} ${await r.text()}`);
}

await cycle(); // warm-up: allocator pools and ORT's first-load state
await sleep(500);
const before = rssMiB();
const t0 = performance.now();
const samples: number[] = [];
for (let i = 0; i < CYCLES; i++) {
  await cycle();
  samples.push(rssMiB());
}
const seconds = (performance.now() - t0) / 1000;
await sleep(500);
const after = rssMiB();
child.kill("SIGTERM");

const growth = ((after - before) / before) * 100;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const first = median(samples.slice(0, 20));
const last = median(samples.slice(-20));
const lines = [
  machineHeading(),
  "",
  `${CYCLES} unload+load cycles of simple_fp32_mlp (explicit mode, one inference after each), ${seconds.toFixed(1)} s.`,
  "",
  `- RSS after one warm-up cycle: **${before.toFixed(0)} MiB**; after ${CYCLES} cycles: **${after.toFixed(0)} MiB**; growth **${growth.toFixed(1)}%** (target ≤ 10%)`,
  `- RSS after each cycle ranged ${Math.min(...samples).toFixed(0)}–${Math.max(...samples).toFixed(0)} MiB; median of the first 20 cycles ${first.toFixed(0)} MiB, of the last 20 ${last.toFixed(0)} MiB (trend ${(((last - first) / first) * 100).toFixed(1)}%)`,
  "",
];
mkdirSync(dirname(OUT), { recursive: true });
appendFileSync(OUT, lines.join("\n") + "\n");
console.log(lines.join("\n"));
process.exit(0);
