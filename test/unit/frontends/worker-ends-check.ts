/**
 * Run under Bun by worker-ends.test.ts (the HTTP frontend runs on worker threads only under
 * Bun). A server with `simple` and 2 real HTTP worker threads; one of them is ended from
 * outside (as Bun ends a worker on an uncaught error), then the other. Prints one JSON line:
 * what clients on fresh connections got before, after the first and after the second end,
 * what the server logged, and `simple`'s statistics.
 */
import { cpSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "../../../src/options.ts";
import { startServer } from "../../../src/startup/start.ts";
import { startFrontendWorkersEarly } from "../../../src/startup/early-workers.ts";
import { configureLog } from "../../../src/core/logger.ts";
import type { WorkerLike } from "../../../src/core/threads/thread.ts";

const ROOT = resolve(import.meta.dir, "../../..");
const repo = mkdtempSync(join(tmpdir(), "nereid-worker-ends-"));
cpSync(join(ROOT, "model_repository", "simple"), join(repo, "simple"), { recursive: true });
const logged: string[] = [];
configureLog({ info: true }, (line) => logged.push(line));

const parsed = parseArgs([
  `--model-repository=${repo}`,
  "--http-port=0",
  "--http-address=127.0.0.1",
  "--http-thread-count=2",
  "--allow-grpc=false",
  "--allow-metrics=false",
]);
if (parsed.kind !== "run") throw new Error(`unexpected ${parsed.kind}`);
const early = startFrontendWorkersEarly(parsed.options);
// The workers the HTTP listener takes, kept here so that the test can end one.
const handed: WorkerLike[] = [];
const take = early.take.bind(early);
early.take = (frontend) => {
  const workers = take(frontend);
  handed.push(...workers);
  return workers;
};
const running = await startServer(parsed.options, early);
const port = running.listeners.http!.port;
const body = JSON.stringify({
  inputs: ["INPUT0", "INPUT1"].map((name, k) => ({ name, shape: [1, 16], datatype: "INT32", data: Array.from({ length: 16 }, (_, i) => i * (k + 1)) })),
});

/** `n` requests, each on a fresh connection (so the kernel spreads them over the workers listening): their answers, tallied. */
async function round(n: number): Promise<Record<string, number>> {
  const tally: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    let key: string;
    try {
      const r = await fetch(`http://127.0.0.1:${port}/v2/models/simple/infer`, {
        method: "POST",
        body,
        headers: { connection: "close" },
        signal: AbortSignal.timeout(5000),
      });
      const out = (await r.json()) as { outputs?: { name: string; data: number[] }[] };
      const sum = out.outputs?.find((o) => o.name === "OUTPUT0")?.data;
      key = r.status === 200 && sum?.every((v, j) => v === j * 3) ? "right" : `status ${r.status}`;
    } catch (err) {
      key = (err as Error).name;
    }
    tally[key] = (tally[key] ?? 0) + 1;
  }
  return tally;
}

/** Ends worker `i` of those started first, and waits for the replacement's start to be logged and done. */
async function end(i: number): Promise<void> {
  const had = logged.filter((l) => l.includes("starting another")).length;
  handed[i]!.terminate?.();
  const deadline = Date.now() + 10_000;
  while (logged.filter((l) => l.includes("starting another")).length === had && Date.now() < deadline) await Bun.sleep(20);
  // The replacement starts RESTART_DELAY_MS later; its start then takes a few milliseconds.
  await Bun.sleep(500);
}

const before = await round(20);
await end(0);
const afterOne = await round(40);
// Both first workers gone: what answers now is the replacements.
await end(1);
const afterBoth = await round(40);
const statsAnswer = (await (await fetch(`http://127.0.0.1:${port}/v2/models/simple/stats`)).json()) as {
  model_stats: { inference_stats: { success: { count: number } } }[];
};
const stats = statsAnswer.model_stats[0]!.inference_stats.success.count;
await running.shutdown();
process.stdout.write(
  `${JSON.stringify({ workers: handed.length, before, afterOne, afterBoth, logged: logged.filter((l) => /worker thread ended|could not be started/.test(l)).map((l) => l.replace(/^.*\] /, "")), stats })}\n`,
);
process.exit(0);
