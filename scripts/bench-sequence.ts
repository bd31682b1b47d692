/**
 * Sequence batching benchmark (issue #5): 16 concurrent sequences of silero VAD chunks
 * (512 samples, binary HTTP) against dist/nereid, once with the example's `oldest`
 * strategy (batches across sequences) and once with `direct` and one slot (one request
 * at a time). Appends to scripts/results/sequence.md.
 *
 *   npm run build && bun scripts/bench-sequence.ts [--duration=10] [--sequences=16]
 */
import { spawn } from "node:child_process";
import { appendFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { machineHeading, waitReady } from "./lib/bench.ts";

const root = resolve(import.meta.dir, "..");
const arg = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? def;
const DURATION = Number(arg("duration", "10"));
const SEQUENCES = Number(arg("sequences", "16"));
const OUT = resolve(root, arg("out", "scripts/results/sequence.md"));
const BINARY = join(root, "dist", "nereid");
const VAD = join(root, "model_repository", "silero_vad");
if (!existsSync(BINARY) || !existsSync(join(VAD, "1", "model.onnx"))) throw new Error("run npm run build first");

const repo = mkdtempSync(join(tmpdir(), "nereid-bench-seq-"));
cpSync(VAD, join(repo, "silero_vad"), { recursive: true });
cpSync(VAD, join(repo, "silero_vad_direct1"), { recursive: true });
const config = readFileSync(join(VAD, "config.pbtxt"), "utf8");
writeFileSync(
  join(repo, "silero_vad_direct1", "config.pbtxt"),
  config
    .replace('name: "silero_vad"', 'name: "silero_vad_direct1"')
    .replace("max_batch_size: 16", "max_batch_size: 1")
    .replace(/oldest \{[^}]*\}/, "direct { }"),
);

const port = 18850;
const child = spawn(BINARY, [`--model-repository=${repo}`, `--http-port=${port}`, "--allow-grpc=false", "--allow-metrics=false", "--log-info=false"], {
  stdio: "ignore",
});
const base = `http://127.0.0.1:${port}`;
await waitReady(`${base}/v2/health/ready`);

const chunk = Buffer.from(Float32Array.from({ length: 512 }, (_, i) => 0.3 * Math.sin(i * 0.07)).buffer);
function body(id: number, start: boolean, end: boolean) {
  const header = JSON.stringify({
    parameters: { sequence_id: id, sequence_start: start, sequence_end: end, binary_data_output: true },
    inputs: [{ name: "input", shape: [1, 512], datatype: "FP32", parameters: { binary_data_size: 2048 } }],
  });
  return { header: String(Buffer.byteLength(header)), body: Buffer.concat([Buffer.from(header), chunk]) };
}

let nextId = 1;
async function run(model: string): Promise<{ rps: number; p50: number; p99: number; meanBatch: number }> {
  const latencies: number[] = [];
  const end = performance.now() + DURATION * 1000;
  const worker = async () => {
    while (performance.now() < end) {
      const id = nextId++;
      // Every sequence ends with END (early when time is up), so none is left holding a slot.
      for (let k = 0, last = false; !last; k++) {
        last = k === 49 || performance.now() >= end;
        const b = body(id, k === 0, last);
        const t0 = performance.now();
        const r = await fetch(`${base}/v2/models/${model}/infer`, { method: "POST", headers: { "Inference-Header-Content-Length": b.header }, body: b.body });
        await r.arrayBuffer();
        if (r.status !== 200) throw new Error(`${model}: ${r.status}`);
        latencies.push(performance.now() - t0);
      }
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: SEQUENCES }, worker));
  const seconds = (performance.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  const s = (await (await fetch(`${base}/v2/models/${model}/stats`)).json()) as { model_stats: { inference_count: number; execution_count: number }[] };
  return {
    rps: latencies.length / seconds,
    p50: latencies[Math.floor(latencies.length / 2)]!,
    p99: latencies[Math.floor(latencies.length * 0.99)]!,
    meanBatch: s.model_stats[0]!.inference_count / s.model_stats[0]!.execution_count,
  };
}

await run("silero_vad"); // warm-up (short sequences of both)
const oldest = await run("silero_vad");
const direct = await run("silero_vad_direct1");
child.kill("SIGTERM");

const row = (name: string, r: Awaited<ReturnType<typeof run>>) =>
  `| ${name} | ${Math.round(r.rps).toLocaleString("en-US")} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.meanBatch.toFixed(1)} |`;
const lines = [
  machineHeading(),
  "",
  `${SEQUENCES} concurrent sequences of 50 silero VAD chunks (512 samples, binary HTTP, client in Bun), ${DURATION} s per case, one instance.`,
  "",
  "| strategy | chunks/s | p50 ms | p99 ms | mean batch |",
  "| --- | --- | --- | --- | --- |",
  row("oldest (max_batch_size 16, 16 candidates)", oldest),
  row("direct, one slot (max_batch_size 1)", direct),
  "",
  `- oldest / direct-one-slot throughput: **${(oldest.rps / direct.rps).toFixed(2)}×**`,
  "",
];
mkdirSync(dirname(OUT), { recursive: true });
appendFileSync(OUT, lines.join("\n") + "\n");
console.log(lines.join("\n"));
process.exit(0);
