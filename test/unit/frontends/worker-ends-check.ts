/**
 * Run under Bun by worker-ends.test.ts (the frontends run on worker threads only under Bun).
 * A server with `simple`, a TypeScript model `hold`, 2 real HTTP and 2 real gRPC worker
 * threads. One HTTP worker is ended from outside (as Bun ends a worker on an uncaught error),
 * then the other, while a request to `hold` is held in one of them; then the gRPC workers
 * likewise, with a call to `hold` held. Prints one JSON line: what clients on fresh
 * connections got before, after the first and after the second end, what became of each
 * held request (its client, the model's signal) and of the next one, what the server
 * logged, and `simple`'s statistics.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "../../../src/options.ts";
import { startServer } from "../../../src/startup/start.ts";
import { startFrontendWorkersEarly, type Frontend } from "../../../src/startup/early-workers.ts";
import { configureLog } from "../../../src/core/logger.ts";
import type { WorkerLike } from "../../../src/core/threads/thread.ts";
import { inferenceClient, inferSimple } from "../../helpers/grpc-client.ts";

const ROOT = resolve(import.meta.dir, "../../..");
const repo = mkdtempSync(join(tmpdir(), "nereid-worker-ends-"));
cpSync(join(ROOT, "model_repository", "simple"), join(repo, "simple"), { recursive: true });
// A TypeScript model the frontend workers reach directly (its worker-thread instance):
// Y = A; A = 1 or 3 marks `started-<A>`, waits for its request's signal to abort, then marks `aborted-<A>`.
const hold = join(repo, "hold", "1");
mkdirSync(hold, { recursive: true });
writeFileSync(
  join(repo, "hold", "config.pbtxt"),
  `name: "hold"\nbackend: "typescript"\nmax_batch_size: 0\ninput [ { name: "A" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] } ]\n`,
);
writeFileSync(
  join(hold, "model.js"),
  `import { writeFileSync } from "node:fs";
const mark = (name) => writeFileSync(new URL(name, import.meta.url), "");
export default class Hold {
  async execute(requests) {
    const r = requests[0];
    const a = r.input("A").data[0];
    if (a === 1 || a === 3) {
      mark("started-" + a);
      await new Promise((resolve) => r.signal.addEventListener("abort", resolve));
      mark("aborted-" + a);
    }
    return requests.map((q) => ({ outputs: [{ name: "Y", datatype: "INT32", shape: [1], data: q.input("A").data }] }));
  }
}
`,
);
const marked = (name: string) => existsSync(join(hold, name));
const logged: string[] = [];
configureLog({ info: true }, (line) => logged.push(line));

const parsed = parseArgs([
  `--model-repository=${repo}`,
  "--http-port=0",
  "--http-address=127.0.0.1",
  "--http-thread-count=2",
  "--grpc-port=0",
  "--grpc-address=127.0.0.1",
  "--grpc-infer-thread-count=2",
  "--allow-metrics=false",
]);
if (parsed.kind !== "run") throw new Error(`unexpected ${parsed.kind}`);
const early = startFrontendWorkersEarly(parsed.options);
// The workers each listener takes, kept here so that the test can end them.
const handed: Record<Frontend, WorkerLike[]> = { http: [], grpc: [] };
const take = early.take.bind(early);
early.take = (frontend) => {
  const workers = take(frontend);
  handed[frontend].push(...workers);
  return workers;
};
const running = await startServer(parsed.options, early);
const port = running.listeners.http!.port;
const grpcTarget = `127.0.0.1:${running.listeners.grpc!.port}`;
const body = JSON.stringify({
  inputs: ["INPUT0", "INPUT1"].map((name, k) => ({ name, shape: [1, 16], datatype: "INT32", data: Array.from({ length: 16 }, (_, i) => i * (k + 1)) })),
});

/** `n` calls of `one`, one after another: how many gave each answer ("right", or how it failed). */
async function tally(n: number, one: () => Promise<string>): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    const key = await one();
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

/** `n` requests, each on a fresh connection (so the kernel spreads them over the workers listening): their answers, tallied. */
const round = (n: number) =>
  tally(n, async () => {
    try {
      const r = await fetch(`http://127.0.0.1:${port}/v2/models/simple/infer`, {
        method: "POST",
        body,
        headers: { connection: "close" },
        signal: AbortSignal.timeout(5000),
      });
      const out = (await r.json()) as { outputs?: { name: string; data: number[] }[] };
      const sum = out.outputs?.find((o) => o.name === "OUTPUT0")?.data;
      return r.status === 200 && sum?.every((v, j) => v === j * 3) ? "right" : `status ${r.status}`;
    } catch (err) {
      return (err as Error).name;
    }
  });

/** `n` ModelInfer calls to `simple`, each on a client (a connection) of its own: their answers, tallied. */
const grpcRound = (n: number) =>
  tally(n, async () => {
    try {
      const out = await inferSimple(grpcTarget);
      return out.every((v, j) => v === j + 5) ? "right" : "wrong";
    } catch (err) {
      return `code ${(err as { code?: number }).code}`;
    }
  });

/** A ModelInfer call with A = `a` to `hold`: Y, or the call's status code. */
async function grpcHold(a: number): Promise<string> {
  const { client, call } = inferenceClient(grpcTarget);
  try {
    const res = (await call("ModelInfer")({
      model_name: "hold",
      inputs: [{ name: "A", datatype: "INT32", shape: [1] }],
      raw_input_contents: [Buffer.from(new Int32Array([a]).buffer)],
    })) as { raw_output_contents: Uint8Array[] };
    const y = Buffer.from(res.raw_output_contents[0]!);
    return `Y ${y.readInt32LE(0)}`;
  } catch (err) {
    return `code ${(err as { code?: number }).code}`;
  } finally {
    client.close();
  }
}

/** Ends `frontend`'s worker `i` of those started first, and waits for the replacement's start to be logged and done. */
async function end(frontend: Frontend, i: number): Promise<void> {
  const restarts = () => logged.filter((l) => l.includes("starting another")).length;
  const had = restarts();
  handed[frontend][i]!.terminate?.();
  const deadline = Date.now() + 10_000;
  while (restarts() === had && Date.now() < deadline) await Bun.sleep(20);
  // The replacement starts RESTART_DELAY_MS later; its start then takes a few milliseconds.
  await Bun.sleep(500);
}

/** POSTs A = `a` to `hold` on a fresh connection: Y, or how it failed. */
async function holdInfer(a: number): Promise<string> {
  try {
    const r = await fetch(`http://127.0.0.1:${port}/v2/models/hold/infer`, {
      method: "POST",
      body: JSON.stringify({ inputs: [{ name: "A", shape: [1], datatype: "INT32", data: [a] }] }),
      headers: { connection: "close" },
      signal: AbortSignal.timeout(10_000),
    });
    const out = (await r.json()) as { outputs?: { data: number[] }[]; error?: string };
    return r.status === 200 ? `Y ${out.outputs?.[0]?.data.join(",")}` : `status ${r.status}: ${out.error}`;
  } catch (err) {
    return (err as Error).name;
  }
}

/** Whether `what` comes true within `ms`. */
async function until(what: () => boolean, ms = 10_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!what()) {
    if (Date.now() > deadline) return false;
    await Bun.sleep(20);
  }
  return true;
}

const before = await round(20);
// Held in whichever worker took its connection; both first workers end below.
const held = holdInfer(1);
const heldStarted = await until(() => marked("started-1"));
await end("http", 0);
const afterOne = await round(40);
// Both first workers gone: what answers now is the replacements.
await end("http", 1);
const afterBoth = await round(40);
const grpc: Record<string, unknown> = { before: await grpcRound(20) };
const grpcHeld = grpcHold(3);
grpc.heldStarted = await until(() => marked("started-3"));
await end("grpc", 0);
grpc.afterOne = await grpcRound(40);
await end("grpc", 1);
grpc.afterBoth = await grpcRound(40);
grpc.heldAnswer = await grpcHeld;
grpc.heldAborted = await until(() => marked("aborted-3"));
grpc.holdAfter = await grpcHold(4);
const heldAnswer = await held;
const heldAborted = await until(() => marked("aborted-1"));
const holdAfter = await holdInfer(2);
const statsAnswer = (await (await fetch(`http://127.0.0.1:${port}/v2/models/simple/stats`)).json()) as {
  model_stats: { inference_stats: { success: { count: number } } }[];
};
const stats = statsAnswer.model_stats[0]!.inference_stats.success.count;
await running.shutdown();
rmSync(repo, { recursive: true, force: true });
process.stdout.write(
  `${JSON.stringify({ workers: [handed.http.length, handed.grpc.length], before, afterOne, afterBoth, heldStarted, heldAnswer, heldAborted, holdAfter, grpc, logged: logged.filter((l) => /worker thread ended|could not be started/.test(l)).map((l) => l.replace(/^.*\] /, "")), stats })}\n`,
);
process.exit(0);
