/**
 * S-17, S-18, M-07 with Triton's `redis` cache, through dist/nereid against a real
 * redis-server: a miss then a hit with exact outputs, statistics and metrics; two Nereid
 * processes sharing one cache; Redis killed in the middle of a load (every request still
 * answered exactly, one warning) and hits again once Redis is back. #29 item 6: values
 * crafted in Redis under a request's key (sizes that lie, bad BYTES framing, unknown
 * datatypes, a string in a shape, no outputs, trailing bytes, a value over the size limit)
 * are misses: the model answers, the value is replaced, one warning.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { runServerToExit, startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { startRedis, type RedisProcess } from "../../helpers/redis-server.ts";
import { eventually } from "../../helpers/eventually.ts";
import { createClient, RESP_TYPES } from "@redis/client";
import { cacheKey } from "../../../src/cache/cache-key.ts";
import { decodeEntry, encodeEntry } from "../../../src/cache/entry-codec.ts";
import { MAX_ENTRY_BYTES } from "../../../src/cache/redis-cache.ts";

const SIMPLE_IO = `
input [
  { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
  { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
  { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 16 ] }
]`;

let redis: RedisProcess;
let repo: ReturnType<typeof makeRepository>;
let a: ServerProcess;
let b: ServerProcess;

const redisFlags = () => ["--cache-config=redis,host=127.0.0.1", `--cache-config=redis,port=${redis.port}`];

/** The inputs base+i and base (and `extra` fields) as a JSON infer request to `simple_cached`. */
function post(server: ServerProcess, base: number, extra: object = {}) {
  return fetch(`${server.url}/v2/models/simple_cached/infer`, {
    method: "POST",
    body: JSON.stringify({
      inputs: [
        { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: Array.from({ length: 16 }, (_, i) => base + i) },
        { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: Array(16).fill(base) },
      ],
      ...extra,
    }),
  });
}

/** `simple_cached` on inputs base+i and base: OUTPUT0 = 2*base + i, OUTPUT1 = i. */
async function infer(server: ServerProcess, base: number) {
  const res = await post(server, base);
  return {
    status: res.status,
    json: (await res.json()) as { error?: string; outputs?: { name: string; datatype: string; shape: number[]; data: number[] }[] },
  };
}

function expectAnswer(r: Awaited<ReturnType<typeof infer>>, base: number): void {
  expect(r.status).toBe(200);
  expect(r.json.outputs).toEqual([
    { name: "OUTPUT0", datatype: "INT32", shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => 2 * base + i) },
    { name: "OUTPUT1", datatype: "INT32", shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
  ]);
}

const stats = async (server: ServerProcess) =>
  ((await (await fetch(`${server.url}/v2/models/simple_cached/stats`)).json()) as { model_stats: Record<string, any>[] }).model_stats[0]!;

const metrics = async (server: ServerProcess) => (await fetch(`${server.metricsUrl}/metrics`)).text();

const warnings = (server: ServerProcess) =>
  server
    .log()
    .split("\n")
    .filter((l) => /^W.*Redis response cache at .* is unreachable/.test(l));

async function until(what: string, cond: () => boolean, ms = 20_000): Promise<void> {
  for (const end = Date.now() + ms; !cond(); ) {
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  redis = await startRedis();
  repo = makeRepository(["simple"]);
  repo.add(
    "simple_cached/config.pbtxt",
    `name: "simple_cached"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 8\n${SIMPLE_IO}\ndynamic_batching { }\nresponse_cache { enable: true }\n`,
  );
  repo.add("simple_cached/1/model.onnx", readFileSync(join(repo.dir, "simple", "1", "model.onnx")));
  a = await startServerProcess([`--model-repository=${repo.dir}`, ...redisFlags()]);
  b = await startServerProcess([`--model-repository=${repo.dir}`, ...redisFlags()]);
});

afterAll(async () => {
  await a?.stop();
  await b?.stop();
  await redis?.remove();
  repo?.remove();
});

describe("redis response cache (S-17, S-18, M-07)", () => {
  it("does not start when Redis cannot be reached, with Triton's message", async () => {
    const { code, output } = await runServerToExit([`--model-repository=${repo.dir}`, "--cache-config=redis,host=127.0.0.1", "--cache-config=redis,port=1"]);
    expect(code).toBe(1);
    expect(output).toContain("Failed to initialize RedisCache: cannot reach Redis at 127.0.0.1:1");
  });

  it("misses, stores, then hits with the same outputs; statistics and metrics count both", async () => {
    expect(a.log()).toContain(`Redis response cache at 127.0.0.1:${redis.port}`);
    expectAnswer(await infer(a, 7), 7);
    await until("the entry in Redis", () => redis.cli("DBSIZE") === "1");
    expectAnswer(await infer(a, 7), 7);
    const s = await stats(a);
    expect(s.inference_stats.cache_miss.count).toBe(1);
    expect(s.inference_stats.cache_hit.count).toBe(1);
    expect(s.inference_stats.success.count).toBe(2);
    expect(s.execution_count).toBe(1);
    expect(s.inference_count).toBe(1);
    const m = await metrics(a);
    expect(m).toContain('nv_cache_num_hits_per_model{model="simple_cached",version="1"} 1');
    expect(m).toContain('nv_cache_num_misses_per_model{model="simple_cached",version="1"} 1');
  });

  it("the frontend workers look up and fill the cache themselves, each with its own connection (#30)", async () => {
    const threads = ["--http-thread-count=2", "--grpc-infer-thread-count=2"];
    const d = await startServerProcess([`--model-repository=${repo.dir}`, ...redisFlags(), ...threads, "--log-verbose=1"]);
    try {
      expect(d.log()).toMatch(/frontend worker threads submit these model versions' requests to the scheduling thread: simple_cached:1\n/);
      const connections = (suffix: string) => connectionsOf(d, suffix);
      await until("a connection from each of the 4 workers", () => connections("-worker").length === 4);
      expect(connections("")).toHaveLength(1);
      const before = await stats(d);
      const entries = Number(redis.cli("DBSIZE"));
      expectAnswer(await infer(d, 200), 200);
      await until("the entry in Redis", () => Number(redis.cli("DBSIZE")) === entries + 1);
      expectAnswer(await infer(d, 200), 200);
      // The lookups and the insert were the workers': the main thread's connection's last command was neither.
      expect(connections("-worker").filter((cmd) => cmd === "getrange" || cmd === "set").length).toBeGreaterThan(0);
      expect(connections("")[0]).not.toMatch(/^(getrange|set)$/);
      const after = await stats(d);
      expect(after.inference_stats.cache_miss.count - before.inference_stats.cache_miss.count).toBe(1);
      expect(after.inference_stats.cache_hit.count - before.inference_stats.cache_hit.count).toBe(1);
      expect(after.execution_count - before.execution_count).toBe(1);
    } finally {
      await d.stop();
    }
  });

  it("shares entries between two processes: a miss on one is a hit on the other", async () => {
    const entries = Number(redis.cli("DBSIZE"));
    expectAnswer(await infer(a, 100), 100);
    await until("the entry in Redis", () => Number(redis.cli("DBSIZE")) === entries + 1);
    expectAnswer(await infer(b, 100), 100);
    const s = await stats(b);
    expect(s.inference_stats.cache_hit.count).toBe(1);
    expect(s.inference_stats.cache_miss.count).toBe(0);
    expect(s.execution_count).toBe(0);
    expect(await metrics(b)).toContain('nv_cache_num_hits_per_model{model="simple_cached",version="1"} 1');
  });

  it("answers by running the model when Redis stops answering (socket_timeout), then hits again when it answers", async () => {
    const c = await startServerProcess([`--model-repository=${repo.dir}`, ...redisFlags(), "--cache-config=redis,socket_timeout=200"]);
    try {
      redis.pause();
      try {
        expectAnswer(await infer(c, 300), 300);
        expectAnswer(await infer(c, 300), 300);
      } finally {
        redis.resume();
      }
      const s = await stats(c);
      expect(s.inference_stats.cache_miss.count).toBe(2);
      expect(s.inference_stats.cache_hit.count).toBe(0);
      expect(s.execution_count).toBe(2);
      expectAnswer(await infer(c, 7), 7); // stored by the first process before the pause
      expect((await stats(c)).inference_stats.cache_hit.count).toBe(1);
    } finally {
      await c.stop();
    }
  });

  it("answers every request by running the model when Redis dies mid-load, warns once, and hits again once Redis is back", async () => {
    const before = await stats(a);
    // The frontend workers' own connections, each of which reconnects on its own schedule.
    const workerConnections = connectionsOf(a, "-worker").length;
    const total = 240;
    let done = 0;
    let killed: Promise<void> | undefined;
    const failures: string[] = [];
    // Four clients; bases repeat (0..29), so there are hits before Redis goes and misses after.
    const client = async (c: number) => {
      for (let k = c; k < total; k += 4) {
        const base = 1000 + (k % 30);
        const r = await infer(a, base);
        try {
          expectAnswer(r, base);
        } catch {
          failures.push(`request ${k}: ${r.status} ${JSON.stringify(r.json).slice(0, 200)}`);
        }
        if (++done === 80) killed = redis.kill();
      }
    };
    await Promise.all([0, 1, 2, 3].map(client));
    await killed;
    expect(failures).toEqual([]);
    expect(done).toBe(total);
    const mid = await stats(a);
    expect(mid.inference_stats.success.count - before.inference_stats.success.count).toBe(total);
    expect(mid.inference_stats.fail.count).toBe(before.inference_stats.fail.count);
    expect(warnings(a)).toHaveLength(1);
    expect(warnings(a)[0]).toContain(`Redis response cache at 127.0.0.1:${redis.port} is unreachable`);

    // Redis comes back empty (nothing persisted): the first request misses, the second hits.
    await redis.start();
    await until("the reconnection", () => a.log().includes("is reachable again"));
    // Only the main thread's client says so: a request a frontend worker takes before its own
    // client is back runs the model and stores nothing.
    await until("every frontend worker's reconnection", () => connectionsOf(a, "-worker").length === workerConnections);
    const again = await stats(a);
    expectAnswer(await infer(a, 5000), 5000);
    await until("the entry in Redis", () => redis.cli("DBSIZE") === "1");
    expectAnswer(await infer(a, 5000), 5000);
    const after = await stats(a);
    expect(after.inference_stats.cache_hit.count - again.inference_stats.cache_hit.count).toBe(1);
    expect(after.execution_count - again.execution_count).toBe(1);
    expect(warnings(a)).toHaveLength(1);
  }, 120_000);
});

/** Redis's CLIENT LIST: the last command of each connection `server` named nereid-<pid>`suffix`. */
function connectionsOf(server: ServerProcess, suffix: string): string[] {
  return redis
    .cli("CLIENT", "LIST")
    .split("\n")
    .filter((l) => l.includes(` name=nereid-${server.pid}${suffix} `))
    .map((l) => /\bcmd=(\S+)/.exec(l)![1]!);
}

/** The cache key Nereid computes for `infer(server, base)`. */
function keyFor(base: number): string {
  const int32 = (name: string, values: number[]) => ({ name, datatype: "INT32" as const, shape: [1, 16], data: new Uint8Array(new Int32Array(values).buffer) });
  const inputs = [
    int32(
      "INPUT0",
      Array.from({ length: 16 }, (_, i) => base + i),
    ),
    int32("INPUT1", Array(16).fill(base)),
  ];
  return cacheKey("simple_cached", 1, inputs, ["OUTPUT0", "OUTPUT1"]);
}

/** A value with a JSON header given as text and `data` after it. */
function crafted(header: string, data: Uint8Array = new Uint8Array(0)): Buffer {
  const json = Buffer.from(header);
  const len = Buffer.alloc(4);
  len.writeUInt32LE(json.byteLength, 0);
  return Buffer.concat([len, json, data]);
}

/** `simple_cached` on base `base` with both outputs as binary data; the header and the bytes after it. */
async function inferBinary(server: ServerProcess, base: number) {
  const res = await post(server, base, {
    outputs: [
      { name: "OUTPUT0", parameters: { binary_data: true } },
      { name: "OUTPUT1", parameters: { binary_data: true } },
    ],
  });
  const body = Buffer.from(await res.arrayBuffer());
  const headerLength = Number(res.headers.get("inference-header-content-length"));
  return { status: res.status, header: JSON.parse(body.toString("utf8", 0, headerLength)), data: body.subarray(headerLength) };
}

describe("redis response cache: values in Redis are checked before they are served (#29 item 6)", () => {
  const int32 = (values: number[]) => new Uint8Array(new Int32Array(values).buffer);
  const wrong = [1, 2].map((k) => ({ name: `OUTPUT${k - 1}`, datatype: "INT32" as const, shape: [1, 16], data: int32(Array(16).fill(k)) }));
  const cases: [what: string, value: () => Buffer][] = [
    ["a shape/byte-size mismatch", () => crafted('[["OUTPUT0","INT32",[1,16],8],["OUTPUT1","INT32",[1,16],8]]', new Uint8Array(16))],
    [
      "bad BYTES framing",
      () => crafted('[["OUTPUT0","BYTES",[1,1],8],["OUTPUT1","BYTES",[1,1],8]]', new Uint8Array([200, 0, 0, 0, 1, 2, 3, 4, 200, 0, 0, 0, 1, 2, 3, 4])),
    ],
    ["an unknown datatype", () => crafted('[["OUTPUT0","INT33",[1,16],64],["OUTPUT1","INT32",[1,16],64]]', new Uint8Array(128))],
    // Spliced raw into the response before: a whole extra output.
    [
      "a shape element that is a string",
      () =>
        crafted(
          JSON.stringify([
            ["OUTPUT0", "INT32", ['16],"x":1,"outputs":[{"name":"EVIL","datatype":"INT32","shape":[1],"data":[666]}],"y":[1'], 64],
            ["OUTPUT1", "INT32", [1, 16], 64],
          ]),
          new Uint8Array(128),
        ),
    ],
    ["no outputs", () => crafted("[]")],
    ["one of the two outputs only", () => encodeEntry([{ name: "OUTPUT1", datatype: "INT32", shape: [1, 16], data: int32(Array(16).fill(9)) }])],
    ["trailing bytes", () => Buffer.concat([encodeEntry(wrong), Buffer.from([0])])],
    // A valid entry (with wrong numbers) that an extra output makes larger than the limit.
    [
      "a value over the size limit",
      () => encodeEntry([...wrong, { name: "PAD", datatype: "UINT8", shape: [MAX_ENTRY_BYTES], data: new Uint8Array(MAX_ENTRY_BYTES) }]),
    ],
  ];

  let client: ReturnType<typeof createClient>;
  const get = async (key: string) => (await client.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer }).get(key)) as Buffer | null;
  const invalidWarnings = (server: ServerProcess) =>
    server
      .log()
      .split("\n")
      .filter((l) => /^W.*Redis response cache at .* is not a valid entry/.test(l));

  beforeAll(async () => {
    client = createClient({ socket: { host: "127.0.0.1", port: redis.port } });
    await client.connect();
  });
  afterAll(async () => {
    await client?.close();
  });

  it("computes the same key as the server (the entry a miss stores is found under keyFor)", async () => {
    expectAnswer(await infer(a, 20_000), 20_000);
    await eventually(async () => {
      const value = await get(keyFor(20_000));
      expect(value && decodeEntry(value, ["OUTPUT0", "OUTPUT1"]).outputs?.map((t) => t.name)).toEqual(["OUTPUT0", "OUTPUT1"]);
    });
  });

  it.each(cases.map(([what, value], i) => [what, value, 30_000 + i] as const))(
    "answers from the model over %s, and replaces the value",
    async (_what, value, base) => {
      const key = keyFor(base);
      await client.set(key, value());
      const before = await stats(a);
      expectAnswer(await infer(a, base), base);
      const after = await stats(a);
      expect(after.inference_stats.cache_hit.count).toBe(before.inference_stats.cache_hit.count);
      expect(after.inference_stats.cache_miss.count).toBe(before.inference_stats.cache_miss.count + 1);
      expect(after.execution_count).toBe(before.execution_count + 1);
      // The bad value is gone, and the model's answer is stored in its place: the next request hits it.
      await eventually(async () => {
        const stored = await get(key);
        expect(stored && decodeEntry(stored, ["OUTPUT0", "OUTPUT1"]).outputs?.length).toBe(2);
      });
      expectAnswer(await infer(a, base), base);
      expect((await stats(a)).inference_stats.cache_hit.count).toBe(after.inference_stats.cache_hit.count + 1);
    },
  );

  it("answers binary outputs from the model over a shape/byte-size mismatch, with sizes that match", async () => {
    const base = 40_000;
    await client.set(keyFor(base), cases[0]![1]());
    const r = await inferBinary(a, base);
    expect(r.status).toBe(200);
    expect(r.header.outputs).toEqual([
      { name: "OUTPUT0", datatype: "INT32", shape: [1, 16], parameters: { binary_data_size: 64 } },
      { name: "OUTPUT1", datatype: "INT32", shape: [1, 16], parameters: { binary_data_size: 64 } },
    ]);
    expect(r.data.byteLength).toBe(128);
    expect([...new Int32Array(r.data.buffer.slice(r.data.byteOffset, r.data.byteOffset + 128))]).toEqual([
      ...Array.from({ length: 16 }, (_, i) => 2 * base + i),
      ...Array.from({ length: 16 }, (_, i) => i),
    ]);
  });

  it("logs the first invalid value once as a warning, with the reason quoted", () => {
    const w = invalidWarnings(a);
    expect(w).toHaveLength(1);
    expect(w[0]).toContain(`Redis response cache at 127.0.0.1:${redis.port}: a value is not a valid entry (`);
    expect(w[0]).toContain("(later ones are logged at verbose level 1)");
  });
});
