/**
 * @module ModelInferRequest / ModelInferResponse (as plain objects from protos.ts) ↔ the
 * core's InferenceRequest / InferenceResponse. Wire-format checks only.
 */
import { invalidArg } from "../../core/errors.ts";
import { isDataType, joinBytes, type DataType } from "../../core/tensor.ts";
import { valuesToBytes } from "../../core/tensor-values.ts";
import type { InferenceRequest, InferenceResponse, InputTensor, Parameters, ParameterValue, RequestedOutput } from "../../core/request.ts";

export interface WireParameter {
  parameter_choice?: string;
  bool_param?: boolean;
  int64_param?: number;
  string_param?: string;
  double_param?: number;
  uint64_param?: number;
}

export interface WireContents {
  bool_contents?: boolean[];
  int_contents?: number[];
  int64_contents?: number[];
  uint_contents?: number[];
  uint64_contents?: number[];
  fp32_contents?: number[];
  fp64_contents?: number[];
  bytes_contents?: Uint8Array[];
}

export interface WireInferRequest {
  model_name?: string;
  model_version?: string;
  id?: string;
  parameters?: Record<string, WireParameter>;
  inputs?: { name?: string; datatype?: string; shape?: number[]; parameters?: Record<string, WireParameter>; contents?: WireContents }[];
  outputs?: { name?: string; parameters?: Record<string, WireParameter> }[];
  raw_input_contents?: Uint8Array[];
}

function parameter(p: WireParameter): ParameterValue | undefined {
  switch (p.parameter_choice) {
    case "bool_param":
      return p.bool_param ?? false;
    case "int64_param":
      return p.int64_param ?? 0;
    case "string_param":
      return p.string_param ?? "";
    case "double_param":
      return p.double_param ?? 0;
    case "uint64_param":
      return p.uint64_param ?? 0;
    default:
      return undefined;
  }
}

export function parameters(map: Record<string, WireParameter> | undefined): Parameters {
  const out: Parameters = {};
  for (const [k, v] of Object.entries(map ?? {})) {
    const value = parameter(v);
    if (value !== undefined) out[k] = value;
  }
  return out;
}

/** Typed `contents` → tensor bytes, by the datatype's repeated field. */
function contentsToBytes(datatype: DataType, c: WireContents, name: string): Uint8Array {
  const where = `input '${name}'`;
  switch (datatype) {
    case "BOOL":
      return valuesToBytes(datatype, c.bool_contents ?? [], where);
    case "INT8":
    case "INT16":
    case "INT32":
      return valuesToBytes(datatype, c.int_contents ?? [], where);
    case "INT64":
      return valuesToBytes(datatype, c.int64_contents ?? [], where);
    case "UINT8":
    case "UINT16":
    case "UINT32":
      return valuesToBytes(datatype, c.uint_contents ?? [], where);
    case "UINT64":
      return valuesToBytes(datatype, c.uint64_contents ?? [], where);
    case "FP32":
      return valuesToBytes(datatype, c.fp32_contents ?? [], where);
    case "FP64":
      return valuesToBytes(datatype, c.fp64_contents ?? [], where);
    case "BYTES":
      return joinBytes(c.bytes_contents ?? []);
    case "FP16":
    case "BF16":
      throw invalidArg(`${where}: datatype ${datatype} has no typed contents field; send it in raw_input_contents`);
  }
}

export function toInferenceRequest(msg: WireInferRequest): InferenceRequest {
  const modelName = msg.model_name ?? "";
  const raw = msg.raw_input_contents ?? [];
  const wireInputs = msg.inputs ?? [];
  // Inputs in shared memory take no raw_input_contents entry, as in Triton.
  const inShm = (w: (typeof wireInputs)[number]) => w.parameters?.shared_memory_region !== undefined;
  const rawCount = wireInputs.filter((w) => !inShm(w)).length;
  if (raw.length > 0 && raw.length !== rawCount) {
    throw invalidArg(`expected ${rawCount} raw_input_contents (one per input) but got ${raw.length} for model '${modelName}'`);
  }
  let rawIndex = 0;
  const inputs: InputTensor[] = wireInputs.map((w) => {
    const name = w.name ?? "";
    const datatype = w.datatype ?? "";
    if (!isDataType(datatype)) throw invalidArg(`input '${name}': unsupported datatype '${datatype}'`);
    const shape = (w.shape ?? []).map(Number);
    let data: Uint8Array;
    if (inShm(w)) {
      data = new Uint8Array(0); // read from the region by the core
    } else if (raw.length > 0) {
      if (w.contents && Object.values(w.contents).some((v) => Array.isArray(v) && v.length > 0)) {
        throw invalidArg(`contents field must not be specified when using raw_input_contents for '${name}' for model '${modelName}'`);
      }
      data = raw[rawIndex++]!;
    } else {
      data = contentsToBytes(datatype, w.contents ?? {}, name);
    }
    const input: InputTensor = { name, datatype, shape, data };
    if (w.parameters && Object.keys(w.parameters).length > 0) input.parameters = parameters(w.parameters);
    return input;
  });
  const request: InferenceRequest = {
    modelName,
    modelVersion: msg.model_version || undefined,
    parameters: parameters(msg.parameters),
    inputs,
  };
  if (msg.id) request.id = msg.id;
  if (msg.outputs && msg.outputs.length > 0) {
    request.outputs = msg.outputs.map((o): RequestedOutput => {
      const p = parameters(o.parameters);
      return Object.keys(p).length > 0 ? { name: o.name ?? "", parameters: p } : { name: o.name ?? "" };
    });
  }
  return request;
}

function wireParameter(v: ParameterValue): WireParameter {
  if (typeof v === "boolean") return { bool_param: v };
  if (typeof v === "string") return { string_param: v };
  if (typeof v === "bigint") return { int64_param: Number(v) };
  return Number.isInteger(v) ? { int64_param: v } : { double_param: v };
}

/** The response with every output in raw_output_contents, as Triton always does. */
export function fromInferenceResponse(r: InferenceResponse, extra?: Parameters) {
  const params = { ...r.parameters, ...extra };
  return {
    model_name: r.modelName,
    model_version: r.modelVersion,
    id: r.id ?? "",
    parameters: Object.fromEntries(Object.entries(params).map(([k, v]) => [k, wireParameter(v)])),
    outputs: r.outputs.map((t) =>
      t.sharedMemory
        ? {
            name: t.name,
            datatype: t.datatype,
            shape: t.shape,
            parameters: {
              shared_memory_region: { string_param: t.sharedMemory.region },
              shared_memory_byte_size: { int64_param: t.sharedMemory.byteSize },
              ...(t.sharedMemory.offset ? { shared_memory_offset: { int64_param: t.sharedMemory.offset } } : {}),
            },
          }
        : { name: t.name, datatype: t.datatype, shape: t.shape },
    ),
    // Outputs written to shared memory have no raw_output_contents entry.
    raw_output_contents: r.outputs.filter((t) => !t.sharedMemory).map((t) => t.data),
  };
}
