/**
 * Small helpers to encode ONNX models with npm `onnx-proto` (opset 13, IR version 8).
 * Used by scripts/make-models.ts and by tests that need their own tiny models.
 */
import onnxProto from "onnx-proto";

const { onnx } = onnxProto;

/** ONNX TensorProto.DataType values. */
export const ElemType = {
  FLOAT: 1,
  UINT8: 2,
  INT8: 3,
  UINT16: 4,
  INT16: 5,
  INT32: 6,
  INT64: 7,
  STRING: 8,
  BOOL: 9,
  FLOAT16: 10,
  DOUBLE: 11,
  UINT32: 12,
  UINT64: 13,
  BFLOAT16: 16,
} as const;

export type Dim = number | string;

export function valueInfo(name: string, elemType: number, dims: readonly Dim[]) {
  return {
    name,
    type: {
      tensorType: {
        elemType,
        shape: { dim: dims.map((d) => (typeof d === "number" ? { dimValue: d } : { dimParam: d })) },
      },
    },
  };
}

export function node(opType: string, inputs: string[], outputs: string[], attributes: Record<string, number | number[]> = {}, name?: string) {
  return {
    opType,
    input: inputs,
    output: outputs,
    name: name ?? `${opType}_${outputs[0]}`,
    attribute: Object.entries(attributes).map(([key, v]) =>
      Array.isArray(v)
        ? { name: key, type: onnx.AttributeProto.AttributeType.INTS, ints: v }
        : Number.isInteger(v)
          ? { name: key, type: onnx.AttributeProto.AttributeType.INT, i: v }
          : { name: key, type: onnx.AttributeProto.AttributeType.FLOAT, f: v },
    ),
  };
}

export function initializer(name: string, elemType: number, dims: number[], raw: Uint8Array) {
  return { name, dataType: elemType, dims, rawData: raw };
}

export interface GraphSpec {
  name: string;
  inputs: ReturnType<typeof valueInfo>[];
  outputs: ReturnType<typeof valueInfo>[];
  nodes: ReturnType<typeof node>[];
  initializers?: ReturnType<typeof initializer>[];
}

/** Encodes a ModelProto; the same spec always gives the same bytes. */
export function encodeModel(g: GraphSpec): Uint8Array {
  const model = onnx.ModelProto.create({
    irVersion: 8,
    producerName: "nereid",
    opsetImport: [{ domain: "", version: 13 }],
    graph: {
      name: g.name,
      input: g.inputs,
      output: g.outputs,
      node: g.nodes,
      initializer: g.initializers ?? [],
    },
  });
  return onnx.ModelProto.encode(model).finish();
}

/** Deterministic PRNG (mulberry32) for weights. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
