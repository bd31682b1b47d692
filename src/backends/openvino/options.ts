/**
 * @module Model config → OpenVINO settings: the device a model compiles for, and where
 * its weights are.
 *
 * Device: KIND_CPU instances run on "CPU", KIND_GPU instances on "GPU" (GPU.<n> for
 * device n > 0, in OpenVINO's own GPU numbering), KIND_MODEL on "AUTO" (OpenVINO picks).
 * A model parameter overrides it for every instance:
 *
 *   parameters { key: "device" value { string_value: "AUTO" } }
 *
 * takes any OpenVINO device string ("GPU.1", "NPU", "HETERO:GPU,CPU", "AUTO:GPU,CPU").
 *
 * Compile properties: model parameters named as one of OpenVINO's tuning properties
 * (COMPILE_PROPERTIES, the names Triton's openvino backend also reads where it has them)
 * go to ov_core_compile_model as they are, e.g.
 *
 *   parameters { key: "INFERENCE_NUM_THREADS" value { string_value: "2" } }
 *   parameters { key: "INFERENCE_PRECISION_HINT" value { string_value: "f32" } }
 *
 * OpenVINO checks the values at compile. Properties that name files (CACHE_DIR, ...) are
 * not among them: a model's config (which a client's load may override) names no path.
 */
import { existsSync } from "node:fs";
import { invalidArg } from "../../core/errors.ts";
import type { ModelConfig } from "../../core/model-config-types.ts";

export function deviceFor(config: ModelConfig, kind: "KIND_CPU" | "KIND_GPU" | "KIND_MODEL", deviceId: number): string {
  const param = config.parameters?.device?.string_value;
  if (param !== undefined) {
    if (!param.trim()) throw invalidArg(`model '${config.name}': parameter 'device' must name an OpenVINO device (CPU, GPU, AUTO, ...), got ''`);
    return param.trim();
  }
  if (kind === "KIND_GPU") return deviceId > 0 ? `GPU.${deviceId}` : "GPU";
  if (kind === "KIND_MODEL") return "AUTO";
  return "CPU";
}

/** model.xml → model.bin beside it when it exists; null lets OpenVINO look for itself. */
export function weightsFor(modelPath: string): string | null {
  if (!modelPath.endsWith(".xml")) return null;
  const bin = `${modelPath.slice(0, -4)}.bin`;
  return existsSync(bin) ? bin : null;
}

/** OpenVINO properties a model's parameters may set (none names a file, a library or memory). */
export const COMPILE_PROPERTIES: readonly string[] = [
  "INFERENCE_NUM_THREADS",
  "NUM_STREAMS",
  "PERFORMANCE_HINT",
  "PERFORMANCE_HINT_NUM_REQUESTS",
  "INFERENCE_PRECISION_HINT",
  "EXECUTION_MODE_HINT",
  "ENABLE_CPU_PINNING",
  "ENABLE_HYPER_THREADING",
  "SCHEDULING_CORE_TYPE",
  "COMPILATION_NUM_THREADS",
];

/** The model's compile properties as [key, value] pairs, in COMPILE_PROPERTIES order; an empty value is INVALID_ARG. */
export function compileProperties(config: ModelConfig): [string, string][] {
  const out: [string, string][] = [];
  for (const key of COMPILE_PROPERTIES) {
    const value = config.parameters?.[key]?.string_value;
    if (value === undefined) continue;
    if (!value.trim()) throw invalidArg(`model '${config.name}': parameter '${key}' must have a value for OpenVINO, got ''`);
    out.push([key, value.trim()]);
  }
  return out;
}
