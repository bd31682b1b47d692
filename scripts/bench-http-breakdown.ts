/**
 * Where the server's time per `simple` JSON request goes (issue #2's throughput target).
 * Each server runs pinned to core 0 and wrk to core 1, one at a time, at concurrency 16;
 * the server's own CPU time (user + system, from /proc) is divided by the requests it
 * answered, so the figures do not depend on how busy the other core was.
 *
 * Layers, each adding one part of the path to the one before:
 *   1. bare Bun.serve: a fixed reply to a GET (the ceiling of bench-http.ts);
 *   2. bare Bun.serve reading the POST body before the same reply;
 *   3. nereid with InferenceServer.inferAsync replaced by a canned response: the HTTP
 *      frontend alone (routing, body, JSON decode, response encoding);
 *   4. nereid with OrtSession.run and runBound replaced by canned outputs: frontend and core
 *      (validation, scheduler, statistics, backend glue) without ONNX Runtime;
 *   5. nereid as shipped;
 *   6. nereid with inferAsync called twice per request (on a copy, then on the request):
 *      the repeat runs the same core and ORT code right after the first call, with the
 *      CPU's caches warm, so it shows how much of layer 5's cost is the cold first run;
 *   7. the naive reference of bench-http.ts (req.json, the same koffi session, Response.json).
 * Layers 3 to 6 run src/main.ts under Bun with a --preload that installs the stub or wrapper.
 *
 *   bun scripts/bench-http-breakdown.ts [--duration=8] [--rounds=3] [--out=scripts/results/http-breakdown.md]
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, writeFileSync, mkdirSync, appendFileSync, cpSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { machineHeading, procStat, sleep, waitReady, wrk } from "./lib/bench.ts";
import { naiveServerSource } from "./lib/naive-server.ts";

const root = resolve(import.meta.dir, "..");
const arg = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? def;
const DURATION = Number(arg("duration", "8"));
const ROUNDS = Number(arg("rounds", "3"));
const OUT = resolve(root, arg("out", "scripts/results/http-breakdown.md"));
const work = mkdtempSync(join(tmpdir(), "nereid-breakdown-"));
const bun = process.execPath;

if (spawnSync("wrk", ["--version"]).error) throw new Error("wrk is not installed (apt-get install wrk)");
if (spawnSync("taskset", ["-c", "0", "true"]).status !== 0) throw new Error("taskset (util-linux) is needed to pin the server and wrk to separate cores");

const repo = join(work, "repo");
mkdirSync(repo);
cpSync(join(root, "model_repository", "simple"), join(repo, "simple"), { recursive: true });

const A = Array.from({ length: 16 }, (_, i) => i);
const jsonBody = JSON.stringify({
  inputs: [
    { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: A },
    { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: A },
  ],
});
writeFileSync(join(work, "json.body"), jsonBody);
writeFileSync(
  join(work, "json.lua"),
  `wrk.method = "POST"\nlocal f = io.open("${join(work, "json.body")}", "rb"); wrk.body = f:read("*a"); f:close()\nwrk.headers["Content-Type"] = "application/json"\n`,
);

const REPLY = `'{"live":true,"ready":true,"model":"simple","ok":1}', { headers: { "content-type": "application/json" } }`;
writeFileSync(join(work, "bare.ts"), `Bun.serve({ port: Number(process.argv[2]), fetch: () => new Response(${REPLY}) });\n`);
writeFileSync(
  join(work, "bare-body.ts"),
  `Bun.serve({ port: Number(process.argv[2]), async fetch(req) { await req.bytes(); return new Response(${REPLY}); } });\n`,
);
writeFileSync(
  join(work, "stub-core.ts"),
  `import { InferenceServer } from ${JSON.stringify(join(root, "src/server/server.ts"))};
const out = (name: string) => ({ name, datatype: "INT32" as const, shape: [1, 16], data: new Uint8Array(64) });
InferenceServer.prototype.inferAsync = async function (request) {
  return { modelName: request.modelName, modelVersion: "1", outputs: [out("OUTPUT0"), out("OUTPUT1")] };
};
`,
);
writeFileSync(
  join(work, "stub-ort.ts"),
  `import { OrtSession } from ${JSON.stringify(join(root, "ffi/onnxruntime/session.ts"))};
const canned = (inputs: { shape: number[] }[], outputNames: readonly string[]) =>
  outputNames.map((name) => ({ name, elementType: 6, shape: [inputs[0]!.shape[0]!, 16], data: new Uint8Array(64) }));
OrtSession.prototype.run = async function (inputs, outputNames) {
  return canned(inputs, outputNames);
};
// A small synchronous run goes through runBound without run().
OrtSession.prototype.runBound = function (inputs, outputNames) {
  return canned(inputs, outputNames);
};
`,
);
// The core (ORT Run included) run a second time right after the first, on a copy of the
// request: what the repeat adds is what that code costs while its code and data are
// still in the CPU's caches.
writeFileSync(
  join(work, "core-twice.ts"),
  `import { InferenceServer } from ${JSON.stringify(join(root, "src/server/server.ts"))};
const once = InferenceServer.prototype.inferAsync;
InferenceServer.prototype.inferAsync = async function (request) {
  const copy = { ...request, parameters: { ...request.parameters }, inputs: request.inputs.map((i) => ({ ...i, parameters: { ...i.parameters } })) };
  await once.call(this, copy);
  return once.call(this, request);
};
`,
);
writeFileSync(join(work, "naive.ts"), naiveServerSource(root, join(repo, "simple/1/model.onnx")));

interface Layer {
  label: string;
  /** Arguments after `taskset -c 0 bun`. */
  args: (port: number) => string[];
  url: (port: number) => string;
  post: boolean;
}
const nereid = (preload?: string) => (port: number) => [
  ...(preload ? ["--preload", join(work, preload)] : []),
  join(root, "src/main.ts"),
  `--model-repository=${repo}`,
  `--http-port=${port}`,
  "--allow-grpc=false",
  "--allow-metrics=false",
  "--log-info=false",
];
const inferUrl = (port: number) => `http://127.0.0.1:${port}/v2/models/simple/infer`;
const LAYERS: Layer[] = [
  { label: "bare Bun.serve, GET, fixed reply", args: (p) => [join(work, "bare.ts"), String(p)], url: (p) => `http://127.0.0.1:${p}/`, post: false },
  {
    label: "bare Bun.serve, POST body read, fixed reply",
    args: (p) => [join(work, "bare-body.ts"), String(p)],
    url: (p) => `http://127.0.0.1:${p}/`,
    post: true,
  },
  { label: "nereid, core stubbed (HTTP frontend only)", args: nereid("stub-core.ts"), url: inferUrl, post: true },
  { label: "nereid, ORT Run stubbed (frontend + core)", args: nereid("stub-ort.ts"), url: inferUrl, post: true },
  { label: "nereid as shipped", args: nereid(), url: inferUrl, post: true },
  { label: "nereid, the core run twice per request (the second time warm)", args: nereid("core-twice.ts"), url: inferUrl, post: true },
  { label: "naive Bun.serve + koffi ORT (reference)", args: (p) => [join(work, "naive.ts"), String(p)], url: (p) => `http://127.0.0.1:${p}/`, post: true },
];

const runWrk = (url: string, post: boolean, seconds: number) => wrk(url, 16, seconds, post ? join(work, "json.lua") : undefined, { threads: 1, cpus: "1" });

async function measure(layer: Layer, port: number): Promise<{ usPerRequest: number; rps: number; errors: number }> {
  const child: ChildProcess = spawn("taskset", ["-c", "0", bun, ...layer.args(port)], { stdio: "ignore" });
  try {
    await waitReady(layer.url(port), 20_000, layer.post ? "POST" : "GET", layer.post ? jsonBody : undefined);
    runWrk(layer.url(port), layer.post, 2); // warm-up
    await sleep(200);
    const before = procStat(child.pid!).cpuTicks;
    const r = runWrk(layer.url(port), layer.post, DURATION);
    const ticks = procStat(child.pid!).cpuTicks - before;
    return { usPerRequest: (ticks * 10_000) / r.requests, rps: r.rps, errors: r.errors }; // 100 ticks per second
  } finally {
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
  }
}

// Rounds interleave the layers so that drift of the machine spreads over all of them.
const samples = LAYERS.map(() => [] as { usPerRequest: number; rps: number; errors: number }[]);
for (let round = 0; round < ROUNDS; round++) {
  for (let i = 0; i < LAYERS.length; i++) {
    const s = await measure(LAYERS[i]!, 18700 + round * 10 + i);
    samples[i]!.push(s);
    console.error(`round ${round + 1}: ${LAYERS[i]!.label}: ${s.usPerRequest.toFixed(1)} µs/request, ${Math.round(s.rps)} req/s`);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const rows = [
  machineHeading(),
  "",
  `Server pinned to core 0, wrk (1 thread, c=16) to core 1; ${DURATION} s per cell, ${ROUNDS} interleaved rounds, medians. µs/request is the server process's CPU time (user + system) per answered request.`,
  "",
  "| layer | server CPU µs/request | added by this layer | req/s | non-2xx |",
  "| --- | --- | --- | --- | --- |",
];
let prev: number | undefined;
const us = samples.map((s) => median(s.map((x) => x.usPerRequest)));
LAYERS.forEach((layer, i) => {
  const added = i >= 1 && i <= 5 && prev !== undefined ? `+${(us[i]! - prev).toFixed(1)}` : "";
  rows.push(
    `| ${layer.label} | ${us[i]!.toFixed(1)} | ${added} | ${Math.round(median(samples[i]!.map((x) => x.rps))).toLocaleString("en-US")} | ${samples[i]!.reduce((n, x) => n + x.errors, 0)} |`,
  );
  if (i <= 4) prev = us[i];
});
rows.push("");
mkdirSync(dirname(OUT), { recursive: true });
appendFileSync(OUT, rows.join("\n") + "\n");
console.log(rows.join("\n"));
process.exit(0);
