/**
 * @module Protocol datatypes ↔ ONNX tensor element types, and core Tensors ↔ the
 * ORT inputs and outputs of ffi/onnxruntime (BYTES in Triton's serialization on both sides).
 */
import { ONNX_TYPE } from "../../../ffi/onnxruntime/symbols.ts";
import type { DataType, Tensor } from "../../core/tensor.ts";
import type { OrtInput, OrtOutput } from "../../../ffi/onnxruntime/value.ts";

const TO_ONNX: Record<DataType, number> = {
  BOOL: ONNX_TYPE.BOOL,
  UINT8: ONNX_TYPE.UINT8,
  UINT16: ONNX_TYPE.UINT16,
  UINT32: ONNX_TYPE.UINT32,
  UINT64: ONNX_TYPE.UINT64,
  INT8: ONNX_TYPE.INT8,
  INT16: ONNX_TYPE.INT16,
  INT32: ONNX_TYPE.INT32,
  INT64: ONNX_TYPE.INT64,
  FP16: ONNX_TYPE.FLOAT16,
  FP32: ONNX_TYPE.FLOAT,
  FP64: ONNX_TYPE.DOUBLE,
  BYTES: ONNX_TYPE.STRING,
  BF16: ONNX_TYPE.BFLOAT16,
};

const FROM_ONNX = new Map<number, DataType>(Object.entries(TO_ONNX).map(([k, v]) => [v, k as DataType]));

export function onnxElementType(dt: DataType): number {
  return TO_ONNX[dt];
}

/** The protocol datatype of an ONNX element type, or undefined when there is none. */
export function protocolType(elementType: number): DataType | undefined {
  return FROM_ONNX.get(elementType);
}

export function toOrtInput(t: Tensor): OrtInput {
  const elementType = TO_ONNX[t.datatype];
  return { name: t.name, elementType, shape: t.shape, data: t.data };
}

export function fromOrtOutput(o: OrtOutput): Tensor {
  const datatype = protocolType(o.elementType);
  if (!datatype) throw new Error(`onnxruntime: output '${o.name}' has element type ${o.elementType}, which has no Triton datatype`);
  return { name: o.name, datatype, shape: o.shape, data: o.data };
}
