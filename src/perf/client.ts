/**
 * @module `nereid perf`'s connection to the server, over HTTP (the binary tensor
 * extension, as perf_analyzer sends, on keep-alive sockets of its own: http1.ts) or
 * gRPC (raw contents): model metadata and config,
 * the statistics extension, and one inference with its client-side timings.
 */
import { credentials, makeGenericClientConstructor, type Client, type ServiceError } from "@grpc/grpc-js";
import { serviceDefinition } from "../frontends/grpc/protos.ts";
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

/** One request's client-side timings, in ns from its start. */
export interface Timing { sendNs: number; waitNs: number; recvNs: number; ok: boolean }

export interface PerfClient {
  metadata(): Promise<{ inputs: InputSpec[]; outputs: { name: string }[] }>;
  maxBatchSize(): Promise<number>;
  stats(): Promise<ServerStats>;
  /** A prepared request: call it to send once. */
  prepare(tensors: PerfTensor[], outputs: string[]): () => Promise<Timing>;
  close(): void;
}

const now = () => process.hrtime.bigint();
const zero = { count: 0, ns: 0 };

/** The version's entry of a statistics answer, with absent fields as zero. */
function pickStats(body: { model_stats?: Record<string, unknown>[] }): ServerStats {
  const s = body.model_stats?.[0] as { inference_stats?: Record<string, { count?: number; ns?: number }>; inference_count?: number; execution_count?: number } | undefined;
  if (!s) throw new Error("the server returned no statistics for the model");
  const d = (k: string) => ({ count: Number(s.inference_stats?.[k]?.count ?? 0), ns: Number(s.inference_stats?.[k]?.ns ?? 0) });
  return { success: d("success") ?? zero, queue: d("queue"), compute_input: d("compute_input"), compute_infer: d("compute_infer"), compute_output: d("compute_output"), inference_count: Number(s.inference_count ?? 0), execution_count: Number(s.execution_count ?? 0) };
}

export function httpClient(url: string, model: string, version: string): PerfClient {
  const origin = new URL(url.startsWith("http") ? url : `http://${url}`);
  const path = `/v2/models/${encodeURIComponent(model)}${version ? `/versions/${version}` : ""}`;
  const base = `${origin.origin}${path}`;
  const pool = new Http1Pool(origin.hostname, Number(origin.port || 80));
  const get = async (path: string) => {
    const res = await fetch(base + path);
    const body = (await res.json()) as Record<string, unknown>;
    if (!res.ok) throw new Error(`GET ${base + path}: ${res.status} ${String(body.error ?? "")}`);
    return body;
  };
  return {
    async metadata() {
      return (await get("")) as unknown as { inputs: InputSpec[]; outputs: { name: string }[] };
    },
    async maxBatchSize() {
      return Number(((await get("/config")) as { max_batch_size?: number }).max_batch_size ?? 0);
    },
    async stats() {
      return pickStats((await get("/stats")) as { model_stats?: Record<string, unknown>[] });
    },
    prepare(tensors, outputs) {
      const header = new TextEncoder().encode(
        JSON.stringify({
          inputs: tensors.map((t) => ({ name: t.name, shape: t.shape, datatype: t.datatype, parameters: { binary_data_size: t.bytes.byteLength } })),
          outputs: outputs.map((name) => ({ name, parameters: { binary_data: true } })),
        }),
      );
      const body = new Uint8Array(header.byteLength + tensors.reduce((n, t) => n + t.bytes.byteLength, 0));
      body.set(header, 0);
      let off = header.byteLength;
      for (const t of tensors) {
        body.set(t.bytes, off);
        off += t.bytes.byteLength;
      }
      const bytes = Http1Pool.encode(origin.host, `${path}/infer`, { "Inference-Header-Content-Length": String(header.byteLength), "Content-Type": "application/octet-stream" }, body);
      return async () => {
        try {
          const r = await pool.send(bytes);
          return { sendNs: r.sendNs, waitNs: r.waitNs, recvNs: r.recvNs, ok: r.status === 200 };
        } catch {
          return { sendNs: 0, waitNs: 0, recvNs: 0, ok: false }; // a broken connection counts as a failed request
        }
      };
    },
    close() {
      pool.close();
    },
  };
}

type Unary = (req: object, cb: (err: ServiceError | null, res: unknown) => void) => void;

export function grpcClient(url: string, model: string, version: string): PerfClient {
  const target = url.replace(/^grpc:\/\//, "");
  const Ctor = makeGenericClientConstructor(serviceDefinition("inference.GRPCInferenceService"), "GRPCInferenceService");
  const client = new Ctor(target, credentials.createInsecure(), { "grpc.max_receive_message_length": -1, "grpc.max_send_message_length": -1 }) as Client & Record<string, Unary>;
  const call = (name: string, req: object) =>
    new Promise<Record<string, unknown>>((resolve, reject) =>
      client[name]!.call(client, req, (err: ServiceError | null, res: unknown) => (err ? reject(new Error(`${name}: ${err.details || err.message}`)) : resolve(res as Record<string, unknown>))),
    );
  return {
    async metadata() {
      const m = await call("ModelMetadata", { name: model, version });
      const inputs = (m.inputs as { name: string; datatype: string; shape: number[] }[]).map((i) => ({ name: i.name, datatype: i.datatype, shape: i.shape.map(Number) }));
      return { inputs, outputs: m.outputs as { name: string }[] };
    },
    async maxBatchSize() {
      const c = await call("ModelConfig", { name: model, version });
      return Number((c.config as { max_batch_size?: number }).max_batch_size ?? 0);
    },
    async stats() {
      return pickStats((await call("ModelStatistics", { name: model, version })) as { model_stats?: Record<string, unknown>[] });
    },
    prepare(tensors, outputs) {
      const req = {
        model_name: model,
        model_version: version,
        inputs: tensors.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape })),
        outputs: outputs.map((name) => ({ name })),
        raw_input_contents: tensors.map((t) => t.bytes),
      };
      return () =>
        new Promise<Timing>((resolve) => {
          const start = now();
          let sent = start;
          client.ModelInfer!.call(client, req, (err: ServiceError | null) => {
            const done = now();
            resolve({ sendNs: Number(sent - start), waitNs: Number(done - sent), recvNs: 0, ok: !err });
          });
          sent = now();
        });
    },
    close() {
      client.close();
    },
  };
}
