/**
 * Models and request bodies the frontend benchmarks share: a repository with `simple` and
 * an FP32 identity model (any length), and gRPC message frames for h2load.
 */
import { cpSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { encodeModel, valueInfo, node, ElemType } from "./onnx-builder.ts";
import { messageType } from "../../src/frontends/grpc/protos.ts";

/** `simple` as a Python model (model.py): OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1, in whatever datatype the inputs come. */
export const PYTHON_ADD_SUB = `import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            a = pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy()
            b = pb_utils.get_input_tensor_by_name(r, "INPUT1").as_numpy()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", a + b), pb_utils.Tensor("OUTPUT1", a - b)]))
        return out
`;

/** The files of `py_simple`, `simple` (its config given) as a Python model: paths inside a repository and their texts. */
export function pythonSimpleFiles(simpleConfig: string): Record<string, string> {
  return {
    "py_simple/config.pbtxt": simpleConfig.replace('name: "simple"', 'name: "py_simple"').replace('platform: "onnxruntime_onnx"', 'backend: "python"'),
    "py_simple/1/model.py": PYTHON_ADD_SUB,
  };
}

/** Writes `py_simple` (pythonSimpleFiles) beside `simple` in the repository at `repo`. */
export function writePythonSimple(repo: string): void {
  mkdirSync(join(repo, "py_simple", "1"), { recursive: true });
  for (const [path, text] of Object.entries(pythonSimpleFiles(readFileSync(join(repo, "simple", "config.pbtxt"), "utf8"))))
    writeFileSync(join(repo, path), text);
}

/** Writes `<work>/models` with the example `simple` and `fp32_identity` (X → Y, FP32 [-1]); returns its path. */
export function simpleAndIdentityRepository(root: string, work: string): string {
  const repo = join(work, "models");
  cpSync(join(root, "model_repository", "simple"), join(repo, "simple"), { recursive: true });
  mkdirSync(join(repo, "fp32_identity", "1"), { recursive: true });
  writeFileSync(
    join(repo, "fp32_identity", "config.pbtxt"),
    'name: "fp32_identity"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 0\ninput [ { name: "X" data_type: TYPE_FP32 dims: [ -1 ] } ]\noutput [ { name: "Y" data_type: TYPE_FP32 dims: [ -1 ] } ]\ninstance_group [ { count: 1 kind: KIND_CPU } ]\n',
  );
  writeFileSync(
    join(repo, "fp32_identity", "1", "model.onnx"),
    encodeModel({
      name: "id",
      inputs: [valueInfo("X", ElemType.FLOAT, ["n"])],
      outputs: [valueInfo("Y", ElemType.FLOAT, ["n"])],
      nodes: [node("Identity", ["X"], ["Y"])],
    }),
  );
  return repo;
}

/** A ModelInferRequest as a gRPC message frame: compressed flag, 4-byte big-endian length, protobuf bytes. */
export function grpcFrame(obj: object): Buffer {
  const t = messageType("inference.ModelInferRequest");
  const bytes = t.encode(t.fromObject(obj)).finish();
  const head = Buffer.alloc(5);
  head.writeUInt32BE(bytes.byteLength, 1);
  return Buffer.concat([head, Buffer.from(bytes)]);
}

/** What a bench changes in `simple`'s request, for each protocol: request parameters, inputs (and gRPC's raw contents), requested outputs. */
export interface RequestExtras {
  json?: { parameters?: object; inputs?: object[]; outputs?: object[] };
  grpc?: { parameters?: object; inputs?: object[]; raw_input_contents?: Uint8Array[]; outputs?: object[] };
}

/**
 * `simple`'s request in files under `work`: the JSON body (INPUT0 and INPUT1 both 0..15) and
 * the same request as a gRPC frame for `model` (h2load's -d), each with `extras`.
 */
export function simpleRequestFiles(work: string, model = "simple", extras: RequestExtras = {}): { json: string; grpc: string } {
  const A = Array.from({ length: 16 }, (_, i) => i);
  const json = join(work, "simple.json");
  writeFileSync(
    json,
    JSON.stringify({
      inputs: [
        { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: A },
        { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: A },
      ],
      ...extras.json,
    }),
  );
  const a = new Uint8Array(Int32Array.from(A).buffer);
  const grpc = join(work, "simple.grpc");
  writeFileSync(
    grpc,
    grpcFrame({
      model_name: model,
      inputs: ["INPUT0", "INPUT1"].map((name) => ({ name, datatype: "INT32", shape: [1, 16] })),
      raw_input_contents: [a, a],
      ...extras.grpc,
    }),
  );
  return { json, grpc };
}
