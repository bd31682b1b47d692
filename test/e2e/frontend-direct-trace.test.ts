/**
 * P-22, #30: a traced model is still run by the frontend worker threads. Each worker counts
 * the requests it runs in the trace sampling counter it shares with the main thread, and
 * leaves the ones the rate chooses to the main thread, which traces them. Through the
 * compiled binary on one thread and on two: the same requests traced (Triton's every Nth,
 * counted over HTTP, gRPC and ModelStreamInfer together, trace_count counting down); and on
 * two threads, requests that are not chosen, and every request once trace_count has run
 * out, are answered while the main thread's event loop is held.
 */
import { describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ServerProcess } from "../helpers/server-process.ts";
import { onOneAndTwoThreads, startOnThreads } from "../helpers/thread-servers.ts";
import { makeRepository } from "../helpers/repo.ts";
import { inferenceClient, SIMPLE_REQUEST, simpleOutput, streamInfer } from "../helpers/grpc-client.ts";
import { addHoldModel, whileMainHeld } from "../helpers/hold-model.ts";

const A = Array.from({ length: 16 }, (_, i) => i);
const SUM = A.map((a) => a + 5);
const body = (id: string) =>
  JSON.stringify({
    id,
    inputs: [
      { name: "INPUT0", datatype: "INT32", shape: [1, 16], data: A },
      { name: "INPUT1", datatype: "INT32", shape: [1, 16], data: Array(16).fill(5) },
    ],
  });

interface Started {
  server: ServerProcess;
  repo: ReturnType<typeof makeRepository>;
  file: string;
  held: { held: string; release: string };
  dir: string;
}

async function start(threads: number): Promise<Started> {
  const repo = makeRepository(["simple", "simple_sequence"]);
  const held = addHoldModel(repo);
  const dir = mkdtempSync(join(tmpdir(), "nereid-direct-trace-"));
  const file = join(dir, "trace.json");
  const server = await startOnThreads(repo.dir, threads, [`--trace-config=triton,file=${file}`, "--trace-config=level=TIMESTAMPS", "--trace-config=rate=1000"]);
  return { server, repo, file, held, dir };
}

/** `simple`'s trace settings after `update` (none: read only). */
const setting = async (s: ServerProcess, update?: object) =>
  (await fetch(`${s.url}/v2/models/simple/trace/setting`, update ? { method: "POST", body: JSON.stringify(update) } : {})).json() as Promise<
    Record<string, unknown>
  >;

async function infer(s: ServerProcess, id: string, timeoutMs = 30_000): Promise<string> {
  const r = await fetch(`${s.url}/v2/models/simple/infer`, { method: "POST", body: body(id), signal: AbortSignal.timeout(timeoutMs) });
  const j = (await r.json()) as { id?: string; outputs: { data: number[] }[] };
  return `${r.status} ${j.id} ${JSON.stringify(j.outputs[0]!.data)}`;
}

/** 9 HTTP requests, 6 gRPC ModelInfer calls and a stream of 6, one after another, ids h0.., g0.., s0..: every answer as text. */
async function mix(s: ServerProcess): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < 9; i++) out.push(await infer(s, `h${i}`));
  const { client, call } = inferenceClient(s.grpcTarget!);
  try {
    for (let i = 0; i < 6; i++) {
      const r = await call("ModelInfer")({ ...SIMPLE_REQUEST, id: `g${i}` });
      out.push(`${r.id} ${JSON.stringify(simpleOutput(r))}`);
    }
  } finally {
    client.close();
  }
  const stream = await streamInfer(
    s.grpcTarget!,
    Array.from({ length: 6 }, (_, i) => ({ ...SIMPLE_REQUEST, id: `s${i}` })),
  );
  for (const r of stream) out.push(`${r.error_message || "ok"} ${r.infer_response.id} ${JSON.stringify(simpleOutput(r.infer_response))}`);
  return out;
}

function within5s<T>(p: Promise<T>, what: string): Promise<T> {
  return Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} was not answered within 5 s`)), 5000))]);
}

/** The request ids of the traces in `file` (Triton's JSON array, complete once the server has stopped). */
const tracedIds = (file: string) =>
  (JSON.parse(readFileSync(file, "utf8")) as { model_name?: string; request_id?: string }[]).filter((e) => e.model_name).map((e) => e.request_id);

describe("a traced model in the frontend workers: the same requests traced as on one thread", () => {
  let one: Started;
  let two: Started;
  onOneAndTwoThreads(start, (a, b) => {
    one = a;
    two = b;
  });

  it("the workers run the traced model, and its every 3rd request (trace_count 6) over HTTP, gRPC and a stream is traced on either", async () => {
    expect(two.server.log()).toMatch(/frontend worker threads run these model versions themselves: simple:1\n/);
    // Not a traced sequence-batched version: a chosen request, handed to the main thread, would reach its batcher late.
    expect(two.server.log()).not.toMatch(/scheduling thread: .*simple_sequence/);
    const expected = [
      ...Array.from({ length: 9 }, (_, i) => `200 h${i} ${JSON.stringify(SUM)}`),
      ...Array.from({ length: 6 }, (_, i) => `g${i} ${JSON.stringify(SUM)}`),
      ...Array.from({ length: 6 }, (_, i) => `ok s${i} ${JSON.stringify(SUM)}`),
    ];
    for (const s of [one, two]) {
      // The model's own settings: its own counter, started from zero.
      expect(await setting(s.server, { trace_rate: "3", trace_count: "6" })).toMatchObject({ trace_rate: "3", trace_count: "6" });
      expect(await mix(s.server)).toEqual(expected);
      // 7 chosen (the 3rd, 6th, ... 21st); the 7th found trace_count run out.
      expect(await setting(s.server)).toMatchObject({ trace_count: "0" });
    }
  });

  it("answers requests not chosen while the main thread is held, over HTTP, gRPC and a stream; the chosen one is traced there", async () => {
    expect(await setting(two.server, { trace_rate: "1000", trace_count: "-1" })).toMatchObject({ trace_rate: "1000" });
    // Held for 20 s: an answer that needed the main thread would not come within 5.
    const unchosen = async (tag: string) => {
      const answers: string[] = [];
      await whileMainHeld(two.server.url, two.held, async () => {
        for (let i = 0; i < 2; i++) answers.push(await infer(two.server, `${tag}${i}`, 5000));
        const { client, call } = inferenceClient(two.server.grpcTarget!);
        try {
          const r = await within5s(call("ModelInfer")({ ...SIMPLE_REQUEST, id: `${tag}g` }), "the gRPC call");
          answers.push(`${r.id} ${JSON.stringify(simpleOutput(r))}`);
        } finally {
          client.close();
        }
        const stream = await within5s(streamInfer(two.server.grpcTarget!, [{ ...SIMPLE_REQUEST, id: `${tag}s` }]), "the stream");
        answers.push(...stream.map((r) => `${r.error_message || "ok"} ${r.infer_response.id}`));
      });
      return answers;
    };
    const expected = (tag: string) => [
      `200 ${tag}0 ${JSON.stringify(SUM)}`,
      `200 ${tag}1 ${JSON.stringify(SUM)}`,
      `${tag}g ${JSON.stringify(SUM)}`,
      `ok ${tag}s`,
    ];
    expect(await unchosen("w")).toEqual(expected("w"));
    // Every request chosen, one trace left: the worker leaves the next to the main thread, which traces it.
    await setting(two.server, { trace_rate: "1", trace_count: "1" });
    expect(await infer(two.server, "last")).toBe(`200 last ${JSON.stringify(SUM)}`);
    expect(await setting(two.server)).toMatchObject({ trace_count: "0" });
    // No trace left: the workers answer every request themselves again.
    expect(await unchosen("x")).toEqual(expected("x"));
    const stats = (await (await fetch(`${two.server.url}/v2/models/simple/stats`)).json()) as {
      model_stats: { inference_stats: { success: { count: number } } }[];
    };
    expect(stats.model_stats[0]!.inference_stats.success.count).toBe(21 + 4 + 1 + 4);
  });

  it("writes the same traces on one thread and on two", async () => {
    for (const s of [one, two]) expect(await s.server.stop()).toBe(0);
    const traced = ["h2", "h5", "h8", "g2", "g5", "s2"];
    expect(tracedIds(one.file)).toEqual(traced);
    expect(tracedIds(two.file)).toEqual([...traced, "last"]);
    for (const s of [one, two]) rmSync(s.dir, { recursive: true, force: true });
  });
});
