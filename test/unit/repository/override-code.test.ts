/**
 * #29 item 1: a load's overrides may not bring code the server would run, unless
 * --allow-model-code-overrides=true. File names are judged after `..` and case.
 */
import { describe, expect, it } from "vitest";
import { checkOverride, checkOverrideBackend } from "../../../src/repository/override-files.ts";
import type { ModelConfig } from "../../../src/core/model-config-types.ts";

const bytes = new Uint8Array([1]);
const files = (...names: string[]) => Object.fromEntries(names.map((n) => [n, bytes]));
const refusal = (name: string, rel: string) =>
  `file override '${rel}' of model '${name}' is executable model code, refused unless the server runs with --allow-model-code-overrides=true`;

describe("checkOverride (#29)", () => {
  it("refuses code files in any case and after path tricks; allows graphs and data", () => {
    for (const rel of [
      "1/model.ts",
      "1/model.TS",
      "1/model.js",
      "1/x.mjs",
      "1/x.cjs",
      "1/x.mts",
      "1/x.cts",
      "1/x.tsx",
      "1/x.jsx",
      "1/model.py",
      "1/sub/../model.ts",
      "1\\model.ts",
      "1/model.ts/",
      "1/libcustom.so",
      "1/libplugin.so.10.1",
      "1/addon.node",
      "1/x.dylib",
      "1/x.dll",
      "1/x.wasm",
    ]) {
      expect(() => checkOverride("pwn", undefined, files(rel), false), rel).toThrow(refusal("pwn", rel));
    }
    for (const rel of ["1/model.onnx", "1/model.plan", "1/model.xml", "1/model.bin", "config.pbtxt", "1/labels.txt", "1/model.ts.onnx", "1/so"]) {
      expect(() => checkOverride("ok", undefined, files(rel), false), rel).not.toThrow();
    }
    expect(() => checkOverride("pwn", undefined, files("1/model.ts", "1/model.py"), true)).not.toThrow();
  });

  it("refuses accelerator and session parameters that name host files, libraries or pointers", () => {
    const trt = (parameters: Record<string, string>): ModelConfig =>
      ({ optimization: { execution_accelerators: { gpu_execution_accelerator: [{ name: "tensorrt", parameters }] } } }) as ModelConfig;
    expect(() => checkOverride("m", trt({ trt_extra_plugin_lib_paths: "/tmp/evil.so" }), undefined, false)).toThrow(
      "config override of model 'm': 'tensorrt' accelerator parameter 'trt_extra_plugin_lib_paths' names host files or memory, refused unless the server runs with --allow-model-code-overrides=true",
    );
    expect(() => checkOverride("m", trt({ trt_engine_cache_path: "/etc" }), undefined, false)).toThrow("'trt_engine_cache_path'");
    const cuda = {
      optimization: { execution_accelerators: { gpu_execution_accelerator: [{ name: "cuda", parameters: { user_compute_stream: "12345" } }] } },
    } as ModelConfig;
    expect(() => checkOverride("m", cuda, undefined, false)).toThrow("'user_compute_stream'");
    const ov = {
      optimization: { execution_accelerators: { cpu_execution_accelerator: [{ name: "openvino", parameters: { cache_dir: "/x" } }] } },
    } as ModelConfig;
    expect(() => checkOverride("m", ov, undefined, false)).toThrow("'openvino' accelerator parameter 'cache_dir'");
    const session = { parameters: { "session.optimized_model_external_initializers_file_name": { string_value: "x" } } } as ModelConfig;
    expect(() => checkOverride("m", session, undefined, false)).toThrow("parameter 'session.optimized_model_external_initializers_file_name'");
    // What a graph needs stays allowed.
    expect(() => checkOverride("m", trt({ precision_mode: "FP16", max_workspace_size_bytes: "1073741824" }), undefined, false)).not.toThrow();
    expect(() =>
      checkOverride(
        "m",
        { parameters: { "session.intra_op.allow_spinning": { string_value: "0" }, labels_file: { string_value: "x" } } } as ModelConfig,
        undefined,
        false,
      ),
    ).not.toThrow();
    expect(() => checkOverride("m", trt({ trt_extra_plugin_lib_paths: "/tmp/evil.so" }), undefined, true)).not.toThrow();
  });

  it("refuses the backends that run model files as code over client files", () => {
    expect(() => checkOverrideBackend("pwn", "typescript", false)).toThrow(
      "model 'pwn': backend 'typescript' runs the model's files as code, and the file overrides are the client's; refused unless the server runs with --allow-model-code-overrides=true",
    );
    expect(() => checkOverrideBackend("pwn", "python", false)).toThrow("backend 'python'");
    expect(() => checkOverrideBackend("pwn", "typescript", true)).not.toThrow();
    for (const b of ["onnxruntime", "tensorrt", "openvino"]) expect(() => checkOverrideBackend("m", b, false)).not.toThrow();
  });
});
