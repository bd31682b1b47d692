/**
 * Server CPU per `simple` JSON request of this build against earlier builds, on the same
 * load in the same run (#30 item 5): so a change that makes one request dearer is seen
 * the day it lands. Each git ref given is built once into dist/.compare/<commit>/nereid
 * (a temporary worktree sharing this checkout's node_modules); the current dist/nereid is
 * always measured, and two naive servers: Bun.serve + req.json() + onnxruntime-node, the
 * reference #30's goal names (the "÷ naive" column), and Bun.serve + koffi ONNX Runtime with
 * its OrtValues bound once, a stricter one whose Run costs a fifth of onnxruntime-node's.
 * The server is pinned to core 0 and wrk (1 thread, c=16) to core 1; rounds interleave
 * the servers, and each figure is the median of its rounds' server CPU (user + system,
 * from /proc) per answered request.
 *
 *   npm run build && bun scripts/bench-compare.ts --ref=<git ref> [--ref=...] [--rounds=4] [--duration=6] [--warmup=2] [--out=scripts/results/compare.md]
 *
 * With no --ref, the commit before HEAD is the baseline. A release binary can be named
 * instead with --binary=<path> (repeatable).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { appendFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { machineHeading, procStat, sleep, waitReady, wrk } from "./lib/bench.ts";
import { naiveOrtNodeServerSource, naiveServerSource } from "./lib/naive-server.ts";

const root = resolve(import.meta.dir, "..");
const values = (name: string) => process.argv.filter((a) => a.startsWith(`--${name}=`)).map((a) => a.slice(name.length + 3));
const one = (name: string, def: string) => values(name)[0] ?? def;
const ROUNDS = Number(one("rounds", "4"));
const DURATION = Number(one("duration", "6"));
// Seconds of load before measuring: a fresh server's JIT compiles for its first seconds, on
// JIT threads whose CPU counts as the server's; more warm-up measures the steady state.
const WARMUP = Number(one("warmup", "2"));
const OUT = resolve(root, one("out", "scripts/results/compare.md"));
const refs = values("ref");
const binaries = values("binary").map((b) => resolve(b));
if (refs.length === 0 && binaries.length === 0) refs.push("HEAD~1");

if (spawnSync("wrk", ["--version"]).error) throw new Error("wrk is not installed (apt-get install wrk)");
if (spawnSync("taskset", ["-c", "0", "true"]).status !== 0) throw new Error("taskset (util-linux) is needed to pin the server and wrk to separate cores");
const current = join(root, "dist", "nereid");
if (!existsSync(current)) throw new Error("dist/nereid is missing: npm run build");

const git = (...args: string[]) => {
  const r = spawnSync("git", args, { cwd: root, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr}`);
  return r.stdout.trim();
};

/** The binary of `ref`, built once into dist/.compare/<commit>/. */
function binaryOf(ref: string): { label: string; path: string } {
  const commit = git("rev-parse", "--verify", `${ref}^{commit}`);
  const label = `${git("rev-parse", "--short", commit)} (${ref})`;
  const out = join(root, "dist", ".compare", commit, "nereid");
  if (existsSync(out)) return { label, path: out };
  const tree = mkdtempSync(join(tmpdir(), "nereid-compare-"));
  try {
    git("worktree", "add", "--detach", tree, commit);
    // A few old commits track a node_modules link of their own: this checkout's replaces it.
    rmSync(join(tree, "node_modules"), { recursive: true, force: true });
    symlinkSync(join(root, "node_modules"), join(tree, "node_modules"));
    // The compressed ONNX Runtime library is kept per build folder; reuse this checkout's.
    if (existsSync(join(root, "dist", ".build"))) cpSync(join(root, "dist", ".build"), join(tree, "dist", ".build"), { recursive: true });
    console.error(`building ${label}`);
    // Older build scripts know no --outfile: they write dist/nereid in the worktree.
    const r = spawnSync(process.execPath, ["scripts/build.ts", `--outfile=${out}`], { cwd: tree, stdio: ["ignore", "ignore", "inherit"] });
    if (r.status !== 0) throw new Error(`building ${label} failed`);
    if (!existsSync(out)) {
      mkdirSync(dirname(out), { recursive: true });
      cpSync(join(tree, "dist", "nereid"), out);
    }
  } finally {
    spawnSync("git", ["worktree", "remove", "--force", tree], { cwd: root });
    rmSync(tree, { recursive: true, force: true });
  }
  return { label, path: out };
}

const work = mkdtempSync(join(tmpdir(), "nereid-compare-run-"));
const repo = join(work, "repo");
mkdirSync(repo);
cpSync(join(root, "model_repository", "simple"), join(repo, "simple"), { recursive: true });
const A = Array.from({ length: 16 }, (_, i) => i);
const body = JSON.stringify({
  inputs: [
    { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: A },
    { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: A },
  ],
});
writeFileSync(join(work, "json.body"), body);
writeFileSync(
  join(work, "json.lua"),
  `wrk.method = "POST"\nlocal f = io.open("${join(work, "json.body")}", "rb"); wrk.body = f:read("*a"); f:close()\nwrk.headers["Content-Type"] = "application/json"\n`,
);
writeFileSync(join(work, "naive.ts"), naiveServerSource(root, join(repo, "simple/1/model.onnx")));
writeFileSync(join(work, "naive-ortnode.ts"), naiveOrtNodeServerSource(root, join(repo, "simple/1/model.onnx")));

interface Server {
  label: string;
  command: (port: number) => string[];
  url: (port: number) => string;
}
const nereidAt = (label: string, path: string): Server => ({
  label,
  command: (port) => [path, `--model-repository=${repo}`, `--http-port=${port}`, "--allow-grpc=false", "--allow-metrics=false", "--log-info=false"],
  url: (port) => `http://127.0.0.1:${port}/v2/models/simple/infer`,
});
const SERVERS: Server[] = [
  nereidAt("this build (dist/nereid)", current),
  ...refs.map((ref) => {
    const b = binaryOf(ref);
    return nereidAt(b.label, b.path);
  }),
  ...binaries.map((b) => nereidAt(relative(root, b), b)),
  {
    label: "naive Bun.serve + koffi ORT, values bound once (stricter)",
    command: (port) => [process.execPath, join(work, "naive.ts"), String(port)],
    url: (port) => `http://127.0.0.1:${port}/`,
  },
  // Last: the reference #30's goal names, which the "÷ naive" column divides by.
  {
    label: "naive Bun.serve + onnxruntime-node (reference)",
    command: (port) => [process.execPath, join(work, "naive-ortnode.ts"), String(port)],
    url: (port) => `http://127.0.0.1:${port}/`,
  },
];

async function measure(s: Server, port: number): Promise<number> {
  // ONNX Runtime telemetry off in every server, the naive onnxruntime-node one included (it would leave /tmp/mat-debug-<pid>.log).
  const child: ChildProcess = spawn("taskset", ["-c", "0", ...s.command(port)], { stdio: "ignore", env: { ...process.env, ORT_DISABLE_TELEMETRY: "1" } });
  try {
    await waitReady(s.url(port), 30_000, "POST", body);
    wrk(s.url(port), 16, WARMUP, join(work, "json.lua"), { threads: 1, cpus: "1" }); // warm-up
    await sleep(200);
    const before = procStat(child.pid!).cpuTicks;
    const r = wrk(s.url(port), 16, DURATION, join(work, "json.lua"), { threads: 1, cpus: "1" });
    const ticks = procStat(child.pid!).cpuTicks - before;
    if (r.requests === 0 || r.errors > 0) throw new Error(`${s.label}: ${r.requests} requests, ${r.errors} errors`);
    return (ticks * 10_000) / r.requests; // 100 ticks per second
  } finally {
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
  }
}

const samples = SERVERS.map(() => [] as number[]);
for (let round = 0; round < ROUNDS; round++) {
  // Alternate the order each round so that neither side always runs first.
  const order = SERVERS.map((_, i) => i);
  if (round % 2 === 1) order.reverse();
  for (const i of order) {
    const us = await measure(SERVERS[i]!, 18900 + round * 10 + i);
    samples[i]!.push(us);
    console.error(`round ${round + 1}: ${SERVERS[i]!.label}: ${us.toFixed(1)} µs/request`);
  }
}
rmSync(work, { recursive: true, force: true });

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const us = samples.map(median);
const naive = us[us.length - 1]!;
const rows = [
  machineHeading(),
  "",
  `\`simple\` JSON, server pinned to core 0, wrk (1 thread, c=16) to core 1; ${WARMUP} s of load before each cell, ${DURATION} s per cell, ${ROUNDS} interleaved rounds, medians of the server's CPU (user + system) per answered request.`,
  "",
  "| server | server CPU µs/request | ÷ this build | ÷ naive (onnxruntime-node) | rounds |",
  "| --- | --- | --- | --- | --- |",
  ...SERVERS.map(
    (s, i) =>
      `| ${s.label} | ${us[i]!.toFixed(1)} | ${(us[i]! / us[0]!).toFixed(2)} | ${(us[i]! / naive).toFixed(2)} | ${samples[i]!.map((x) => x.toFixed(1)).join(", ")} |`,
  ),
  "",
];
mkdirSync(resolve(OUT, ".."), { recursive: true });
appendFileSync(OUT, rows.join("\n") + "\n");
console.log(rows.join("\n"));
process.exit(0);
