/**
 * @module `nereid perf`'s connection to the server, over HTTP (the binary tensor
 * extension, as perf_analyzer sends, on keep-alive sockets of its own: http1.ts) or
 * gRPC (raw contents; ModelInfer, or one ModelStreamInfer stream with --streaming):
 * model metadata and config, the statistics extension, system shared-memory
 * registration, and one inference with its client-side timings and, when it fails,
 * the error the server answered.
 */
import { credentials, Metadata, makeGenericClientConstructor, type Client, type ClientDuplexStream, type ServiceError } from "@grpc/grpc-js";
import { serviceDefinition } from "../frontends/grpc/protos.ts";
import { errorOf, httpErrorText } from "./errors.ts";
import { Http1Pool } from "./http1.ts";
import type { InputSpec, PerfTensor } from "./inputs.ts";

/** Cumulative statistics of one model version, as the statistics extension reports them. */
export interface ServerStats {
  success: { count: number; ns: number };
  queue: { count: number; ns: number };
  compute_input: { count: number; ns: number };
  compute_infer: { count: number; ns: number };
  compute_output: { count: number; ns: number };
  inference_count: number;
  execution_count: number;
}

/** One request's client-side timings, in ns from its start; `error` is the server's answer when it failed. */
export interface Timing {
  sendNs: number;
  waitNs: number;
  recvNs: number;
  ok: boolean;
  error?: string;
}

/** A request's place in a sequence (perf_analyzer's sequence_id / sequence_start / sequence_end). */
export interface SequenceFlags {
  id: number;
  start: boolean;
  end: boolean;
}

/** What perf needs of the model: its inputs and outputs, and from its config how to drive it. */
export interface ModelInfo {
  inputs: InputSpec[];
  outputs: { name: string }[];
  maxBatchSize: number;
  /** The config has sequence_batching: every request needs a sequence id. */
  sequence: boolean;
  /** model_transaction_policy.decoupled: zero or more responses per request. */
  decoupled: boolean;
}

/** Where a tensor's bytes lie in a registered system shared-memory region. */
export interface ShmPlace {
  region: string;
  offset: number;
  byteSize: number;
}

/** A tensor to send: its bytes in the body, or (with --shared-memory system) in a region. */
export type SendTensor = PerfTensor & { shm?: ShmPlace };

export interface ClientOptions {
  /** -H: extra headers (gRPC metadata over gRPC) on every request. */
  headers: [string, string][];
  /** --streaming: requests over one gRPC ModelStreamInfer stream. */
  streaming: boolean;
}

export interface PerfClient {
  model(): Promise<ModelInfo>;
  stats(): Promise<ServerStats>;
  registerSystemShm(name: string, key: string, byteSize: number): Promise<void>;
  unregisterSystemShm(name: string): Promise<void>;
  /** A prepared request: call it to send once (with its sequence flags for a sequence model). */
  prepare(tensors: SendTensor[], outputs: string[]): (seq?: SequenceFlags) => Promise<Timing>;
  close(): void;
}

const now = () => process.hrtime.bigint();
const zero = { count: 0, ns: 0 };

/** The version's entry of a statistics answer, with absent fields as zero. */
function pickStats(body: { model_stats?: Record<string, unknown>[] }): ServerStats {
  const s = body.model_stats?.[0] as
    | { inference_stats?: Record<string, { count?: number; ns?: number }>; inference_count?: number; execution_count?: number }
    | undefined;
  if (!s) throw new Error("the server returned no statistics for the model");
  const d = (k: string) => ({ count: Number(s.inference_stats?.[k]?.count ?? 0), ns: Number(s.inference_stats?.[k]?.ns ?? 0) });
  return {
    success: d("success") ?? zero,
    queue: d("queue"),
    compute_input: d("compute_input"),
    compute_infer: d("compute_infer"),
    compute_output: d("compute_output"),
    inference_count: Number(s.inference_count ?? 0),
    execution_count: Number(s.execution_count ?? 0),
  };
}

type Config = { max_batch_size?: number; sequence_batching?: unknown; model_transaction_policy?: { decoupled?: boolean } };

function modelInfo(meta: { inputs: InputSpec[]; outputs: { name: string }[] }, config: Config): ModelInfo {
  return {
    inputs: meta.inputs,
    outputs: meta.outputs,
    maxBatchSize: Number(config.max_batch_size ?? 0),
    sequence: config.sequence_batching !== undefined && config.sequence_batching !== null,
    decoupled: config.model_transaction_policy?.decoupled === true,
  };
}

/** A tensor's shared-memory parameters, as both protocols name them. */
const shmParams = (p: ShmPlace) => ({ shared_memory_region: p.region, shared_memory_offset: p.offset, shared_memory_byte_size: p.byteSize });

export function httpClient(url: string, model: string, version: string, o: ClientOptions): PerfClient {
  const origin = new URL(url.startsWith("http") ? url : `http://${url}`);
  const path = `/v2/models/${encodeURIComponent(model)}${version ? `/versions/${version}` : ""}`;
  const extra = Object.fromEntries(o.headers);
  const call = async (method: "GET" | "POST", full: string, body?: object) => {
    const res = await fetch(origin.origin + full, {
      method,
      headers: { ...extra, ...(body ? { "Content-Type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const answer = await res.text();
    if (!res.ok) throw new Error(`${method} ${origin.origin + full}: ${res.status} ${errorOf(answer) ?? answer}`);
    try {
      return (answer ? JSON.parse(answer) : {}) as Record<string, unknown>;
    } catch {
      throw new Error(`${method} ${origin.origin + full}: the answer is not JSON`);
    }
  };
  const get = (sub: string) => call("GET", path + sub);
  const pool = new Http1Pool(origin.hostname, Number(origin.port || 80));
  return {
    async model() {
      const [meta, config] = await Promise.all([get(""), get("/config")]);
      return modelInfo(meta as unknown as { inputs: InputSpec[]; outputs: { name: string }[] }, config as Config);
    },
    async stats() {
      return pickStats((await get("/stats")) as { model_stats?: Record<string, unknown>[] });
    },
    async registerSystemShm(name, key, byteSize) {
      await call("POST", `/v2/systemsharedmemory/region/${encodeURIComponent(name)}/register`, { key, offset: 0, byte_size: byteSize });
    },
    async unregisterSystemShm(name) {
      await call("POST", `/v2/systemsharedmemory/region/${encodeURIComponent(name)}/unregister`, {});
    },
    prepare(tensors, outputs) {
      const inline = tensors.filter((t) => !t.shm);
      const request = {
        inputs: tensors.map((t) => ({
          name: t.name,
          shape: t.shape,
          datatype: t.datatype,
          parameters: t.shm ? shmParams(t.shm) : { binary_data_size: t.bytes.byteLength },
        })),
        outputs: outputs.map((name) => ({ name, parameters: { binary_data: true } })),
      };
      const data = Buffer.concat(inline.map((t) => t.bytes));
      const encode = (header: Uint8Array) =>
        Http1Pool.encode(
          origin.host,
          `${path}/infer`,
          { ...extra, "Inference-Header-Content-Length": String(header.byteLength), "Content-Type": "application/octet-stream" },
          Buffer.concat([header, data]),
        );
      const fixed = encode(Buffer.from(JSON.stringify(request)));
      return async (seq) => {
        const bytes = seq
          ? encode(Buffer.from(JSON.stringify({ ...request, parameters: { sequence_id: seq.id, sequence_start: seq.start, sequence_end: seq.end } })))
          : fixed;
        try {
          const r = await pool.send(bytes);
          const ok = r.status === 200;
          return { sendNs: r.sendNs, waitNs: r.waitNs, recvNs: r.recvNs, ok, error: ok ? undefined : httpErrorText(r.status, r.body ?? new Uint8Array()) };
        } catch (err) {
          // A broken connection counts as a failed request.
          return { sendNs: 0, waitNs: 0, recvNs: 0, ok: false, error: (err as Error).message || String(err) };
        }
      };
    },
    close() {
      pool.close();
    },
  };
}

type Unary = (req: object, md: Metadata, cb: (err: ServiceError | null, res: unknown) => void) => void;
type StreamResponse = { error_message?: string; infer_response?: { id?: string; parameters?: Record<string, { bool_param?: boolean }> } };

export function grpcClient(url: string, model: string, version: string, o: ClientOptions): PerfClient {
  const target = url.replace(/^grpc:\/\//, "");
  const Ctor = makeGenericClientConstructor(serviceDefinition("inference.GRPCInferenceService"), "GRPCInferenceService");
  const client = new Ctor(target, credentials.createInsecure(), { "grpc.max_receive_message_length": -1, "grpc.max_send_message_length": -1 }) as Client &
    Record<string, Unary>;
  const metadata = () => {
    const md = new Metadata();
    for (const [k, v] of o.headers) md.add(k.toLowerCase(), v);
    return md;
  };
  const call = (name: string, req: object) =>
    new Promise<Record<string, unknown>>((resolve, reject) =>
      client[name]!.call(client, req, metadata(), (err: ServiceError | null, res: unknown) =>
        err ? reject(new Error(`${name}: ${err.details || err.message}`)) : resolve(res as Record<string, unknown>),
      ),
    );
  // --streaming: one stream for the run, each request's completion found by its id.
  let stream: ClientDuplexStream<object, StreamResponse> | undefined;
  const waiting = new Map<string, (r: StreamResponse | Error) => void>();
  let nextId = 0;
  const openStream = () => {
    if (stream) return stream;
    const s = (client as unknown as { ModelStreamInfer(md: Metadata): ClientDuplexStream<object, StreamResponse> }).ModelStreamInfer(metadata());
    s.on("data", (r: StreamResponse) => {
      const id = r.infer_response?.id ?? "";
      const done = waiting.get(id);
      // A request is settled by its error or by the response that says it is the last.
      if (done && (r.error_message || r.infer_response?.parameters?.triton_final_response?.bool_param === true)) {
        waiting.delete(id);
        done(r);
      }
    });
    const fail = (err: Error) => {
      stream = undefined;
      for (const done of waiting.values()) done(err);
      waiting.clear();
    };
    s.on("error", (err: ServiceError) => fail(new Error(`ModelStreamInfer: ${err.details || err.message}`)));
    s.on("end", () => fail(new Error("ModelStreamInfer: the server ended the stream")));
    stream = s;
    return s;
  };
  return {
    async model() {
      const [m, c] = await Promise.all([call("ModelMetadata", { name: model, version }), call("ModelConfig", { name: model, version })]);
      const inputs = (m.inputs as { name: string; datatype: string; shape: number[] }[]).map((i) => ({
        name: i.name,
        datatype: i.datatype,
        shape: i.shape.map(Number),
      }));
      return modelInfo({ inputs, outputs: m.outputs as { name: string }[] }, c.config as Config);
    },
    async stats() {
      return pickStats((await call("ModelStatistics", { name: model, version })) as { model_stats?: Record<string, unknown>[] });
    },
    async registerSystemShm(name, key, byteSize) {
      await call("SystemSharedMemoryRegister", { name, key, offset: 0, byte_size: byteSize });
    },
    async unregisterSystemShm(name) {
      await call("SystemSharedMemoryUnregister", { name });
    },
    prepare(tensors, outputs) {
      const param = (p: Record<string, string | number>) =>
        Object.fromEntries(Object.entries(p).map(([k, v]) => [k, typeof v === "string" ? { string_param: v } : { int64_param: v }]));
      const req = {
        model_name: model,
        model_version: version,
        inputs: tensors.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape, ...(t.shm ? { parameters: param(shmParams(t.shm)) } : {}) })),
        outputs: outputs.map((name) => ({ name })),
        raw_input_contents: tensors.filter((t) => !t.shm).map((t) => t.bytes),
      };
      const withSeq = (seq: SequenceFlags | undefined, more: Record<string, unknown> = {}) =>
        seq || Object.keys(more).length
          ? {
              ...req,
              parameters: {
                ...more,
                ...(seq ? { sequence_id: { int64_param: seq.id }, sequence_start: { bool_param: seq.start }, sequence_end: { bool_param: seq.end } } : {}),
              },
            }
          : req;
      if (o.streaming) {
        return (seq) =>
          new Promise<Timing>((resolve) => {
            const id = String(nextId++);
            const start = now();
            waiting.set(id, (r) => {
              const wait = Number(now() - start);
              const error = r instanceof Error ? r.message : r.error_message || undefined;
              resolve({ sendNs: 0, waitNs: wait, recvNs: 0, ok: !error, error });
            });
            openStream().write({ ...withSeq(seq, { triton_enable_empty_final_response: { bool_param: true } }), id });
          });
      }
      return (seq) =>
        new Promise<Timing>((resolve) => {
          const start = now();
          let sent = start;
          client.ModelInfer!.call(client, withSeq(seq), metadata(), (err: ServiceError | null) => {
            const done = now();
            resolve({ sendNs: Number(sent - start), waitNs: Number(done - sent), recvNs: 0, ok: !err, error: err ? err.details || err.message : undefined });
          });
          sent = now();
        });
    },
    close() {
      stream?.end();
      client.close();
    },
  };
}
