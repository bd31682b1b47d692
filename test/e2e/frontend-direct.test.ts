/**
 * Stateless models run in the frontend worker threads themselves (#30 items 1-3), through
 * the compiled binary: which versions the workers take (the log names them), answers and
 * statistics identical to one thread's over HTTP JSON, HTTP binary and gRPC (errors
 * counted in Triton's order) and on ModelStreamInfer streams (in order, past a worker's
 * runs at once, handed to the main thread at a model outside the table), and load, unload and version swaps under load from four
 * client loops: every answer exact or a clean refusal, nothing lost, no crash.
 */
import { describe, expect, it, beforeAll, afterAll } from "vitest";
import { cpSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { ServerProcess } from "../helpers/server-process.ts";
import { startOnThreads } from "../helpers/thread-servers.ts";
import { makeRepository } from "../helpers/repo.ts";
import { LoadLoops } from "../helpers/load-loops.ts";
import { modelCounts } from "../helpers/model-counts.ts";
import { inferenceClient, SIMPLE_REQUEST, simpleOutput, streamInfer } from "../helpers/grpc-client.ts";
import { encodeModel, valueInfo, node, initializer, ElemType } from "../../scripts/lib/onnx-builder.ts";
import { addHoldModel, whileMainHeld } from "../helpers/hold-model.ts";
import { SharedMemoryMapping, createSharedMemory, unlinkSharedMemory } from "../../ffi/libc/shm.ts";

const A = Array.from({ length: 16 }, (_, i) => i * 5 - 7);
const B = Array.from({ length: 16 }, (_, i) => 3 - i);
const SUM = A.map((a, i) => a + B[i]!);
const DIFF = A.map((a, i) => a - B[i]!);
const jsonBody = (dt = "INT32") =>
  JSON.stringify({
    inputs: [
      { name: "INPUT0", datatype: dt, shape: [1, 16], data: A },
      { name: "INPUT1", datatype: "INT32", shape: [1, 16], data: B },
    ],
  });
/** The same request with both inputs and both outputs as binary data. */
function binaryBody(): { body: Uint8Array; headerLength: number } {
  const header = new TextEncoder().encode(
    JSON.stringify({
      inputs: [
        { name: "INPUT0", datatype: "INT32", shape: [1, 16], parameters: { binary_data_size: 64 } },
        { name: "INPUT1", datatype: "INT32", shape: [1, 16], parameters: { binary_data_size: 64 } },
      ],
      outputs: [
        { name: "OUTPUT0", parameters: { binary_data: true } },
        { name: "OUTPUT1", parameters: { binary_data: true } },
      ],
    }),
  );
  const body = new Uint8Array(header.byteLength + 128);
  body.set(header);
  body.set(new Uint8Array(Int32Array.from(A).buffer), header.byteLength);
  body.set(new Uint8Array(Int32Array.from(B).buffer), header.byteLength + 64);
  return { body, headerLength: header.byteLength };
}
const grpcRequest = (dt = "INT32") => ({
  model_name: "simple",
  inputs: [
    { name: "INPUT0", datatype: dt, shape: [1, 16] },
    { name: "INPUT1", datatype: "INT32", shape: [1, 16] },
  ],
  raw_input_contents: [new Uint8Array(Int32Array.from(A).buffer), new Uint8Array(Int32Array.from(B).buffer)],
});

/** Starts the binary on `simple`, `simple_identity` and a dynamically batched `simple` (batched on the scheduling thread with workers). */
async function start(threads: number, extra: string[] = [], more?: (repo: ReturnType<typeof makeRepository>) => void) {
  const repo = makeRepository(["simple", "simple_identity"]);
  more?.(repo);
  // `labelled`: simple with a label file for OUTPUT0.
  cpSync(join(repo.dir, "simple"), join(repo.dir, "labelled"), { recursive: true });
  repo.add(
    "labelled/config.pbtxt",
    readFileSync(join(repo.dir, "simple", "config.pbtxt"), "utf8")
      .replace(/name: "simple"/, 'name: "labelled"')
      .replace(/(name: "OUTPUT0"[^}]*)\}/, '$1 label_filename: "labels.txt" }'),
  );
  repo.add("labelled/labels.txt", Array.from({ length: 16 }, (_, i) => `class${i}`).join("\n"));
  cpSync(join(repo.dir, "simple"), join(repo.dir, "batched"), { recursive: true });
  repo.add(
    "batched/config.pbtxt",
    `${readFileSync(join(repo.dir, "simple", "config.pbtxt"), "utf8").replace(/name: "simple"/, 'name: "batched"')}\ndynamic_batching { }\n`,
  );
  return { repo, server: await startOnThreads(repo.dir, threads, extra) };
}

/**
 * Sends the same mix on every protocol: n good requests each (every other JSON and gRPC one
 * with `priority` and `timeout` parameters), one bad datatype each; returns every answer as text.
 */
async function mix(server: ServerProcess, model: string, n: number): Promise<string[]> {
  const out: string[] = [];
  const url = `${server.url}/v2/models/${model}/infer`;
  const { client, call } = inferenceClient(server.grpcTarget!);
  try {
    for (let i = 0; i < n; i++) {
      const control = i % 2 === 1;
      const json = control ? JSON.stringify({ ...JSON.parse(jsonBody()), parameters: { priority: 1, timeout: 5000000 } }) : jsonBody();
      const r = await fetch(url, { method: "POST", body: json });
      out.push(`${r.status} ${await r.text()}`);
      const { body, headerLength } = binaryBody();
      const b = await fetch(url, { method: "POST", body, headers: { "inference-header-content-length": String(headerLength) } });
      const bytes = new Uint8Array(await b.arrayBuffer());
      out.push(`${b.status} ${b.headers.get("inference-header-content-length")} ${Buffer.from(bytes).toString("base64")}`);
      const parameters = control ? { priority: { uint64_param: 1 }, timeout: { int64_param: 5000000 } } : {};
      const g = await call("ModelInfer")({ ...grpcRequest(), model_name: model, parameters });
      out.push(JSON.stringify({ model: g.model_name, version: g.model_version, out: simpleOutput(g) }));
    }
    const bad = await fetch(url, { method: "POST", body: jsonBody("FP32") });
    out.push(`${bad.status} ${await bad.text()}`);
    const e = await call("ModelInfer")({ ...grpcRequest("FP32"), model_name: model }).catch((err: { code: number; details: string }) => err);
    out.push(`${e.code} ${e.details}`);
  } finally {
    client.close();
  }
  return out;
}

const counts = modelCounts;

describe("stateless models in the frontend workers: the same answers and statistics as one thread", () => {
  let one: Awaited<ReturnType<typeof start>>;
  let two: Awaited<ReturnType<typeof start>>;
  beforeAll(async () => {
    [one, two] = await Promise.all([start(1), start(2)]);
  });
  afterAll(async () => {
    for (const s of [one, two]) {
      if (s) expect(await s.server.stop()).toBe(0);
      s?.repo.remove();
    }
  });

  it("the workers run the default-scheduled ONNX models and submit the batched one to the scheduling thread", () => {
    const line = /frontend worker threads run these model versions themselves: (.*)/.exec(two.server.log())?.[1];
    expect(line?.split(", ").sort()).toEqual(["labelled:1", "simple:1", "simple_identity:1"]);
    expect(two.server.log()).toMatch(/frontend worker threads submit these model versions' requests to the scheduling thread: batched:1\n/);
    expect(one.server.log()).not.toMatch(/frontend worker threads run/);
  });

  it("answers every protocol byte for byte as one thread does, and counts the same statistics", async () => {
    for (const model of ["simple", "batched"]) {
      const [a, b] = [await mix(one.server, model, 5), await mix(two.server, model, 5)];
      expect(b).toEqual(a);
      expect(JSON.parse(a[2]!)).toEqual({ model, version: "1", out: SUM });
      expect(a.at(-2)).toBe(`400 {"error":"inference input 'INPUT0' data-type is 'FP32', but model '${model}' expects 'INT32'"}`);
      expect(a.at(-1)).toBe(`3 inference input 'INPUT0' data-type is 'FP32', but model '${model}' expects 'INT32'`);
      // Read at once: what the workers counted is flushed before the statistics are answered.
      const [ca, cb] = [await counts(one.server, model), await counts(two.server, model)];
      expect(cb).toEqual(ca);
      expect(ca).toMatchObject({ success: 15, fail: 2, inferenceCount: 15, metricSuccess: 15, metricOther: 2 });
    }
    // gRPC's statistics answer the same counts.
    const { client, call } = inferenceClient(two.server.grpcTarget!);
    try {
      const g = (await call("ModelStatistics")({ name: "simple" })).model_stats[0];
      expect(Number(g.inference_stats.success.count)).toBe(15);
      expect(Number(g.execution_count)).toBe(15);
    } finally {
      client.close();
    }
  });

  it("classifies as one thread does: labels, binary and gRPC outputs, batched, and the errors, counted the same", async () => {
    const body = JSON.parse(jsonBody());
    const classified = (outputs: object[]) => JSON.stringify({ ...body, outputs });
    const run = async (server: ServerProcess) => {
      const post = async (model: string, text: string) => {
        const r = await fetch(`${server.url}/v2/models/${model}/infer`, { method: "POST", body: text });
        const bytes = Buffer.from(await r.arrayBuffer());
        return `${r.status} ${r.headers.get("inference-header-content-length")} ${bytes.toString("base64")}`;
      };
      const { client, call } = inferenceClient(server.grpcTarget!);
      try {
        const g = await call("ModelInfer")({
          ...grpcRequest(),
          model_name: "labelled",
          outputs: [{ name: "OUTPUT0", parameters: { classification: { int64_param: 2 } } }, { name: "OUTPUT1" }],
        });
        return [
          await post("labelled", classified([{ name: "OUTPUT0", parameters: { classification: 3 } }])),
          await post("labelled", classified([{ name: "OUTPUT0", parameters: { classification: 2, binary_data: true } }])),
          JSON.stringify({ outputs: g.outputs, raw: g.raw_output_contents.map((b: Uint8Array) => Buffer.from(b).toString("hex")) }),
          await post("labelled", classified([{ name: "OUTPUT1", parameters: { classification: 1 } }])),
          await post("batched", classified([{ name: "OUTPUT1", parameters: { classification: 2 } }])),
          await post(
            "simple_identity",
            JSON.stringify({
              inputs: [{ name: "INPUT0", datatype: "BYTES", shape: [1, 1], data: ["x"] }],
              outputs: [{ name: "OUTPUT0", parameters: { classification: 1 } }],
            }),
          ),
          await post("simple", JSON.stringify({ ...body, parameters: { priority: -1 } })),
        ];
      } finally {
        client.close();
      }
    };
    const [a, b] = [await run(one.server), await run(two.server)];
    expect(b).toEqual(a);
    const json = (answer: string) => JSON.parse(Buffer.from(answer.split(" ")[2]!, "base64").toString());
    expect(json(a[0]!).outputs).toEqual([
      { name: "OUTPUT0", datatype: "BYTES", shape: [1, 3], data: [`${SUM[15]}:15:class15`, `${SUM[14]}:14:class14`, `${SUM[13]}:13:class13`] },
    ]);
    // BYTES elements as the binary and gRPC forms carry them: a 4-byte length, then the bytes.
    const serialized = (texts: string[]) => Buffer.concat(texts.flatMap((t) => [Buffer.from(Uint32Array.of(t.length).buffer), Buffer.from(t)]));
    const top2 = serialized([`${SUM[15]}:15:class15`, `${SUM[14]}:14:class14`]);
    const [, headerLength, binary] = a[1]!.split(" ");
    const bytes = Buffer.from(binary!, "base64");
    expect(JSON.parse(bytes.subarray(0, Number(headerLength)).toString()).outputs).toEqual([
      { name: "OUTPUT0", datatype: "BYTES", shape: [1, 2], parameters: { binary_data_size: top2.byteLength } },
    ]);
    expect(bytes.subarray(Number(headerLength)).equals(top2)).toBe(true);
    expect(JSON.parse(a[2]!)).toEqual({
      outputs: [
        { name: "OUTPUT0", datatype: "BYTES", shape: [1, 2] },
        { name: "OUTPUT1", datatype: "INT32", shape: [1, 16] },
      ],
      raw: [top2.toString("hex"), Buffer.from(Int32Array.from(DIFF).buffer).toString("hex")],
    });
    // An output without a label file: value and index only.
    expect(json(a[3]!).outputs).toEqual([{ name: "OUTPUT1", datatype: "BYTES", shape: [1, 1], data: [`${DIFF[15]}:15`] }]);
    expect(json(a[4]!).outputs).toEqual([{ name: "OUTPUT1", datatype: "BYTES", shape: [1, 2], data: [`${DIFF[15]}:15`, `${DIFF[14]}:14`] }]);
    expect(json(a[5]!).error).toBe("classification is not supported for BYTES output 'OUTPUT0'");
    expect(a[6]).toMatch(/^400 /);
    for (const model of ["labelled", "batched", "simple_identity"]) {
      const [ca, cb] = [await counts(one.server, model), await counts(two.server, model)];
      expect(cb, model).toEqual(ca);
    }
    expect(await counts(one.server, "labelled")).toMatchObject({ success: 4, fail: 0 });
  });

  it("answers ModelStreamInfer streams as one thread does: in order past the worker's runs at once, handed on at another model, counted the same", async () => {
    /** Request `i` of a stream: INPUT0 = A + i, INPUT1 = B. */
    const streamed = (model: string, i: number, dt = "INT32") => ({
      ...grpcRequest(dt),
      model_name: model,
      id: `r${i}`,
      raw_input_contents: [Buffer.from(Int32Array.from(A, (a) => a + i).buffer), Buffer.from(Int32Array.from(B).buffer)],
    });
    const text = (r: { error_message: string; infer_response?: any }) =>
      r.error_message
        ? `${r.infer_response?.id} error ${r.error_message}`
        : `${r.infer_response.id} ${r.infer_response.model_name} ${JSON.stringify(simpleOutput(r.infer_response))} final ${r.infer_response.parameters.triton_final_response.bool_param}`;
    const run = async (server: ServerProcess) => {
      const out: string[][] = [];
      // 64 requests written at once: past the 32 runs a worker keeps going, when they pile up on the scheduling thread, the rest go to the main thread's core in their place.
      out.push((await streamInfer(server.grpcTarget!, [...Array.from({ length: 64 }, (_, i) => streamed(i % 4 === 3 ? "simple" : "batched", i))])).map(text));
      // An error in-band; then a model outside the table (unknown) hands the rest to the main thread's handler.
      out.push(
        (
          await streamInfer(server.grpcTarget!, [
            streamed("simple", 1),
            streamed("simple", 2, "FP32"),
            streamed("labelled", 3),
            { ...streamed("missing", 4) },
            streamed("simple", 5),
            streamed("batched", 6),
          ])
        ).map(text),
      );
      // triton_grpc_error mode: the first error ends the stream with its status (nothing sent after it: whether that would run is a race on any thread).
      const ended = await streamInfer(server.grpcTarget!, [streamed("simple", 7), streamed("simple", 8, "FP32")], {
        triton_grpc_error: "true",
      }).then(
        () => "not ended",
        (e: { code: number; details: string; responses: { error_message: string }[] }) => `${e.code} ${e.details} after ${e.responses.map(text).join(", ")}`,
      );
      out.push([ended]);
      return out;
    };
    const [a, b] = [await run(one.server), await run(two.server)];
    expect(b).toEqual(a);
    const final = "final true";
    expect(a[0]).toEqual(Array.from({ length: 64 }, (_, i) => `r${i} ${i % 4 === 3 ? "simple" : "batched"} ${JSON.stringify(SUM.map((x) => x + i))} ${final}`));
    expect(a[1]).toEqual([
      `r1 simple ${JSON.stringify(SUM.map((x) => x + 1))} ${final}`,
      "r2 error inference input 'INPUT0' data-type is 'FP32', but model 'simple' expects 'INT32'",
      `r3 labelled ${JSON.stringify(SUM.map((x) => x + 3))} ${final}`,
      expect.stringMatching(/^r4 error Request for unknown model: 'missing'/),
      `r5 simple ${JSON.stringify(SUM.map((x) => x + 5))} ${final}`,
      `r6 batched ${JSON.stringify(SUM.map((x) => x + 6))} ${final}`,
    ]);
    expect(a[2]).toEqual([
      `3 inference input 'INPUT0' data-type is 'FP32', but model 'simple' expects 'INT32' after r7 simple ${JSON.stringify(SUM.map((x) => x + 7))} ${final}`,
    ]);
    for (const model of ["simple", "labelled"]) {
      const [ca, cb] = [await counts(one.server, model), await counts(two.server, model)];
      expect(cb, model).toEqual(ca);
    }
    // Failures are logged as one thread logs them: the HTTP requests', not gRPC's INVALID_ARG ones, nor a stream's in-band errors.
    await new Promise((r) => setTimeout(r, 300));
    const fp32 = (server: ServerProcess) =>
      server
        .log()
        .split("\n")
        .filter((l) => l.includes("data-type is 'FP32', but model 'simple'")).length;
    expect(fp32(two.server)).toBe(fp32(one.server));
    // A stream's requests reach the scheduling thread while one runs, so how `batched` batches them is the workers' own; what it counted per request is not.
    const [ba, bb] = [await counts(one.server, "batched"), await counts(two.server, "batched")];
    const perRequest = ({ success, fail, inferenceCount, metricSuccess, metricOther }: typeof ba) => ({
      success,
      fail,
      inferenceCount,
      metricSuccess,
      metricOther,
    });
    expect(perRequest(bb)).toEqual(perRequest(ba));
  });
});

describe("the routes the workers take themselves, shown with the main thread's event loop held", () => {
  const KEY = `/nereid-test-${process.pid}-direct`;
  let s: Awaited<ReturnType<typeof start>>;
  let held: { held: string; release: string };
  beforeAll(async () => {
    createSharedMemory(KEY, 128);
    const mapping = SharedMemoryMapping.open(KEY, 128);
    mapping.bytes.set(new Uint8Array(Int32Array.from(A).buffer));
    mapping.unmap();
    s = await start(2, ["--allow-client-shm=true"], (repo) => {
      held = addHoldModel(repo);
    });
  });
  afterAll(async () => {
    if (s) expect(await s.server.stop()).toBe(0);
    s?.repo.remove();
    unlinkSharedMemory(KEY);
  });

  it("answers priority and timeout parameters, a classification, shared-memory tensors and a stream while the main thread cannot", async () => {
    const url = `${s.server.url}/v2/models/simple/infer`;
    const body = JSON.parse(jsonBody());
    const register = await fetch(`${s.server.url}/v2/systemsharedmemory/region/direct/register`, {
      method: "POST",
      body: JSON.stringify({ key: KEY, offset: 0, byte_size: 128 }),
    });
    expect(register.status).toBe(200);
    const answers: unknown[] = [];
    const streamAnswers: string[] = [];
    await whileMainHeld(s.server.url, held, async () => {
      // The main thread stays held for 20 s: an answer that needed it would not come within 5.
      const post = async (request: object) => (await fetch(url, { method: "POST", body: JSON.stringify(request), signal: AbortSignal.timeout(5000) })).json();
      answers.push(await post({ ...body, parameters: { priority: 1, timeout: 5000000 } }));
      answers.push(await post({ ...body, outputs: [{ name: "OUTPUT1", parameters: { classification: 1 } }] }));
      answers.push(
        await post({
          inputs: [
            { name: "INPUT0", datatype: "INT32", shape: [1, 16], parameters: { shared_memory_region: "direct", shared_memory_byte_size: 64 } },
            { name: "INPUT1", datatype: "INT32", shape: [1, 16], data: B },
          ],
          outputs: [{ name: "OUTPUT0", parameters: { shared_memory_region: "direct", shared_memory_byte_size: 64, shared_memory_offset: 64 } }],
        }),
      );
      // A ModelStreamInfer stream of requests for the table's models.
      const stream = await Promise.race([
        streamInfer(s.server.grpcTarget!, [
          { ...grpcRequest(), model_name: "simple" },
          { ...grpcRequest(), model_name: "batched" },
        ]),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error("the stream was not answered within 5 s")), 5000)),
      ]);
      streamAnswers.push(...stream.map((r) => `${r.error_message || "ok"} ${r.infer_response.model_name} ${JSON.stringify(simpleOutput(r.infer_response))}`));
    });
    expect(streamAnswers).toEqual([`ok simple ${JSON.stringify(SUM)}`, `ok batched ${JSON.stringify(SUM)}`]);
    expect(answers).toEqual([
      {
        model_name: "simple",
        model_version: "1",
        outputs: [
          { name: "OUTPUT0", datatype: "INT32", shape: [1, 16], data: SUM },
          { name: "OUTPUT1", datatype: "INT32", shape: [1, 16], data: DIFF },
        ],
      },
      { model_name: "simple", model_version: "1", outputs: [{ name: "OUTPUT1", datatype: "BYTES", shape: [1, 1], data: [`${DIFF[15]}:15`] }] },
      { model_name: "simple", model_version: "1", outputs: [{ name: "OUTPUT0", datatype: "INT32", shape: [1, 16] }] },
    ]);
    const mapping = SharedMemoryMapping.open(KEY, 128);
    expect([...new Int32Array(mapping.bytes.slice(64, 128).buffer)]).toEqual(SUM);
    mapping.unmap();
  });
});

/** `slow`: Y = X through 24 MatMuls by the identity, N×N FP32: tens of ms a run, so unloads come while runs are in flight. */
const N = 256;
function addSlowModel(repo: { add(path: string, content: string | Uint8Array): void }): void {
  const eye = new Float32Array(N * N);
  for (let i = 0; i < N; i++) eye[i * N + i] = 1;
  const steps = 24;
  repo.add(
    "slow/config.pbtxt",
    `name: "slow"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 0\ninput [ { name: "X" data_type: TYPE_FP32 dims: [ ${N}, ${N} ] } ]\noutput [ { name: "Y" data_type: TYPE_FP32 dims: [ ${N}, ${N} ] } ]\n`,
  );
  repo.add(
    "slow/1/model.onnx",
    encodeModel({
      name: "slow",
      inputs: [valueInfo("X", ElemType.FLOAT, [N, N])],
      outputs: [valueInfo("Y", ElemType.FLOAT, [N, N])],
      initializers: [initializer("I", ElemType.FLOAT, [N, N], new Uint8Array(eye.buffer))],
      nodes: Array.from({ length: steps }, (_, i) => node("MatMul", [i === 0 ? "X" : `h${i}`, "I"], [i === steps - 1 ? "Y" : `h${i + 1}`])),
    }),
  );
}
const SLOW_X = Array.from({ length: N * N }, (_, i) => (i % 97) - 48);

describe("load, unload and version swaps while four clients run requests on the workers", () => {
  let s: Awaited<ReturnType<typeof start>>;
  beforeAll(async () => {
    s = await start(2, ["--model-control-mode=explicit", "--load-model=simple", "--load-model=slow"], addSlowModel);
  });
  afterAll(async () => {
    if (s) expect(await s.server.stop(), s.server.log().slice(-4000)).toBe(0);
    s?.repo.remove();
  });

  it("every answer is exact or a clean refusal; nothing crashes, nothing is lost", async () => {
    const server = s.server;
    const url = `${server.url}/v2/models/simple/infer`;
    // A refusal names the model's state: not loaded (yet), or unloading under the request.
    const REFUSAL = /Request for unknown model: '(simple|slow)'|is not at ready state|unloaded|stopped accepting/;
    const run = new LoadLoops(REFUSAL);
    const tally = run.tally;
    const slowBody = JSON.stringify({ inputs: [{ name: "X", datatype: "FP32", shape: [N, N], data: SLOW_X }] });
    const slowLoop = async () => {
      while (!run.stop) {
        const r = await fetch(`${server.url}/v2/models/slow/infer`, { method: "POST", body: slowBody });
        const text = await r.text();
        if (r.status === 200) {
          const out = JSON.parse(text).outputs[0];
          if (out.data.length === N * N && out.data.every((v: number, i: number) => v === SLOW_X[i])) tally.ok++;
          else tally.wrong.push(text.slice(0, 200));
        } else if (REFUSAL.test(text)) tally.refused++;
        else tally.wrong.push(`${r.status} ${text}`);
      }
    };
    const httpLoop = async () => {
      while (!run.stop) {
        const r = await fetch(url, { method: "POST", body: jsonBody() });
        const text = await r.text();
        if (r.status === 200) {
          const j = JSON.parse(text);
          if (JSON.stringify(j.outputs.map((o: any) => o.data)) === JSON.stringify([SUM, DIFF]) && ["1", "2"].includes(j.model_version)) tally.ok++;
          else tally.wrong.push(text);
        } else if (REFUSAL.test(text)) tally.refused++;
        else tally.wrong.push(`${r.status} ${text}`);
      }
    };
    const grpcLoop = run.grpc(server.grpcTarget!, grpcRequest, (g) => JSON.stringify(simpleOutput(g)) === JSON.stringify(SUM));
    const loops = [httpLoop, slowLoop, slowLoop, grpcLoop].map((loop) => run.guard(loop));
    const control = async (action: string, name = "simple") => {
      const r = await fetch(`${server.url}/v2/repository/models/${name}/${action}`, { method: "POST" });
      expect(r.status, await r.text()).toBe(200);
    };
    await run.churn(loops, {
      modelDir: join(s.repo.dir, "simple"),
      pauseMs: 150,
      unload: () => Promise.all([control("unload"), control("unload", "slow")]),
      load: () => Promise.all([control("load"), control("load", "slow")]),
    });
    expect(tally.wrong, server.log().slice(-4000)).toEqual([]);
    expect(tally.ok).toBeGreaterThan(0);
    // Still serving, exactly, and the statistics of the version now loaded count what it answered.
    expect(await simpleOutputOf(url)).toEqual(SUM);
    const { client, call } = inferenceClient(server.grpcTarget!);
    try {
      expect(simpleOutput(await call("ModelInfer")(SIMPLE_REQUEST)).length).toBe(16);
    } finally {
      client.close();
    }
    expect(server.log()).not.toMatch(/Segmentation|SIGSEGV|panic|session is closed/);
  });
});

async function simpleOutputOf(url: string): Promise<number[]> {
  const r = await fetch(url, { method: "POST", body: jsonBody() });
  return ((await r.json()) as any).outputs[0].data;
}
