/**
 * The frontends on 1, 2 and 4 threads (#30 item 4; --http-thread-count and
 * --grpc-infer-thread-count, 1 being the main thread), through the compiled binary: the
 * shared frontend suite (test/suites/frontend.ts) passes on each, and the same request
 * sequence, sent to a server on each count, gets the same answers, byte for byte, and
 * leaves the same statistics (the statistics extension's JSON over HTTP and gRPC with
 * the durations set aside, and every count in the Prometheus metrics). 4 threads on a
 * 2-core machine: an explicit count is taken as given.
 */
import { describe, expect, it, beforeAll, afterAll } from "vitest";
import { cpSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startServerProcess, serverCommand, type ServerProcess } from "../helpers/server-process.ts";
import { makeRepository } from "../helpers/repo.ts";
import { inferenceClient, streamInfer } from "../helpers/grpc-client.ts";
import { frontendSuite } from "../suites/frontend.ts";
import { SharedMemoryMapping, createSharedMemory, unlinkSharedMemory } from "../../ffi/libc/shm.ts";

const COUNTS = [1, 2, 4] as const;
/** The shared-memory object the parity sequence's region `parity` names: INPUT0 (A) at 0, OUTPUT0 written at 64. */
const SHM_KEY = `/nereid-test-${process.pid}-parity`;
const threadFlags = (n: number) => [`--http-thread-count=${n}`, `--grpc-infer-thread-count=${n}`];

/** The log's lines naming the frontends' worker threads: none for the main thread. */
function workerLines(log: string): string[] {
  return log.match(/(HTTP|gRPC) frontend on \d+ worker threads/g) ?? [];
}
const expectedWorkerLines = (n: number) => (n === 1 ? [] : [`gRPC frontend on ${n} worker threads`, `HTTP frontend on ${n} worker threads`]);

const runner = { binary: "compiled binary", bun: "bun src/main.ts", deno: "deno src/main.ts" }[serverCommand().kind];

describe.each(COUNTS)("the shared frontend suite with the frontends on %i thread(s)", (n) => {
  let server: ServerProcess;
  let repo: ReturnType<typeof makeRepository>;
  beforeAll(async () => {
    repo = makeRepository(["simple", "simple_identity"]);
    server = await startServerProcess([
      `--model-repository=${repo.dir}`,
      "--model-control-mode=explicit",
      "--load-model=*",
      "--allow-client-shm=true",
      ...threadFlags(n),
    ]);
    expect(workerLines(server.log())).toEqual(expectedWorkerLines(n));
  });
  afterAll(async () => {
    if (server) expect(await server.stop()).toBe(0);
    repo?.remove();
  });
  frontendSuite(`${runner}, ${threadFlags(n).join(" ")}`, () => ({ url: server.url, grpcTarget: server.grpcTarget!, metricsUrl: server.metricsUrl! }));
});

const A = Array.from({ length: 16 }, (_, i) => i * 7 - 40);
const B = Array.from({ length: 16 }, (_, i) => 11 - 2 * i);
const i32 = (v: number[]) => new Uint8Array(Int32Array.from(v).buffer);
const simpleJson = (extra: object = {}, dt = "INT32") => ({
  inputs: [
    { name: "INPUT0", datatype: dt, shape: [1, 16], data: A },
    { name: "INPUT1", datatype: "INT32", shape: [1, 16], data: B },
  ],
  ...extra,
});
const simpleGrpc = (model: string, extra: object = {}) => ({
  model_name: model,
  inputs: [
    { name: "INPUT0", datatype: "INT32", shape: [1, 16] },
    { name: "INPUT1", datatype: "INT32", shape: [1, 16] },
  ],
  raw_input_contents: [i32(A), i32(B)],
  ...extra,
});
/** simple_sequence's request: one INT32, the sequence's id and flags as parameters. */
const sequenceGrpc = (value: number, parameters: Record<string, object>) => ({
  model_name: "simple_sequence",
  inputs: [{ name: "INPUT", datatype: "INT32", shape: [1, 1] }],
  raw_input_contents: [i32([value])],
  parameters,
});

/** An HTTP body with its JSON header and the tensors after it (binary data extension). */
function binaryBody(header: object, ...tensors: Uint8Array[]): { body: Buffer; headers: Record<string, string> } {
  const json = Buffer.from(JSON.stringify(header));
  return { body: Buffer.concat([json, ...tensors]), headers: { "inference-header-content-length": String(json.byteLength) } };
}

/** A gRPC answer as text: the response, or the error's code and details. */
async function grpcText(p: Promise<unknown>): Promise<string> {
  try {
    return `ok ${JSON.stringify(await p, (_, v) => (v?.type === "Buffer" ? Buffer.from(v.data).toString("base64") : v))}`;
  } catch (err) {
    const { code, details } = err as { code: number; details: string };
    return `error ${code} ${details}`;
  }
}

/** `requests` on one ModelStreamInfer stream: each answer as text. */
async function streamTexts(target: string, requests: object[]): Promise<string[]> {
  return (await streamInfer(target, requests)).map((m) => (m.error_message ? `error ${m.error_message}` : `ok ${JSON.stringify(m.infer_response)}`));
}

/**
 * The sequence: every kind of request a frontend thread answers itself or hands to the
 * main thread, good and bad, one at a time (so a batcher's batches are the same), over
 * HTTP JSON, HTTP binary, gRPC and a gRPC stream. Returns each answer as text.
 */
async function sequence(server: ServerProcess): Promise<string[]> {
  const out: string[] = [];
  const http = async (path: string, body: string | Buffer | undefined, headers: Record<string, string> = {}) => {
    const r = await fetch(`${server.url}${path}`, { method: body === undefined ? "GET" : "POST", body, headers });
    const bytes = Buffer.from(await r.arrayBuffer());
    out.push(
      `${r.status} ${r.headers.get("content-type")} ${r.headers.get("inference-header-content-length")} ${path} ${bytes.toString(r.headers.get("inference-header-content-length") ? "base64" : "utf8")}`,
    );
  };
  const { client, call } = inferenceClient(server.grpcTarget!);
  // System shared memory: INPUT0 from region `parity` (offset 0), OUTPUT0 into it (offset 64).
  await http("/v2/systemsharedmemory/region/parity/register", JSON.stringify({ key: SHM_KEY, offset: 0, byte_size: 256 }));
  const shm = (offset: number) => ({ shared_memory_region: "parity", shared_memory_byte_size: 64, ...(offset ? { shared_memory_offset: offset } : {}) });
  const shmGrpc = (offset: number) => ({
    shared_memory_region: { string_param: "parity" },
    shared_memory_byte_size: { int64_param: 64 },
    ...(offset ? { shared_memory_offset: { int64_param: offset } } : {}),
  });
  try {
    for (const model of ["simple", "batched", "cached"]) {
      const infer = `/v2/models/${model}/infer`;
      await http(
        infer,
        JSON.stringify({
          inputs: [
            { name: "INPUT0", datatype: "INT32", shape: [1, 16], parameters: shm(0) },
            { name: "INPUT1", datatype: "INT32", shape: [1, 16], data: B },
          ],
          outputs: [{ name: "OUTPUT0", parameters: shm(64) }, { name: "OUTPUT1" }],
        }),
      );
      out.push(
        await grpcText(
          call("ModelInfer")({
            model_name: model,
            inputs: [
              { name: "INPUT0", datatype: "INT32", shape: [1, 16], parameters: shmGrpc(0) },
              { name: "INPUT1", datatype: "INT32", shape: [1, 16] },
            ],
            raw_input_contents: [i32(B)],
            outputs: [{ name: "OUTPUT0", parameters: shmGrpc(64) }, { name: "OUTPUT1" }],
          }),
        ),
      );
      // A region too small for the output, and one not registered.
      await http(infer, JSON.stringify(simpleJson({ outputs: [{ name: "OUTPUT0", parameters: { ...shm(0), shared_memory_byte_size: 8 } }] })));
      await http(infer, JSON.stringify(simpleJson({ outputs: [{ name: "OUTPUT0", parameters: { ...shm(0), shared_memory_region: "nowhere" } }] })));
      await http(infer, JSON.stringify(simpleJson({ id: `json-${model}` })));
      await http(`/v2/models/${model}/versions/1/infer`, JSON.stringify(simpleJson({ outputs: [{ name: "OUTPUT1" }] })));
      const bin = binaryBody(
        {
          id: "bin",
          inputs: [
            { name: "INPUT0", datatype: "INT32", shape: [1, 16], parameters: { binary_data_size: 64 } },
            { name: "INPUT1", datatype: "INT32", shape: [1, 16], parameters: { binary_data_size: 64 } },
          ],
          outputs: [{ name: "OUTPUT0", parameters: { binary_data: true } }, { name: "OUTPUT1" }],
        },
        i32(A),
        i32(B),
      );
      await http(infer, bin.body, bin.headers);
      await http(infer, JSON.stringify(simpleJson({ parameters: { binary_data_output: true } })));
      await http(infer, JSON.stringify(simpleJson({ outputs: [{ name: "OUTPUT0", parameters: { classification: 3 } }] })));
      await http(infer, JSON.stringify(simpleJson({ parameters: { priority: 1, timeout: 5_000_000 } })));
      out.push(await grpcText(call("ModelInfer")(simpleGrpc(model, { id: `grpc-${model}` }))));
      out.push(await grpcText(call("ModelInfer")(simpleGrpc(model, { outputs: [{ name: "OUTPUT1" }] }))));
      // Errors: a datatype, a shape, a missing input, a body that is not JSON, an unknown output.
      await http(infer, JSON.stringify(simpleJson({}, "FP32")));
      await http(infer, JSON.stringify({ inputs: [{ ...simpleJson().inputs[0], shape: [2, 16] }, simpleJson().inputs[1]] }));
      await http(infer, JSON.stringify({ inputs: [simpleJson().inputs[0]] }));
      await http(infer, "{not json");
      await http(infer, JSON.stringify(simpleJson({ outputs: [{ name: "NOPE" }] })));
      out.push(await grpcText(call("ModelInfer")({ ...simpleGrpc(model), inputs: [{ name: "INPUT0", datatype: "INT32", shape: [1, 15] }] })));
      out.push(await grpcText(call("ModelInfer")(simpleGrpc(model, { parameters: { priority: { int64_param: -1 } } }))));
    }
    const strings = ["", "a", 'é"\\\n', "x".repeat(300)];
    await http(
      "/v2/models/simple_identity/infer",
      JSON.stringify({ inputs: [{ name: "INPUT0", datatype: "BYTES", shape: [1, strings.length], data: strings }] }),
    );
    out.push(
      await grpcText(
        call("ModelInfer")({
          model_name: "simple_identity",
          inputs: [{ name: "INPUT0", datatype: "BYTES", shape: [1, 2], contents: { bytes_contents: [Buffer.from("p"), Buffer.from("qq")] } }],
        }),
      ),
    );
    // A sequence (the main thread's sequence batcher) over both protocols.
    await http(
      "/v2/models/simple_sequence/infer",
      JSON.stringify({ parameters: { sequence_id: 7, sequence_start: true }, inputs: [{ name: "INPUT", datatype: "INT32", shape: [1, 1], data: [3] }] }),
    );
    out.push(await grpcText(call("ModelInfer")(sequenceGrpc(4, { sequence_id: { int64_param: 7 } }))));
    await http(
      "/v2/models/simple_sequence/infer",
      JSON.stringify({ parameters: { sequence_id: 7, sequence_end: true }, inputs: [{ name: "INPUT", datatype: "INT32", shape: [1, 1], data: [5] }] }),
    );
    await http("/v2/models/simple_sequence/infer", JSON.stringify({ inputs: [{ name: "INPUT", datatype: "INT32", shape: [1, 1], data: [1] }] }));
    // Unknown models and versions.
    await http("/v2/models/nope/infer", JSON.stringify(simpleJson()));
    await http("/v2/models/simple/versions/9/infer", JSON.stringify(simpleJson()));
    out.push(await grpcText(call("ModelInfer")(simpleGrpc("nope"))));
    out.push(...(await streamTexts(server.grpcTarget!, [simpleGrpc("simple", { id: "s1" }), simpleGrpc("nope"), simpleGrpc("batched", { id: "s2" })])));
    await http("/v2/models/simple", undefined);
    await http("/v2/models/batched/config", undefined);
    await http("/v2/systemsharedmemory/region/parity/unregister", "");
  } finally {
    client.close();
  }
  return out;
}

/**
 * Statistics without what differs from run to run whatever the threads: durations and
 * times (dropped, not blanked: a duration of 0 is left out of a gRPC message), and the
 * models' order (that of their loads, which run at once).
 */
function countsOnly(doc: unknown): { model_stats: { name: string; version: string }[] } {
  const counts = JSON.parse(JSON.stringify(doc), (k, v) => (k === "ns" || k === "last_inference" ? undefined : v));
  counts.model_stats.sort((a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name));
  return counts;
}

/**
 * Every sample of the nv_inference_ families: the counts with their values (the summaries'
 * _count among them), the durations in µs (counters, quantiles, sums) by name and labels alone.
 */
async function prometheus(server: ServerProcess): Promise<string[]> {
  const text = await (await fetch(`${server.metricsUrl}/metrics`)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith("nv_inference_") || l.startsWith("nv_cache_"))
    .map((l) =>
      /^(nv_inference_\w+_us(_sum)?|nv_cache_\w+_duration_per_model|nv_cache_\w+_summary_per_model(_sum)?)\{/.test(l) ? l.slice(0, l.lastIndexOf(" ")) : l,
    )
    .sort();
}

/**
 * With summary latencies the workers post every request's durations to the main thread;
 * without, they count in the versions' shared counters, which a read folds (#30).
 */
describe.each([true, false])("the same request sequence on 1, 2 and 4 threads: identical answers and statistics (summary latencies: %s)", (summaries) => {
  const servers: ServerProcess[] = [];
  let repo: ReturnType<typeof makeRepository>;
  beforeAll(async () => {
    createSharedMemory(SHM_KEY, 256);
    const mapping = SharedMemoryMapping.open(SHM_KEY, 256);
    mapping.bytes.set(i32(A));
    mapping.unmap();
    repo = makeRepository(["simple", "simple_identity", "simple_sequence"]);
    // `batched`: simple with a dynamic batcher, which the workers submit to the scheduling thread.
    cpSync(join(repo.dir, "simple"), join(repo.dir, "batched"), { recursive: true });
    repo.add(
      "batched/config.pbtxt",
      `${readFileSync(join(repo.dir, "simple", "config.pbtxt"), "utf8").replace(/name: "simple"/, 'name: "batched"')}\ndynamic_batching { }\n`,
    );
    // `cached`: simple with the response cache, which every thread looks up and fills (one cache in shared memory).
    cpSync(join(repo.dir, "simple"), join(repo.dir, "cached"), { recursive: true });
    repo.add(
      "cached/config.pbtxt",
      `${readFileSync(join(repo.dir, "simple", "config.pbtxt"), "utf8").replace(/name: "simple"/, 'name: "cached"')}\nresponse_cache { enable: true }\n`,
    );
    for (const n of COUNTS) {
      // Summaries count every request a thread answers, in the metrics as in the statistics.
      const s = await startServerProcess([
        `--model-repository=${repo.dir}`,
        "--cache-config=local,size=1048576",
        "--allow-client-shm=true",
        ...(summaries ? ["--metrics-config=summary_latencies=true"] : []),
        "--log-verbose=1",
        ...threadFlags(n),
      ]);
      servers.push(s);
      expect(workerLines(s.log())).toEqual(expectedWorkerLines(n));
      // On worker threads the default-scheduled ONNX models are answered in the workers themselves.
      const direct = /frontend worker threads run these model versions themselves: (.*)/.exec(s.log())?.[1];
      expect(direct?.split(", ").sort()).toEqual(n === 1 ? undefined : ["cached:1", "simple:1", "simple_identity:1"]);
    }
  });
  afterAll(async () => {
    for (const s of servers) expect(await s.stop()).toBe(0);
    repo?.remove();
    unlinkSharedMemory(SHM_KEY);
  });

  it("answers byte for byte as the main thread does", async () => {
    const answers: string[][] = [];
    for (const s of servers) {
      answers.push(await sequence(s));
      // OUTPUT0 written into the region, by each server in turn.
      const mapping = SharedMemoryMapping.open(SHM_KEY, 256);
      expect([...new Int32Array(mapping.bytes.slice(64, 128).buffer)]).toEqual(A.map((a, i) => a + B[i]!));
      mapping.bytes.fill(0, 64, 128);
      mapping.unmap();
    }
    for (const a of answers.slice(1)) expect(a).toEqual(answers[0]);
    // The main thread's answers are the right ones.
    const first = answers[0]!;
    expect(first.length).toBe(73);
    const json = first.find((a) => a.includes('"id":"json-simple"'))!;
    expect(JSON.parse(json.slice(json.indexOf("{")))).toMatchObject({
      id: "json-simple",
      outputs: [
        { name: "OUTPUT0", data: A.map((a, i) => a + B[i]!) },
        { name: "OUTPUT1", data: A.map((a, i) => a - B[i]!) },
      ],
    });
    expect(first.filter((a) => a.startsWith("200 ")).length).toBeGreaterThan(15);
    expect(first.filter((a) => a.startsWith("400 ")).length).toBeGreaterThan(10);
  });

  it("leaves the same statistics over HTTP and gRPC and the same counts in the metrics", async () => {
    const raw = await Promise.all(servers.map(async (s) => (await (await fetch(`${s.url}/v2/models/stats`)).json()) as { model_stats: any[] }));
    // Every duration was measured on every count, the queue time too where the workers answered
    // each request (simple_identity's two; it was 0 through them).
    for (const r of raw) {
      const identity = r.model_stats.find((m) => m.name === "simple_identity").inference_stats;
      expect(["success", "queue", "compute_input", "compute_infer", "compute_output"].filter((k) => !(identity[k].ns > 0))).toEqual([]);
    }
    const http = raw.map(countsOnly);
    const grpc = await Promise.all(
      servers.map(async (s) => {
        const { client, call } = inferenceClient(s.grpcTarget!);
        try {
          return countsOnly(await call("ModelStatistics")({}));
        } finally {
          client.close();
        }
      }),
    );
    const metrics = await Promise.all(servers.map(prometheus));
    for (let i = 1; i < servers.length; i++) {
      expect(http[i]).toEqual(http[0]);
      expect(grpc[i]).toEqual(grpc[0]);
      expect(metrics[i]).toEqual(metrics[0]);
    }
    // What the main thread counted is the sequence's: for simple and batched each, 11 answered
    // (8, two in shared memory, and one on the stream), 12 executions (the output too large
    // for its region ran, then failed: BACKEND), and 4 failed in the core before a run (the
    // datatype, the missing input, the unknown output, the unknown region; the other errors
    // are refused before a model is reached).
    const stats = (name: string): any => http[0]!.model_stats.find((m) => m.name === name);
    for (const model of ["simple", "batched"]) {
      const s = stats(model);
      expect([s.inference_count, s.execution_count, s.inference_stats.success.count, s.inference_stats.fail.count]).toEqual([12, 12, 11, 5]);
      expect(s.batch_stats).toEqual([{ batch_size: 1, compute_input: { count: 12 }, compute_infer: { count: 12 }, compute_output: { count: 12 } }]);
      expect(metrics[0]).toContain(`nv_inference_request_success{model="${model}",version="1"} 11`);
      expect(metrics[0]).toContain(`nv_inference_request_failure{model="${model}",version="1",reason="OTHER"} 4`);
      expect(metrics[0]).toContain(`nv_inference_request_failure{model="${model}",version="1",reason="BACKEND"} 1`);
      if (summaries) expect(metrics[0]).toContain(`nv_inference_request_summary_us_count{model="${model}",version="1"} 11`);
    }
    if (!summaries) expect(metrics[0]!.filter((l) => l.includes("summary"))).toEqual([]);
    // cached: 10 answered, 3 misses that ran (the first of all outputs, of OUTPUT1 alone, of
    // OUTPUT0 with classification) and 8 hits, whichever thread looked the cache up.
    const cached = stats("cached");
    expect([cached.inference_count, cached.execution_count, cached.inference_stats.success.count, cached.inference_stats.fail.count]).toEqual([3, 3, 10, 5]);
    expect([cached.inference_stats.cache_hit.count, cached.inference_stats.cache_miss.count]).toEqual([8, 3]);
    expect(metrics[0]).toContain('nv_cache_num_hits_per_model{model="cached",version="1"} 8');
    expect(metrics[0]).toContain('nv_cache_num_misses_per_model{model="cached",version="1"} 3');
    if (summaries) expect(metrics[0]).toContain('nv_cache_hit_summary_per_model_count{model="cached",version="1"} 8');
    expect(stats("simple_sequence").inference_stats.success.count).toBe(3);
    expect(stats("simple_identity").inference_stats.success.count).toBe(2);
  });
});
