/**
 * #30 item 1, a TypeScript model on worker-thread instances behind two HTTP worker threads:
 * this build (the frontend workers send each request straight to the instance's worker)
 * against a baseline binary (the main thread relays every request), and one thread, on
 * the same JSON load (wrk) at c = 1, 16 and 64 in interleaved rounds (medians), unpinned:
 * requests per second, the process's CPU per request and the main thread's CPU per
 * request (/proc/<pid>/task/<pid>/stat).
 *
 *   npm run build && bun scripts/bench-ts-direct.ts --baseline=<binary> [--duration=5] [--warmup=3] [--rounds=3] [--out=scripts/results/typescript.md]
 */
import { spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { machineHeading, procStat, waitReady, wrk, wrkPostScript, threadTicks } from "./lib/bench.ts";

const root = resolve(import.meta.dir, "..");
const arg = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? def;
const DURATION = Number(arg("duration", "5"));
const WARMUP = Number(arg("warmup", "3"));
const ROUNDS = Number(arg("rounds", "3"));
const OUT = resolve(root, arg("out", "scripts/results/typescript.md"));
const BINARY = join(root, "dist", "nereid");
const BASELINE = resolve(arg("baseline", ""));
if (!existsSync(BINARY)) throw new Error("dist/nereid is missing: npm run build");
if (!existsSync(BASELINE)) throw new Error("--baseline=<binary> is required (a build before #30's TypeScript route)");

const work = mkdtempSync(join(tmpdir(), "nereid-bench-ts-direct-"));
const repo = join(work, "models");
mkdirSync(join(repo, "tsadd", "1"), { recursive: true });
const dims = `data_type: TYPE_INT32 dims: [ 16 ]`;
writeFileSync(
  join(repo, "tsadd", "config.pbtxt"),
  `name: "tsadd"\nbackend: "typescript"\nmax_batch_size: 0\ninput [ { name: "INPUT0" ${dims} }, { name: "INPUT1" ${dims} } ]\n` +
    `output [ { name: "OUTPUT0" ${dims} }, { name: "OUTPUT1" ${dims} } ]\ninstance_group [ { count: 1 kind: KIND_CPU } ]\n`,
);
writeFileSync(
  join(repo, "tsadd", "1", "model.js"),
  `export default class Add {
  execute(requests) {
    return requests.map((r) => {
      const a = r.input("INPUT0").data, b = r.input("INPUT1").data;
      return { outputs: [
        { name: "OUTPUT0", datatype: "INT32", shape: [16], data: a.map((x, i) => x + b[i]) },
        { name: "OUTPUT1", datatype: "INT32", shape: [16], data: a.map((x, i) => x - b[i]) },
      ] };
    });
  }
}
`,
);
const A = Array.from({ length: 16 }, (_, i) => i);
const body = join(work, "tsadd.json");
writeFileSync(
  body,
  JSON.stringify({
    inputs: ["INPUT0", "INPUT1"].map((name) => ({ name, shape: [16], datatype: "INT32", data: A })),
  }),
);
const script = wrkPostScript(body);
const PORT = 18770;
const URL = `http://127.0.0.1:${PORT}/v2/models/tsadd/infer`;
const LOADS = [1, 16, 64];

interface Cell {
  rps: number;
  processUs: number;
  mainUs: number;
  failed: number;
}

async function measure(binary: string, threads: number): Promise<Cell[]> {
  const server = spawn(
    binary,
    [`--model-repository=${repo}`, `--http-port=${PORT}`, "--allow-grpc=false", "--allow-metrics=false", "--log-info=false", `--http-thread-count=${threads}`],
    { stdio: "ignore" },
  );
  try {
    await waitReady(`http://127.0.0.1:${PORT}/v2/health/ready`);
    const pid = server.pid!;
    if (WARMUP > 0) wrk(URL, 16, WARMUP, script, { threads: 2 });
    return LOADS.map((c) => {
      const t0 = procStat(pid).cpuTicks;
      const m0 = threadTicks(pid);
      const w = wrk(URL, c, DURATION, script, { threads: c === 1 ? 1 : 2 });
      const n = Math.max(w.requests, 1);
      return {
        rps: w.requests / DURATION,
        processUs: ((procStat(pid).cpuTicks - t0) * 1e4) / n,
        mainUs: ((threadTicks(pid) - m0) * 1e4) / n,
        failed: w.errors,
      };
    });
  } finally {
    server.kill("SIGTERM");
    await new Promise((r) => server.once("exit", r));
  }
}

const setups = [
  { name: "1 thread", binary: BINARY, threads: 1 },
  { name: "2 workers, relayed (baseline)", binary: BASELINE, threads: 2 },
  { name: "2 workers, direct (this build)", binary: BINARY, threads: 2 },
];
const runs = setups.map(() => LOADS.map(() => [] as Cell[]));
for (let r = 0; r < ROUNDS; r++) {
  for (const [i, s] of setups.entries()) {
    const cells = await measure(s.binary, s.threads);
    cells.forEach((cell, k) => runs[i]![k]!.push(cell));
    console.log(
      `round ${r + 1}, ${s.name}: ${cells.map((x, k) => `c=${LOADS[k]} ${x.rps.toFixed(0)}/s ${x.processUs.toFixed(0)}µs main ${x.mainUs.toFixed(1)}µs`).join("; ")}`,
    );
  }
}
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
const f = (cells: Cell[], field: keyof Cell) => median(cells.map((x) => x[field]));
const rows = setups.flatMap((s, i) =>
  LOADS.map((c, k) => {
    const cells = runs[i]![k]!;
    return `| ${s.name} | ${c} | ${f(cells, "rps").toFixed(0)} | ${f(cells, "processUs").toFixed(0)} | ${f(cells, "mainUs").toFixed(1)} | ${cells.reduce((t, x) => t + x.failed, 0)} |`;
  }),
);
const load = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const text = `
${machineHeading()}

\`scripts/bench-ts-direct.ts\` (#30 item 1): a TypeScript model on one worker-thread instance (\`tsadd\`: INT32 [16] + and -), JSON over wrk, unpinned, the load generator on the same machine; ${ROUNDS} interleaved rounds of ${DURATION} s per cell after ${WARMUP} s of load, medians. Baseline: ${BASELINE.replace(`${root}/`, "")}, whose frontend workers relay every request through the main thread. CPU from /proc (10 ms ticks). Load average at the end: ${load}.

| setup | c | req/s | process CPU µs/req | main thread CPU µs/req | failed |
| --- | ---: | ---: | ---: | ---: | ---: |
${rows.join("\n")}
`;
appendFileSync(OUT, text);
console.log(text);
