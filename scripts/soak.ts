/**
 * Soak test of the compiled binary (#14): for `--minutes` (default 30), mixed traffic
 * against one server, every answer checked:
 *   - valid HTTP and gRPC infers on `simple` (exact sums and differences);
 *   - stateful sequences with ids above 2^53 over both protocols (exact running sums);
 *   - invalid and hostile requests (mutated JSON, deep nesting, a gzip bomb, huge declared
 *     shapes, bodies over --http-max-input-size, bad % escapes, POSTs with no body at all,
 *     negative priorities over gRPC): each must be refused with Triton's error shape, never
 *     a 500 or INTERNAL;
 *   - explicit unload and load of `simple_identity` while requests use it;
 *   - where /usr/bin/python3 has numpy: a Python add/sub model over HTTP and gRPC (exact
 *     answers), its stub unloaded and loaded while the requests run (the frontend workers
 *     reach the stubs themselves, #30);
 *   - system shared memory: register, infer from and into regions, truncate the object
 *     under the server, unregister while requests are in flight.
 * RSS is sampled every 10 s under load. The first sixth of the run is warm-up; then traffic
 * pauses for a settled reading (`--settle` seconds without traffic, then the lowest of three
 * readings) and resumes; the run ends with another settled reading. Passes when the server
 * never dies and none of its worker threads fails, no answer is wrong, no 500/INTERNAL is
 * seen, and the settled RSS at the end is within 10% of the settled RSS after warm-up.
 * Appends its figures to scripts/results/soak.md.
 *
 *   npm run build && bun scripts/soak.ts [--minutes=30] [--settle=30] [--out=scripts/results/soak.md] [--binary=dist/nereid]
 *     [--settle-every=<minutes>] [--loops=httpValid,grpcValid,sequences,hostileHttp,hostileGrpc,lifecycle,sharedMemory,python] [--port=18890]
 * (--loops runs only those client loops, to find which traffic a memory growth follows;
 * --port is the HTTP port, gRPC the next one, so several runs can go at once.)
 */
import { spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { credentials, makeGenericClientConstructor, type Client, type ServiceError } from "@grpc/grpc-js";
import { machineHeading, procStat, sleep, waitReady } from "./lib/bench.ts";
import { serviceDefinition } from "../src/frontends/grpc/protos.ts";
import { sendHttp } from "../test/fuzz/run.ts";
import { writePythonSimple } from "./lib/bench-models.ts";
import { SharedMemoryMapping, createSharedMemory, truncateSharedMemory, unlinkSharedMemory } from "../ffi/libc/shm.ts";

const root = resolve(import.meta.dir, "..");
const arg = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? def;
const MINUTES = Number(arg("minutes", "30"));
const OUT = resolve(root, arg("out", "scripts/results/soak.md"));
const BINARY = resolve(root, arg("binary", "dist/nereid"));
if (!existsSync(BINARY)) throw new Error("dist/nereid is missing: npm run build");
const MAX_INPUT = 4 * 1024 * 1024;
/** The checkout's commit as the run starts (the checkout may move on during a long run). */
const COMMIT = Bun.spawnSync(["git", "rev-parse", "--short", "HEAD"], { cwd: root }).stdout.toString().trim();

// ---------------------------------------------------------------- bookkeeping
const counts = new Map<string, number>();
const problems: string[] = [];
const count = (what: string) => counts.set(what, (counts.get(what) ?? 0) + 1);
function problem(what: string): void {
  count("PROBLEM");
  if (problems.length < 50) problems.push(what);
}

const repo = mkdtempSync(join(tmpdir(), "nereid-soak-"));
Bun.spawnSync([join(root, "node_modules", ".bin", "bun"), join(root, "scripts", "make-models.ts"), repo, "--only=simple,simple_identity,simple_sequence"]);
// A loaded 2-core machine can stall a client loop for seconds: give sequences a minute of
// idle time, so that only a wrong answer fails the run, not the idle reaper doing its job.
const seqConfig = join(repo, "simple_sequence", "config.pbtxt");
writeFileSync(seqConfig, readFileSync(seqConfig, "utf8").replace(/max_sequence_idle_microseconds: \d+/, "max_sequence_idle_microseconds: 60000000"));
// A Python model beside them where Debian's python3 has numpy (its loop is left out otherwise).
const PYTHON = "/usr/bin/python3";
const hasPython = Bun.spawnSync([PYTHON, "-c", "import numpy"]).exitCode === 0;
if (hasPython) writePythonSimple(repo);
const httpPort = Number(arg("port", "18890"));
const grpcPort = httpPort + 1;
const server = spawn(
  BINARY,
  [
    `--model-repository=${repo}`,
    `--http-port=${httpPort}`,
    `--grpc-port=${grpcPort}`,
    "--allow-metrics=false",
    "--log-info=false",
    "--model-control-mode=explicit",
    "--load-model=*",
    "--allow-client-shm=true",
    `--http-max-input-size=${MAX_INPUT}`,
    `--backend-config=python,interpreter=${PYTHON}`,
  ],
  { stdio: ["ignore", "ignore", "pipe"] },
);
let serverErr = "";
/** The log's last line while it is still incomplete. */
let partialLine = "";
server.stderr!.on("data", (c: Buffer) => {
  serverErr = (serverErr + c.toString()).slice(-20_000);
  const lines = (partialLine + c.toString()).split("\n");
  partialLine = lines.pop()!;
  // A frontend worker that failed is started again, so the process lives on: each one is a problem.
  for (const line of lines) if (/ worker thread(?: ended;|:) /.test(line)) problem(`server: ${line.trim().slice(0, 300)}`);
});
let died: string | undefined;
server.once("exit", (code, signal) => (died = `exited with ${code ?? signal}`));
const base = `http://127.0.0.1:${httpPort}`;
await waitReady(`${base}/v2/health/ready`);

let end = Date.now() + MINUTES * 60_000;
const running = () => Date.now() < end && died === undefined;
/** Set while traffic is paused for a settled RSS reading; loops wait on it between requests. */
let paused: Promise<void> | undefined;
async function go(): Promise<boolean> {
  while (paused) await paused;
  return running();
}

const ints = (n: number, f: (i: number) => number) => Array.from({ length: n }, (_, i) => f(i));
function simpleBody(a: number[], b: number[], extra: object = {}) {
  return {
    ...extra,
    inputs: [
      { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: a },
      { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: b },
    ],
  };
}
const equal = (x: readonly number[] | undefined, y: readonly number[]) => !!x && x.length === y.length && x.every((v, i) => v === y[i]);

/** POSTs and reads the answer; a broken connection is status 0 (always a problem). */
async function post(path: string, body: string | Uint8Array, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  try {
    const res = await fetch(`${base}${path}`, { method: "POST", body, headers });
    return { status: res.status, text: await res.text() };
  } catch (err) {
    return { status: 0, text: `connection failed: ${(err as Error).message}` };
  }
}

/**
 * A POST with no body and neither Content-Length nor Transfer-Encoding (what `curl -X POST`
 * sends without data; fetch always frames a body): the fuzz suite's unframed sender.
 */
async function postBodiless(path: string): Promise<{ status: number; text: string }> {
  try {
    const a = await sendHttp(base, { method: "POST", path, headers: {}, body: new Uint8Array(0) }, 30_000, "none");
    return { status: a.status, text: a.body.toString() };
  } catch (err) {
    return { status: 0, text: `no answer: ${(err as Error).message}` };
  }
}

/** An answer to a bad request: a 4xx/503 with `{"error": "<text>"}`, never 500. */
function expectRefusal(what: string, r: { status: number; text: string }, allowOk = false): void {
  count(`${what}: ${r.status}`);
  if (r.status === 200 && allowOk) return;
  if (r.status === 200 || r.status === 0 || (r.status >= 500 && r.status !== 501 && r.status !== 503))
    return problem(`${what}: status ${r.status}: ${r.text.slice(0, 200)}`);
  try {
    const e = JSON.parse(r.text) as { error?: unknown };
    if (typeof e.error !== "string" || e.error.length === 0 || e.error.length > 4096) problem(`${what}: error body ${r.text.slice(0, 200)}`);
  } catch {
    problem(`${what}: not JSON: ${r.text.slice(0, 200)}`);
  }
}

function grpc(): Client & Record<string, Function> {
  const Ctor = makeGenericClientConstructor(serviceDefinition("inference.GRPCInferenceService"), "GRPCInferenceService");
  return new Ctor(`127.0.0.1:${grpcPort}`, credentials.createInsecure(), { "grpc.max_receive_message_length": -1 }) as never;
}
const client = grpc();
const call = (name: string, req: object) =>
  new Promise<any>((res, rej) => (client[name] as Function).call(client, req, (e: ServiceError | null, r: unknown) => (e ? rej(e) : res(r))));
const i32 = (xs: number[]) => Buffer.from(Int32Array.from(xs).buffer);
const fromI32 = (b: Uint8Array) => Array.from(new Int32Array(Uint8Array.from(b).buffer));

// ---------------------------------------------------------------- workloads
async function httpValid(seed: number): Promise<void> {
  for (let k = 0; await go(); k++) {
    const a = ints(16, (i) => seed * 1000 + k + i);
    const b = ints(16, (i) => i * 3 - k);
    const r = await post("/v2/models/simple/infer", JSON.stringify(simpleBody(a, b)));
    count(`http valid: ${r.status}`);
    if (r.status !== 200 || !addSubExact(r.text, a, b)) problem(`http valid: ${r.status} ${r.text.slice(0, 200)}`);
  }
}

/** Whether a JSON answer of simple's shape holds a + b and a - b. */
function addSubExact(text: string, a: number[], b: number[]): boolean {
  const out = (JSON.parse(text) as { outputs: { data: number[] }[] }).outputs;
  return (
    equal(
      out[0]?.data,
      a.map((x, i) => x + b[i]!),
    ) &&
    equal(
      out[1]?.data,
      a.map((x, i) => x - b[i]!),
    )
  );
}

/** One gRPC ModelInfer of `model` (simple's inputs and outputs) with `a` and `b`, counted as `what`; a wrong sum is a problem, a failed call is thrown. */
async function grpcAddSub(model: string, a: number[], b: number[], what: string): Promise<void> {
  const r = await call("ModelInfer", {
    model_name: model,
    inputs: [
      { name: "INPUT0", datatype: "INT32", shape: [1, 16] },
      { name: "INPUT1", datatype: "INT32", shape: [1, 16] },
    ],
    raw_input_contents: [i32(a), i32(b)],
  });
  count(`${what}: OK`);
  if (
    !equal(
      fromI32(r.raw_output_contents[0]),
      a.map((x, i) => x + b[i]!),
    )
  )
    problem(`${what}: wrong sum`);
}

async function grpcValid(): Promise<void> {
  for (let k = 0; await go(); k++) {
    try {
      await grpcAddSub(
        "simple",
        ints(16, (i) => k + i),
        ints(16, (i) => 7 * i),
        "grpc valid",
      );
    } catch (e) {
      problem(`grpc valid: ${(e as ServiceError).code} ${(e as ServiceError).details}`);
    }
  }
}

/** Sequences with ids above 2^53 that differ in their last digit: each keeps its own sum. */
async function sequences(): Promise<void> {
  let n = 0n;
  while (await go()) {
    const ids = [1234567890123456000n + n * 2n, 1234567890123456001n + n * 2n];
    n++;
    const sums = [0, 0];
    for (let step = 0; step < 5 && running(); step++) {
      for (const [j, id] of ids.entries()) {
        const v = 1 + j * 10 + step;
        sums[j]! += v;
        const start = step === 0;
        const last = step === 4;
        let got: number | undefined;
        if (j === 0) {
          const r = await post(
            "/v2/models/simple_sequence/infer",
            `{"parameters":{"sequence_id":${id},"sequence_start":${start},"sequence_end":${last}},"inputs":[{"name":"INPUT","shape":[1,1],"datatype":"INT32","data":[${v}]}]}`,
          );
          count(`sequence http: ${r.status}`);
          if (r.status !== 200) problem(`sequence ${id}: step ${step}: HTTP ${r.status} ${r.text.slice(0, 200)}`);
          got = r.status === 200 ? (JSON.parse(r.text) as { outputs: { data: number[] }[] }).outputs[0]!.data[0] : undefined;
        } else {
          try {
            const r = await call("ModelInfer", {
              model_name: "simple_sequence",
              parameters: { sequence_id: { uint64_param: id.toString() }, sequence_start: { bool_param: start }, sequence_end: { bool_param: last } },
              inputs: [{ name: "INPUT", datatype: "INT32", shape: [1, 1] }],
              raw_input_contents: [i32([v])],
            });
            count("sequence grpc: OK");
            got = fromI32(r.raw_output_contents[0])[0];
          } catch (e) {
            count(`sequence grpc: ${(e as ServiceError).code}`);
            problem(`sequence ${id}: step ${step}: gRPC ${(e as ServiceError).code} ${(e as ServiceError).details}`);
          }
        }
        if (got !== sums[j]) problem(`sequence ${id}: step ${step} got ${got}, expected ${sums[j]}`);
      }
    }
  }
}

const hostile: [string, () => Promise<{ status: number; text: string }>][] = [
  ["deep nesting", () => post("/v2/models/simple/infer", "[".repeat(1 << 20))],
  ["gzip bomb", () => post("/v2/models/simple/infer", gzipSync(Buffer.alloc(MAX_INPUT - 1, "[")), { "content-encoding": "gzip" })],
  ["over max input", () => post("/v2/models/simple/infer", new Uint8Array(MAX_INPUT + 1))],
  ["huge shape", () => post("/v2/models/simple/infer", JSON.stringify({ inputs: [{ name: "INPUT0", shape: [1e9, 16], datatype: "INT32", data: [1] }] }))],
  [
    "many BYTES",
    () =>
      post("/v2/models/simple_identity/infer", `{"inputs":[{"name":"INPUT0","shape":[1,200000],"datatype":"BYTES","data":[${'"a",'.repeat(199_999)}"a"]}]}`),
  ],
  ["float dims", () => post("/v2/models/simple/infer", '{"inputs":[{"name":"INPUT0","shape":[1.0,16],"datatype":"INT32","data":[1]}]}')],
  ["bad escape", () => post("/v2/repository/models/%zz/load", "")],
  ["trace file", () => post("/v2/trace/setting", JSON.stringify({ trace_file: "/tmp/nereid-soak-trace" }))],
  [
    "load traversal",
    () => post(`/v2/repository/models/${encodeURIComponent("../../x")}/load`, JSON.stringify({ parameters: { config: "{}", "file:1/model.onnx": "AAAA" } })),
  ],
  [
    "truncated JSON",
    () =>
      post(
        "/v2/models/simple/infer",
        JSON.stringify(
          simpleBody(
            ints(16, (i) => i),
            ints(16, (i) => i),
          ),
        ).slice(0, 40),
      ),
  ],
  [
    "wrong datatype",
    () => post("/v2/models/simple/infer", JSON.stringify({ inputs: [{ name: "INPUT0", shape: [1, 16], datatype: "FP64", data: ints(16, (i) => i) }] })),
  ],
  ["binary header past body", () => post("/v2/models/simple/infer", "{}", { "inference-header-content-length": "999" })],
  ["bodiless infer", () => postBodiless("/v2/models/simple/infer")],
  ["bodiless load of a missing model", () => postBodiless("/v2/repository/models/nope/load")],
];

async function hostileHttp(): Promise<void> {
  for (let k = 0; await go(); k++) {
    const [what, send] = hostile[k % hostile.length]!;
    expectRefusal(what, await send(), what === "many BYTES");
  }
}

async function hostileGrpc(): Promise<void> {
  const bad = [
    { parameters: { priority: { int64_param: -5 } } },
    { parameters: { timeout: { int64_param: -1 } } },
    { parameters: { triton_x: { bool_param: true } } },
    { inputs: [{ name: "INPUT0", datatype: "INT32", shape: Array(20_000).fill(1) }] },
    { raw_input_contents: [Buffer.alloc(3)] },
  ];
  for (let k = 0; await go(); k++) {
    const req = {
      model_name: "simple",
      inputs: [
        { name: "INPUT0", datatype: "INT32", shape: [1, 16] },
        { name: "INPUT1", datatype: "INT32", shape: [1, 16] },
      ],
      raw_input_contents: [i32(ints(16, (i) => i)), i32(ints(16, (i) => i))],
      ...bad[k % bad.length],
    };
    try {
      await call("ModelInfer", req);
      problem(`grpc hostile ${k % bad.length}: accepted`);
    } catch (e) {
      const err = e as ServiceError;
      count(`grpc hostile: ${err.code}`);
      if (err.code === 13 || err.code === 2 || (err.code === 14 && /connect/i.test(err.details)))
        problem(`grpc hostile ${k % bad.length}: ${err.code} ${err.details}`);
      if ((err.details ?? "").length > 4096) problem(`grpc hostile ${k % bad.length}: error of ${err.details.length} characters`);
    }
  }
}

/** Unloads and loads simple_identity while another loop uses it: each answer exact or refused. */
async function lifecycle(): Promise<void> {
  const user = (async () => {
    while (await go()) {
      const r = await post("/v2/models/simple_identity/infer", '{"inputs":[{"name":"INPUT0","shape":[1,2],"datatype":"BYTES","data":["soak","ok"]}]}');
      if (r.status === 200) {
        count("lifecycle infer: 200");
        const out = (JSON.parse(r.text) as { outputs: { data: string[] }[] }).outputs[0]!.data;
        if (out.join() !== "soak,ok") problem(`lifecycle infer: ${r.text.slice(0, 200)}`);
      } else expectRefusal("lifecycle infer", r);
    }
  })();
  while (await go()) {
    for (const action of ["unload", "load"]) {
      const r = await post(`/v2/repository/models/simple_identity/${action}`, "");
      count(`lifecycle ${action}: ${r.status}`);
      if (r.status !== 200) problem(`lifecycle ${action}: ${r.status} ${r.text.slice(0, 200)}`);
      await sleep(500);
    }
  }
  await user;
}

/** The Python model over HTTP and gRPC, exact or refused while its stub is unloaded and loaded again every 5 s. */
async function python(): Promise<void> {
  const user = async (seed: number) => {
    for (let k = 0; await go(); k++) {
      const a = ints(16, (i) => seed * 100 + k + i);
      const b = ints(16, (i) => i - k);
      const r = await post("/v2/models/py_simple/infer", JSON.stringify(simpleBody(a, b)));
      if (r.status === 200) {
        count("python http: 200");
        if (!addSubExact(r.text, a, b)) problem(`python http: ${r.text.slice(0, 200)}`);
      } else expectRefusal("python http", r);
      try {
        await grpcAddSub("py_simple", a, b, "python grpc");
      } catch (e) {
        const err = e as ServiceError;
        // UNAVAILABLE or NOT_FOUND while the model is unloaded: a clean refusal.
        count(`python grpc: ${err.code}`);
        if (err.code !== 14 && err.code !== 5) problem(`python grpc: ${err.code} ${err.details}`);
      }
    }
  };
  const users = [user(1), user(2)];
  while (await go()) {
    await sleep(5000);
    for (const action of ["unload", "load"]) {
      const r = await post(`/v2/repository/models/py_simple/${action}`, "");
      count(`python ${action}: ${r.status}`);
      if (r.status !== 200) problem(`python ${action}: ${r.status} ${r.text.slice(0, 200)}`);
      await sleep(200);
    }
  }
  await Promise.all(users);
}

/** Shared memory: exact answers through regions, truncated objects, unregister under load. */
async function sharedMemory(): Promise<void> {
  for (let k = 0; await go(); k++) {
    const key = `/nereid-soak-${process.pid}-${k}`;
    const region = `soak${k}`;
    createSharedMemory(key, 256);
    const map = SharedMemoryMapping.open(key, 256);
    const a = ints(16, (i) => k + i);
    new Int32Array(map.bytes.buffer, map.bytes.byteOffset, 64).set([...a, ...a.map((x) => 2 * x)]);
    const reg = await post(`/v2/systemsharedmemory/region/${region}/register`, JSON.stringify({ key, offset: 0, byte_size: 256 }));
    if (reg.status !== 200) problem(`shm register: ${reg.status} ${reg.text}`);
    const body = JSON.stringify({
      inputs: ["INPUT0", "INPUT1"].map((name, i) => ({
        name,
        shape: [1, 16],
        datatype: "INT32",
        parameters: { shared_memory_region: region, shared_memory_offset: 64 * i, shared_memory_byte_size: 64 },
      })),
      outputs: [{ name: "OUTPUT0", parameters: { shared_memory_region: region, shared_memory_offset: 128, shared_memory_byte_size: 64 } }],
    });
    const inflight = Array.from({ length: 4 }, () => post("/v2/models/simple/infer", body));
    if (k % 3 === 1) expectRefusal("shm unregister in use", await post(`/v2/systemsharedmemory/region/${region}/unregister`, ""), true);
    for (const r of await Promise.all(inflight)) {
      if (r.status === 200) {
        count("shm infer: 200");
        const out = Array.from(new Int32Array(Uint8Array.from(map.bytes.subarray(128, 192)).buffer));
        if (
          !equal(
            out,
            a.map((x) => 3 * x),
          )
        )
          problem(`shm infer: output ${out.slice(0, 4)}`);
      } else expectRefusal("shm infer", r);
    }
    map.unmap();
    if (k % 3 === 2) {
      truncateSharedMemory(key, 0); // the client shrinks its object under the server
      expectRefusal("shm truncated", await post("/v2/models/simple/infer", body));
    }
    const un = await post(`/v2/systemsharedmemory/region/${region}/unregister`, "");
    if (un.status !== 200) problem(`shm unregister: ${un.status} ${un.text}`);
    unlinkSharedMemory(key);
  }
}

// ---------------------------------------------------------------- run
const rss: { minute: number; mib: number; fds: number }[] = [];
const fds = () => readdirSync(`/proc/${server.pid}/fd`).length;
const t0 = Date.now();
const rssNow = () => procStat(server.pid!).rssKiB / 1024;
const sampler = (async () => {
  while (running()) {
    if (!paused) rss.push({ minute: (Date.now() - t0) / 60_000, mib: rssNow(), fds: fds() });
    await sleep(10_000);
  }
})();
const SETTLE_S = Number(arg("settle", "30"));
/**
 * RSS with no traffic: the loops finish the requests they have out and wait; after
 * SETTLE_S seconds of quiet, three readings 5 s apart. A collected runtime's RSS under
 * load swings with whatever its heap holds at that instant (±40% here); what a leak
 * shows is the memory still held once the server is idle.
 */
async function settledRss(): Promise<number[]> {
  await sleep(SETTLE_S * 1000);
  const readings: number[] = [];
  for (let i = 0; i < 3 && died === undefined; i++) {
    if (i > 0) await sleep(5000);
    readings.push(rssNow());
  }
  return readings;
}
const LOOPS: Record<string, () => Promise<void>[]> = {
  httpValid: () => [httpValid(1), httpValid(2)],
  grpcValid: () => [grpcValid()],
  sequences: () => [sequences()],
  hostileHttp: () => [hostileHttp()],
  hostileGrpc: () => [hostileGrpc()],
  lifecycle: () => [lifecycle()],
  sharedMemory: () => [sharedMemory()],
  python: () => (hasPython ? [python()] : []),
};
const chosen = arg("loops", Object.keys(LOOPS).join(",")).split(",");
for (const name of chosen) if (!LOOPS[name]) throw new Error(`--loops: unknown loop '${name}' (${Object.keys(LOOPS).join(", ")})`);
const loops = chosen.flatMap((name) => LOOPS[name]!());
// Warm-up: the first sixth of the run; then traffic pauses for a settled reading and resumes
// (the pause does not count against the run's minutes).
while (died === undefined && Date.now() - t0 < (MINUTES / 6) * 60_000) await sleep(1000);
let release!: () => void;
paused = new Promise((r) => (release = r));
const pauseStart = Date.now();
const warmReadings = await settledRss();
end += Date.now() - pauseStart;
paused = undefined;
release();
const warmAt = (pauseStart - t0) / 60_000;
// --settle-every=M: a settled reading every M minutes of traffic as well, to show whether
// the settled RSS keeps rising (a leak) or levels off (the heap reaching its working size).
const curve: { minute: number; mib: number }[] = [{ minute: warmAt, mib: Math.min(...warmReadings) }];
const SETTLE_EVERY = Number(arg("settle-every", "0"));
const periodic = (async () => {
  if (!(SETTLE_EVERY > 0)) return;
  let next = Date.now() + SETTLE_EVERY * 60_000;
  while (running()) {
    await sleep(1000);
    if (Date.now() < next || !running()) continue;
    let resume!: () => void;
    paused = new Promise((r) => (resume = r));
    const start = Date.now();
    const readings = await settledRss();
    if (readings.length) curve.push({ minute: (start - t0) / 60_000, mib: Math.min(...readings) });
    end += Date.now() - start;
    paused = undefined;
    resume();
    next = Date.now() + SETTLE_EVERY * 60_000;
  }
})();
const results = await Promise.allSettled(loops);
await periodic;
for (const r of results) if (r.status === "rejected") problem(`client loop failed: ${(r.reason as Error).stack ?? r.reason}`);
await sampler;
if (died === undefined) rss.push({ minute: (Date.now() - t0) / 60_000, mib: rssNow(), fds: fds() });
const endReadings = died === undefined ? await settledRss() : [];
if (endReadings.length) curve.push({ minute: (Date.now() - t0) / 60_000, mib: Math.min(...endReadings) });
client.close();

const warm = Math.min(...warmReadings);
const last = Math.min(...endReadings);
const growth = (last - warm) / warm;
if (died) problem(`server ${died}: ${serverErr.slice(-2000)}`);
if (!(growth <= 0.1)) problem(`settled RSS grew ${(growth * 100).toFixed(1)}% after warm-up (${warm.toFixed(0)} → ${last.toFixed(0)} MiB)`);
server.kill("SIGTERM");
await new Promise((r) => server.once("exit", r).once("error", r));
rmSync(repo, { recursive: true, force: true });

const total = [...counts.entries()].filter(([k]) => k !== "PROBLEM").reduce((n, [, v]) => n + v, 0);
const lines = [
  machineHeading(),
  "",
  `${MINUTES} min of mixed traffic against ${arg("binary", "dist/nereid")} (checkout at commit ${COMMIT} when it started; ${loops.length} client loops: ${chosen.join(", ")}; one process): ${total} requests and actions; ` +
    `problems: ${counts.get("PROBLEM") ?? 0}; settled RSS (${SETTLE_S} s without traffic) ${warm.toFixed(0)} MiB after warm-up (${warmAt.toFixed(1)} min), ` +
    `${last.toFixed(0)} MiB at the end (${growth >= 0 ? "+" : ""}${(growth * 100).toFixed(1)}%); under load between ` +
    `${Math.min(...rss.map((s) => s.mib)).toFixed(0)} and ${Math.max(...rss.map((s) => s.mib)).toFixed(0)} MiB.`,
  "",
  `Settled readings 5 s apart (MiB): after warm-up ${warmReadings.map((x) => x.toFixed(0)).join(", ")}; at the end ${endReadings.map((x) => x.toFixed(0)).join(", ")}.`,
  ...(curve.length > 2
    ? ["", `Settled RSS over the run (minute of the run: MiB): ${curve.map((c) => `${c.minute.toFixed(0)}: ${c.mib.toFixed(0)}`).join(", ")}.`]
    : []),
  "",
  "| what: answer | count |",
  "| --- | --- |",
  ...[...counts.entries()]
    .filter(([k]) => k !== "PROBLEM")
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `| ${k} | ${v} |`),
  "",
  `RSS (MiB) and open descriptors, one sample a minute: ${rss
    .filter((_, i) => i % 6 === 0 || i === rss.length - 1)
    .map((x) => `${x.minute.toFixed(0)}m ${x.mib.toFixed(0)}/${x.fds}`)
    .join(", ")}.`,
  "",
  ...(problems.length > 0 ? ["Problems:", "", ...problems.map((p) => `- ${p.replace(/\n/g, " ")}`), ""] : []),
];
console.log(lines.join("\n"));
appendFileSync(OUT, `${lines.join("\n")}\n`);
process.exit(problems.length > 0 ? 1 : 0);
