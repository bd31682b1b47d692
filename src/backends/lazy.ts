/**
 * @module The backends other than ONNX Runtime, each imported when a model first needs it
 * (registry.ts lazyBackend): TensorRT, OpenVINO, TypeScript and Python. Their traits are
 * written here so that the registry can match configs and model files without importing
 * them; test/unit/backends/registry.test.ts checks them against each backend's own.
 */
import { lazyBackend } from "./registry.ts";
import type { Backend } from "./backend.ts";

type BackendConfig = Record<string, Record<string, string>>;

export const LAZY_BACKENDS: readonly ((backendConfig: BackendConfig) => Backend)[] = [
  () =>
    lazyBackend(
      { name: "tensorrt", platform: "tensorrt_plan", defaultModelFilename: "model.plan", gpuOnly: true, describe: true },
      async () => new (await import("./tensorrt/backend.ts")).TensorRtBackend(),
    ),
  () =>
    lazyBackend(
      { name: "openvino", defaultModelFilename: "model.xml", gpus: "own", describe: true },
      async () => new (await import("./openvino/backend.ts")).OpenVinoBackend(),
    ),
  () =>
    lazyBackend(
      { name: "typescript", defaultModelFilename: "model.ts", otherModelFilenames: ["model.js"], autoComplete: true },
      async () => new (await import("./typescript/backend.ts")).TypeScriptBackend(),
    ),
  (backendConfig) =>
    lazyBackend(
      { name: "python", defaultModelFilename: "model.py", gpus: "own", autoComplete: true },
      async () => new (await import("./python/backend.ts")).PythonBackend({ ...backendConfig[""], ...backendConfig.python }),
    ),
];
