/**
 * The fuzz corpus: the inputs an adversarial review of #14 found, each small but of the
 * same kind, with what the server must do with it. Every case returns what is wrong
 * (a string) or undefined. Those not fixed on this branch yet are listed in
 * known-open.ts; the suite skips them until the fix lands.
 */
import { gzipSync } from "node:zlib";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { sendHttp, httpProblem, type HttpAnswer } from "./run.ts";
import { rawGrpcClient, type GrpcAnswer } from "./grpc-gen.ts";
import { vint, str, msg, packed, mapEntry, encodeFields, type WireField } from "./protobuf-wire.ts";
import { messageType } from "../../src/frontends/grpc/protos.ts";
import { createSharedMemory, unlinkSharedMemory } from "../../ffi/libc/shm.ts";
import type { HttpCase } from "./http-gen.ts";
import { LOAD_TARGET } from "./models.ts";

export interface CorpusServer {
  url: string;
  grpcTarget: string;
  alive(): boolean;
}

export interface CorpusContext {
  /** The fuzz fixture's server (explicit mode, tracing configured, client shm off). */
  server: CorpusServer;
  /** A folder of the fixture's own: the server's TMPDIR. */
  scratch: string;
  base64Model: string;
  /** Starts another server on the fuzz repository with `args` added (stopped by the caller's cleanup). */
  startServer(args: string[]): Promise<CorpusServer & { stop(): Promise<void> }>;
}

export interface CorpusCase {
  id: string;
  /** The issue #14 finding it stands for, in the words. */
  item: string;
  run(ctx: CorpusContext): Promise<string | undefined>;
}

const utf8 = new TextEncoder();
const json = (v: unknown) => utf8.encode(JSON.stringify(v));
const post = (path: string, body: Uint8Array | string, headers: Record<string, string> = {}): HttpCase => ({
  method: "POST",
  path,
  headers,
  body: typeof body === "string" ? utf8.encode(body) : body,
});

async function http(ctx: CorpusContext, c: HttpCase): Promise<{ a: HttpAnswer; problem?: string }> {
  const a = await sendHttp(ctx.server.url, c, 20_000);
  const problem = httpProblem(a, 20_000) ?? (ctx.server.alive() ? undefined : "server died");
  return { a, problem };
}

/** A client error in Triton's shape, with the status given. */
async function expectRefused(ctx: CorpusContext, c: HttpCase, status = 400): Promise<string | undefined> {
  const { a, problem } = await http(ctx, c);
  if (problem) return problem;
  if (a.status !== status) return `expected ${status}, got ${a.status}: ${a.body.subarray(0, 300).toString()}`;
  return undefined;
}

const SIMPLE_INPUTS = (shape0: string) =>
  `{"inputs":[{"name":"INPUT0","shape":${shape0},"datatype":"INT32","data":[${Array(16).fill(1).join(",")}]},` +
  `{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[${Array(16).fill(1).join(",")}]}]}`;

function seqRequest(id: string, value: number, start: boolean, end: boolean): string {
  return `{"parameters":{"sequence_id":${id},"sequence_start":${start},"sequence_end":${end}},"inputs":[{"name":"INPUT","shape":[1,1],"datatype":"INT32","data":[${value}]}]}`;
}

async function seqOutput(ctx: CorpusContext, body: string): Promise<number | string> {
  const { a, problem } = await http(ctx, post("/v2/models/simple_sequence/infer", body));
  if (problem || a.status !== 200) return problem ?? `${a.status} ${a.body.toString().slice(0, 200)}`;
  return (JSON.parse(a.body.toString()) as { outputs: { data: number[] }[] }).outputs[0]!.data[0]!;
}

/** ModelInfer for simple_sequence over raw gRPC with a uint64 sequence_id. */
function grpcSeq(id: bigint, value: number, start: boolean, end: boolean): Uint8Array {
  return encodeFields([
    str(1, "simple_sequence"),
    mapEntry(4, "sequence_id", [vint(5, id)]),
    mapEntry(4, "sequence_start", [vint(1, start)]),
    mapEntry(4, "sequence_end", [vint(1, end)]),
    msg(5, [str(1, "INPUT"), str(2, "INT32"), packed(3, [1, 1])]),
    str(7, new Uint8Array(Int32Array.of(value).buffer)),
  ]);
}

function grpcOutput(a: GrpcAnswer): bigint[] | string {
  if (a.code !== 0) return `gRPC ${a.code}: ${a.details}`;
  const res = messageType("inference.ModelInferResponse").decode(a.body!) as unknown as { raw_output_contents: Uint8Array[]; outputs: { datatype: string }[] };
  const raw = Uint8Array.from(res.raw_output_contents[0] ?? []);
  return res.outputs[0]?.datatype === "INT64" ? Array.from(new BigInt64Array(raw.buffer)) : Array.from(new Int32Array(raw.buffer), BigInt);
}

async function withGrpc<T>(ctx: CorpusContext, fn: (call: (method: string, body: Uint8Array) => Promise<GrpcAnswer>) => Promise<T>): Promise<T> {
  const c = rawGrpcClient(ctx.server.grpcTarget);
  try {
    return await fn((m, b) => c.call(m, b, 20_000));
  } finally {
    c.close();
  }
}

/** Two sequences whose ids differ only past 2^53 keep separate state (P-27). */
async function distinctSequences(
  send: (id: "a" | "b", value: number, start: boolean, end: boolean) => Promise<bigint | number | string>,
): Promise<string | undefined> {
  const a1 = await send("a", 1, true, false);
  const b1 = await send("b", 100, true, false);
  const a2 = await send("a", 2, false, true);
  const b2 = await send("b", 200, false, true);
  if (typeof a2 === "string" || typeof b2 === "string") return `sequence requests failed: ${a1} ${b1} ${a2} ${b2}`;
  if (Number(a2) !== 3 || Number(b2) !== 300)
    return `sequences 1234567890123456789 and 1234567890123456790 share state: got ${a2} and ${b2}, expected 3 and 300`;
  return undefined;
}

const ID = { a: "1234567890123456789", b: "1234567890123456790" };

export const CORPUS: readonly CorpusCase[] = [
  {
    id: "deep-brackets",
    item: "16 MiB of '[' (here 100k): a client error, not a crash or a stack overflow (P-10)",
    run: (ctx) => expectRefused(ctx, post("/v2/models/simple/infer", "[".repeat(100_000))),
  },
  {
    id: "deep-brackets-gzip",
    item: "the same, gzip-compressed (P-14)",
    run: (ctx) => expectRefused(ctx, post("/v2/models/simple/infer", gzipSync("[".repeat(100_000)), { "content-encoding": "gzip" })),
  },
  {
    id: "deep-data-nesting",
    item: "data nested deeper than 100 levels is refused (P-10)",
    run: (ctx) =>
      expectRefused(
        ctx,
        post(
          "/v2/models/simple/infer",
          SIMPLE_INPUTS("[1,16]")
            .replace('"data":[', `"data":${"[".repeat(150)}`)
            .replace("]},", `${"]".repeat(150)}]},`),
        ),
      ),
  },
  {
    id: "many-one-byte-strings",
    item: "JSON data of many one-byte BYTES strings: answered (or refused) without a 500, quickly, server alive",
    run: async (ctx) => {
      const n = 300_000;
      const { a, problem } = await http(
        ctx,
        post("/v2/models/simple_identity/infer", `{"inputs":[{"name":"INPUT0","shape":[1,${n}],"datatype":"BYTES","data":[${'"a",'.repeat(n - 1)}"a"]}]}`),
      );
      if (problem) return problem;
      if (a.ms > 10_000) return `took ${Math.round(a.ms)} ms`;
      return undefined;
    },
  },
  {
    id: "sequence-id-64bit-http",
    item: "sequence_id 1234567890123456789 vs …790 over HTTP: two sequences (P-27)",
    run: (ctx) => distinctSequences((s, v, start, end) => seqOutput(ctx, seqRequest(ID[s], v, start, end))),
  },
  {
    id: "sequence-id-64bit-grpc",
    item: "sequence_id 1234567890123456789 vs …790 over gRPC uint64_param: two sequences (P-27, G-02)",
    run: (ctx) =>
      withGrpc(ctx, (call) =>
        distinctSequences(async (s, v, start, end) => {
          const out = grpcOutput(await call("ModelInfer", grpcSeq(BigInt(ID[s]), v, start, end)));
          return typeof out === "string" ? out : out[0]!;
        }),
      ),
  },
  {
    id: "sequence-id-above-u64-http",
    item: "sequence_id above 2^64 − 1 over HTTP is refused (P-27)",
    run: (ctx) => expectRefused(ctx, post("/v2/models/simple_sequence/infer", seqRequest("18446744073709551616", 1, true, true))),
  },
  {
    id: "int64-exact-http",
    item: "int64 contents 9007199254740993 come back exactly over HTTP JSON",
    run: async (ctx) => {
      const { a, problem } = await http(
        ctx,
        post(
          "/v2/models/int64_identity/infer",
          '{"inputs":[{"name":"INPUT0","shape":[1,2],"datatype":"INT64","data":[9007199254740993,-9223372036854775808]}]}',
        ),
      );
      if (problem || a.status !== 200) return problem ?? `${a.status} ${a.body.toString()}`;
      return /"data":\[9007199254740993,-9223372036854775808\]/.test(a.body.toString()) ? undefined : `answered ${a.body.toString()}`;
    },
  },
  {
    id: "int64-exact-grpc",
    item: "int64 contents 9007199254740993 come back exactly over gRPC int64_contents (G-02)",
    run: (ctx) =>
      withGrpc(ctx, async (call) => {
        const body = encodeFields([
          str(1, "int64_identity"),
          msg(5, [str(1, "INPUT0"), str(2, "INT64"), packed(3, [1, 2]), msg(5, [packed(3, [9007199254740993n, -(2n ** 63n)])])]),
        ]);
        const out = grpcOutput(await call("ModelInfer", body));
        if (typeof out === "string") return out;
        return out[0] === 9007199254740993n && out[1] === -(2n ** 63n) ? undefined : `answered ${out.join(",")}`;
      }),
  },
  {
    id: "shape-float-literal-1e0",
    item: "shape dim written 1e0 is not an unsigned integer (rapidjson IsUint64): 400",
    run: (ctx) => expectRefused(ctx, post("/v2/models/simple/infer", SIMPLE_INPUTS("[1e0,16]"))),
  },
  {
    id: "shape-float-literal-1.0",
    item: "shape dim written 1.0 is not an unsigned integer: 400",
    run: (ctx) => expectRefused(ctx, post("/v2/models/simple/infer", SIMPLE_INPUTS("[1.0,16]"))),
  },
  {
    id: "shape-20k-dims",
    item: "a 20k-dim shape: refused with a short error text (≤ 4 KiB)",
    run: (ctx) => expectRefused(ctx, post("/v2/models/simple/infer", SIMPLE_INPUTS(`[${Array(20_000).fill(2).join(",")}]`))),
  },
  {
    id: "pct-escape-shm-status",
    item: "malformed % escape in /v2/systemsharedmemory/region/%zz/status: no 500",
    run: async (ctx) => (await http(ctx, { method: "GET", path: "/v2/systemsharedmemory/region/%zz/status", headers: {}, body: new Uint8Array(0) })).problem,
  },
  {
    id: "pct-escape-load",
    item: "malformed % escape in /v2/repository/models/%zz/load: no 500",
    run: async (ctx) => (await http(ctx, post("/v2/repository/models/%zz/load", ""))).problem,
  },
  {
    id: "grpc-priority-negative",
    item: "gRPC priority −5 (int64_param) is refused with INVALID_ARGUMENT (P-28)",
    run: (ctx) => withGrpc(ctx, async (call) => grpcRefused(await call("ModelInfer", simpleGrpc([mapEntry(4, "priority", [vint(2, -5)])])))),
  },
  {
    id: "grpc-timeout-negative",
    item: "gRPC timeout −1 (int64_param) is refused with INVALID_ARGUMENT (P-28)",
    run: (ctx) => withGrpc(ctx, async (call) => grpcRefused(await call("ModelInfer", simpleGrpc([mapEntry(4, "timeout", [vint(2, -1)])])))),
  },
  {
    id: "trace-file-http",
    item: "trace setting trace_file over HTTP is refused and nothing is written (P-22)",
    run: async (ctx) => {
      const file = join(ctx.scratch, "client-trace.json");
      const problem = await expectRefused(
        ctx,
        post("/v2/trace/setting", JSON.stringify({ trace_file: file, trace_level: ["TIMESTAMPS"], trace_rate: "1" })),
        501,
      );
      return problem ?? (existsSync(file) ? `${file} was written` : undefined);
    },
  },
  {
    id: "trace-file-grpc",
    item: "trace setting trace_file over gRPC is refused (P-22)",
    run: (ctx) =>
      withGrpc(ctx, async (call) => {
        const t = messageType("inference.TraceSettingRequest");
        const a = await call(
          "TraceSetting",
          t.encode(t.fromObject({ settings: { trace_file: { value: [join(ctx.scratch, "client-trace.json")] } } })).finish(),
        );
        return a.code === 12 ? undefined : `expected UNIMPLEMENTED (12), got ${a.code}: ${a.details}`;
      }),
  },
  {
    id: "load-name-traversal",
    item: "repository load of model '../../x' with config and file: overrides is 400 and writes nothing outside (P-18)",
    run: async (ctx) => {
      const name = `../../nereid-fuzz-escape-${process.pid}`;
      const config = JSON.stringify({
        name,
        platform: "onnxruntime_onnx",
        max_batch_size: 8,
        input: [
          { name: "INPUT0", data_type: "TYPE_INT32", dims: [16] },
          { name: "INPUT1", data_type: "TYPE_INT32", dims: [16] },
        ],
        output: [{ name: "OUTPUT0", data_type: "TYPE_INT32", dims: [16] }],
      });
      const problem = await expectRefused(
        ctx,
        post(
          `/v2/repository/models/${encodeURIComponent(name)}/load`,
          json({ parameters: { config, "file:1/model.onnx": ctx.base64Model, "file:../../../x": ctx.base64Model } }),
        ),
      );
      return (
        problem ??
        (existsSync(join(ctx.scratch, "..", `nereid-fuzz-escape-${process.pid}`)) ? "an override was written outside the server's folders" : undefined)
      );
    },
  },
  {
    id: "load-default-model-filename",
    item: 'default_model_filename "../../../etc/passwd" in a load override is 400 (P-18)',
    run: (ctx) =>
      expectRefused(
        ctx,
        post(
          "/v2/repository/models/simple/load",
          json({ parameters: { config: JSON.stringify({ name: "simple", platform: "onnxruntime_onnx", default_model_filename: "../../../etc/passwd" }) } }),
        ),
      ),
  },
  {
    id: "data-element-bigint-object",
    item: "fuzz finding: a data element that is an object holding an integer past 2^53 was a 500 (the error text could not be written)",
    run: (ctx) => expectRefused(ctx, post("/v2/models/simple/infer", SIMPLE_INPUTS("[1,16]").replace('"data":[1,', '"data":[{"a":9223372036854775807},'))),
  },
  {
    id: "load-config-prototype-key",
    item: "fuzz finding: a load's JSON config with the key 'constructor' (an Object.prototype member) was a 500",
    run: (ctx) => expectRefused(ctx, post(`/v2/repository/models/${LOAD_TARGET}/load`, json({ parameters: { config: '{"constructor":1}' } }))),
  },
  {
    id: "batch-zero-then-one",
    item: "fuzz finding: inputs of batch 0 and 1 passed validation and the backend refused the tensor",
    run: async (ctx) => {
      const body = SIMPLE_INPUTS("[1,16]").replace(
        '"shape":[1,16],"datatype":"INT32","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]',
        '"shape":[0,16],"datatype":"INT32","data":[]',
      );
      const { a, problem } = await http(ctx, post("/v2/models/simple/infer", body));
      if (problem) return problem;
      const error = a.body.toString();
      return a.status === 400 && error.includes("batch size does not match other inputs") ? undefined : `answered ${a.status} ${error.slice(0, 200)}`;
    },
  },
  {
    id: "load-config-deep-enum-value",
    item: "fuzz finding: a load's JSON config with a 100k-deep array as an enum value was a 500 (the error text overflowed the stack); long values were echoed whole",
    run: (ctx) =>
      expectRefused(
        ctx,
        post(
          `/v2/repository/models/${LOAD_TARGET}/load`,
          json({ parameters: { config: `{"input":[{"data_type":${"[".repeat(100_000)}${"]".repeat(100_000)}}]}` } }),
        ),
      ),
  },
  {
    id: "load-name-too-long",
    item: "fuzz finding: a load with file overrides for a 300-character model name was INTERNAL / 500 naming the server's temporary folder",
    run: async (ctx) => {
      const name = "x".repeat(300);
      const config = JSON.stringify({ platform: "onnxruntime_onnx" });
      const params = { config, "file:1/model.onnx": ctx.base64Model };
      const { a, problem } = await http(ctx, post(`/v2/repository/models/${name}/load`, json({ parameters: params })));
      if (problem || a.status !== 400) return problem ?? `HTTP: expected 400, got ${a.status}`;
      if (a.body.toString().includes(ctx.scratch)) return `HTTP error names a server path: ${a.body.toString().slice(0, 200)}`;
      return withGrpc(ctx, async (call) => {
        const t = messageType("inference.RepositoryModelLoadRequest");
        const g = await call(
          "RepositoryModelLoad",
          t
            .encode(
              t.fromObject({
                model_name: name,
                parameters: { config: { string_param: config }, "file:1/model.onnx": { bytes_param: Buffer.from(ctx.base64Model, "base64") } },
              }),
            )
            .finish(),
        );
        if (g.code !== 3) return `gRPC: expected INVALID_ARGUMENT, got ${g.code}: ${g.details.slice(0, 200)}`;
        return g.details.includes(ctx.scratch) ? `gRPC error names a server path: ${g.details.slice(0, 200)}` : undefined;
      });
    },
  },
  {
    id: "load-label-filename-too-long",
    item: "fuzz finding: a load whose config names a 300-character label_filename was a 500 naming the server's temporary folder (the reload check's stat)",
    run: async (ctx) => {
      const io = (name: string, more: object = {}) => ({ name, data_type: "TYPE_INT32", dims: [16], ...more });
      const config = JSON.stringify({
        name: LOAD_TARGET,
        platform: "onnxruntime_onnx",
        max_batch_size: 8,
        input: [io("INPUT0"), io("INPUT1")],
        output: [io("OUTPUT0", { label_filename: "x".repeat(300) }), io("OUTPUT1")],
      });
      const { a, problem } = await http(
        ctx,
        post(`/v2/repository/models/${LOAD_TARGET}/load`, json({ parameters: { config, "file:1/model.onnx": ctx.base64Model } })),
      );
      if (problem) return problem;
      const error = a.body.toString();
      if (a.status !== 400 || !error.includes("unable to read label file"))
        return `expected 400 naming the label file, got ${a.status}: ${error.slice(0, 200)}`;
      return error.includes(ctx.scratch) ? `the error names a server path: ${error.slice(0, 200)}` : undefined;
    },
  },
  {
    id: "shm-ftruncate",
    item: "a registered system shared-memory region whose object is then truncated: requests fail cleanly, the server lives (P-24)",
    run: async (ctx) => {
      const key = `/nereid-fuzz-trunc-${process.pid}`;
      createSharedMemory(key, 128);
      const s = await ctx.startServer(["--allow-client-shm=true"]);
      try {
        const sctx = { ...ctx, server: s };
        const reg = await http(sctx, post("/v2/systemsharedmemory/region/t/register", json({ key, offset: 0, byte_size: 128 })));
        if (reg.problem || reg.a.status !== 200) return `register: ${reg.problem ?? reg.a.status}`;
        createSharedMemory(key, 0); // the client shrinks the object under the server
        const shm = (offset: number) => ({ shared_memory_region: "t", shared_memory_byte_size: 64, shared_memory_offset: offset });
        const { a, problem } = await http(
          sctx,
          post(
            "/v2/models/simple/infer",
            json({
              inputs: [
                { name: "INPUT0", shape: [1, 16], datatype: "INT32", parameters: shm(0) },
                { name: "INPUT1", shape: [1, 16], datatype: "INT32", parameters: shm(64) },
              ],
              outputs: [{ name: "OUTPUT0", parameters: shm(0) }],
            }),
          ),
        );
        await new Promise((r) => setTimeout(r, 200));
        if (!s.alive()) return `server died (answer: ${a?.status})`;
        return problem ?? (a.status === 200 ? "answered 200 from a region whose object is gone" : undefined);
      } catch (err) {
        await new Promise((r) => setTimeout(r, 500)); // let the exit of a killed server be seen
        return s.alive() ? `request failed: ${(err as Error).message}` : `server died (${(err as Error).message})`;
      } finally {
        await s.stop();
        unlinkSharedMemory(key);
      }
    },
  },
];

function simpleGrpc(params: WireField[]): Uint8Array {
  const raw = str(7, new Uint8Array(new Int32Array(16).buffer));
  const input = (name: string) => msg(5, [str(1, name), str(2, "INT32"), packed(3, [1, 16])]);
  return encodeFields([str(1, "simple"), ...params, input("INPUT0"), input("INPUT1"), raw, raw]);
}

function grpcRefused(a: GrpcAnswer): string | undefined {
  return a.code === 3 ? undefined : `expected INVALID_ARGUMENT (3), got ${a.code}: ${a.details}`;
}
