/**
 * @module TensorRT engine tensors ↔ Triton: datatype names, a tensor as a TensorSpec for
 * auto-complete, and the load-time check that the model config and the engine agree
 * (names, datatypes, shapes, the batch dimension and profile 0's batch range). Reshape
 * needs nothing here: the core hands the backend inputs in the model's shapes and maps
 * outputs back (request-validate.ts, server.ts).
 */
import { invalidArg, unsupported } from "../../core/errors.ts";
import { fromConfigType, type DataType } from "../../core/tensor.ts";
import { OPT_PROFILE_SELECTOR, TENSOR_FORMAT_LINEAR, TENSOR_LOCATION, TRT_DATA_TYPE } from "../../../ffi/tensorrt/abi.ts";
import type { TrtTensorInfo } from "../../../ffi/tensorrt/engine.ts";
import type { ModelConfig, ModelInput, ModelOutput } from "../../core/model-config-types.ts";
import type { TensorSpec } from "../backend.ts";

/** nvinfer1::DataType → Triton datatype; the others (kFP8, kINT4, kFP4, kE8M0) have none. */
const TO_TRITON: ReadonlyMap<number, DataType> = new Map([
  [TRT_DATA_TYPE.FLOAT, "FP32"],
  [TRT_DATA_TYPE.HALF, "FP16"],
  [TRT_DATA_TYPE.INT8, "INT8"],
  [TRT_DATA_TYPE.INT32, "INT32"],
  [TRT_DATA_TYPE.BOOL, "BOOL"],
  [TRT_DATA_TYPE.UINT8, "UINT8"],
  [TRT_DATA_TYPE.BF16, "BF16"],
  [TRT_DATA_TYPE.INT64, "INT64"],
]);

export function tritonDataType(trt: number): DataType | undefined {
  return TO_TRITON.get(trt);
}

/** "kFLOAT (0)" */
export function trtDataTypeName(trt: number): string {
  const name = Object.entries(TRT_DATA_TYPE).find(([, v]) => v === trt)?.[0];
  return name ? `k${name} (${trt})` : `DataType ${trt}`;
}

/** The tensor's Triton datatype, or UNSUPPORTED naming the TensorRT type. */
export function tensorDataType(t: TrtTensorInfo, where: string): DataType {
  const dt = tritonDataType(t.dataType);
  if (!dt) throw unsupported(`${where}: tensor '${t.name}' has TensorRT data type ${trtDataTypeName(t.dataType)}, which has no Triton datatype`);
  return dt;
}

/** Refuses what the backend cannot feed: vectorized formats, host tensors, shape tensors. */
function checkServable(t: TrtTensorInfo, where: string): void {
  if (t.format !== TENSOR_FORMAT_LINEAR) {
    throw unsupported(`${where}: tensor '${t.name}' uses TensorRT TensorFormat ${t.format}; the tensorrt backend only serves kLINEAR (row-major) I/O`);
  }
  if (t.shapeInference || t.location !== TENSOR_LOCATION.DEVICE) {
    throw unsupported(`${where}: tensor '${t.name}' is a shape tensor or lives in host memory; the tensorrt backend does not serve those`);
  }
}

export function tensorSpec(t: TrtTensorInfo, where: string): TensorSpec {
  checkServable(t, where);
  return { name: t.name, datatype: tensorDataType(t, where), shape: t.shape };
}

/** An engine tensor as a run uses it. */
export interface BoundTensor {
  info: TrtTensorInfo;
  datatype: DataType;
}

export interface EngineBinding {
  inputs: Map<string, BoundTensor>;
  /** Every output of the engine (TensorRT needs an address for each), listed in config or not. */
  outputs: Map<string, BoundTensor>;
}

/** The profile-0 shape limits an engine reports for an input. */
export type ProfileShape = (name: string, selector: number) => number[] | undefined;

/**
 * Checks the config against the engine: each configured input and output is an engine
 * tensor of that kind with the same datatype and compatible dims (the engine's, less its
 * leading batch dimension when max_batch_size > 0; -1 matches anything); every engine input
 * is configured; with batching, each input's first dimension is dynamic and profile 0
 * accepts max_batch_size.
 */
export function bindEngine(config: ModelConfig, tensors: readonly TrtTensorInfo[], profileShape: ProfileShape, modelName: string): EngineBinding {
  const where = `model '${modelName}'`;
  const maxBatch = config.max_batch_size ?? 0;
  for (const t of tensors) checkServable(t, where);

  const check = (t: ModelInput | ModelOutput, kind: "input" | "output"): BoundTensor => {
    const name = t.name ?? "";
    const info = tensors.find((e) => e.name === name && e.mode === kind);
    if (!info) {
      const names =
        tensors
          .filter((e) => e.mode === kind)
          .map((e) => `'${e.name}'`)
          .join(", ") || "none";
      throw invalidArg(`${where}: ${kind} '${name}' is not an ${kind} of the TensorRT engine (its ${kind}s: ${names})`);
    }
    const datatype = tensorDataType(info, where);
    const configured = t.data_type ? fromConfigType(t.data_type) : undefined;
    if (configured && configured !== datatype) {
      throw invalidArg(`${where}: ${kind} '${name}' is ${t.data_type} in config.pbtxt but ${trtDataTypeName(info.dataType)} (TYPE_${datatype}) in the engine`);
    }
    let engineDims = info.shape;
    if (maxBatch > 0) {
      if (engineDims[0] !== -1) {
        throw invalidArg(
          `${where}: max_batch_size is ${maxBatch}, so the engine's ${kind} '${name}' needs a dynamic first dimension to carry the batch, but its shape is [${info.shape.join(",")}]`,
        );
      }
      engineDims = engineDims.slice(1);
    }
    const dims = t.reshape ? (t.reshape.shape ?? []) : (t.dims ?? []);
    const fits = dims.length === engineDims.length && dims.every((d, i) => d === -1 || engineDims[i] === -1 || d === engineDims[i]);
    if (!fits) {
      throw invalidArg(
        `${where}: ${kind} '${name}' has dims [${dims.join(",")}] in config.pbtxt but the engine's shape is [${info.shape.join(",")}]` +
          (maxBatch > 0 ? " (its first dimension is the batch)" : ""),
      );
    }
    if (kind === "input" && maxBatch > 0) {
      const max = profileShape(name, OPT_PROFILE_SELECTOR.MAX);
      if (max && max[0]! < maxBatch) {
        throw invalidArg(`${where}: max_batch_size is ${maxBatch} but the engine's optimization profile 0 accepts at most ${max[0]} for input '${name}'`);
      }
    }
    return { info, datatype };
  };

  const inputs = new Map<string, BoundTensor>();
  for (const t of config.input ?? []) inputs.set(t.name ?? "", check(t, "input"));
  for (const e of tensors) {
    if (e.mode === "input" && !inputs.has(e.name)) {
      throw invalidArg(`${where}: the engine's input '${e.name}' is not in config.pbtxt; TensorRT needs every input`);
    }
  }
  const outputs = new Map<string, BoundTensor>();
  for (const t of config.output ?? []) outputs.set(t.name ?? "", check(t, "output"));
  for (const e of tensors) {
    if (e.mode === "output" && !outputs.has(e.name)) outputs.set(e.name, { info: e, datatype: tensorDataType(e, where) });
  }
  return { inputs, outputs };
}
