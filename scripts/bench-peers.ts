/**
 * Peers side by side (#34 item 5): Nereid and MLServer serving the same ONNX files
 * (`simple` and the MLP `simple_fp32_mlp`) to the same JSON V2 requests
 * (POST /v2/models/<name>/infer), at concurrency 1, 16 and 64, in one run.
 *
 * MLServer (pinned from PyPI, with onnxruntime, in a cached venv made by
 * test/helpers/python-venv.ts) runs a minimal custom runtime around onnxruntime, as its docs
 * show for custom models (scripts/lib/mlserver_onnx_runtime.py), with parallel_workers 0 by
 * default: inference in the server process itself, no IPC to a worker (its cheapest set-up;
 * --mlserver-workers=1 gives MLServer's default). Both servers keep their other defaults
 * (gRPC and metrics listeners on). Each server is pinned to core 0 and wrk (1 thread) to core
 * 1; the servers take turns, in alternating order each round. Server CPU per request is the
 * CPU (user + system, from /proc, the server and every process under it) over a wrk run
 * divided by the requests answered; p50/p99 and req/s are wrk's. Figures are the median over
 * the rounds. Both servers' answers are compared before the load starts.
 *
 *   npm run build && bun scripts/bench-peers.ts [--rounds=3] [--duration=5] [--mlserver-workers=0] [--out=scripts/results/peers.md]
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { appendFileSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { venvPython } from "../test/helpers/python-venv.ts";
import { machineHeading, sleep, treeCpuTicks, waitReady, wrk, wrkPostScript } from "./lib/bench.ts";

const root = resolve(import.meta.dir, "..");
const arg = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? def;
const ROUNDS = Number(arg("rounds", "3"));
const DURATION = Number(arg("duration", "5"));
const MLSERVER_WORKERS = Number(arg("mlserver-workers", "0"));
const OUT = resolve(root, arg("out", "scripts/results/peers.md"));
const CONCURRENCY = [1, 16, 64];
const MLSERVER = ["mlserver==1.7.1", "onnxruntime==1.31.1", "numpy==2.4.6"];

const BINARY = join(root, "dist", "nereid");
if (!existsSync(BINARY)) throw new Error("dist/nereid is missing: npm run build");
if (spawnSync("wrk", ["--version"]).error) throw new Error("wrk is not installed (apt-get install wrk)");
if (spawnSync("taskset", ["-c", "0", "true"]).status !== 0) throw new Error("taskset (util-linux) is needed to pin the servers and wrk to separate cores");

const t0 = performance.now();
const python = venvPython({ name: "mlserver", packages: MLSERVER, imports: ["mlserver", "onnxruntime"], systemSitePackages: false });
console.error(`MLServer venv ready in ${((performance.now() - t0) / 1000).toFixed(0)} s (cached after the first run)`);

interface Model {
  name: string;
  body: string;
}
const A = Array.from({ length: 16 }, (_, i) => i);
const MODELS: Model[] = [
  {
    name: "simple",
    body: JSON.stringify({
      inputs: [
        { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: A },
        { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: A },
      ],
    }),
  },
  {
    name: "simple_fp32_mlp",
    body: JSON.stringify({
      inputs: [{ name: "INPUT0", shape: [1, 512], datatype: "FP32", data: Array.from({ length: 512 }, (_, i) => ((i % 13) - 6) / 8) }],
    }),
  },
];

// Both servers read the same model files; each gets its own repository layout.
const work = mkdtempSync(join(tmpdir(), "nereid-peers-"));
const nereidRepo = join(work, "nereid");
const mlserverDir = join(work, "mlserver");
const scripts = new Map<string, string>();
for (const m of MODELS) {
  const onnx = join(root, "model_repository", m.name, "1", "model.onnx");
  if (!existsSync(onnx)) throw new Error(`${onnx} is missing: npm run build makes it`);
  cpSync(join(root, "model_repository", m.name), join(nereidRepo, m.name), { recursive: true });
  mkdirSync(join(mlserverDir, m.name), { recursive: true });
  copyFileSync(join(import.meta.dir, "lib", "mlserver_onnx_runtime.py"), join(mlserverDir, m.name, "mlserver_onnx_runtime.py"));
  writeFileSync(
    join(mlserverDir, m.name, "model-settings.json"),
    JSON.stringify({ name: m.name, implementation: "mlserver_onnx_runtime.OnnxRuntimeModel", parameters: { uri: onnx } }),
  );
  writeFileSync(join(work, `${m.name}.json`), m.body);
  scripts.set(m.name, wrkPostScript(join(work, `${m.name}.json`)));
}

interface Server {
  label: string;
  start(port: number): ChildProcess;
}
const SERVERS: Server[] = [
  {
    label: "Nereid",
    start: (port) =>
      spawn(
        "taskset",
        ["-c", "0", BINARY, `--model-repository=${nereidRepo}`, `--http-port=${port}`, `--grpc-port=${port + 1}`, `--metrics-port=${port + 2}`],
        {
          stdio: "ignore",
        },
      ),
  },
  {
    label: `MLServer 1.7.1 (parallel_workers ${MLSERVER_WORKERS})`,
    start: (port) => {
      writeFileSync(
        join(mlserverDir, "settings.json"),
        JSON.stringify({ host: "127.0.0.1", http_port: port, grpc_port: port + 1, metrics_port: port + 2, parallel_workers: MLSERVER_WORKERS }),
      );
      // The venv's bin/ scripts name the folder it was built in (python-venv.ts renames it): call the CLI from its python.
      return spawn("taskset", ["-c", "0", python, "-c", "from mlserver.cli import main; main()", "start", mlserverDir], {
        stdio: "ignore",
        env: { ...process.env, PYTHONNOUSERSITE: "1" },
      });
    },
  },
];

interface Cell {
  us: number;
  p50: number;
  p99: number;
  rps: number;
}
// A slow answer is measured, not dropped: wrk waits up to 60 s for each.
const LOAD = { threads: 1, cpus: "1", timeoutSecs: 60 };
const key = (server: number, model: string, c: number) => `${server}/${model}/${c}`;
const cells = new Map<string, Cell[]>();
const answers = new Map<string, string>();

/** The outputs' names, shapes, types and values, rounded, to compare the two servers' answers. */
function outputsOf(json: any): string {
  return JSON.stringify(
    [...json.outputs]
      .sort((a: any, b: any) => a.name.localeCompare(b.name))
      .map((o: any) => [o.name, o.shape, o.datatype, o.data.map((x: number) => Math.round(x * 1e4) / 1e4)]),
  );
}

async function runServer(index: number, round: number): Promise<void> {
  const s = SERVERS[index]!;
  const port = 18700 + round * 20 + index * 10;
  const child = s.start(port);
  try {
    for (const m of MODELS) {
      const url = `http://127.0.0.1:${port}/v2/models/${m.name}/infer`;
      await waitReady(url, 180_000, "POST", m.body);
      const res = await fetch(url, { method: "POST", body: m.body, headers: { "content-type": "application/json" } });
      const got = outputsOf(await res.json());
      const seen = answers.get(m.name);
      if (seen !== undefined && seen !== got) throw new Error(`${s.label} answers ${m.name} differently:\n${got}\n${seen}`);
      answers.set(m.name, got);
      for (const c of CONCURRENCY) {
        wrk(url, c, 2, scripts.get(m.name), LOAD); // warm-up
        await sleep(200);
        const before = treeCpuTicks(child.pid!);
        const r = wrk(url, c, DURATION, scripts.get(m.name), LOAD);
        const ticks = treeCpuTicks(child.pid!) - before;
        if (r.requests === 0 || r.errors > 0) throw new Error(`${s.label} ${m.name} c=${c}: ${r.requests} requests, ${r.errors} errors`);
        const cell = { us: (ticks * 10_000) / r.requests, p50: r.p50, p99: r.p99, rps: r.rps };
        cells.set(key(index, m.name, c), [...(cells.get(key(index, m.name, c)) ?? []), cell]);
        console.error(
          `round ${round + 1}: ${s.label} ${m.name} c=${c}: ${cell.us.toFixed(0)} µs CPU/request, p50 ${r.p50} ms, p99 ${r.p99} ms, ${r.rps} req/s`,
        );
      }
    }
  } finally {
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    // MLServer's worker processes (parallel_workers > 0) outlive a killed parent briefly.
    await sleep(500);
  }
}

for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? [0, 1] : [1, 0];
  for (const i of order) await runServer(i, round);
}
rmSync(work, { recursive: true, force: true });

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const med = (server: number, model: string, c: number): Cell => {
  const xs = cells.get(key(server, model, c))!;
  return { us: median(xs.map((x) => x.us)), p50: median(xs.map((x) => x.p50)), p99: median(xs.map((x) => x.p99)), rps: median(xs.map((x) => x.rps)) };
};
const ms = (x: number) => (x < 10 ? x.toFixed(2) : x.toFixed(0));
const ratioMissed: string[] = [];
const slower: string[] = [];
const table = MODELS.flatMap((m) =>
  CONCURRENCY.map((c) => {
    const n = med(0, m.name, c);
    const p = med(1, m.name, c);
    if (n.us > 0.25 * p.us) ratioMissed.push(`${m.name} c=${c}`);
    if (n.p50 > p.p50 || n.p99 > p.p99 || n.rps < p.rps) slower.push(`${m.name} c=${c}`);
    return `| ${m.name} | ${c} | ${n.us.toFixed(0)} | ${p.us.toFixed(0)} | **${(n.us / p.us).toFixed(3)}** | ${ms(n.p50)} / ${ms(n.p99)} | ${ms(p.p50)} / ${ms(p.p99)} | ${n.rps.toFixed(0)} | ${p.rps.toFixed(0)} |`;
  }),
);
const rows = [
  machineHeading(),
  "",
  `${MLSERVER.join(", ")} (custom runtime: scripts/lib/mlserver_onnx_runtime.py, parallel_workers ${MLSERVER_WORKERS}) against dist/nereid; the same ONNX files and JSON V2 bodies. Each server pinned to core 0, wrk (1 thread) to core 1; ${DURATION} s per cell after 2 s of warm-up, ${ROUNDS} rounds in alternating order, medians. Server CPU = user + system of the server's whole process tree per answered request.`,
  "",
  "| model | c | Nereid CPU µs/req | MLServer CPU µs/req | Nereid ÷ MLServer | Nereid p50 / p99 ms | MLServer p50 / p99 ms | Nereid req/s | MLServer req/s |",
  "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
  ...table,
  "",
  `Goal (#34): Nereid's CPU per request ≤ 0.25× MLServer's in every cell: **${ratioMissed.length === 0 ? "met" : `missed at ${ratioMissed.join(", ")}`}**; never slower (p50, p99 and req/s) at any concurrency: **${slower.length === 0 ? "met" : `missed at ${slower.join(", ")}`}**.`,
  "",
  `Rounds per cell (µs CPU/request, Nereid | MLServer): ${MODELS.flatMap((m) =>
    CONCURRENCY.map(
      (c) =>
        `${m.name} c=${c}: ${[0, 1]
          .map((s) =>
            cells
              .get(key(s, m.name, c))!
              .map((x) => x.us.toFixed(0))
              .join(", "),
          )
          .join(" | ")}`,
    ),
  ).join("; ")}.`,
  "",
];
mkdirSync(dirname(OUT), { recursive: true });
appendFileSync(OUT, rows.join("\n") + "\n");
console.log(rows.join("\n"));
process.exit(0);
