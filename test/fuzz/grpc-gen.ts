/**
 * gRPC cases (G-02, G-03, G-09, P-27, P-28): ModelInferRequest messages written field by
 * field from a grammar (raw and typed contents, 64-bit parameters and shapes at their
 * edges, every InferParameter kind), other unary RPCs through protobufjs, then protobuf
 * mutations at the field or byte level. Sent as bytes (rawGrpcClient).
 */
import { Client, credentials, Metadata, type ServiceError } from "@grpc/grpc-js";
import type { Rng } from "./rng.ts";
import { MODELS, LOAD_TARGET, type ModelSpec, type TensorSpec } from "./models.ts";
import { vint, str, msg, f64, packed, mapEntry, encodeFields, mutateWire, type WireField } from "./protobuf-wire.ts";
import { concat } from "./mutate.ts";
import { messageType } from "../../src/frontends/grpc/protos.ts";

export interface GrpcCase {
  /** The RPC's name in inference.GRPCInferenceService. */
  method: string;
  body: Uint8Array;
  /** ModelStreamInfer only: the further messages sent on the stream after `body`. */
  more?: Uint8Array[];
}

const SIZE: Record<string, number> = {
  BOOL: 1,
  UINT8: 1,
  INT8: 1,
  UINT16: 2,
  INT16: 2,
  FP16: 2,
  BF16: 2,
  UINT32: 4,
  INT32: 4,
  FP32: 4,
  UINT64: 8,
  INT64: 8,
  FP64: 8,
};
const DATATYPES = [
  "BOOL",
  "UINT8",
  "UINT16",
  "UINT32",
  "UINT64",
  "INT8",
  "INT16",
  "INT32",
  "INT64",
  "FP16",
  "FP32",
  "FP64",
  "BYTES",
  "BF16",
  "int32",
  "",
  "TYPE_INT32",
];
const U64_MAX = (1n << 64n) - 1n;

/** An InferParameter message: bool = 1, int64 = 2, string = 3, double = 4, uint64 = 5. */
function param(r: Rng, key: string): WireField[] {
  const numeric = ["sequence_id", "priority", "timeout"].includes(key);
  const kind = numeric
    ? r.weighted([
        [6, 2],
        [3, 5],
        [1, 3],
        [0.5, 4],
        [0.5, 1],
      ] as const)
    : r.weighted([
        [3, 1],
        [2, 3],
        [2, 2],
        [1, 4],
        [1, 5],
      ] as const);
  switch (kind) {
    case 1:
      return [vint(1, r.chance(0.5))];
    case 2:
      return [vint(2, r.pick<bigint | number>([1, 2, 3, 0, -1, -5, 1234567890123456789n, 1234567890123456790n, 2n ** 53n + 1n, 2n ** 63n - 1n, -(2n ** 63n)]))];
    case 3:
      return [str(3, r.pick(["x", "", "1", "seq-a", "\u{1F600}"]))];
    case 4:
      return [f64(4, r.pick([0.5, -1, NaN, Infinity, 1e300, 1]))];
    default:
      return [vint(5, r.pick<bigint | number>([1, 2, 0, 2n ** 53n + 1n, 2n ** 63n, U64_MAX, 1234567890123456789n]))];
  }
}

function params(no: number, r: Rng, keys: readonly string[]): WireField[] {
  return keys.map((k) => mapEntry(no, k, param(r, k)));
}

/** InferTensorContents for `n` elements of `datatype`: the field protobuf gives that type. */
function typedContents(datatype: string, n: number, r: Rng): WireField[] {
  const ints = (lo: number, hi: number) => Array.from({ length: n }, () => (r.chance(0.03) ? r.pick([2 ** 31, -(2 ** 31) - 1, 2 ** 32]) : r.range(lo, hi)));
  switch (datatype) {
    case "BOOL":
      return [packed(1, ints(0, 1))];
    case "INT8":
    case "INT16":
    case "INT32":
      return [packed(2, ints(-100, 100))];
    case "INT64":
      return [
        packed(
          3,
          Array.from({ length: n }, () => r.pick<bigint | number>([1, -1, 9007199254740993n, -(2n ** 63n), 2n ** 63n - 1n])),
        ),
      ];
    case "UINT8":
    case "UINT16":
    case "UINT32":
      return [packed(4, ints(0, 255))];
    case "UINT64":
      return [
        packed(
          5,
          Array.from({ length: n }, () => r.pick<bigint | number>([0, 1, U64_MAX, 9007199254740993n])),
        ),
      ];
    case "FP32":
      return [
        packed(
          6,
          Array.from({ length: n }, () => r.pick([0.5, -1, NaN, Infinity, 3e38])),
          "float",
        ),
      ];
    case "FP64":
      return [
        packed(
          7,
          Array.from({ length: n }, () => r.pick([0.5, -1, NaN, -Infinity])),
          "double",
        ),
      ];
    case "BYTES":
      return Array.from({ length: n }, () => str(8, r.pick(["", "a", "hello", "\u00e9"])));
    default:
      return [packed(r.range(1, 8), ints(0, 9))];
  }
}

function rawContents(datatype: string, n: number, r: Rng): Uint8Array {
  if (datatype !== "BYTES") return r.bytes(n * (SIZE[datatype] ?? 4));
  const parts: Uint8Array[] = [];
  for (let i = 0; i < n; i++) {
    const s = r.bytes(r.int(5));
    const len = new Uint8Array(4);
    new DataView(len.buffer).setUint32(0, r.chance(0.05) ? r.pick([0xffffffff, s.length + 1]) : s.length, true);
    parts.push(len, s);
  }
  return concat(...parts);
}

function inputTensor(t: TensorSpec, m: ModelSpec, r: Rng, raws: Uint8Array[], typed: boolean): WireField {
  const datatype = r.chance(0.08) ? r.pick(DATATYPES) : t.datatype;
  let shape: (number | bigint)[] = [
    ...(m.maxBatch > 0
      ? [
          r.weighted([
            [8, 1],
            [2, 2],
            [0.5, 0],
            [0.3, m.maxBatch + 1],
          ] as const),
        ]
      : []),
    ...t.dims.map((d) => (d === -1 ? r.range(0, 4) : d)),
  ];
  if (r.chance(0.1)) {
    shape = [...shape];
    switch (r.int(3)) {
      case 0:
        shape[r.int(shape.length)] = r.pick<number | bigint>([-1, -5, 0, 2 ** 31, 2n ** 53n + 1n, 2n ** 63n - 1n, -(2n ** 63n)]);
        break;
      case 1:
        shape.push(r.pick([1, 0, 2]));
        break;
      default:
        shape = r.chance(0.5) ? Array(r.pick([100, 20000])).fill(r.pick([1, 2])) : [];
    }
  }
  const count = shape.reduce<number>((a, b) => a * Math.max(0, Number(b)), 1);
  const n = Math.min(count, 4096) + (r.chance(0.05) ? r.pick([-1, 1]) : 0);
  const fields: WireField[] = [str(1, r.chance(0.04) ? r.pick(["INPUT9", "", "input0"]) : t.name), str(2, datatype)];
  if (r.chance(0.8)) fields.push(packed(3, shape));
  else fields.push(...shape.map((d) => vint(3, d))); // unpacked, as protobuf parsers must also accept
  if (r.chance(0.05)) fields.push(...params(4, r, [r.pick(["binary_data_size", "shared_memory_region", "x", "triton_x"])]));
  if (typed) fields.push(msg(5, typedContents(datatype, Math.max(0, n), r)));
  else raws.push(rawContents(datatype, Math.max(0, n), r));
  return msg(5, fields);
}

function inferRequest(r: Rng): Uint8Array {
  const m = r.weighted(MODELS.map((x) => [x.name === "simple" ? 4 : 2, x] as const));
  const f: WireField[] = [str(1, r.chance(0.95) ? m.name : r.pick(["nope", "", "%zz", "simple\0"]))];
  if (r.chance(0.15)) f.push(str(2, r.pick(["1", "", "0", "2", "x", "18446744073709551616", "-1"])));
  if (r.chance(0.3)) f.push(str(3, r.pick(["id", "", "\u{1F600}"])));
  const keys: string[] = [];
  if (m.sequence || r.chance(0.05)) keys.push("sequence_id", "sequence_start", "sequence_end");
  for (const k of ["priority", "timeout", "binary_data_output", "triton_x", "triton_enable_empty_final_response", "custom"]) if (r.chance(0.06)) keys.push(k);
  for (const k of keys) {
    if (m.sequence && (k === "sequence_start" || k === "sequence_end") && r.chance(0.9)) f.push(mapEntry(4, k, [vint(1, true)]));
    else if (m.sequence && k === "sequence_id" && r.chance(0.8)) f.push(mapEntry(4, k, [vint(5, r.range(1, 4))]));
    else f.push(...params(4, r, [k]));
  }
  const raws: Uint8Array[] = [];
  const typed = r.chance(0.2);
  const inputs = m.inputs.map((t) => inputTensor(t, m, r, raws, typed && r.chance(0.95)));
  if (r.chance(0.03)) inputs.push(inputs[0]!);
  if (r.chance(0.03)) inputs.pop();
  f.push(...inputs);
  if (r.chance(0.3)) {
    for (const o of m.outputs) {
      if (!r.chance(0.7)) continue;
      const of: WireField[] = [str(1, r.chance(0.05) ? "OUTPUT9" : o)];
      if (r.chance(0.2)) of.push(...params(2, r, [r.pick(["classification", "binary_data", "shared_memory_region"])]));
      f.push(msg(6, of));
    }
  }
  if (r.chance(0.04)) raws.push(r.bytes(r.int(8)));
  if (r.chance(0.04)) raws.pop();
  f.push(...raws.map((b) => str(7, b)));
  return encodeFields(f);
}

const enc = (type: string, obj: object) => messageType(type).encode(messageType(type).fromObject(obj)).finish();
const odd = (r: Rng) => r.pick(["nope", LOAD_TARGET, "", "%zz", "../../x", "a/b", "..", "x".repeat(300), "simple_identity\0"]);

/** A unary RPC other than ModelInfer, encoded with protobufjs. */
function otherRequest(r: Rng): GrpcCase {
  const model = () => (r.chance(0.5) ? r.pick(MODELS).name : odd(r));
  const [method, type, obj] = r.pick<() => [string, string, object]>([
    () => ["ServerLive", "ServerLiveRequest", {}],
    () => ["ServerReady", "ServerReadyRequest", {}],
    () => ["ServerMetadata", "ServerMetadataRequest", {}],
    () => ["ModelReady", "ModelReadyRequest", { name: model(), version: r.pick(["", "1", "x", "99"]) }],
    () => ["ModelMetadata", "ModelMetadataRequest", { name: model(), version: r.pick(["", "1", "x", "18446744073709551616"]) }],
    () => ["ModelConfig", "ModelConfigRequest", { name: model(), version: r.pick(["", "1", "2"]) }],
    () => ["ModelStatistics", "ModelStatisticsRequest", { name: r.chance(0.3) ? "" : model(), version: r.pick(["", "1", "x"]) }],
    () => ["RepositoryIndex", "RepositoryIndexRequest", { repository_name: r.pick(["", "x"]), ready: r.chance(0.5) }],
    () => [
      "RepositoryModelLoad",
      "RepositoryModelLoadRequest",
      {
        repository_name: r.pick(["", "", "x"]),
        model_name: odd(r),
        parameters: r.chance(0.5)
          ? {
              config: { string_param: r.pick(["{}", "{", "[]", '{"name":"x"}', "null"]) },
              [r.pick(["file:1/model.onnx", "file:../x", "file:", "x"])]: r.pick([
                { bytes_param: Buffer.from("x") },
                { string_param: "%%" },
                { int64_param: -1 },
              ]),
            }
          : {},
      },
    ],
    () => [
      "RepositoryModelUnload",
      "RepositoryModelUnloadRequest",
      { model_name: odd(r), parameters: r.chance(0.5) ? { unload_dependents: r.pick([{ bool_param: true }, { string_param: "x" }]) } : {} },
    ],
    () => ["SystemSharedMemoryStatus", "SystemSharedMemoryStatusRequest", { name: r.pick(["", "r0", "%zz"]) }],
    () => [
      "SystemSharedMemoryRegister",
      "SystemSharedMemoryRegisterRequest",
      { name: r.pick(["r0", ""]), key: r.pick(["/nereid-fuzz-missing", "", "../x"]), offset: r.pick([0, 8, 2 ** 53]), byte_size: r.pick([0, 64, 2 ** 53]) },
    ],
    () => ["SystemSharedMemoryUnregister", "SystemSharedMemoryUnregisterRequest", { name: r.pick(["", "r0", "%zz"]) }],
    () => ["CudaSharedMemoryStatus", "CudaSharedMemoryStatusRequest", { name: r.pick(["", "r0"]) }],
    () => [
      "CudaSharedMemoryRegister",
      "CudaSharedMemoryRegisterRequest",
      { name: "r0", raw_handle: Buffer.from(r.bytes(r.int(70))), device_id: r.pick([0, -1, 99]), byte_size: r.pick([0, 64]) },
    ],
    () => ["CudaSharedMemoryUnregister", "CudaSharedMemoryUnregisterRequest", { name: r.pick(["", "r0"]) }],
    () => [
      "TraceSetting",
      "TraceSettingRequest",
      {
        model_name: r.chance(0.5) ? "" : model(),
        settings: Object.fromEntries(
          Array.from({ length: r.range(0, 3) }, () => [
            r.pick(["trace_file", "trace_level", "trace_rate", "trace_count", "log_frequency", "trace_mode", "x"]),
            { value: r.pick([["/tmp/nereid-fuzz-trace.json"], ["TIMESTAMPS"], ["OFF"], ["1000"], ["-1"], ["x"], [], ["1", "2"]]) },
          ]),
        ),
      },
    ],
  ])();
  return { method, body: enc(`inference.${type}`, obj) };
}

function mutated(body: Uint8Array, r: Rng): Uint8Array {
  for (let i = r.chance(0.5) ? r.range(1, 3) : 0; i > 0; i--) body = mutateWire(body, r);
  return body;
}

/** One gRPC case: mostly ModelInfer, some ModelStreamInfer streams of 1–3 requests, other RPCs; half of them mutated on the wire. */
export function genGrpcCase(r: Rng): GrpcCase {
  const kind = r.weighted([
    [70, "infer"],
    [10, "stream"],
    [20, "other"],
  ] as const);
  if (kind === "stream") {
    const n = r.range(1, 3);
    return { method: "ModelStreamInfer", body: mutated(inferRequest(r), r), more: Array.from({ length: n - 1 }, () => mutated(inferRequest(r), r)) };
  }
  const c = kind === "infer" ? { method: "ModelInfer", body: inferRequest(r) } : otherRequest(r);
  return { method: c.method, body: mutated(c.body, r) };
}

export interface GrpcAnswer {
  code: number;
  details: string;
  /** The response message bytes on OK (a stream's: each response, in order). */
  body?: Uint8Array;
  stream?: Uint8Array[];
}

/** A grpc-js client that sends and receives message bytes as they are. */
export function rawGrpcClient(target: string) {
  const client = new Client(target, credentials.createInsecure(), { "grpc.max_receive_message_length": -1, "grpc.max_send_message_length": -1 });
  const id = (b: Buffer) => b;
  return {
    call(method: string, body: Uint8Array, timeoutMs: number): Promise<GrpcAnswer> {
      return new Promise((resolve) => {
        client.makeUnaryRequest(
          `/inference.GRPCInferenceService/${method}`,
          id,
          id,
          Buffer.from(body),
          new Metadata(),
          { deadline: Date.now() + timeoutMs },
          (err: ServiceError | null, res?: Buffer) => resolve(err ? { code: err.code, details: err.details ?? "" } : { code: 0, details: "", body: res }),
        );
      });
    },
    /** A ModelStreamInfer stream: writes `bodies`, half-closes, and collects the responses and the final status. */
    stream(bodies: Uint8Array[], timeoutMs: number): Promise<GrpcAnswer> {
      return new Promise((resolve) => {
        const call = client.makeBidiStreamRequest("/inference.GRPCInferenceService/ModelStreamInfer", id, id, new Metadata(), {
          deadline: Date.now() + timeoutMs,
        });
        const responses: Uint8Array[] = [];
        call.on("data", (b: Buffer) => responses.push(b));
        call.on("error", () => {}); // the status below carries it
        call.on("status", (st: { code: number; details: string }) => resolve({ code: st.code, details: st.details ?? "", stream: responses }));
        for (const b of bodies) call.write(Buffer.from(b));
        call.end();
      });
    },
    close: () => client.close(),
  };
}
