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
