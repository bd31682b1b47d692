/**
 * OCR benchmark (issue #15): images per second through the `ocr` ensemble and the
 * `ocr_bls` BLS model at concurrency 1 and 4 over HTTP (binary tensor extension:
 * docs/ocr-example.png, 1152 x 320, two lines), every answer checked, and where the
 * server's time goes, from /v2/models/<step>/stats: ONNX Runtime (compute_infer of
 * ocr_det, ocr_cls, ocr_rec), the TypeScript steps (compute_infer of ocr_pre, ocr_boxes,
 * ocr_rotate, ocr_ctc), and the rest (queues, scheduling, copies between steps).
 * Appends to scripts/results/ocr.md.
 *
 *   npm run build && bun scripts/bench-ocr.ts [--duration=10] [--binary=dist/nereid]
 */
import { spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { machineHeading, waitReady } from "./lib/bench.ts";

const root = resolve(import.meta.dir, "..");
const arg = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? def;
const DURATION = Number(arg("duration", "10"));
const OUT = resolve(root, arg("out", "scripts/results/ocr.md"));
const BINARY = resolve(root, arg("binary", "dist/nereid"));
const REPO = join(root, "model_repository");
if (!existsSync(BINARY) || !existsSync(join(REPO, "ocr_rec", "1", "model.onnx"))) throw new Error("run npm run build first");

const PNG_BYTES = new Uint8Array(readFileSync(join(root, "docs", "ocr-example.png")));
// The request: a JSON header asking for the outputs as JSON, then the image as one BYTES
// element (4-byte little-endian length, then the file).
const HEADER = new TextEncoder().encode(
  JSON.stringify({
    inputs: [{ name: "image", shape: [1], datatype: "BYTES", parameters: { binary_data_size: PNG_BYTES.length + 4 } }],
    parameters: { binary_data_output: false },
  }),
);
const IMAGE = new Uint8Array(HEADER.length + 4 + PNG_BYTES.length);
IMAGE.set(HEADER);
new DataView(IMAGE.buffer).setUint32(HEADER.length, PNG_BYTES.length, true);
IMAGE.set(PNG_BYTES, HEADER.length + 4);
const EXPECTED = JSON.stringify(["NEREID SERVES OCR", "Triton 2026"]);
const ORT_STEPS = ["ocr_det", "ocr_cls", "ocr_rec"];
const TS_STEPS = ["ocr_pre", "ocr_boxes", "ocr_rotate", "ocr_ctc"];
const MODELS = ["ocr", "ocr_bls"];

const port = 18870;
const loads = [...ORT_STEPS, ...TS_STEPS, ...MODELS].map((m) => `--load-model=${m}`);
const child = spawn(
  BINARY,
  [
    `--model-repository=${REPO}`,
    "--model-control-mode=explicit",
    ...loads,
    `--http-port=${port}`,
    "--allow-grpc=false",
    "--allow-metrics=false",
    "--log-info=false",
  ],
  {
    stdio: ["ignore", "ignore", "inherit"],
  },
);
const base = `http://127.0.0.1:${port}`;
await waitReady(`${base}/v2/health/ready`, 60_000);

async function infer(model: string): Promise<void> {
  const r = await fetch(`${base}/v2/models/${model}/infer`, {
    method: "POST",
    headers: { "Inference-Header-Content-Length": String(HEADER.length) },
    body: IMAGE,
  });
  const json = (await r.json()) as { outputs?: { name: string; data: string[] }[]; error?: string };
  const text = JSON.stringify(json.outputs?.find((o) => o.name === "text")?.data);
  if (r.status !== 200 || text !== EXPECTED) throw new Error(`${model}: ${r.status} ${text ?? json.error}`);
}

interface Durations {
  count: number;
  successNs: number;
  inferNs: number;
}
async function stats(model: string): Promise<Durations> {
  const s = (await (await fetch(`${base}/v2/models/${model}/stats`)).json()) as {
    model_stats: { inference_stats: Record<string, { count: number; ns: number }> }[];
  };
  const i = s.model_stats[0]!.inference_stats;
  return { count: Number(i.success!.count), successNs: Number(i.success!.ns), inferNs: Number(i.compute_infer!.ns) };
}
async function allStats(): Promise<Map<string, Durations>> {
  return new Map(await Promise.all([...ORT_STEPS, ...TS_STEPS, ...MODELS].map(async (m) => [m, await stats(m)] as const)));
}

interface Result {
  model: string;
  c: number;
  ips: number;
  p50: number;
  p99: number;
  images: number;
  steps: Map<string, number>;
  totalMs: number;
}

async function run(model: string, c: number, seconds: number): Promise<Result> {
  const before = await allStats();
  const latencies: number[] = [];
  const end = performance.now() + seconds * 1000;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: c }, async () => {
      while (performance.now() < end) {
        const s = performance.now();
        await infer(model);
        latencies.push(performance.now() - s);
      }
    }),
  );
  const elapsed = (performance.now() - t0) / 1000;
  const after = await allStats();
  latencies.sort((a, b) => a - b);
  const images = latencies.length;
  // compute_infer per image of each step, in ms.
  const steps = new Map([...ORT_STEPS, ...TS_STEPS].map((m) => [m, (after.get(m)!.inferNs - before.get(m)!.inferNs) / images / 1e6]));
  const totalMs = (after.get(model)!.successNs - before.get(model)!.successNs) / images / 1e6;
  return { model, c, ips: images / elapsed, p50: latencies[Math.floor(images / 2)]!, p99: latencies[Math.floor(images * 0.99)]!, images, steps, totalMs };
}

for (const m of MODELS) await run(m, 1, Math.min(2, DURATION)); // warm-up
const results: Result[] = [];
for (const c of [1, 4]) for (const m of MODELS) results.push(await run(m, c, DURATION));
child.kill("SIGTERM");

const f = (v: number, d = 1) => v.toFixed(d);
const sum = (r: Result, names: string[]) => names.reduce((a, n) => a + r.steps.get(n)!, 0);
const lines = [
  machineHeading(),
  "",
  `\`docs/ocr-example.png\` (1152 x 320 PNG, two lines) as a BYTES input through the binary tensor extension, client in Bun, ${DURATION} s per case, one instance of every model; every answer checked ("NEREID SERVES OCR", "Triton 2026"). Server times per image from the models' statistics: "server" is the success time of \`ocr\` / \`ocr_bls\`; ORT is the compute_infer time of ocr_det + ocr_cls + ocr_rec; TS is that of ocr_pre + ocr_boxes + ocr_rotate + ocr_ctc; "other" is the rest (queues, step scheduling, copies between steps, BLS calls).`,
  "",
  "| model | c | images/s | p50 ms | p99 ms | server ms/image | ORT ms | TS steps ms | other ms | outside ORT |",
  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
  ...results.map((r) => {
    const ort = sum(r, ORT_STEPS);
    const ts = sum(r, TS_STEPS);
    return `| ${r.model} | ${r.c} | ${f(r.ips, 2)} | ${f(r.p50)} | ${f(r.p99)} | ${f(r.totalMs)} | ${f(ort)} | ${f(ts)} | ${f(r.totalMs - ort - ts)} | ${f((100 * (r.totalMs - ort)) / r.totalMs, 0)}% |`;
  }),
  "",
  "compute_infer per image of each step, ms (c=1):",
  "",
  `| model | ${[...TS_STEPS, ...ORT_STEPS].join(" | ")} |`,
  `| --- |${" --- |".repeat(TS_STEPS.length + ORT_STEPS.length)}`,
  ...results.filter((r) => r.c === 1).map((r) => `| ${r.model} | ${[...TS_STEPS, ...ORT_STEPS].map((n) => f(r.steps.get(n)!, 2)).join(" | ")} |`),
  "",
];
mkdirSync(dirname(OUT), { recursive: true });
appendFileSync(OUT, lines.join("\n") + "\n");
console.log(lines.join("\n"));
process.exit(0);
