/**
 * Sequence batching on the scheduling thread (#30 item 2), through the compiled binary:
 * with frontend worker threads, a sequence-batched ONNX model's requests, sequence_id,
 * sequence_start and sequence_end included, go from the HTTP and gRPC workers (and from
 * the main thread, for those that reach it) to one SequenceBatchScheduler on the
 * scheduling thread, which keeps every sequence's slot, state and idle time. Interleaved
 * sequences from several clients get the answers one thread gives, byte for byte; the
 * control inputs (START, END, READY, CORRID) and both strategies (direct, oldest) are
 * fed as on one thread; errors, cancellation, idle reaping and the statistics equal one
 * thread's; the sequences are answered while the main thread's event loop is held; and
 * unloads, loads and version swaps under sequences crash nothing and answer nothing wrong.
 */
import { describe, expect, it, beforeAll, afterAll } from "vitest";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ServerProcess } from "../helpers/server-process.ts";
import { startOnThreads } from "../helpers/thread-servers.ts";
import { makeRepository } from "../helpers/repo.ts";
import { LoadLoops } from "../helpers/load-loops.ts";
import { modelCounts } from "../helpers/model-counts.ts";
import { eventually } from "../helpers/eventually.ts";
import { inferenceClient, streamInferOnMain, type Call } from "../helpers/grpc-client.ts";
import { holdModel } from "../helpers/hold-model.ts";
import { encodeModel, valueInfo, node, initializer, ElemType } from "../../scripts/lib/onnx-builder.ts";
import { credentials, makeGenericClientConstructor, type Client, type ClientDuplexStream } from "@grpc/grpc-js";
import { serviceDefinition } from "../../src/frontends/grpc/protos.ts";

type Repo = ReturnType<typeof makeRepository>;

const dir = mkdtempSync(join(tmpdir(), "nereid-sequence-thread-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A copy of simple_sequence (an accumulator: implicit state, a START control) named `name`, `edit` applied to its config. */
function addSequence(repo: Repo, name: string, edit: (config: string) => string): void {
  cpSync(join(repo.dir, "simple_sequence"), join(repo.dir, name), { recursive: true });
  const config = readFileSync(join(repo.dir, "simple_sequence", "config.pbtxt"), "utf8").replace(/name: "simple_sequence"/, `name: "${name}"`);
  repo.add(`${name}/config.pbtxt`, edit(config));
}

/**
 * `name`: echoes the control inputs the sequence batcher feeds each row (START, END,
 * READY as INT32, CORRID as UINT64) and keeps a running sum of INPUT in its state, with
 * the strategy block `strategy`.
 */
function addControls(repo: Repo, name: string, strategy: string): void {
  const io = (n: string, t: string) => `{ name: "${n}" data_type: TYPE_${t} dims: [ 1 ] }`;
  const ctl = (n: string, kind: string) => `{ name: "${n}" control [ { kind: CONTROL_SEQUENCE_${kind} int32_false_true: [ 0, 1 ] } ] }`;
  repo.add(
    `${name}/config.pbtxt`,
    `name: "${name}"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 4\n` +
      `input [ ${io("INPUT", "INT32")} ]\n` +
      `output [ ${io("SUM", "INT32")}, ${io("O_START", "INT32")}, ${io("O_END", "INT32")}, ${io("O_READY", "INT32")}, ${io("O_CORRID", "UINT64")} ]\n` +
      `sequence_batching {\n  max_sequence_idle_microseconds: 60000000\n  ${strategy}\n  control_input [ ${ctl("START", "START")}, ${ctl("END", "END")}, ${ctl("READY", "READY")},` +
      ` { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] } ]\n` +
      `  state [ { input_name: "STATE_IN" output_name: "STATE_OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]\n}\n` +
      `instance_group [ { count: 1 kind: KIND_CPU } ]\n`,
  );
  const i32 = (n: string) => valueInfo(n, ElemType.INT32, ["batch", 1]);
  repo.add(
    `${name}/1/model.onnx`,
    encodeModel({
      name,
      inputs: [i32("INPUT"), i32("START"), i32("END"), i32("READY"), valueInfo("CORRID", ElemType.UINT64, ["batch", 1]), i32("STATE_IN")],
      outputs: [i32("SUM"), i32("O_START"), i32("O_END"), i32("O_READY"), valueInfo("O_CORRID", ElemType.UINT64, ["batch", 1]), i32("STATE_OUT")],
      nodes: [
        node("Add", ["STATE_IN", "INPUT"], ["STATE_OUT"]),
        node("Identity", ["STATE_OUT"], ["SUM"]),
        node("Identity", ["START"], ["O_START"]),
        node("Identity", ["END"], ["O_END"]),
        node("Identity", ["READY"], ["O_READY"]),
        node("Identity", ["CORRID"], ["O_CORRID"]),
      ],
    }),
  );
}

/** `bigseq`: sums each request's INPUT (FP32 [-1]: as many as it has) onto its sequence's state; START's may be more than a slot holds. */
function addBigSequence(repo: Repo): void {
  repo.add(
    "bigseq/config.pbtxt",
    `name: "bigseq"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 4\ninput [ { name: "INPUT" data_type: TYPE_FP32 dims: [ -1 ] } ]\n` +
      `output [ { name: "OUTPUT" data_type: TYPE_FP32 dims: [ 1 ] } ]\n` +
      `sequence_batching {\n  max_sequence_idle_microseconds: 60000000\n  state [ { input_name: "STATE_IN" output_name: "STATE_OUT" data_type: TYPE_FP32 dims: [ 1 ] } ]\n}\n` +
      `instance_group [ { count: 1 kind: KIND_CPU } ]\n`,
  );
  repo.add(
    "bigseq/1/model.onnx",
    encodeModel({
      name: "bigseq",
      inputs: [valueInfo("INPUT", ElemType.FLOAT, ["batch", "n"]), valueInfo("STATE_IN", ElemType.FLOAT, ["batch", 1])],
      outputs: [valueInfo("OUTPUT", ElemType.FLOAT, ["batch", 1]), valueInfo("STATE_OUT", ElemType.FLOAT, ["batch", 1])],
      nodes: [
        node("ReduceSum", ["INPUT", "AXES"], ["S"], { keepdims: 1 }),
        node("Add", ["STATE_IN", "S"], ["STATE_OUT"]),
        node("Identity", ["STATE_OUT"], ["OUTPUT"]),
      ],
      initializers: [initializer("AXES", ElemType.INT64, [1], new Uint8Array(BigInt64Array.of(1n).buffer))],
    }),
  );
}

function repository(name: string): Repo {
  const repo = makeRepository(["simple_sequence"]);
  addSequence(repo, "oldest", (c) =>
    c.replace(
      "sequence_batching {",
      "sequence_batching {\n  oldest { max_candidate_sequences: 4 preferred_batch_size: [ 2 ] max_queue_delay_microseconds: 2000 }",
    ),
  );
  // One slot: a second sequence waits in the backlog.
  addSequence(repo, "one_slot", (c) => c.replace("max_batch_size: 8", "max_batch_size: 1").replace("5000000", "60000000"));
  // Sequences idle for 300 ms are released.
  addSequence(repo, "brief", (c) => c.replace("5000000", "300000"));
  addControls(repo, "ctl", "direct { }");
  addBigSequence(repo);
  addControls(repo, "ctl_oldest", "oldest { max_candidate_sequences: 4 preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 1000 }");
  repo.add(
    "hold/config.pbtxt",
    `name: "hold"\nbackend: "typescript"\nmax_batch_size: 0\ninput [ { name: "A" data_type: TYPE_INT32 dims: [ 16 ] } ]\noutput [ { name: "SUM" data_type: TYPE_INT32 dims: [ 16 ] } ]\n` +
      `parameters { key: "execution_thread" value: { string_value: "main" } }\n`,
  );
  repo.add("hold/1/model.js", holdModel(join(dir, `held-${name}`), join(dir, `release-${name}`)));
  return repo;
}

const start = (threads: number, repo: Repo, extra: string[] = []): Promise<ServerProcess> => startOnThreads(repo.dir, threads, extra);

type Id = number | string | bigint;

/** One step of sequence `id` over HTTP: its outputs' data in order, or the status and error. */
async function httpStep(
  server: ServerProcess,
  model: string,
  id: Id | undefined,
  value: number,
  start: boolean,
  end: boolean,
  signal?: AbortSignal,
): Promise<string> {
  const parameters: Record<string, unknown> = { sequence_start: start, sequence_end: end };
  if (id !== undefined) parameters.sequence_id = id;
  const body = JSON.stringify({ parameters, inputs: [{ name: "INPUT", shape: [1, 1], datatype: "INT32", data: [value] }] }, (_, v) =>
    typeof v === "bigint" ? `@${v}@` : v,
  ).replace(/"@(\d+)@"/g, "$1");
  const r = await fetch(`${server.url}/v2/models/${model}/infer`, { method: "POST", body, signal });
  const text = await r.text();
  if (r.status !== 200) return `${r.status} ${text}`;
  return JSON.stringify(JSON.parse(text).outputs.map((o: { name: string; data: unknown[] }) => [o.name, o.data]));
}

/** One step over gRPC (a uint64 or string ID): its outputs' raw bytes as hex, or the code and message. */
async function grpcStep(call: (m: string) => Call, model: string, id: Id, value: number, start: boolean, end: boolean): Promise<string> {
  try {
    const g = await call("ModelInfer")({
      model_name: model,
      parameters: {
        sequence_id: typeof id === "string" ? { string_param: id } : { uint64_param: String(id) },
        sequence_start: { bool_param: start },
        sequence_end: { bool_param: end },
      },
      inputs: [{ name: "INPUT", datatype: "INT32", shape: [1, 1] }],
      raw_input_contents: [Buffer.from(Int32Array.of(value).buffer)],
    });
    return JSON.stringify(g.outputs.map((o: { name: string }, i: number) => [o.name, Buffer.from(g.raw_output_contents[i]).toString("hex")]));
  } catch (e: any) {
    return `${e.code} ${e.details}`;
  }
}

/** One step on a ModelStreamInfer stream on the main thread's route (MAIN_THREAD_ROUTE): its outputs as httpStep gives them, or the error. */
async function streamStep(server: ServerProcess, model: string, id: number, value: number, start: boolean, end: boolean): Promise<string> {
  const [r] = await streamInferOnMain(server.grpcTarget!, [
    {
      model_name: model,
      parameters: { sequence_id: { uint64_param: String(id) }, sequence_start: { bool_param: start }, sequence_end: { bool_param: end } },
      inputs: [{ name: "INPUT", datatype: "INT32", shape: [1, 1] }],
      raw_input_contents: [Buffer.from(Int32Array.of(value).buffer)],
    },
  ]);
  if (r!.error_message) return `error ${r!.error_message}`;
  const g = r!.infer_response;
  return JSON.stringify(
    g.outputs.map((o: { name: string }, i: number) => [o.name, Array.from(new Int32Array(new Uint8Array(g.raw_output_contents[i]).buffer))]),
  );
}

/** The SUM of an HTTP step's answer. */
const sumOf = (answer: string) => (JSON.parse(answer) as [string, number[]][]).find(([n]) => n === "OUTPUT" || n === "SUM")![1][0];
const running = (values: number[]) => values.map((_, k) => values.slice(0, k + 1).reduce((a, b) => a + b, 0));

/**
 * 12 sequences at once (more than simple_sequence's 8 slots: some wait in the backlog),
 * five steps each, every other one over gRPC with a uint64 ID (one of them 2^64-1), the
 * others over HTTP with number and string IDs: every answer, in order.
 */
async function interleaved(server: ServerProcess, model: string): Promise<string[][]> {
  const { client, call } = inferenceClient(server.grpcTarget!);
  try {
    const run = async (k: number) => {
      const id: Id = k === 1 ? 18446744073709551615n : k % 4 === 2 ? `seq-${k}` : 4000 + k;
      const out: string[] = [];
      for (let s = 0; s < 5; s++) {
        const value = k * 10 + s;
        out.push(k % 2 === 1 ? await grpcStep(call, model, id, value, s === 0, s === 4) : await httpStep(server, model, id, value, s === 0, s === 4));
      }
      return out;
    };
    return await Promise.all(Array.from({ length: 12 }, (_, k) => run(k)));
  } finally {
    client.close();
  }
}

/** What must not differ between one thread and two under concurrency: everything but how the requests were batched. */
async function requestCounts(server: ServerProcess, model: string) {
  const c = await modelCounts(server, model);
  const batched = c.batches.reduce((n, [size, count]) => n + size * count, 0);
  const executions = c.batches.reduce((n, [, count]) => n + count, 0);
  expect(c.executionCount).toBe(executions);
  expect(c.metricExec).toBe(executions);
  const { batches: _b, executionCount: _e, metricExec: _m, ...rest } = c;
  return { ...rest, batched };
}

describe("sequence batching on the scheduling thread, fed by the frontend workers", () => {
  let r1: Repo;
  let r2: Repo;
  let one: ServerProcess;
  let two: ServerProcess;
  beforeAll(async () => {
    [r1, r2] = [repository("one"), repository("two")];
    [one, two] = await Promise.all([start(1, r1), start(2, r2)]);
  });
  afterAll(async () => {
    for (const s of [one, two]) if (s) expect(await s.stop(), s.log().slice(-4000)).toBe(0);
    r1?.remove();
    r2?.remove();
  });

  it("the workers submit the sequence-batched ONNX models' requests to the scheduling thread; one thread keeps them", () => {
    const line = /frontend worker threads submit these model versions' requests to the scheduling thread: (.*)/.exec(two.log())?.[1];
    expect(line?.split(", ").sort()).toEqual(["bigseq:1", "brief:1", "ctl:1", "ctl_oldest:1", "oldest:1", "one_slot:1", "simple_sequence:1"]);
    expect(two.log()).toMatch(/the scheduling thread started/);
    expect(one.log()).not.toMatch(/scheduling thread/);
  });

  it("interleaved sequences over HTTP and gRPC get one thread's answers, byte for byte, and its counts (direct and oldest)", async () => {
    for (const model of ["simple_sequence", "oldest"]) {
      const a = await interleaved(one, model);
      const b = await interleaved(two, model);
      expect(b, model).toEqual(a);
      // The HTTP sequences' sums are their running sums.
      for (const k of [0, 2, 4, 6, 8, 10]) expect(a[k]!.map(sumOf), `${model} ${k}`).toEqual(running([0, 1, 2, 3, 4].map((s) => k * 10 + s)));
      const [ca, cb] = [await requestCounts(one, model), await requestCounts(two, model)];
      expect(cb, model).toEqual(ca);
      expect(ca, model).toMatchObject({ success: 60, fail: 0, inferenceCount: 60, batched: 60, metricSuccess: 60, metricPending: 0 });
    }
  });

  it("the control inputs START, END, READY and CORRID and the state are fed as one thread feeds them, and the executions counted the same", async () => {
    const run = async (server: ServerProcess, model: string) => {
      const { client, call } = inferenceClient(server.grpcTarget!);
      try {
        const out: string[] = [];
        // One at a time: each execution holds one request, on either number of threads.
        for (let s = 0; s < 4; s++) {
          out.push(await httpStep(server, model, 7, 1 + s, s === 0, s === 3));
          out.push(await grpcStep(call, model, 2n ** 63n + 5n, 10 + s, s === 0, s === 3));
          out.push(await httpStep(server, model, 9007199254740991, 100 + s, s === 0, s === 3));
        }
        return out;
      } finally {
        client.close();
      }
    };
    for (const model of ["ctl", "ctl_oldest"]) {
      const a = await run(one, model);
      expect(await run(two, model), model).toEqual(a);
      expect(a[0]).toBe(
        JSON.stringify([
          ["SUM", [1]],
          ["O_START", [1]],
          ["O_END", [0]],
          ["O_READY", [1]],
          ["O_CORRID", [7]],
        ]),
      );
      expect(a[9]).toBe(
        JSON.stringify([
          ["SUM", [10]],
          ["O_START", [0]],
          ["O_END", [1]],
          ["O_READY", [1]],
          ["O_CORRID", [7]],
        ]),
      );
      expect(a[11]).toBe(
        JSON.stringify([
          ["SUM", [406]],
          ["O_START", [0]],
          ["O_END", [1]],
          ["O_READY", [1]],
          ["O_CORRID", [9007199254740991]],
        ]),
      );
      const corrid = Buffer.alloc(8);
      corrid.writeBigUInt64LE(2n ** 63n + 5n);
      expect(JSON.parse(a[10]!)[4]).toEqual(["O_CORRID", corrid.toString("hex")]);
      const [ca, cb] = [await modelCounts(one, model), await modelCounts(two, model)];
      expect(cb, model).toEqual(ca);
      expect(ca, model).toMatchObject({ success: 12, fail: 0, executionCount: 12, batches: [[1, 12]], metricExec: 12 });
    }
  });

  it("one view of a sequence: its requests from a worker, the main thread (a ModelStreamInfer stream) and gRPC continue one state", async () => {
    const run = async (server: ServerProcess) => {
      const { client, call } = inferenceClient(server.grpcTarget!);
      try {
        return [
          await httpStep(server, "simple_sequence", 777, 1, true, false),
          await streamStep(server, "simple_sequence", 777, 2, false, false),
          await grpcStep(call, "simple_sequence", 777, 3, false, false),
          await streamStep(server, "simple_sequence", 777, 4, false, true),
          await httpStep(server, "simple_sequence", 777, 5, false, false),
        ];
      } finally {
        client.close();
      }
    };
    const a = await run(one);
    expect(await run(two)).toEqual(a);
    expect([sumOf(a[0]!), sumOf(a[1]!), sumOf(a[3]!)]).toEqual([1, 3, 10]);
    const six = Buffer.alloc(4);
    six.writeInt32LE(6);
    expect(a[2]).toBe(JSON.stringify([["OUTPUT", six.toString("hex")]]));
    expect(a[4]).toBe(
      `400 {"error":"inference request for sequence 777 to model 'simple_sequence' must specify the START flag on the first request of the sequence"}`,
    );
  });

  it("refuses as one thread refuses, with Triton's messages and codes, and counts the failures the same", async () => {
    const run = async (server: ServerProcess) => {
      const { client, call } = inferenceClient(server.grpcTarget!);
      try {
        const big = await fetch(`${server.url}/v2/models/simple_sequence/infer`, {
          method: "POST",
          body: JSON.stringify({
            parameters: { sequence_id: 5, sequence_start: true },
            inputs: [{ name: "INPUT", shape: [2, 1], datatype: "INT32", data: [1, 2] }],
          }),
        });
        return [
          await httpStep(server, "simple_sequence", 77, 1, false, false),
          await grpcStep(call, "simple_sequence", 78, 1, false, true),
          await httpStep(server, "simple_sequence", undefined, 1, true, false),
          `${big.status} ${await big.text()}`,
          await httpStep(server, "ctl", "text", 1, true, false),
          await grpcStep(call, "ctl", "text", 1, true, false),
          await httpStep(server, "simple_sequence", "words", 4, true, false),
          await httpStep(server, "simple_sequence", "words", 5, false, true),
          await httpStep(server, "simple_sequence", "words", 6, false, false),
          await httpStep(server, "simple_sequence", -3, 1, true, false),
          // sequence_id of a type no protocol takes as one, over both.
          await httpStep(server, "simple_sequence", true as unknown as Id, 1, true, false),
          await httpStep(server, "simple_sequence", 1.5, 1, true, false),
          await call("ModelInfer")({
            model_name: "simple_sequence",
            parameters: { sequence_id: { double_param: 2.5 }, sequence_start: { bool_param: true } },
            inputs: [{ name: "INPUT", datatype: "INT32", shape: [1, 1] }],
            raw_input_contents: [Buffer.from(Int32Array.of(1).buffer)],
          }).then(
            () => "ok",
            (e: { code: number; details: string }) => `${e.code} ${e.details}`,
          ),
        ];
      } finally {
        client.close();
      }
    };
    const a = await run(one);
    expect(await run(two)).toEqual(a);
    expect(a.slice(0, 6)).toEqual([
      `400 {"error":"inference request for sequence 77 to model 'simple_sequence' must specify the START flag on the first request of the sequence"}`,
      "3 inference request for sequence 78 to model 'simple_sequence' must specify the START flag on the first request of the sequence",
      `400 {"error":"inference request to model 'simple_sequence' must specify a non-zero or non-empty correlation ID"}`,
      `400 {"error":"inference request to model 'simple_sequence' must specify batch-size 1 due to requirements of sequence batcher"}`,
      `400 {"error":"sequence batcher of model 'ctl' requires a numeric correlation ID for its CORRID control of type UINT64, got string 'text'"}`,
      "3 sequence batcher of model 'ctl' requires a numeric correlation ID for its CORRID control of type UINT64, got string 'text'",
    ]);
    expect(a[8]).toMatch(/^400 .*must specify the START flag/);
    expect(a[9]).toMatch(/^400 /);
    expect(a.slice(10)).toEqual([
      `400 {"error":"Unable to parse 'sequence_id': attempt to access JSON non-string as string"}`,
      `400 {"error":"Unable to parse 'sequence_id': attempt to access JSON non-string as string"}`,
      "3 invalid value type for 'sequence_id' parameter, expected int64_param or string_param.",
    ]);
    for (const model of ["simple_sequence", "ctl"]) expect(await requestCounts(two, model), model).toEqual(await requestCounts(one, model));
  });

  it("a sequence idle past max_sequence_idle_microseconds is released as on one thread, and says so in the main thread's log", async () => {
    const run = async (server: ServerProcess) => {
      const first = await httpStep(server, "brief", 31, 5, true, false);
      await eventually(async () => expect(server.log()).toMatch(/sequence 31 of model 'brief' was idle for more than 300000 us; its slot is released/));
      return [first, await httpStep(server, "brief", 31, 6, false, true)];
    };
    const a = await run(one);
    expect(await run(two)).toEqual(a);
    expect(a).toEqual([
      JSON.stringify([["OUTPUT", [5]]]),
      `400 {"error":"inference request for sequence 31 to model 'brief' must specify the START flag on the first request of the sequence"}`,
    ]);
  });

  it("a request waiting in the backlog whose client goes away leaves it, counted CANCELED as one thread counts it", async () => {
    const run = async (server: ServerProcess) => {
      // Sequence 1 holds the only slot; sequence 2 waits behind it.
      const first = await httpStep(server, "one_slot", 1, 3, true, false);
      const client = new AbortController();
      const waiting = httpStep(server, "one_slot", 2, 4, true, false, client.signal).catch((e: Error) => e.name);
      await eventually(async () => expect((await modelCounts(server, "one_slot")).metricPending).toBe(1));
      client.abort();
      const answer = await waiting;
      await eventually(async () => expect((await modelCounts(server, "one_slot")).fail).toBe(1));
      const last = await httpStep(server, "one_slot", 1, 4, false, true);
      return { first, answer, last, counts: await modelCounts(server, "one_slot") };
    };
    const [a, b] = [await run(one), await run(two)];
    expect(b).toEqual(a);
    expect(a).toMatchObject({ first: JSON.stringify([["OUTPUT", [3]]]), answer: "AbortError", last: JSON.stringify([["OUTPUT", [7]]]) });
    expect(a.counts).toMatchObject({ success: 2, fail: 1, executionCount: 2, metricPending: 0 });
    expect(await fetch(`${two.metricsUrl}/metrics`).then((r) => r.text())).toMatch(
      /^nv_inference_request_failure\{model="one_slot",version="1",reason="CANCELED"\} 1$/m,
    );
  });

  it("a stream's sequence requests reach the sequence batcher in the order sent, a START too large for a slot before its next request", async () => {
    const BIG = 20000;
    const run = async (server: ServerProcess) => {
      const Ctor = makeGenericClientConstructor(serviceDefinition("inference.GRPCInferenceService"), "S");
      const c = new Ctor(server.grpcTarget!, credentials.createInsecure(), { "grpc.max_send_message_length": -1 }) as unknown as Client & {
        ModelStreamInfer: () => ClientDuplexStream<object, any>;
      };
      const stream = c.ModelStreamInfer();
      const responses: string[] = [];
      const done = new Promise<void>((resolve, reject) => {
        stream.on("data", (r) =>
          responses.push(r.error_message || `${r.infer_response.id} ${Buffer.from(r.infer_response.raw_output_contents[0]).readFloatLE(0)}`),
        );
        stream.on("end", () => resolve());
        stream.on("error", reject);
      });
      const request = (id: number, k: number, values: Float32Array) => ({
        model_name: "bigseq",
        id: `${id}-${k}`,
        parameters: { sequence_id: { uint64_param: String(id) }, sequence_start: { bool_param: k === 0 }, sequence_end: { bool_param: k === 2 } },
        inputs: [{ name: "INPUT", datatype: "FP32", shape: [1, values.length] }],
        raw_input_contents: [Buffer.from(values.buffer)],
      });
      // Each sequence's START (80 kB: a message) is followed at once by two small requests (slots).
      for (let id = 1; id <= 10; id++) {
        stream.write(request(id, 0, new Float32Array(BIG).fill(id)));
        stream.write(request(id, 1, Float32Array.of(0.5)));
        stream.write(request(id, 2, Float32Array.of(0.25)));
      }
      stream.end();
      await done;
      c.close();
      return responses;
    };
    const a = await run(one);
    expect(await run(two)).toEqual(a);
    expect(a).toHaveLength(30);
    for (let id = 1; id <= 10; id++) {
      expect(a.filter((r) => r.startsWith(`${id}-`)).sort()).toEqual([`${id}-0 ${BIG * id}`, `${id}-1 ${BIG * id + 0.5}`, `${id}-2 ${BIG * id + 0.75}`]);
    }
  });

  it("answers sequences while the main thread's event loop is held by another model", async () => {
    const order: string[] = [];
    const A = Array.from({ length: 16 }, (_, i) => i);
    const held = fetch(`${two.url}/v2/models/hold/infer`, {
      method: "POST",
      body: JSON.stringify({ inputs: [{ name: "A", datatype: "INT32", shape: [16], data: A }] }),
    }).then((r) => order.push(`held ${r.status}`));
    await eventually(async () => expect(existsSync(join(dir, "held-two"))).toBe(true));
    // The main thread is inside hold's execute until the release file appears, written once these are answered.
    const { client, call } = inferenceClient(two.grpcTarget!);
    try {
      const seq = async (k: number) => {
        const out: string[] = [];
        for (let s = 0; s < 3; s++) {
          out.push(
            k % 2 ? await grpcStep(call, "ctl", 600 + k, s + 1, s === 0, s === 2) : await httpStep(two, "simple_sequence", 600 + k, s + 1, s === 0, s === 2),
          );
        }
        return out;
      };
      const answers = await Promise.all([0, 1, 2, 3].map(seq));
      order.push(...answers.map((a, k) => (k % 2 ? `ctl ${a.every((x) => x.startsWith("[["))}` : `simple_sequence ${JSON.stringify(a.map(sumOf))}`)));
    } finally {
      client.close();
    }
    writeFileSync(join(dir, "release-two"), "");
    await held;
    expect(order).toEqual(["simple_sequence [1,3,6]", "ctl true", "simple_sequence [1,3,6]", "ctl true", "held 200"]);
  });
});

describe("unload, load and version swaps of a sequence-batched model while clients run sequences on the workers", () => {
  let repo: Repo;
  let server: ServerProcess;
  beforeAll(async () => {
    repo = repository("churn");
    server = await start(2, repo, ["--model-control-mode=explicit", "--load-model=simple_sequence"]);
  });
  afterAll(async () => {
    if (server) expect(await server.stop(), server.log().slice(-4000)).toBe(0);
    repo?.remove();
  });

  it("every answer is exact or a clean refusal; nothing crashes, nothing is lost", async () => {
    const REFUSAL = /Request for unknown model: 'simple_sequence'|is not at ready state|unloaded|stopped accepting|must specify the START flag/;
    const run = new LoadLoops(REFUSAL);
    const tally = run.tally;
    let sent = 0;
    const { client, call } = inferenceClient(server.grpcTarget!);
    const loop = async (k: number) => {
      for (let j = 0; !run.stop; j++) {
        // A sequence of three: each answer is its running sum, or a refusal (then the sequence starts over).
        let sum = 0;
        for (let s = 0; s < 3 && !run.stop; s++) {
          const id = k * 100000 + j + 1;
          const value = k + s + 1;
          sent++;
          const answer =
            k % 2
              ? await grpcStep(call, "simple_sequence", id, value, s === 0, s === 2)
              : await httpStep(server, "simple_sequence", id, value, s === 0, s === 2);
          if (REFUSAL.test(answer)) {
            tally.refused++;
            break;
          }
          if (!answer.startsWith("[[")) {
            tally.wrong.push(answer);
            break;
          }
          sum += value;
          const got = k % 2 ? Buffer.from((JSON.parse(answer) as [string, string][])[0]![1], "hex").readInt32LE(0) : sumOf(answer);
          if (got === sum) tally.ok++;
          else tally.wrong.push(answer);
        }
      }
    };
    const loops = Array.from({ length: 8 }, (_, k) => run.guard(() => loop(k)));
    try {
      await run.churnModel(loops, server.url, repo.dir, "simple_sequence");
    } finally {
      client.close();
    }
    expect(tally.wrong, server.log().slice(-4000)).toEqual([]);
    expect(tally.ok + tally.refused).toBe(sent);
    expect(tally.ok).toBeGreaterThan(0);
    // Still serving, exactly.
    expect(await httpStep(server, "simple_sequence", 1, 2, true, false)).toBe(JSON.stringify([["OUTPUT", [2]]]));
    expect(await httpStep(server, "simple_sequence", 1, 3, false, true)).toBe(JSON.stringify([["OUTPUT", [5]]]));
    expect(server.log()).toMatch(/frontend worker threads submit these model versions' requests to the scheduling thread: simple_sequence:1/);
    expect(server.log()).not.toMatch(/Segmentation|SIGSEGV|panic|session is closed|scheduling thread failed/);
  });
});
