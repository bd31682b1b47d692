// The shared backend suite (test/suites/backend.ts) against ONNX Runtime with a generated
// model, and against the TensorRT and OpenVINO backends over their C/C++ test doubles
// (test/ffi/doubles; not TensorRT, OpenVINO or a GPU).
import { describe } from "vitest";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ElemType, encodeModel, initializer, node, valueInfo } from "../../scripts/lib/onnx-builder.ts";
import { getKoffi } from "../../ffi/load.ts";
import { OnnxRuntimeBackend } from "../../src/backends/onnxruntime/backend.ts";
import { TensorRtBackend } from "../../src/backends/tensorrt/backend.ts";
import { OpenVinoBackend } from "../../src/backends/openvino/backend.ts";
import { backendSuite } from "../suites/backend.ts";

const DOUBLES = join(import.meta.dirname, "doubles");
const has = (cmd: string) => spawnSync(cmd, ["--version"], { stdio: "ignore" }).status === 0;

backendSuite("onnxruntime (generated Add model, OUTPUT0 = INPUT0 + 0.5)", () => {
  const dir = mkdtempSync(join(tmpdir(), "nereid-suite-ort-"));
  const versionDir = join(dir, "1");
  mkdirSync(versionDir);
  const modelPath = join(versionDir, "model.onnx");
  writeFileSync(
    modelPath,
    encodeModel({
      name: "add_half",
      inputs: [valueInfo("INPUT0", ElemType.FLOAT, ["batch", 4])],
      outputs: [valueInfo("OUTPUT0", ElemType.FLOAT, ["batch", 4])],
      nodes: [node("Add", ["INPUT0", "HALF"], ["OUTPUT0"])],
      initializers: [initializer("HALF", ElemType.FLOAT, [], new Uint8Array(new Float32Array([0.5]).buffer))],
    }),
  );
  return {
    backend: new OnnxRuntimeBackend(),
    modelPath,
    modelDir: dir,
    backendConfig: {},
    kind: "KIND_CPU",
    compute: (x) => x + 0.5,
    refuses: { shape: "INVALID_ARG", datatype: "INVALID_ARG" },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
});

describe.skipIf(!has("cc") || !has("c++"))("over fake_nvinfer.cpp and fake_cuda.c", () => {
  backendSuite("tensorrt (test double: OUTPUT0 = 2 × INPUT0)", () => {
    const dir = mkdtempSync(join(tmpdir(), "nereid-suite-trt-"));
    const trt = join(dir, "libfake_nvinfer.so");
    const cuda = join(dir, "libfake_cuda.so");
    execFileSync("c++", ["-shared", "-fPIC", "-std=c++17", "-O1", "-o", trt, join(DOUBLES, "fake_nvinfer.cpp")]);
    execFileSync("cc", ["-shared", "-fPIC", "-O1", "-o", cuda, join(DOUBLES, "fake_cuda.c")]);
    const modelPath = join(dir, "model.plan");
    writeFileSync(modelPath, "FAKEPLAN");
    const saved = process.env.NEREID_CUDA_LIBRARY;
    process.env.NEREID_CUDA_LIBRARY = cuda;
    const t = getKoffi().load(trt);
    const c = getKoffi().load(cuda);
    const counters = [
      t.func("long fake_live_objects()"),
      c.func("long fake_cuda_live_allocations()"),
      c.func("long fake_cuda_live_streams()"),
      c.func("int fake_cuda_primary_refs()"),
    ];
    return {
      backend: new TensorRtBackend(),
      modelPath,
      modelDir: dir,
      backendConfig: { library: trt },
      kind: "KIND_GPU",
      compute: (x) => 2 * x,
      refuses: { shape: "INVALID_ARG", datatype: "unchecked" },
      live: () => counters.reduce((n, f) => n + Number(f()), 0),
      cleanup: () => {
        if (saved === undefined) delete process.env.NEREID_CUDA_LIBRARY;
        else process.env.NEREID_CUDA_LIBRARY = saved;
        rmSync(dir, { recursive: true, force: true });
      },
    };
  });
});

describe.skipIf(!has("cc"))("over fake_openvino_c.c", () => {
  backendSuite("openvino (test double: OUTPUT0 = INPUT0 + 1)", () => {
    const dir = mkdtempSync(join(tmpdir(), "nereid-suite-ov-"));
    const library = join(dir, "libfake_openvino_c.so");
    execFileSync("cc", ["-shared", "-fPIC", "-O1", "-o", library, join(DOUBLES, "fake_openvino_c.c")]);
    const versionDir = join(dir, "repo", "m", "1");
    mkdirSync(versionDir, { recursive: true });
    const modelPath = join(versionDir, "model.xml");
    writeFileSync(modelPath, "<net/>\n");
    writeFileSync(join(versionDir, "model.bin"), "");
    const live = getKoffi().load(library).func("long fake_live_handles()");
    return {
      backend: new OpenVinoBackend(),
      modelPath,
      modelDir: join(dir, "repo", "m"),
      backendConfig: { library },
      kind: "KIND_CPU",
      compute: (x) => x + 1,
      refuses: { shape: "INTERNAL", datatype: "INTERNAL" },
      live: () => Number(live()),
      cleanup: () => rmSync(dir, { recursive: true, force: true }),
    };
  });
});
