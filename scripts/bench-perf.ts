/**
 * `nereid perf` against wrk: the same `simple` request (binary tensor extension, the
 * body nereid perf sends) at the same concurrency, each for about the same time, one
 * after the other against one dist/nereid. The target (#18): perf's throughput within
 * 10% of wrk's. Both load generators share the machine with the server, as they would
 * in use; with --pin the server runs on core 0 and each load generator on core 1
 * (taskset), the steadiest setting on a small shared VM (reference/ceilings.md).
 *
 *   npm run build && bun scripts/bench-perf.ts [--binary=dist/nereid] [--concurrency=1,4,16] [--window=3000] [--stability=10] [--pin] [--rounds=3] [--out=scripts/results/perf.md]
 */
import { spawn, spawnSync } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { machineHeading, waitReady, wrk, type WrkResult } from "./lib/bench.ts";

const root = resolve(import.meta.dir, "..");
const arg = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? def;
const BINARY = resolve(arg("binary", join(root, "dist", "nereid")));
const CONCURRENCY = arg("concurrency", "1,4,16").split(",").map(Number);
const WINDOW_MS = Number(arg("window", "3000"));
const STABILITY = arg("stability", "10");
const OUT = resolve(root, arg("out", "scripts/results/perf.md"));
const PORT = 18640;
const PIN = process.argv.includes("--pin");
const ROUNDS = Number(arg("rounds", "3"));
/** `cmd args` on core `cpu` when pinning. */
const onCore = (cpu: string, cmd: string, args: string[]): [string, string[]] => (PIN ? ["taskset", ["-c", cpu, cmd, ...args]] : [cmd, args]);

if (!existsSync(BINARY)) throw new Error(`${BINARY} is missing: npm run build`);
if (spawnSync("wrk", ["--version"]).error) throw new Error("wrk is not installed (apt-get install wrk)");

const work = mkdtempSync(join(tmpdir(), "nereid-bench-perf-"));
// The request nereid perf sends for `simple` (-b 1): a JSON header naming both inputs as
// binary and both outputs as binary, then 2 × 16 INT32 values.
const header = JSON.stringify({
  inputs: ["INPUT0", "INPUT1"].map((name) => ({ name, shape: [1, 16], datatype: "INT32", parameters: { binary_data_size: 64 } })),
  outputs: ["OUTPUT0", "OUTPUT1"].map((name) => ({ name, parameters: { binary_data: true } })),
});
const values = new Int32Array(32).map((_, i) => (i * 7) % 100);
const body = Buffer.concat([Buffer.from(header), Buffer.from(values.buffer)]);
writeFileSync(join(work, "body.bin"), body);
writeFileSync(
  join(work, "infer.lua"),
  `local f = io.open("${join(work, "body.bin")}", "rb")\nwrk.method = "POST"\nwrk.body = f:read("*all")\nf:close()\nwrk.headers["Inference-Header-Content-Length"] = "${Buffer.byteLength(header)}"\nwrk.headers["Content-Type"] = "application/octet-stream"\n`,
);

const server = spawn(
  ...onCore("0", BINARY, [
    `--model-repository=${join(root, "model_repository")}`,
    `--http-port=${PORT}`,
    "--allow-grpc=false",
    "--allow-metrics=false",
    "--log-info=false",
  ]),
  { stdio: "ignore" },
);
try {
  await waitReady(`http://127.0.0.1:${PORT}/v2/health/ready`, 60_000);
  const rows: string[] = [];
  const ratios: string[] = [];
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const fmt = (x: number) => Math.round(x).toLocaleString("en-US");
  /** One nereid perf measurement at concurrency c: its throughput and client p50/p99 in ms. */
  const runPerf = (c: number) => {
    const r = spawnSync(
      ...onCore("1", BINARY, [
        "perf",
        "-m",
        "simple",
        "-u",
        `127.0.0.1:${PORT}`,
        "--concurrency-range",
        String(c),
        "-p",
        String(WINDOW_MS),
        "-s",
        STABILITY,
        "--max-trials",
        "20",
        "--input-data",
        "random",
      ]),
      { encoding: "utf8" },
    );
    if (r.status !== 0) throw new Error(`nereid perf failed at c=${c}:\n${r.stdout}\n${r.stderr}`);
    return {
      tput: Number(/throughput: ([\d.]+) infer\/sec, latency/.exec(r.stdout)?.[1]),
      p50: Number(/p50 latency: (\d+) usec/.exec(r.stdout)?.[1]) / 1000,
      p99: Number(/p99 latency: (\d+) usec/.exec(r.stdout)?.[1]) / 1000,
    };
  };
  for (const c of CONCURRENCY) {
    const perfs: { tput: number; p50: number; p99: number }[] = [];
    const wrks: WrkResult[] = [];
    // Rounds alternate which load generator goes first (wrk, perf; perf, wrk; ...), so that
    // a VM that drifts slower or faster over a round does not favour either.
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? ["wrk", "perf"] : ["perf", "wrk"];
      for (const which of order) {
        if (which === "perf") perfs.push(runPerf(c));
        else {
          const w = wrk(
            `http://127.0.0.1:${PORT}/v2/models/simple/infer`,
            c,
            Math.round((3 * WINDOW_MS) / 1000),
            join(work, "infer.lua"),
            PIN ? { cpus: "1" } : {},
          );
          if (w.errors > 0) throw new Error(`wrk got ${w.errors} errors at c=${c}`);
          wrks.push(w);
        }
      }
      console.log(`c=${c} round ${round + 1}: perf ${fmt(perfs.at(-1)!.tput)} infer/s, wrk ${fmt(wrks.at(-1)!.rps)} req/s`);
    }
    const tput = median(perfs.map((p) => p.tput));
    const rps = median(wrks.map((w) => w.rps));
    // Each round's perf ÷ the wrk run beside it, then the median of those: a round the VM
    // slowed for both still gives a fair ratio.
    const each = perfs.map((p, i) => p.tput / wrks[i]!.rps);
    const ratio = median(each);
    rows.push(
      `| ${c} | ${fmt(tput)} | ${median(perfs.map((p) => p.p50)).toFixed(2)} | ${median(perfs.map((p) => p.p99)).toFixed(2)} | ${fmt(rps)} | ${median(wrks.map((w) => w.p50)).toFixed(2)} | ${median(wrks.map((w) => w.p99)).toFixed(2)} | ${(ratio * 100).toFixed(1)}% | ${each.map((r) => `${(r * 100).toFixed(0)}%`).join(" ")} |`,
    );
    ratios.push(`c=${c}: ${(ratio * 100).toFixed(1)}%`);
    console.log(rows.at(-1));
  }
  const md = [
    machineHeading(),
    "",
    `\`simple\` over HTTP with the binary tensor extension (the same body for both), one dist/nereid; nereid perf with -p ${WINDOW_MS} (three stable windows, -s ${STABILITY}, up to 20 windows), and wrk for ${Math.round((3 * WINDOW_MS) / 1000)} s (-t ${"1 at c=1, 2 above"}), ${ROUNDS} rounds at each concurrency alternating which goes first; the ratio is the median of each round's perf ÷ wrk, the other columns medians of the rounds.${PIN ? " Pinned: the server on core 0, nereid perf and wrk on core 1." : ""}`,
    "",
    "| c | nereid perf infer/s | perf p50 ms | perf p99 ms | wrk req/s | wrk p50 ms | wrk p99 ms | perf / wrk (median of rounds) | each round |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ...rows,
    "",
    `- perf / wrk (target ≥ 90%): ${ratios.join(", ")}`,
    "",
  ].join("\n");
  mkdirSync(dirname(OUT), { recursive: true });
  appendFileSync(OUT, md + "\n");
  console.log(md);
} finally {
  server.kill("SIGTERM");
}
