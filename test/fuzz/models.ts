/**
 * The repository every fuzz target runs against, and what the generators know about its
 * models: names, inputs with their datatypes and dims (without the batch dimension).
 */
import { makeRepository } from "../helpers/repo.ts";
import { ElemType, encodeModel, node, valueInfo } from "../../scripts/lib/onnx-builder.ts";

export interface TensorSpec {
  name: string;
  datatype: string;
  /** Without the batch dimension; -1 is variable. */
  dims: number[];
}

export interface ModelSpec {
  name: string;
  maxBatch: number;
  inputs: TensorSpec[];
  outputs: string[];
  sequence?: boolean;
}

export const MODELS: readonly ModelSpec[] = [
  {
    name: "simple",
    maxBatch: 8,
    inputs: [
      { name: "INPUT0", datatype: "INT32", dims: [16] },
      { name: "INPUT1", datatype: "INT32", dims: [16] },
    ],
    outputs: ["OUTPUT0", "OUTPUT1"],
  },
  { name: "simple_identity", maxBatch: 8, inputs: [{ name: "INPUT0", datatype: "BYTES", dims: [-1] }], outputs: ["OUTPUT0"] },
  { name: "simple_sequence", maxBatch: 8, inputs: [{ name: "INPUT", datatype: "INT32", dims: [1] }], outputs: ["OUTPUT"], sequence: true },
  { name: "int64_identity", maxBatch: 8, inputs: [{ name: "INPUT0", datatype: "INT64", dims: [-1] }], outputs: ["OUTPUT0"] },
];

/** The model that explicit-mode load fuzzing loads and reloads (never one of MODELS). */
export const LOAD_TARGET = "fuzzload";

const INT64_IDENTITY_CONFIG = `name: "int64_identity"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_INT64 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT64 dims: [ -1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
`;

/** A temporary repository with MODELS (remove() it when done). */
export function makeFuzzRepository() {
  const repo = makeRepository(["simple", "simple_identity", "simple_sequence"]);
  repo.add("int64_identity/config.pbtxt", INT64_IDENTITY_CONFIG);
  repo.add(
    "int64_identity/1/model.onnx",
    encodeModel({
      name: "int64_identity",
      inputs: [valueInfo("INPUT0", ElemType.INT64, ["batch", "n"])],
      outputs: [valueInfo("OUTPUT0", ElemType.INT64, ["batch", "n"])],
      nodes: [node("Identity", ["INPUT0"], ["OUTPUT0"])],
    }),
  );
  return repo;
}
