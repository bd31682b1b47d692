/**
 * TypeScript backend benchmark (issue #15): the per-request cost of an identity
 * TypeScript model next to the identity ONNX model `simple_identity`, over HTTP in the
 * same run and the same server. Both take BYTES [1,-1] (two strings) and answer them
 * back; the TypeScript model is `simple_identity`'s config with `backend: "typescript"`.
 * The same TypeScript model with worker-thread instances is measured beside them.
 * Reports wrk req/s and latency at c=1 and c=16, and from each model's statistics the
 * mean time in the backend (compute_input + compute_infer + compute_output) and the mean
 * request time (success).
 *
 *   npm run build && bun scripts/bench-typescript.ts [--binary=dist/nereid] [--duration=10] [--out=scripts/results/typescript.md]
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, writeFileSync, mkdirSync, appendFileSync, existsSync, openSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { machineHeading, sleep, waitReady, wrk, type WrkResult } from "./lib/bench.ts";

const root = resolve(import.meta.dir, "..");
const arg = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? def;
const DURATION = Number(arg("duration", "10"));
const OUT = resolve(root, arg("out", "scripts/results/typescript.md"));
const BINARY = resolve(arg("binary", join(root, "dist", "nereid")));
const work = mkdtempSync(join(tmpdir(), "nereid-bench-ts-"));

if (!existsSync(BINARY)) throw new Error(`${BINARY} is missing: npm run build`);
if (spawnSync("wrk", ["--version"]).error) throw new Error("wrk is not installed (apt-get install wrk)");

// Repository: simple_identity (ONNX) and ts_identity (the same config, TypeScript).
const repo = join(work, "repo");
mkdirSync(repo);
spawnSync("cp", ["-r", join(root, "model_repository", "simple_identity"), repo]);
mkdirSync(join(repo, "ts_identity", "1"), { recursive: true });
const onnxConfig = readFileSync(join(repo, "simple_identity", "config.pbtxt"), "utf8");
// ts_identity runs on the main thread (opt-in since #29: worker threads are the default).
const tsConfig = onnxConfig.replace('name: "simple_identity"', 'name: "ts_identity"').replace('platform: "onnxruntime_onnx"', 'backend: "typescript"');
writeFileSync(join(repo, "ts_identity", "config.pbtxt"), tsConfig + 'parameters { key: "execution_thread" value: { string_value: "main" } }\n');
writeFileSync(
  join(repo, "ts_identity", "1", "model.ts"),
  `export default class Identity {
  execute(requests: any[]) {
    return requests.map((r) => { const t = r.input("INPUT0"); return { outputs: [{ name: "OUTPUT0", datatype: "BYTES", shape: t.shape, data: t.data }] }; });
  }
}
`,
);

// The same model in worker-thread instances.
mkdirSync(join(repo, "ts_identity_worker", "1"), { recursive: true });
writeFileSync(
  join(repo, "ts_identity_worker", "config.pbtxt"),
  tsConfig.replace('name: "ts_identity"', 'name: "ts_identity_worker"') + 'parameters { key: "execution_thread" value: { string_value: "worker" } }\n',
);
writeFileSync(join(repo, "ts_identity_worker", "1", "model.ts"), readFileSync(join(repo, "ts_identity", "1", "model.ts"), "utf8"));

const body = JSON.stringify({ inputs: [{ name: "INPUT0", shape: [1, 2], datatype: "BYTES", data: ["hello", "world"] }] });
writeFileSync(join(work, "body.json"), body);
writeFileSync(
  join(work, "post.lua"),
  `wrk.method = "POST"\nlocal f = io.open("${join(work, "body.json")}", "rb"); wrk.body = f:read("*a"); f:close()\nwrk.headers["Content-Type"] = "application/json"\n`,
);

const PORT = 18701;
const base = `http://127.0.0.1:${PORT}`;
const nereid: ChildProcess = spawn(
  BINARY,
  [`--model-repository=${repo}`, `--http-port=${PORT}`, "--allow-grpc=false", "--allow-metrics=false", "--log-info=false"],
  {
    stdio: ["ignore", openSync(join(work, "nereid.log"), "w"), openSync(join(work, "nereid.log"), "a")],
  },
);
await waitReady(`${base}/v2/health/ready`);
const MODELS = ["simple_identity", "ts_identity", "ts_identity_worker"];
for (const m of MODELS) {
  const r = await fetch(`${base}/v2/models/${m}/infer`, { method: "POST", body });
  if (r.status !== 200) throw new Error(`${m}: ${r.status} ${await r.text()}`);
}
await sleep(200);

async function stats(model: string) {
  const s = (await (await fetch(`${base}/v2/models/${model}/stats`)).json()) as any;
  const i = s.model_stats[0].inference_stats;
  return {
    count: i.success.count as number,
    successNs: i.success.ns as number,
    backendNs: (i.compute_input.ns + i.compute_infer.ns + i.compute_output.ns) as number,
  };
}

const results: Record<string, WrkResult & { backendUs: number; requestUs: number }> = {};
for (const model of MODELS) wrk(`${base}/v2/models/${model}/infer`, 4, 1, join(work, "post.lua")); // warm-up
for (const c of [1, 16]) {
  for (const model of MODELS) {
    const before = await stats(model);
    const r = wrk(`${base}/v2/models/${model}/infer`, c, DURATION, join(work, "post.lua"));
    const after = await stats(model);
    const n = after.count - before.count;
    results[`${model}-${c}`] = { ...r, backendUs: (after.backendNs - before.backendNs) / n / 1000, requestUs: (after.successNs - before.successNs) / n / 1000 };
  }
}
nereid.kill("SIGTERM");

const rows: string[] = [machineHeading(), "", `Binary: \`${BINARY}\`.`, ""];
rows.push(
  `wrk, ${DURATION} s per cell, one run, one server holding all three models; JSON body BYTES [1,2] ("hello", "world"); no dynamic batching, one instance each.`,
  "",
  "| model | c | req/s | p50 ms | p99 ms | non-2xx | backend µs/request (stats) | request µs (stats success) |",
  "| --- | --- | --- | --- | --- | --- | --- | --- |",
);
for (const c of [1, 16]) {
  for (const model of MODELS) {
    const r = results[`${model}-${c}`]!;
    rows.push(
      `| ${{ simple_identity: "ONNX simple_identity", ts_identity: "TypeScript identity (main thread)", ts_identity_worker: "TypeScript identity (worker thread)" }[model]} | ${c} | ${Math.round(r.rps).toLocaleString("en-US")} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.errors} | ${r.backendUs.toFixed(1)} | ${r.requestUs.toFixed(1)} |`,
    );
  }
}
const d1 = results["ts_identity-1"]!.requestUs - results["simple_identity-1"]!.requestUs;
rows.push(
  "",
  `- mean server time per request at c=1, TypeScript minus ONNX: **${d1.toFixed(1)} µs** (negative: the TypeScript model is cheaper)`,
  `- worker thread minus main thread, mean server time per request at c=1: **${(results["ts_identity_worker-1"]!.requestUs - results["ts_identity-1"]!.requestUs).toFixed(1)} µs**`,
  "",
);
mkdirSync(dirname(OUT), { recursive: true });
appendFileSync(OUT, rows.join("\n") + "\n");
console.log(rows.join("\n"));
process.exit(0);
