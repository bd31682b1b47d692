/**
 * The in-process API under another runtime: `bun test/e2e/embedded/check.ts <repo>` (or
 * `deno run -A --node-modules-dir=manual ...`) on a repository holding `simple` and
 * `simple_identity`. Prints one JSON line of what it saw; exits 1 on the first mismatch.
 * Run by embedded.test.ts (Bun) and deno.test.ts (Deno).
 */
import { createServer } from "../../../src/index.ts";

declare const Bun: unknown;
declare const Deno: { version: { deno: string } } | undefined;

function check(cond: boolean, what: string): void {
  if (!cond) throw new Error(`check failed: ${what}`);
}

const repo = process.argv[2];
if (!repo) throw new Error("usage: check.ts <model repository>");
const runtime = typeof Bun !== "undefined" ? "bun" : typeof Deno !== "undefined" ? "deno" : "node";

const a = Int32Array.from({ length: 16 }, (_, i) => i * 10);
const b = Int32Array.from({ length: 16 }, (_, i) => i);
const nereid = await createServer({ modelRepository: repo, logInfo: false, logWarning: false });
check(nereid.live && nereid.ready, "live and ready");
check(Object.keys(nereid.endpoints).length === 0, "no listener by default");
const r = await nereid.infer({
  model: "simple",
  inputs: [
    { name: "INPUT0", datatype: "INT32", shape: [1, 16], data: a },
    { name: "INPUT1", datatype: "INT32", shape: [1, 16], data: b },
  ],
});
const sum = [...r.output("OUTPUT0", "INT32").data];
const diff = [...r.output("OUTPUT1", "INT32").data];
check(sum.every((v, i) => v === i * 11) && diff.every((v, i) => v === i * 9), `exact sums: ${sum} / ${diff}`);

const s = await nereid.infer({ model: "simple_identity", inputs: [{ name: "INPUT0", datatype: "BYTES", shape: [1, 2], data: ["nereid", ""] }] });
const strings = s.output("OUTPUT0", "BYTES").data.map((e) => new TextDecoder().decode(e));
check(JSON.stringify(strings) === '["nereid",""]', `BYTES identity: ${strings}`);

await nereid.unload("simple_identity");
check(!nereid.modelReady("simple_identity"), "unloaded");
await nereid.load("simple_identity");
check(nereid.modelReady("simple_identity"), "loaded again");

const inferBody = JSON.stringify({
  inputs: [
    { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: [...a] },
    { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: [...b] },
  ],
});
const firstOutput = async (res: Response) => ((await res.json()) as { outputs: { data: number[] }[] }).outputs[0]!.data;
// The HTTP handler with no listener (Nereid.fetch), then through a listener.
const noSocket = await firstOutput(await nereid.fetch("/v2/models/simple/infer", { method: "POST", body: inferBody }));
check(JSON.stringify(noSocket) === JSON.stringify(sum), "fetch() answers as infer() did");
const { http } = await nereid.listen({ http: { port: 0, address: "127.0.0.1" } });
const overHttp = await firstOutput(await fetch(`${http}/v2/models/simple/infer`, { method: "POST", body: inferBody }));
check(JSON.stringify(overHttp) === JSON.stringify(sum), "HTTP answers as infer() did");

const stats = nereid.statistics("simple")[0]!;
const code = await nereid.stop();
check(!nereid.live, "not live after stop");
console.log(JSON.stringify({ runtime, sum, strings, success: stats.inference_stats.success.count, executions: stats.execution_count, stopCode: code }));
