/**
 * #30's 2-core goals: the frontends on worker threads against one thread, on the same
 * binary in interleaved rounds (medians), unpinned (the workers need both cores):
 * `simple` over JSON (wrk) and gRPC (h2load) at c = 1, 16 and 64: requests per second,
 * the process's CPU per request, and the main thread's CPU per request (from
 * /proc/<pid>/task/<pid>/stat: what the main thread still does for requests the
 * workers answer themselves).
 *
 * With --baseline=<binary> (e.g. dist/.compare/<commit>/nereid, built by bench-compare.ts),
 * that binary's worker threads are measured in the same rounds, for the columns "before".
 *
 *   npm run build && bun scripts/bench-every-core.ts [--duration=6] [--warmup=4] [--rounds=3] [--threads=2] [--baseline=<binary>] [--cached | --redis | --rate-limited] [--priority | --classification | --shared-memory] [--traced] [--stream] [--out=scripts/results/every-core.md]
 *
 * --cached: `simple` with the response cache (`response_cache { enable: true }`, a 16 MiB
 * local cache): every request after the first is a hit, so the cells measure the cache's path.
 * --redis: the same with the Redis cache instead (`redis-server`, Debian's package, started
 * here on port 18762 and emptied before each server starts).
 * --rate-limited: `simple` with 2 instances that each need the global resource R (count 1)
 * under `--rate-limit=execution_count --rate-limit-resource=R:2`, so the cells measure the
 * rate limiter's path (on the scheduling thread while the frontends run on workers).
 * --priority: every request carries `priority` 1 and `timeout` 5 s (request parameters).
 * --classification: every request asks for OUTPUT0's top 3 classes (and OUTPUT1 as is).
 * --shared-memory: every request reads INPUT0 from a system shared-memory region and has
 * OUTPUT0 written into it (`--allow-client-shm=true`; the region is registered over HTTP
 * once each server is ready).
 * --traced: the trace extension on (`--trace-config` level TIMESTAMPS, rate 1000, a trace file
 * in the bench's temporary folder): the workers count each request for the sampling rate and
 * hand the chosen ones (1 in 1000) to the main thread, which traces them.
 * --stream: gRPC only, on ModelStreamInfer: each HTTP/2 stream h2load opens carries 8
 * requests (one body of 8 messages) and gets their 8 responses; a cell counts requests.
 * --openvino=<libopenvino_c.so path>: `simple` through OpenVINO on CPU instead (`backend:
 * "openvino"` reading the same model.onnx, INFERENCE_NUM_THREADS 1; the path is
 * `--backend-config=openvino,library=`, e.g. the pinned wheel's in a venv: `pip install
 * openvino==2026.4.1`, then site-packages/openvino/libs/libopenvino_c.so.2641).
 */
import { spawnSync } from "node:child_process";
import { appendFileSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { simpleAndIdentityRepository, simpleRequestFiles, type RequestExtras } from "./lib/bench-models.ts";
import { SharedMemoryMapping, createSharedMemory, unlinkSharedMemory } from "../ffi/libc/shm.ts";
import { h2load, machineHeading, procStat, threadTicks, waitReady, wrk, wrkPostScript, spawnThreadedServer } from "./lib/bench.ts";

const root = resolve(import.meta.dir, "..");
const arg = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? def;
const DURATION = Number(arg("duration", "6"));
const ROUNDS = Number(arg("rounds", "3"));
const THREADS = Number(arg("threads", "2"));
/** Seconds of load before each protocol's cells: JavaScriptCore's JIT compiles the hot paths of each thread in the first seconds (about 15 µs of JIT thread CPU per request in the first 8 s, none after). */
const WARMUP = Number(arg("warmup", "4"));
const OUT = resolve(root, arg("out", "scripts/results/every-core.md"));
const BINARY = join(root, "dist", "nereid");
const BASELINE = process.argv.find((a) => a.startsWith("--baseline="))?.slice("--baseline=".length);
if (!existsSync(BINARY)) throw new Error("dist/nereid is missing: npm run build");
for (const tool of ["wrk", "h2load"])
  if (spawnSync(tool, ["--version"]).error) throw new Error(`${tool} is not installed (apt-get install wrk nghttp2-client)`);

const work = mkdtempSync(join(tmpdir(), "nereid-bench-every-core-"));
const repo = simpleAndIdentityRepository(root, work);
const REDIS = process.argv.includes("--redis");
const OPENVINO = process.argv.find((a) => a.startsWith("--openvino="))?.slice("--openvino=".length);
const CACHED = process.argv.includes("--cached") || REDIS;
const LIMITED = process.argv.includes("--rate-limited");
const simpleConfig = join(repo, "simple", "config.pbtxt");
if (CACHED) appendFileSync(simpleConfig, "\nresponse_cache { enable: true }\n");
if (OPENVINO) {
  if (!existsSync(OPENVINO)) throw new Error(`--openvino: ${OPENVINO} does not exist`);
  const ov = readFileSync(simpleConfig, "utf8").replace(/platform: "onnxruntime_onnx"/, 'backend: "openvino"\ndefault_model_filename: "model.onnx"');
  writeFileSync(simpleConfig, `${ov}\nparameters { key: "INFERENCE_NUM_THREADS" value { string_value: "1" } }\n`);
}
const REDIS_PORT = 18762;
if ([process.argv.includes("--cached"), REDIS, LIMITED, OPENVINO].filter(Boolean).length > 1)
  throw new Error("--cached, --redis, --rate-limited and --openvino are one at a time");
const redisCli = (...args: string[]) => spawnSync("redis-cli", ["-p", String(REDIS_PORT), ...args], { encoding: "utf8" }).stdout.trim();
if (REDIS) {
  if (spawnSync("redis-server", ["--version"]).error) throw new Error("redis-server is not installed (apt-get install redis-server)");
  if (redisCli("ping") === "PONG") throw new Error(`something already answers on port ${REDIS_PORT}: the bench starts its own redis-server there`);
  spawnSync("redis-server", ["--port", String(REDIS_PORT), "--save", "", "--daemonize", "yes"]);
  process.on("exit", () => redisCli("shutdown", "nosave"));
  for (let i = 0; redisCli("ping") !== "PONG"; i++) {
    if (i === 100) throw new Error("redis-server did not answer");
    await new Promise((r) => setTimeout(r, 50));
  }
}
if (LIMITED) {
  const limited = 'instance_group [ { count: 2 kind: KIND_CPU rate_limiter { resources [ { name: "R" global: true count: 1 } ] } } ]';
  writeFileSync(simpleConfig, readFileSync(simpleConfig, "utf8").replace(/instance_group \[.*\]/, limited));
}
const serverFlags = REDIS
  ? ["--cache-config=redis,host=127.0.0.1", `--cache-config=redis,port=${REDIS_PORT}`]
  : CACHED
    ? ["--cache-config=local,size=16777216"]
    : LIMITED
      ? ["--rate-limit=execution_count", "--rate-limit-resource=R:2"]
      : [];
if (process.argv.includes("--shared-memory")) serverFlags.push("--allow-client-shm=true");
if (OPENVINO) serverFlags.push(`--backend-config=openvino,library=${OPENVINO}`);
const TRACED = process.argv.includes("--traced");
if (TRACED) serverFlags.push(`--trace-config=triton,file=${join(work, "trace.json")}`, "--trace-config=level=TIMESTAMPS", "--trace-config=rate=1000");
const variant =
  (REDIS ? " (Redis cache hits)" : CACHED ? " (cache hits)" : LIMITED ? " (rate-limited)" : OPENVINO ? " (OpenVINO, CPU)" : "") +
  (TRACED ? " (traced, rate 1000)" : "");
const PRIORITY = process.argv.includes("--priority");
const CLASSIFIED = process.argv.includes("--classification");
const SHM = process.argv.includes("--shared-memory");
if ([PRIORITY, CLASSIFIED, SHM].filter(Boolean).length > 1) throw new Error("--priority, --classification and --shared-memory are one at a time");
const SHM_KEY = `/nereid-bench-${process.pid}`;
if (SHM) {
  createSharedMemory(SHM_KEY, 256);
  const mapping = SharedMemoryMapping.open(SHM_KEY, 256);
  mapping.bytes.set(new Uint8Array(Int32Array.from({ length: 16 }, (_, i) => i).buffer));
  mapping.unmap();
  process.on("exit", () => unlinkSharedMemory(SHM_KEY));
}
const shmJson = (offset: number) => ({ shared_memory_region: "bench", shared_memory_byte_size: 64, ...(offset ? { shared_memory_offset: offset } : {}) });
const shmGrpc = (offset: number) => ({
  shared_memory_region: { string_param: "bench" },
  shared_memory_byte_size: { int64_param: 64 },
  ...(offset ? { shared_memory_offset: { int64_param: offset } } : {}),
});
const A16 = Array.from({ length: 16 }, (_, i) => i);
const extras: RequestExtras = SHM
  ? {
      json: {
        inputs: [
          { name: "INPUT0", shape: [1, 16], datatype: "INT32", parameters: shmJson(0) },
          { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: A16 },
        ],
        outputs: [{ name: "OUTPUT0", parameters: shmJson(64) }, { name: "OUTPUT1" }],
      },
      grpc: {
        inputs: [
          { name: "INPUT0", datatype: "INT32", shape: [1, 16], parameters: shmGrpc(0) },
          { name: "INPUT1", datatype: "INT32", shape: [1, 16] },
        ],
        raw_input_contents: [new Uint8Array(Int32Array.from(A16).buffer)],
        outputs: [{ name: "OUTPUT0", parameters: shmGrpc(64) }, { name: "OUTPUT1" }],
      },
    }
  : PRIORITY
    ? { json: { parameters: { priority: 1, timeout: 5000000 } }, grpc: { parameters: { priority: { uint64_param: 1 }, timeout: { int64_param: 5000000 } } } }
    : CLASSIFIED
      ? {
          json: { outputs: [{ name: "OUTPUT0", parameters: { classification: 3 } }, { name: "OUTPUT1" }] },
          grpc: { outputs: [{ name: "OUTPUT0", parameters: { classification: { int64_param: 3 } } }, { name: "OUTPUT1" }] },
        }
      : {};
const requestNote = SHM
  ? ", every request with INPUT0 and OUTPUT0 in a system shared-memory region"
  : PRIORITY
    ? ", every request with `priority` 1 and `timeout` 5 s"
    : CLASSIFIED
      ? ", every request classifying OUTPUT0 (top 3)"
      : "";
const { json: body, grpc: grpcBody } = simpleRequestFiles(work, "simple", extras);
const script = wrkPostScript(body);
const PORT = 18760;
const GRPC_PORT = 18761;

const STREAM = process.argv.includes("--stream");
/** Requests per ModelStreamInfer stream with --stream. */
const PER_STREAM = 8;
const streamBody = join(work, "simple.stream");
if (STREAM) writeFileSync(streamBody, Buffer.concat(Array.from({ length: PER_STREAM }, () => readFileSync(grpcBody))));
const h2loadGrpc = (c: number, seconds = DURATION) => {
  if (!STREAM) return h2load(`http://127.0.0.1:${GRPC_PORT}/inference.GRPCInferenceService/ModelInfer`, grpcBody, c, seconds);
  const r = h2load(`http://127.0.0.1:${GRPC_PORT}/inference.GRPCInferenceService/ModelStreamInfer`, streamBody, c, seconds);
  return { requests: r.requests * PER_STREAM, failed: r.failed };
};

const LOADS = [1, 16, 64];
const PROTOCOLS = STREAM ? (["gRPC stream"] as const) : (["JSON", "gRPC"] as const);
interface Cell {
  rps: number;
  processUs: number;
  mainUs: number;
  failed: number;
}
const key = (p: string, c: number) => `${p} c=${c}`;

async function measure(threads: number, binary = BINARY): Promise<Record<string, Cell>> {
  if (REDIS) redisCli("flushall");
  const server = spawnThreadedServer(binary, repo, PORT, GRPC_PORT, threads, serverFlags);
  const out: Record<string, Cell> = {};
  try {
    await waitReady(`http://127.0.0.1:${PORT}/v2/health/ready`);
    if (SHM) {
      const r = await fetch(`http://127.0.0.1:${PORT}/v2/systemsharedmemory/region/bench/register`, {
        method: "POST",
        body: JSON.stringify({ key: SHM_KEY, offset: 0, byte_size: 256 }),
      });
      if (r.status !== 200) throw new Error(`registering the region: ${r.status} ${await r.text()}`);
    }
    const pid = server.pid!;
    for (const p of PROTOCOLS) {
      if (WARMUP > 0) {
        if (p === "JSON") wrk(`http://127.0.0.1:${PORT}/v2/models/simple/infer`, 16, WARMUP, script, { threads: 2 });
        else h2loadGrpc(16, WARMUP);
      }
      for (const c of LOADS) {
        const t0 = procStat(pid).cpuTicks;
        const m0 = threadTicks(pid);
        const r =
          p === "JSON"
            ? (() => {
                const w = wrk(`http://127.0.0.1:${PORT}/v2/models/simple/infer`, c, DURATION, script, { threads: c === 1 ? 1 : 2 });
                return { requests: w.requests, failed: w.errors };
              })()
            : h2loadGrpc(c);
        const t1 = procStat(pid).cpuTicks;
        const m1 = threadTicks(pid);
        const n = Math.max(r.requests, 1);
        out[key(p, c)] = { rps: r.requests / DURATION, processUs: ((t1 - t0) * 1e4) / n, mainUs: ((m1 - m0) * 1e4) / n, failed: r.failed };
      }
    }
    return out;
  } finally {
    server.kill("SIGTERM");
    await new Promise((r) => server.once("exit", r));
  }
}

/** Runs by setup: 1 (one thread), THREADS (worker threads), and -1 (the baseline binary's worker threads). */
const runs: Record<number, Record<string, Cell[]>> = { 1: {}, [THREADS]: {}, [-1]: {} };
const setups = BASELINE ? [1, THREADS, -1] : [1, THREADS];
for (let r = 0; r < ROUNDS; r++) {
  for (const setup of setups) {
    const m = setup === -1 ? await measure(THREADS, resolve(BASELINE!)) : await measure(setup);
    for (const [k, v] of Object.entries(m)) (runs[setup]![k] ??= []).push(v);
    const what = setup === -1 ? `baseline, ${THREADS} threads` : `${setup} thread(s)`;
    console.log(
      `round ${r + 1}, ${what}: ${Object.entries(m)
        .map(([k, v]) => `${k} ${v.rps.toFixed(0)}/s ${v.processUs.toFixed(0)}µs main ${v.mainUs.toFixed(1)}µs`)
        .join("; ")}`,
    );
  }
}
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
const rows: string[] = [];
let failed = 0;
for (const p of PROTOCOLS)
  for (const c of LOADS) {
    const one = runs[1]![key(p, c)]!;
    const many = runs[THREADS]![key(p, c)]!;
    const f = (cells: Cell[], field: keyof Cell) => median(cells.map((x) => x[field]));
    failed += [...one, ...many].reduce((s, x) => s + x.failed, 0);
    const before = runs[-1]![key(p, c)];
    const baseline = before ? ` ${(f(before, "processUs") / f(one, "processUs")).toFixed(2)} | ${f(before, "mainUs").toFixed(1)} |` : "";
    rows.push(
      `| \`simple\`${variant}${requestNote} ${p}, c=${c} | ${f(one, "rps").toFixed(0)} | ${f(many, "rps").toFixed(0)} | ${(f(many, "rps") / f(one, "rps")).toFixed(2)} | ${f(one, "processUs").toFixed(0)} | ${f(many, "processUs").toFixed(0)} | ${(f(many, "processUs") / f(one, "processUs")).toFixed(2)} | ${f(many, "mainUs").toFixed(1)} |${baseline}`,
    );
  }
const beforeNote = BASELINE ? `; "before": ${BASELINE.replace(`${root}/`, "")} on ${THREADS} worker threads, the baseline build` : "";
/** The checkout dist/nereid was presumably built from (the script cannot tell a stale build). */
const head = spawnSync("git", ["describe", "--always", "--dirty"], { cwd: root, encoding: "utf8" }).stdout.trim();
const load = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const text = `
${machineHeading()}

\`scripts/bench-every-core.ts\`: one dist/nereid (checkout at ${head || "unknown"}) per cell, unpinned, the load generator (wrk, h2load) on the same machine; ${ROUNDS} interleaved rounds of ${DURATION} s per cell after ${WARMUP} s of load per protocol (the JIT's warm-up), medians. "1": \`--http-thread-count=1 --grpc-infer-thread-count=1\`; "${THREADS}": both frontends on ${THREADS} worker threads, which ${LIMITED ? "submit `simple`'s requests to the scheduling thread" : "run `simple` themselves"} (#30)${beforeNote}.${REDIS ? " `simple` has the response cache in Redis (a local redis-server), so every request after the first is a hit." : CACHED ? " `simple` has the response cache (16 MiB, local), so every request after the first is a hit." : ""}${LIMITED ? " `simple` has 2 instances that each need the global resource R (count 1) under `--rate-limit=execution_count --rate-limit-resource=R:2`; on worker threads its default scheduler and the rate limiter run on the scheduling thread." : ""}${OPENVINO ? ` \`simple\` runs through OpenVINO on CPU (\`backend: "openvino"\` reading its model.onnx, INFERENCE_NUM_THREADS 1, ${OPENVINO.split("/").pop()}); the workers run it on infer requests of their own.` : ""} CPU from /proc (10 ms ticks): the whole process, and the main thread alone. Load average at the end: ${load}.

| measure | 1 thread req/s | ${THREADS} threads req/s | ÷ | 1 thread CPU µs/req | ${THREADS} threads CPU µs/req | ÷ (goal ≤ 1.15) | main thread µs/req, ${THREADS} threads (goal ≤ 3) |${BASELINE ? " before: CPU ÷ 1 thread | before: main thread µs/req |" : ""}
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |${BASELINE ? " ---: | ---: |" : ""}
${rows.join("\n")}

Failed requests: ${failed}.
`;
appendFileSync(OUT, text);
console.log(text);
