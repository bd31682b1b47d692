/**
 * Dynamic batching on the scheduling thread (#30 item 2), through the compiled binary:
 * with frontend worker threads, a dynamically batched ONNX model's requests go from the
 * HTTP and gRPC workers (and from the main thread, for those that reach it) into one
 * queue on the scheduling thread, through shared-memory slots. Batches mix requests of
 * different threads; every answer is exact under concurrent load; the statistics and
 * Prometheus counts equal what the requests imply and what one thread counts; queue
 * policies refuse as one thread does; a request too large for a slot is still answered;
 * and unloads, loads and version swaps under load crash nothing and lose nothing.
 */
import { describe, expect, it, beforeAll, afterAll } from "vitest";
import { cpSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { ServerProcess } from "../helpers/server-process.ts";
import { startOnThreads } from "../helpers/thread-servers.ts";
import { makeRepository } from "../helpers/repo.ts";
import { LoadLoops } from "../helpers/load-loops.ts";
import { modelCounts } from "../helpers/model-counts.ts";
import { eventually } from "../helpers/eventually.ts";
import { inferenceClient, streamInferOnMain } from "../helpers/grpc-client.ts";
import { encodeModel, valueInfo, node, ElemType } from "../../scripts/lib/onnx-builder.ts";

type Repo = ReturnType<typeof makeRepository>;

/** A copy of `simple` named `name` with `batching` as its dynamic_batching block. */
function addBatched(repo: Repo, name: string, batching: string): void {
  cpSync(join(repo.dir, "simple"), join(repo.dir, name), { recursive: true });
  const config = readFileSync(join(repo.dir, "simple", "config.pbtxt"), "utf8").replace(/name: "simple"/, `name: "${name}"`);
  repo.add(`${name}/config.pbtxt`, `${config}\ndynamic_batching { ${batching} }\n`);
}

/** `big`: Y = X, FP32 [20000] a row (80 kB: more than a slot holds), batched. */
const BIG = 20000;
function addBig(repo: Repo): void {
  repo.add(
    "big/config.pbtxt",
    `name: "big"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 4\ninput [ { name: "X" data_type: TYPE_FP32 dims: [ ${BIG} ] } ]\noutput [ { name: "Y" data_type: TYPE_FP32 dims: [ ${BIG} ] } ]\ndynamic_batching { }\n`,
  );
  repo.add(
    "big/1/model.onnx",
    encodeModel({
      name: "big",
      inputs: [valueInfo("X", ElemType.FLOAT, ["batch", BIG])],
      outputs: [valueInfo("Y", ElemType.FLOAT, ["batch", BIG])],
      nodes: [node("Identity", ["X"], ["Y"])],
    }),
  );
}

function repository(): Repo {
  const repo = makeRepository(["simple"]);
  // Four requests make a batch; nothing waits for a batch longer than 10 s.
  addBatched(repo, "batched", "preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 10000000");
  // Waits 60 s for a batch of 8, holds at most 2 requests, and drops one after 4 s.
  addBatched(
    repo,
    "policy",
    "preferred_batch_size: [ 8 ] max_queue_delay_microseconds: 60000000 default_queue_policy { max_queue_size: 2 default_timeout_microseconds: 4000000 timeout_action: REJECT }",
  );
  addBatched(repo, "busy", "max_queue_delay_microseconds: 5000");
  // Holds a lone request for 60 s: long enough to be cancelled while queued.
  addBatched(repo, "held", "preferred_batch_size: [ 8 ] max_queue_delay_microseconds: 60000000");
  addBatched(repo, "deadline", "preferred_batch_size: [ 8 ] max_queue_delay_microseconds: 60000000");
  // Two priority levels, the default the second, which holds one request; a request may
  // shorten its 60 s queue timeout; a batch of 2 goes at once, a lone request waits 60 s.
  const policy = "default_timeout_microseconds: 60000000 allow_timeout_override: true";
  addBatched(
    repo,
    "levels",
    `preferred_batch_size: [ 2 ] max_queue_delay_microseconds: 60000000 priority_levels: 2 default_priority_level: 2 ` +
      `default_queue_policy { ${policy} } priority_queue_policy { key: 2 value { max_queue_size: 1 ${policy} } }`,
  );
  addBig(repo);
  return repo;
}

const start = (threads: number, repo: Repo, extra: string[] = []): Promise<ServerProcess> => startOnThreads(repo.dir, threads, extra);

/** Inputs of request `i`: distinct for every request, so that a mixed-up answer shows. */
const inputsOf = (i: number) => ({
  a: Array.from({ length: 16 }, (_, k) => i * 7 + k),
  b: Array.from({ length: 16 }, (_, k) => 3 * k - i),
});
const jsonBody = (i: number, parameters?: object) => {
  const { a, b } = inputsOf(i);
  return JSON.stringify({
    inputs: [
      { name: "INPUT0", datatype: "INT32", shape: [1, 16], data: a },
      { name: "INPUT1", datatype: "INT32", shape: [1, 16], data: b },
    ],
    ...(parameters ? { parameters } : {}),
  });
};
const grpcBody = (model: string, i: number) => {
  const { a, b } = inputsOf(i);
  return {
    model_name: model,
    inputs: [
      { name: "INPUT0", datatype: "INT32", shape: [1, 16] },
      { name: "INPUT1", datatype: "INT32", shape: [1, 16] },
    ],
    raw_input_contents: [new Uint8Array(Int32Array.from(a).buffer), new Uint8Array(Int32Array.from(b).buffer)],
  };
};
const expected = (i: number) => {
  const { a, b } = inputsOf(i);
  return [a.map((x, k) => x + b[k]!), a.map((x, k) => x - b[k]!)];
};
const int32s = (bytes: Uint8Array) => Array.from(new Int32Array(new Uint8Array(bytes).buffer));

/** Request `i` over HTTP JSON: "ok", or what came back instead. */
async function httpOne(server: ServerProcess, model: string, i: number, parameters?: object): Promise<string> {
  const r = await fetch(`${server.url}/v2/models/${model}/infer`, { method: "POST", body: jsonBody(i, parameters) });
  const text = await r.text();
  if (r.status !== 200) return `${r.status} ${text}`;
  const outputs = JSON.parse(text).outputs.map((o: { data: number[] }) => o.data);
  return JSON.stringify(outputs) === JSON.stringify(expected(i)) ? "ok" : `wrong ${text}`;
}

/** Request `i` on a ModelStreamInfer stream on the main thread's route: "ok", or what came back instead. */
async function streamOne(server: ServerProcess, model: string, i: number): Promise<string> {
  const [r] = await streamInferOnMain(server.grpcTarget!, [grpcBody(model, i)]);
  if (r!.error_message) return `error ${r!.error_message}`;
  const outputs = r!.infer_response.raw_output_contents.map(int32s);
  return JSON.stringify(outputs) === JSON.stringify(expected(i)) ? "ok" : `wrong ${JSON.stringify(outputs)}`;
}

/** Request `i` over gRPC: "ok", or what came back instead. */
async function grpcOne(call: (m: string) => (r: object) => Promise<any>, model: string, i: number, parameters?: object): Promise<string> {
  try {
    const g = await call("ModelInfer")({ ...grpcBody(model, i), ...(parameters ? { parameters } : {}) });
    const outputs = g.raw_output_contents.map(int32s);
    return JSON.stringify(outputs) === JSON.stringify(expected(i)) ? "ok" : `wrong ${JSON.stringify(outputs)}`;
  } catch (e: any) {
    return `${e.code} ${e.details}`;
  }
}

const counts = modelCounts;

describe("dynamic batching on the scheduling thread, fed by the frontend workers", () => {
  let repo: Repo;
  let one: ServerProcess;
  let two: ServerProcess;
  beforeAll(async () => {
    repo = repository();
    [one, two] = await Promise.all([start(1, repo), start(2, repo)]);
  });
  afterAll(async () => {
    for (const s of [one, two]) if (s) expect(await s.stop()).toBe(0);
    repo?.remove();
  });

  it("the workers submit the batched ONNX models' requests to the scheduling thread; one thread keeps them", () => {
    const line = /frontend worker threads submit these model versions' requests to the scheduling thread: (.*)/.exec(two.log())?.[1];
    expect(line?.split(", ").sort()).toEqual(["batched:1", "big:1", "busy:1", "deadline:1", "held:1", "levels:1", "policy:1"]);
    expect(two.log()).toMatch(/the scheduling thread started/);
    expect(one.log()).not.toMatch(/scheduling thread/);
  });

  /** `run` on one thread and on the workers at once: the same answers and the same counts of `model`, one thread's returned. */
  async function sameOnBoth(model: string, run: (server: ServerProcess) => Promise<string[]>) {
    const [a, b] = await Promise.all([run(one), run(two)]);
    expect(b).toEqual(a);
    const [ca, cb] = [await counts(one, model), await counts(two, model)];
    expect(cb).toEqual(ca);
    return { answers: a, counted: ca };
  }

  it("one batch holds requests from an HTTP worker, a gRPC worker and the main thread", async () => {
    const { client, call } = inferenceClient(two.grpcTarget!);
    try {
      // Two over HTTP (workers), one over gRPC (a worker), one on a ModelStreamInfer stream
      // (the main thread's): the batch goes once four are queued, so all four share one queue.
      const answers = await Promise.all([httpOne(two, "batched", 1), httpOne(two, "batched", 2), grpcOne(call, "batched", 3), streamOne(two, "batched", 4)]);
      expect(answers).toEqual(["ok", "ok", "ok", "ok"]);
    } finally {
      client.close();
    }
    expect(await counts(two, "batched")).toEqual({
      success: 4,
      fail: 0,
      queue: 4,
      computeInfer: 4,
      inferenceCount: 4,
      executionCount: 1,
      batches: [[4, 1]],
      metricSuccess: 4,
      metricOther: 0,
      metricRejected: 0,
      metricCount: 4,
      metricExec: 1,
      metricPending: 0,
    });
  });

  it("answers exactly under concurrent load over HTTP and gRPC, and counts exactly what the requests imply", async () => {
    const { client, call } = inferenceClient(two.grpcTarget!);
    const PER_LOOP = 60;
    const answers: string[] = [];
    try {
      const loop = async (k: number) => {
        for (let j = 0; j < PER_LOOP; j++) {
          const i = k * PER_LOOP + j;
          answers.push(k % 2 === 0 ? await httpOne(two, "busy", i) : await grpcOne(call, "busy", i));
        }
      };
      await Promise.all(Array.from({ length: 16 }, (_, k) => loop(k)));
    } finally {
      client.close();
    }
    const total = 16 * PER_LOOP;
    expect(answers.filter((a) => a !== "ok")).toEqual([]);
    expect(answers.length).toBe(total);
    const c = await counts(two, "busy");
    const batched = c.batches.reduce((n, [size, count]) => n + size * count, 0);
    const executions = c.batches.reduce((n, [, count]) => n + count, 0);
    expect(c).toMatchObject({ success: total, fail: 0, queue: total, computeInfer: total, inferenceCount: total, metricSuccess: total, metricCount: total });
    expect(batched).toBe(total);
    expect(c.executionCount).toBe(executions);
    expect(c.metricExec).toBe(executions);
    // Batches were formed across requests: fewer executions than requests.
    expect(c.executionCount).toBeLessThan(total);
  });

  it("a full queue and a queue timeout are refused as one thread refuses them, and counted the same", async () => {
    const run = async (server: ServerProcess) => {
      const { client, call } = inferenceClient(server.grpcTarget!);
      try {
        // Two wait for a batch of 8; once both are queued the next two find the queue full; the two time out after 4 s.
        const first = [httpOne(server, "policy", 1), grpcOne(call, "policy", 2)];
        await eventually(async () => expect((await counts(server, "policy")).metricPending).toBe(2));
        const third = await Promise.all([httpOne(server, "policy", 3), grpcOne(call, "policy", 4)]);
        return [...(await Promise.all(first)), ...third];
      } finally {
        client.close();
      }
    };
    const { answers, counted } = await sameOnBoth("policy", run);
    expect(answers).toEqual([
      '503 {"error":"Request timeout expired"}',
      "14 Request timeout expired",
      '503 {"error":"Exceeds maximum queue size"}',
      "14 Exceeds maximum queue size",
    ]);
    expect(counted).toMatchObject({ success: 0, fail: 4, executionCount: 0, metricRejected: 4 });
  });

  it("the workers submit requests with priority and timeout parameters: the levels and the shortened timeout as one thread has them", async () => {
    const run = async (server: ServerProcess) => {
      const { client, call } = inferenceClient(server.grpcTarget!);
      try {
        // A lone request waits for a batch of 2 until its own timeout, over HTTP, then gRPC.
        const timedOut = [
          await httpOne(server, "levels", 1, { priority: 1, timeout: 300000 }),
          await grpcOne(call, "levels", 2, { priority: { uint64_param: 1 }, timeout: { int64_param: 300000 } }),
        ];
        // One request at the default level (2) fills it: priority 2 is refused there, priority 1 joins it in a batch.
        const waiting = httpOne(server, "levels", 3);
        await eventually(async () => expect((await counts(server, "levels")).metricPending).toBe(1));
        const full = [await httpOne(server, "levels", 4, { priority: 2 }), await grpcOne(call, "levels", 5, { priority: { int64_param: 2 } })];
        const joined = await grpcOne(call, "levels", 6, { priority: { int64_param: 1 }, timeout: { int64_param: 30000000 } });
        return [...timedOut, ...full, joined, await waiting];
      } finally {
        client.close();
      }
    };
    const { answers, counted } = await sameOnBoth("levels", run);
    expect(answers).toEqual([
      '503 {"error":"Request timeout expired"}',
      "14 Request timeout expired",
      '503 {"error":"Exceeds maximum queue size"}',
      "14 Exceeds maximum queue size",
      "ok",
      "ok",
    ]);
    expect(counted).toMatchObject({ success: 2, fail: 4, executionCount: 1, batches: [[2, 1]], metricRejected: 4, metricPending: 0 });
  });

  it("a queued request whose client goes away leaves the queue, counted CANCELED as one thread counts it", async () => {
    const run = async (server: ServerProcess) => {
      const client = new AbortController();
      const request = fetch(`${server.url}/v2/models/held/infer`, { method: "POST", body: jsonBody(1), signal: client.signal }).catch((e: Error) => e.name);
      await eventually(async () => expect((await counts(server, "held")).metricPending).toBe(1));
      client.abort();
      const answer = await request;
      await eventually(async () => expect((await counts(server, "held")).fail).toBe(1));
      return { answer, counts: await counts(server, "held") };
    };
    const [a, b] = [await run(one), await run(two)];
    expect(b).toEqual(a);
    expect(a.answer).toBe("AbortError");
    expect(a.counts).toMatchObject({ success: 0, fail: 1, executionCount: 0, metricPending: 0 });
    expect(await fetch(`${two.metricsUrl}/metrics`).then((r) => r.text())).toMatch(
      /^nv_inference_request_failure\{model="held",version="1",reason="CANCELED"\} 1$/m,
    );
  });

  it("a queued ModelInfer whose deadline passes leaves the queue, counted CANCELED as one thread counts it (S-20)", async () => {
    const run = async (server: ServerProcess) => {
      const { client } = inferenceClient(server.grpcTarget!);
      const { a, b } = inputsOf(1);
      const request = {
        model_name: "deadline",
        inputs: [
          { name: "INPUT0", datatype: "INT32", shape: [1, 16], contents: { int_contents: a } },
          { name: "INPUT1", datatype: "INT32", shape: [1, 16], contents: { int_contents: b } },
        ],
      };
      const err = await new Promise<{ code?: number } | null>((resolve) =>
        (client as any).ModelInfer(request, { deadline: Date.now() + 500 }, (e: { code?: number } | null) => resolve(e)),
      );
      client.close();
      await eventually(async () => expect((await counts(server, "deadline")).fail).toBe(1));
      return { code: err?.code, counts: await counts(server, "deadline") };
    };
    const [a, b] = [await run(one), await run(two)];
    expect(b).toEqual(a);
    expect(a.code).toBe(4); // DEADLINE_EXCEEDED
    expect(a.counts).toMatchObject({ success: 0, fail: 1, executionCount: 0, metricPending: 0 });
    expect(await fetch(`${two.metricsUrl}/metrics`).then((r) => r.text())).toMatch(
      /^nv_inference_request_failure\{model="deadline",version="1",reason="CANCELED"\} 1$/m,
    );
  });

  it("a request and an answer too large for a slot go as messages, answered exactly", async () => {
    const x = Array.from({ length: BIG }, (_, i) => (i % 251) - 125);
    const body = JSON.stringify({ inputs: [{ name: "X", datatype: "FP32", shape: [1, BIG], data: x }] });
    const answers = await Promise.all(
      Array.from({ length: 4 }, async () => {
        const r = await fetch(`${two.url}/v2/models/big/infer`, { method: "POST", body });
        const j = (await r.json()) as any;
        return r.status === 200 && j.outputs[0].data.length === BIG && j.outputs[0].data.every((v: number, i: number) => v === x[i]);
      }),
    );
    expect(answers).toEqual([true, true, true, true]);
    expect(await counts(two, "big")).toMatchObject({ success: 4, inferenceCount: 4 });
  });
});

describe("load, unload and version swaps of a batched model while clients run requests on the workers", () => {
  let repo: Repo;
  let server: ServerProcess;
  beforeAll(async () => {
    repo = repository();
    server = await start(2, repo, ["--model-control-mode=explicit", "--load-model=busy"]);
  });
  afterAll(async () => {
    if (server) expect(await server.stop(), server.log().slice(-4000)).toBe(0);
    repo?.remove();
  });

  it("every answer is exact or a clean refusal; nothing crashes, nothing is lost", async () => {
    const REFUSAL = /Request for unknown model: 'busy'|is not at ready state|unloaded|stopped accepting/;
    const run = new LoadLoops(REFUSAL);
    const tally = run.tally;
    let sent = 0;
    const count = (answer: string) => {
      if (answer === "ok") tally.ok++;
      else if (REFUSAL.test(answer)) tally.refused++;
      else tally.wrong.push(answer);
    };
    const { client, call } = inferenceClient(server.grpcTarget!);
    const loop = async (k: number) => {
      for (let j = 0; !run.stop; j++) {
        sent++;
        count(k % 2 === 0 ? await httpOne(server, "busy", k * 100000 + j) : await grpcOne(call, "busy", k * 100000 + j));
      }
    };
    const loops = Array.from({ length: 8 }, (_, k) => run.guard(() => loop(k)));
    try {
      await run.churnModel(loops, server.url, repo.dir, "busy");
    } finally {
      client.close();
    }
    expect(tally.wrong, server.log().slice(-4000)).toEqual([]);
    expect(tally.ok + tally.refused).toBe(sent);
    expect(tally.ok).toBeGreaterThan(0);
    // Still serving, exactly, from the workers and the main thread.
    expect(await httpOne(server, "busy", 7)).toBe("ok");
    expect(await streamOne(server, "busy", 8)).toBe("ok");
    expect(server.log()).not.toMatch(/Segmentation|SIGSEGV|panic|session is closed|scheduling thread failed/);
  });
});
