/**
 * P-24, P-26: the system shared-memory extension through the server binary, over HTTP
 * and gRPC: regions registered from POSIX shared-memory objects, inputs read from and
 * outputs written into them, mixed with regular tensors, BYTES in a region, the error
 * cases, and the object released by the server process after unregister. Issue #14: a
 * client truncating its object, and unregister while queued requests use a region
 * (Triton's deferred unregister), answer clearly and never crash the server.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { readFileSync, readdirSync, readlinkSync, statSync } from "node:fs";
import { join } from "node:path";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { inferenceClient } from "../../helpers/grpc-client.ts";
import { SharedMemoryMapping, createSharedMemory, truncateSharedMemory, unlinkSharedMemory } from "../../../ffi/libc/shm.ts";
import { joinBytes } from "../../../src/core/tensor.ts";

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;
const IN = `/nereid-test-${process.pid}-in`;
const OUT = `/nereid-test-${process.pid}-out`;
let input: SharedMemoryMapping;
let output: SharedMemoryMapping;

const i32 = (...v: number[]) => new Uint8Array(Int32Array.from(v).buffer);
const ints = (b: Uint8Array) => Array.from(new Int32Array(Uint8Array.from(b).buffer));
const A = Array.from({ length: 16 }, (_, i) => i);
const B = Array.from({ length: 16 }, () => 10);

const post = (path: string, body?: object) => fetch(`${server.url}${path}`, { method: "POST", body: body === undefined ? undefined : JSON.stringify(body) });
const shmParams = (region: string, size: number, offset?: number) => ({
  shared_memory_region: region,
  shared_memory_byte_size: size,
  ...(offset === undefined ? {} : { shared_memory_offset: offset }),
});

async function infer(model: string, body: object) {
  const res = await post(`/v2/models/${model}/infer`, body);
  return {
    status: res.status,
    json: (await res.json()) as { error?: string; outputs?: { name: string; data?: unknown[]; parameters?: object; shape: number[] }[] },
  };
}

beforeAll(async () => {
  repo = makeRepository(["simple", "simple_identity"]);
  // `simple`, batched: a request waits in the queue until 4 are there (or a minute has passed).
  repo.add(
    "simple_queued/config.pbtxt",
    readFileSync(join(repo.dir, "simple", "config.pbtxt"), "utf8")
      .replace('name: "simple"', 'name: "simple_queued"')
      .concat("\ndynamic_batching { preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 60000000 }\n"),
  );
  repo.add("simple_queued/1/model.onnx", readFileSync(join(repo.dir, "simple", "1", "model.onnx")));
  createSharedMemory(IN, 256);
  createSharedMemory(OUT, 256);
  input = SharedMemoryMapping.open(IN, 256);
  output = SharedMemoryMapping.open(OUT, 256);
  input.bytes.set(i32(...A), 0);
  input.bytes.set(i32(...B), 64);
  server = await startServerProcess([`--model-repository=${repo.dir}`, "--allow-client-shm=true"]);
});

afterAll(async () => {
  await server?.stop();
  input?.unmap();
  output?.unmap();
  unlinkSharedMemory(IN);
  unlinkSharedMemory(OUT);
  repo?.remove();
});

describe("system shared memory over HTTP", () => {
  it("registers regions and reports their status", async () => {
    expect((await post("/v2/systemsharedmemory/region/in/register", { key: IN, offset: 0, byte_size: 256 })).status).toBe(200);
    expect((await post("/v2/systemsharedmemory/region/out/register", { key: OUT, offset: 0, byte_size: 256 })).status).toBe(200);
    expect(await (await fetch(`${server.url}/v2/systemsharedmemory/status`)).json()).toEqual([
      { name: "in", key: IN, offset: 0, byte_size: 256 },
      { name: "out", key: OUT, offset: 0, byte_size: 256 },
    ]);
    expect(await (await fetch(`${server.url}/v2/systemsharedmemory/region/out/status`)).json()).toEqual([{ name: "out", key: OUT, offset: 0, byte_size: 256 }]);
    const again = await post("/v2/systemsharedmemory/region/in/register", { key: IN, offset: 0, byte_size: 256 });
    expect(await again.json()).toEqual({ error: "shared memory region 'in' already in manager" });
    const missing = await post("/v2/systemsharedmemory/region/x/register", { key: "/nereid-no-such-object", offset: 0, byte_size: 64 });
    expect(await missing.json()).toEqual({ error: "Unable to open shared memory region: '/nereid-no-such-object'" });
    const unknown = await fetch(`${server.url}/v2/systemsharedmemory/region/nope/status`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: "Unable to find system shared memory region: 'nope'" });
    expect(await serverHolds(IN)).toBe(true);
  });

  it("reads inputs from regions and writes requested outputs into them; outputs in shared memory come back without data", async () => {
    const r = await infer("simple", {
      inputs: [
        { name: "INPUT0", shape: [1, 16], datatype: "INT32", parameters: shmParams("in", 64) },
        { name: "INPUT1", shape: [1, 16], datatype: "INT32", parameters: shmParams("in", 64, 64) },
      ],
      outputs: [{ name: "OUTPUT0", parameters: shmParams("out", 64, 128) }, { name: "OUTPUT1" }],
    });
    expect(r.status).toBe(200);
    expect(r.json.outputs).toEqual([
      // As Triton's HTTP frontend writes an output in shared memory: no data, no parameters.
      { name: "OUTPUT0", datatype: "INT32", shape: [1, 16] },
      { name: "OUTPUT1", datatype: "INT32", shape: [1, 16], data: A.map((a) => a - 10) },
    ]);
    expect(ints(output.bytes.subarray(128, 192))).toEqual(A.map((a) => a + 10));
  });

  it("mixes a region input with a JSON input", async () => {
    const r = await infer("simple", {
      inputs: [
        { name: "INPUT0", shape: [1, 16], datatype: "INT32", parameters: shmParams("in", 64) },
        { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: Array(16).fill(1) },
      ],
    });
    expect(r.json.outputs![0]!.data).toEqual(A.map((a) => a + 1));
  });

  it("carries BYTES tensors in a region", async () => {
    const strings = joinBytes(["alpha", "", "gamma"].map((x) => new TextEncoder().encode(x)));
    input.bytes.set(strings, 128);
    const r = await infer("simple_identity", {
      inputs: [{ name: "INPUT0", shape: [1, 3], datatype: "BYTES", parameters: shmParams("in", strings.byteLength, 128) }],
      outputs: [{ name: "OUTPUT0", parameters: shmParams("out", 64, 0) }],
    });
    expect(r.status).toBe(200);
    // As Triton's HTTP frontend answers: the client reads the elements from the region by the shape.
    expect(r.json.outputs).toEqual([{ name: "OUTPUT0", datatype: "BYTES", shape: [1, 3] }]);
    expect(Buffer.from(output.bytes.subarray(0, strings.byteLength))).toEqual(Buffer.from(strings));
  });

  it("answers every error case with Triton's status and a precise message, then keeps serving", async () => {
    const base = (params: object, outputs?: object[]) => ({
      inputs: [
        { name: "INPUT0", shape: [1, 16], datatype: "INT32", parameters: params },
        { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: Array(16).fill(1) },
      ],
      ...(outputs ? { outputs } : {}),
    });
    const cases: [object, number, string][] = [
      [base(shmParams("nope", 64)), 400, "Unable to find shared memory region: 'nope'"],
      [
        base(shmParams("in", 64, 250)),
        400,
        "Invalid offset + byte size for shared memory region: 'in' (input 'INPUT0': offset 250 + byte size 64 > region byte size 256)",
      ],
      [base(shmParams("in", 60)), 400, "input byte size mismatch for input 'INPUT0' for model 'simple'. Expected 64, got 60"],
      [base({ shared_memory_region: "in" }), 400, "input 'INPUT0': 'shared_memory_byte_size' is required with 'shared_memory_region'"],
      // Triton's output allocator refuses a region too small for the output as INTERNAL.
      [
        base(shmParams("in", 64), [{ name: "OUTPUT0", parameters: shmParams("out", 32) }]),
        500,
        "shared memory size specified with the request for output 'OUTPUT0' (32 bytes) should be at least 64 bytes to hold the results",
      ],
    ];
    for (const [body, status, error] of cases) {
      const r = await infer("simple", body);
      expect(r.status).toBe(status);
      expect(r.json).toEqual({ error });
    }
    const both = await infer("simple", {
      inputs: [
        { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: A, parameters: shmParams("in", 64) },
        { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: A },
      ],
    });
    expect(both.json.error).toContain("Input must set only one of the following fields");
    expect((await infer("simple", base(shmParams("in", 64)))).status).toBe(200);
  });
});

describe("system shared memory over gRPC", () => {
  it("registers, reports, infers with region input and output, and unregisters", async () => {
    const { client, call } = inferenceClient(server.grpcTarget!);
    await call("SystemSharedMemoryRegister")({ name: "g", key: IN, offset: 0, byte_size: 128 });
    const st = await call("SystemSharedMemoryStatus")({ name: "g" });
    expect(st.regions.g).toMatchObject({ name: "g", key: IN });
    const shm = (region: string, size: number, offset = 0) => ({
      shared_memory_region: { string_param: region },
      shared_memory_byte_size: { int64_param: size },
      shared_memory_offset: { int64_param: offset },
    });
    const res = await call("ModelInfer")({
      model_name: "simple",
      inputs: [
        { name: "INPUT0", datatype: "INT32", shape: [1, 16], parameters: shm("g", 64) },
        { name: "INPUT1", datatype: "INT32", shape: [1, 16] },
      ],
      raw_input_contents: [Buffer.from(i32(...Array(16).fill(2)))],
      outputs: [{ name: "OUTPUT0", parameters: shm("out", 64, 64) }, { name: "OUTPUT1" }],
    });
    expect(res.outputs[0].parameters.shared_memory_region.string_param).toBe("out");
    // One entry per output, as Triton: empty for the one in shared memory, so a client
    // reading raw_output_contents[i] for outputs[i] finds OUTPUT1's data (#17 wire bug 2).
    expect(res.raw_output_contents).toHaveLength(2);
    expect(res.raw_output_contents[0]).toHaveLength(0);
    expect(res.outputs[1].name).toBe("OUTPUT1");
    expect(ints(res.raw_output_contents[1])).toEqual(A.map((a) => a - 2));
    expect(ints(output.bytes.subarray(64, 128))).toEqual(A.map((a) => a + 2));
    await call("SystemSharedMemoryUnregister")({ name: "g" });
    await expect(call("SystemSharedMemoryStatus")({ name: "g" })).rejects.toMatchObject({ code: 5 });
    client.close();
  });
});

describe("CUDA shared memory on a host without a GPU", () => {
  it("refuses to register with the driver's reason, lists no regions, and keeps serving", async () => {
    const r = await post("/v2/cudasharedmemory/region/c/register", { raw_handle: { b64: Buffer.alloc(64).toString("base64") }, device_id: 0, byte_size: 64 });
    expect(r.status).toBe(500);
    expect(((await r.json()) as { error: string }).error).toMatch(
      /^failed to register CUDA shared memory region 'c': cannot load the CUDA driver \(libcuda\.so\.1\); tried:$/,
    );
    expect(await (await fetch(`${server.url}/v2/cudasharedmemory/status`)).json()).toEqual([]);
    const unknown = await fetch(`${server.url}/v2/cudasharedmemory/region/c/status`);
    expect(await unknown.json()).toEqual({ error: "Unable to find cuda shared memory region: 'c'" });
    expect((await post("/v2/cudasharedmemory/unregister")).status).toBe(200);
  });
});

describe("unregister", () => {
  it("unmaps the regions (one or all) and later requests naming them fail", async () => {
    expect((await post("/v2/systemsharedmemory/region/in/unregister")).status).toBe(200);
    expect((await post("/v2/systemsharedmemory/unregister")).status).toBe(200);
    expect(await (await fetch(`${server.url}/v2/systemsharedmemory/status`)).json()).toEqual([]);
    expect(await serverHolds(IN)).toBe(false);
    const r = await infer("simple", {
      inputs: [
        { name: "INPUT0", shape: [1, 16], datatype: "INT32", parameters: shmParams("in", 64) },
        { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: A },
      ],
    });
    expect(r.json).toEqual({ error: "Unable to find shared memory region: 'in'" });
  });
});

describe("a client that truncates its object after registering it (#14)", () => {
  const T = `/nereid-test-${process.pid}-trunc`;
  const twoInputs = (offset: number) => ({
    inputs: [
      { name: "INPUT0", shape: [1, 16], datatype: "INT32", parameters: shmParams("t", 64, offset) },
      { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: B },
    ],
  });
  const plain = {
    inputs: [
      { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: A },
      { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: B },
    ],
  };
  const sums = A.map((a) => a + 10);
  const truncatedError = (what: string, end: number, start: number) =>
    `shared memory region 't' holds fewer bytes than ${what} needs: object '${T}' ends at byte ${end}, the tensor spans bytes ${start} to ${start + 64} (the object was truncated?)`;

  afterAll(async () => {
    await post("/v2/systemsharedmemory/region/t/unregister");
    unlinkSharedMemory(T);
  });

  // Two pages: a mapping faults (SIGBUS) on the second once the object is cut to one.
  it("answers 400 naming the region for inputs and outputs beyond the new end, serves what is left, and keeps serving", async () => {
    createSharedMemory(T, 8192);
    const m = SharedMemoryMapping.open(T, 8192);
    m.bytes.set(i32(...A), 0);
    m.bytes.set(i32(...A), 8128);
    m.unmap(); // touching pages beyond the end after the truncation would fault this process
    expect((await post("/v2/systemsharedmemory/region/t/register", { key: T, offset: 0, byte_size: 8192 })).status).toBe(200);
    expect((await infer("simple", twoInputs(8128))).json.outputs![0]!.data).toEqual(sums);

    truncateSharedMemory(T, 4096);
    const past = await infer("simple", twoInputs(8128));
    expect(past.status).toBe(400);
    expect(past.json).toEqual({ error: truncatedError("input 'INPUT0'", 4096, 8128) });
    const straddling = await infer("simple", twoInputs(4064));
    expect(straddling.json).toEqual({ error: truncatedError("input 'INPUT0'", 4096, 4064) });
    const kept = await infer("simple", twoInputs(0));
    expect(kept.status).toBe(200);
    expect(kept.json.outputs![0]!.data).toEqual(sums);
    const out = await infer("simple", { ...plain, outputs: [{ name: "OUTPUT0", parameters: shmParams("t", 64, 8064) }] });
    expect(out.status).toBe(400);
    expect(out.json).toEqual({ error: truncatedError("output 'OUTPUT0'", 4096, 8064) });
    expect(statSync(`/dev/shm${T}`).size).toBe(4096); // refused, not grown back
    const inside = await infer("simple", { ...plain, outputs: [{ name: "OUTPUT0", parameters: shmParams("t", 64, 64) }] });
    expect(inside.status).toBe(200);
    expect(ints(readFileSync(`/dev/shm${T}`).subarray(64, 128))).toEqual(sums);

    truncateSharedMemory(T, 0);
    const empty = await infer("simple", twoInputs(0));
    expect(empty.status).toBe(400);
    expect(empty.json).toEqual({ error: truncatedError("input 'INPUT0'", 0, 0) });
    const good = await infer("simple", plain);
    expect(good.status).toBe(200);
    expect(good.json.outputs!.map((o) => o.data)).toEqual([sums, A.map((a) => a - 10)]);
    expect((await post("/v2/systemsharedmemory/region/t/unregister")).status).toBe(200);
    expect(await serverHolds(T)).toBe(false);
  });

  it("answers gRPC INVALID_ARGUMENT with the same message", async () => {
    createSharedMemory(T, 128);
    expect((await post("/v2/systemsharedmemory/region/t/register", { key: T, offset: 0, byte_size: 128 })).status).toBe(200);
    truncateSharedMemory(T, 32);
    const { client, call } = inferenceClient(server.grpcTarget!);
    await expect(
      call("ModelInfer")({
        model_name: "simple",
        inputs: [
          {
            name: "INPUT0",
            datatype: "INT32",
            shape: [1, 16],
            parameters: { shared_memory_region: { string_param: "t" }, shared_memory_byte_size: { int64_param: 64 } },
          },
          { name: "INPUT1", datatype: "INT32", shape: [1, 16] },
        ],
        raw_input_contents: [Buffer.from(i32(...B))],
      }),
    ).rejects.toMatchObject({ code: 3, details: truncatedError("input 'INPUT0'", 32, 0) });
    const res = await call("ModelInfer")({
      model_name: "simple",
      inputs: [
        { name: "INPUT0", datatype: "INT32", shape: [1, 16] },
        { name: "INPUT1", datatype: "INT32", shape: [1, 16] },
      ],
      raw_input_contents: [Buffer.from(i32(...A)), Buffer.from(i32(...B))],
    });
    expect(ints(res.raw_output_contents[0])).toEqual(sums);
    await call("SystemSharedMemoryUnregister")({ name: "t" });
    client.close();
  });
});

describe("unregister while queued requests use a region (#14; Triton's deferred unregister)", () => {
  const Q = `/nereid-test-${process.pid}-queue`;
  const R = `/nereid-test-${process.pid}-results`;
  let q: SharedMemoryMapping;
  let r: SharedMemoryMapping;
  const input0 = (k: number) => A.map((a) => 100 * (k + 1) + a);
  const input1 = (k: number) => Array(16).fill(k + 1) as number[];
  /** Request k: INPUT0 from region q at 64k, INPUT1 as JSON, OUTPUT0 into region r at 64k, OUTPUT1 answered. */
  const queued = (k: number) =>
    infer("simple_queued", {
      inputs: [
        { name: "INPUT0", shape: [1, 16], datatype: "INT32", parameters: shmParams("q", 64, 64 * k) },
        { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: input1(k) },
      ],
      outputs: [{ name: "OUTPUT0", parameters: shmParams("r", 64, 64 * k) }, { name: "OUTPUT1" }],
    });
  const pending = async () => {
    const text = await (await fetch(`${server.metricsUrl}/metrics`)).text();
    return Number(/^nv_inference_pending_request_count\{model="simple_queued",version="1"\} (\d+)$/m.exec(text)?.[1] ?? 0);
  };
  /** Waits (no deadline but the test's) until `n` requests wait in simple_queued's queue. */
  const untilPending = async (n: number) => {
    while ((await pending()) !== n) await new Promise((res) => setTimeout(res, 20));
  };
  const status = async () => (await (await fetch(`${server.url}/v2/systemsharedmemory/status`)).json()) as { name: string }[];

  beforeAll(() => {
    createSharedMemory(Q, 256);
    createSharedMemory(R, 256);
    q = SharedMemoryMapping.open(Q, 256);
    r = SharedMemoryMapping.open(R, 256);
    for (let k = 0; k < 4; k++) q.bytes.set(i32(...input0(k)), 64 * k);
  });

  afterAll(() => {
    q?.unmap();
    r?.unmap();
    unlinkSharedMemory(Q);
    unlinkSharedMemory(R);
  });

  it("over HTTP: unregister (one and all) succeeds at once, the regions stay usable until the last request settles, then they are gone", async () => {
    expect(await status()).toEqual([]);
    expect((await post("/v2/systemsharedmemory/region/q/register", { key: Q, offset: 0, byte_size: 256 })).status).toBe(200);
    expect((await post("/v2/systemsharedmemory/region/r/register", { key: R, offset: 0, byte_size: 256 })).status).toBe(200);
    const first = [queued(0), queued(1)];
    await untilPending(2);
    expect((await post("/v2/systemsharedmemory/region/q/unregister")).status).toBe(200);
    expect((await post("/v2/systemsharedmemory/unregister")).status).toBe(200);
    expect(await status()).toEqual([
      { name: "q", key: Q, offset: 0, byte_size: 256 },
      { name: "r", key: R, offset: 0, byte_size: 256 },
    ]);
    const again = await post("/v2/systemsharedmemory/region/q/register", { key: Q, offset: 0, byte_size: 256 });
    expect(await again.json()).toEqual({ error: "shared memory region 'q' already in manager" });
    // As in Triton, a region awaiting unregister still serves new requests.
    const third = queued(2);
    await untilPending(3);
    const plain = infer("simple_queued", {
      inputs: [
        { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: A },
        { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: A },
      ],
    });
    const results = await Promise.all([...first, third]);
    results.forEach((res, k) => {
      expect(res.status).toBe(200);
      expect(res.json.outputs).toEqual([
        { name: "OUTPUT0", datatype: "INT32", shape: [1, 16] },
        { name: "OUTPUT1", datatype: "INT32", shape: [1, 16], data: input0(k).map((a) => a - (k + 1)) },
      ]);
      expect(ints(r.bytes.subarray(64 * k, 64 * k + 64))).toEqual(input0(k).map((a) => a + k + 1));
    });
    expect((await plain).json.outputs![0]!.data).toEqual(A.map((a) => 2 * a));
    expect(await status()).toEqual([]);
    const gone = await fetch(`${server.url}/v2/systemsharedmemory/region/q/status`);
    expect(gone.status).toBe(404);
    expect(await gone.json()).toEqual({ error: "Unable to find system shared memory region: 'q'" });
    expect(await serverHolds(Q)).toBe(false);
    expect(await serverHolds(R)).toBe(false);
    expect((await post("/v2/systemsharedmemory/region/q/unregister")).status).toBe(200);
  });

  it("over gRPC: the same deferred unregister", async () => {
    const { client, call } = inferenceClient(server.grpcTarget!);
    await call("SystemSharedMemoryRegister")({ name: "q", key: Q, offset: 0, byte_size: 256 });
    const shm = (region: string, offset: number) => ({
      shared_memory_region: { string_param: region },
      shared_memory_byte_size: { int64_param: 64 },
      shared_memory_offset: { int64_param: offset },
    });
    const inflight = call("ModelInfer")({
      model_name: "simple_queued",
      inputs: [
        { name: "INPUT0", datatype: "INT32", shape: [1, 16], parameters: shm("q", 192) },
        { name: "INPUT1", datatype: "INT32", shape: [1, 16] },
      ],
      raw_input_contents: [Buffer.from(i32(...input1(3)))],
      outputs: [{ name: "OUTPUT0" }],
    });
    await untilPending(1);
    await call("SystemSharedMemoryUnregister")({ name: "q" });
    expect(Object.keys((await call("SystemSharedMemoryStatus")({})).regions)).toEqual(["q"]);
    const plain = {
      inputs: [
        { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: A },
        { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: A },
      ],
    };
    const others = await Promise.all([1, 2, 3].map(() => infer("simple_queued", plain)));
    expect(others.map((o) => o.status)).toEqual([200, 200, 200]);
    const res = await inflight;
    expect(ints(res.raw_output_contents[0])).toEqual(input0(3).map((a) => a + 4));
    await expect(call("SystemSharedMemoryStatus")({ name: "q" })).rejects.toMatchObject({
      code: 5,
      details: "Unable to find system shared memory region: 'q'",
    });
    expect(await serverHolds(Q)).toBe(false);
    client.close();
  });
});

/** Whether the server process holds shared-memory object `key`: an open descriptor or a mapping. */
async function serverHolds(key: string): Promise<boolean> {
  const pid = await serverPid();
  const path = `/dev/shm${key}`;
  const fds = readdirSync(`/proc/${pid}/fd`).some((fd) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`) === path;
    } catch {
      return false; // closed since the listing
    }
  });
  return fds || readFileSync(`/proc/${pid}/maps`, "utf8").includes(path);
}

/** The server's pid, from its log prefix. */
async function serverPid(): Promise<number> {
  const m = /^[IWE]\d{4} [\d:.]+ (\d+) /m.exec(server.log());
  return Number(m![1]);
}
