/**
 * Issue #32: the embedded triton_python_backend_utils module on its own, run by Debian's
 * /usr/bin/python3 with numpy (written out of the server's source exactly as the stub
 * gets it): datatype helpers, BYTES serialization, Tensor and response checks, TritonError
 * codes, and ModelConfig's auto-complete methods with Triton's conflict errors.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PB_UTILS_SOURCE } from "../../../src/backends/python/pb-utils-source.ts";

const dir = mkdtempSync(join(tmpdir(), "nereid-pb-utils-"));

beforeAll(() => writeFileSync(join(dir, "triton_python_backend_utils.py"), PB_UTILS_SOURCE));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `code` with pb_utils and numpy imported; returns what it prints, parsed as JSON. */
function py(code: string): any {
  const script = `import json, sys\nsys.path.insert(0, ${JSON.stringify(dir)})\nimport numpy as np\nimport triton_python_backend_utils as pb_utils\n${code}\n`;
  return JSON.parse(execFileSync("/usr/bin/python3", ["-c", script], { encoding: "utf8" }));
}

describe("triton_python_backend_utils", () => {
  it("maps datatypes as Triton does", () => {
    expect(
      py(`print(json.dumps([
  pb_utils.triton_string_to_numpy("TYPE_FP32").__name__, pb_utils.triton_string_to_numpy("TYPE_STRING").__name__,
  pb_utils.numpy_to_triton_type(np.float16), pb_utils.numpy_to_triton_type(np.object_), pb_utils.numpy_to_triton_type(np.bool_),
  pb_utils.triton_to_numpy_type(9).__name__, pb_utils.numpy_to_triton_type(np.complex64)]))`),
    ).toEqual(["float32", "object_", 10, 13, 1, "int64", null]);
  });

  it("serializes BYTES as 4-byte little-endian lengths and reads them back as object arrays", () => {
    expect(
      py(`s = pb_utils.serialize_byte_tensor(np.array([b"ab", "z\\u00fc", b""], dtype=np.object_))
d = pb_utils.deserialize_bytes_tensor(s.tobytes())
print(json.dumps([list(s.tobytes()), d.dtype.name, [x.decode() for x in d]]))`),
    ).toEqual([[2, 0, 0, 0, 97, 98, 3, 0, 0, 0, 122, 195, 188, 0, 0, 0, 0], "object", ["ab", "zü", ""]]);
  });

  it("Tensor refuses numpy str arrays; InferenceResponse wants a list; TritonError keeps its code", () => {
    expect(
      py(`out = []
try:
    pb_utils.Tensor("X", np.array(["a"]))
except pb_utils.TritonModelException as e:
    out.append(str(e))
try:
    pb_utils.InferenceResponse(output_tensors=(1,))
except pb_utils.TritonModelException as e:
    out.append(str(e))
t = pb_utils.Tensor("Y", np.arange(6, dtype=np.int32).reshape(2, 3))
e = pb_utils.TritonError("nope", pb_utils.TritonError.NOT_FOUND)
r = pb_utils.InferenceResponse([t], error=e)
out += [t.name(), t.triton_dtype(), t.shape(), e.message(), e.code(), r.has_error(), pb_utils.get_output_tensor_by_name(r, "Y").as_numpy().tolist()]
print(json.dumps(out))`),
    ).toEqual([
      "Tensor dtype used for numpy_array is not supported by Python backend. Please use np.object_ instead.",
      '"output_tensors" must be a list.',
      "Y",
      8,
      [2, 3],
      "nope",
      2,
      true,
      [
        [0, 1, 2],
        [3, 4, 5],
      ],
    ]);
  });

  it("ModelConfig: add_input/add_output fill or agree with the config, set_max_batch_size refuses a different value", () => {
    expect(
      py(`c = pb_utils.ModelConfig({"name": "m", "max_batch_size": 0, "input": [{"name": "A", "data_type": "TYPE_FP32", "dims": [2]}]})
c.add_input({"name": "A", "data_type": "TYPE_FP32", "dims": [2]})
c.add_input({"name": "B", "data_type": "INT8", "dims": [-1]})
c.add_output({"name": "OUT", "data_type": "TYPE_STRING", "dims": [1], "optional": False})
c.set_max_batch_size(4)
c.set_dynamic_batching()
c.set_model_transaction_policy({"decoupled": True})
errors = []
for f in (lambda: c.add_input({"name": "A", "data_type": "TYPE_INT32", "dims": [2]}),
          lambda: c.add_output({"name": "X", "dims": [1]}),
          lambda: c.set_max_batch_size(8),
          lambda: c.set_model_transaction_policy({"other": 1})):
    try:
        f()
        errors.append(None)
    except ValueError as e:
        errors.append(str(e))
print(json.dumps([c.as_dict(), errors]))`),
    ).toEqual([
      {
        name: "m",
        max_batch_size: 4,
        input: [
          { name: "A", data_type: "TYPE_FP32", dims: [2] },
          { name: "B", data_type: "TYPE_INT8", dims: [-1] },
        ],
        output: [{ name: "OUT", data_type: "TYPE_STRING", dims: [1], optional: false }],
        dynamic_batching: {},
        model_transaction_policy: { decoupled: true },
      },
      [
        "unable to load model 'm', configuration expects data_type TYPE_FP32 for input 'A', model provides TYPE_INT32",
        "output 'X' in auto-complete-config function for model 'm' is missing 'data_type' property.",
        "configuration specified max_batch_size 4, but in auto-complete-config function for model 'm' specified max_batch_size 8",
        "model transaction property in auto-complete-config function for model 'm' contains property other than 'decoupled'",
      ],
    ]);
  });

  it("a call that needs the stub says so outside one", () => {
    expect(
      py(`try:
    pb_utils.MetricFamily("x", "y", pb_utils.MetricFamily.COUNTER)
    print(json.dumps(None))
except pb_utils.TritonModelException as e:
    print(json.dumps(str(e)))`),
    ).toBe("this call needs the python backend's stub process (it was made outside a model)");
  });
});
