/**
 * The repository every fuzz target runs against, and what the generators know about its
 * models: names, inputs with their datatypes and dims (without the batch dimension).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { makeRepository } from "../helpers/repo.ts";
import { ElemType, encodeModel, node, valueInfo } from "../../scripts/lib/onnx-builder.ts";
import { PYTHON_ADD_SUB } from "../../scripts/lib/bench-models.ts";

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

const SIMPLE_INPUTS: TensorSpec[] = [
  { name: "INPUT0", datatype: "INT32", dims: [16] },
  { name: "INPUT1", datatype: "INT32", dims: [16] },
];

export const MODELS: readonly ModelSpec[] = [
  { name: "simple", maxBatch: 8, inputs: SIMPLE_INPUTS, outputs: ["OUTPUT0", "OUTPUT1"] },
  { name: "simple_identity", maxBatch: 8, inputs: [{ name: "INPUT0", datatype: "BYTES", dims: [-1] }], outputs: ["OUTPUT0"] },
  { name: "simple_sequence", maxBatch: 8, inputs: [{ name: "INPUT", datatype: "INT32", dims: [1] }], outputs: ["OUTPUT"], sequence: true },
  { name: "int64_identity", maxBatch: 8, inputs: [{ name: "INPUT0", datatype: "INT64", dims: [-1] }], outputs: ["OUTPUT0"] },
  // `simple` on the other paths a request can take: its queue and batcher on the scheduling
  // thread (with frontend worker threads), a TypeScript model's worker thread, a Python stub.
  { name: "simple_batched", maxBatch: 8, inputs: SIMPLE_INPUTS, outputs: ["OUTPUT0", "OUTPUT1"] },
  { name: "ts_add_sub", maxBatch: 8, inputs: SIMPLE_INPUTS, outputs: ["OUTPUT0", "OUTPUT1"] },
  { name: "py_add_sub", maxBatch: 8, inputs: SIMPLE_INPUTS, outputs: ["OUTPUT0", "OUTPUT1"] },
];

/** The interpreter of py_add_sub: Debian's, with python3-numpy (.ci/run installs it). */
export const PYTHON = "/usr/bin/python3";

/** The model that explicit-mode load fuzzing loads and reloads (never one of MODELS). */
export const LOAD_TARGET = "fuzzload";

const INT64_IDENTITY_CONFIG = `name: "int64_identity"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_INT64 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT64 dims: [ -1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
`;

const SIMPLE_IO = `max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 16 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
`;

const TS_ADD_SUB = `export default class AddSub {
  execute(requests) {
    return requests.map((r) => {
      const a = r.input("INPUT0");
      const b = r.input("INPUT1").data;
      const sum = Int32Array.from(a.data, (x, i) => x + b[i]);
      const diff = Int32Array.from(a.data, (x, i) => x - b[i]);
      return { outputs: [
        { name: "OUTPUT0", datatype: "INT32", shape: a.shape, data: sum },
        { name: "OUTPUT1", datatype: "INT32", shape: a.shape, data: diff },
      ] };
    });
  }
}
`;

/** A temporary repository with MODELS (remove() it when done). */
export function makeFuzzRepository() {
  const repo = makeRepository(["simple", "simple_identity", "simple_sequence"]);
  repo.add("simple_batched/config.pbtxt", `name: "simple_batched"\nplatform: "onnxruntime_onnx"\n${SIMPLE_IO}dynamic_batching { }\n`);
  repo.add("simple_batched/1/model.onnx", readFileSync(join(repo.dir, "simple", "1", "model.onnx")));
  repo.add("ts_add_sub/config.pbtxt", `name: "ts_add_sub"\nbackend: "typescript"\n${SIMPLE_IO}`);
  repo.add("ts_add_sub/1/model.js", TS_ADD_SUB);
  repo.add("py_add_sub/config.pbtxt", `name: "py_add_sub"\nbackend: "python"\n${SIMPLE_IO}`);
  repo.add("py_add_sub/1/model.py", PYTHON_ADD_SUB);
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
