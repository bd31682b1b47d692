/**
 * @module ONNX Runtime's environment started ahead (OrtEnvironment.preload) when the start
 * will load an ONNX model, guessed from the repository's files before the server's modules
 * are evaluated (#30): a model folder whose config names ONNX (platform
 * `onnxruntime_onnx`, backend `onnxruntime`), or one without a config whose version folders
 * hold a `model.onnx`. Local repositories only; a wrong guess costs a library loaded early
 * or not, never a different load: the repository manager decides what loads, as before.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { configPath, listVersions, scanRepositories } from "../repository/layout.ts";
import { OrtEnvironment } from "../../ffi/onnxruntime/handles.ts";
import type { ServerOptions } from "../options.ts";

/** Model folders looked at, at most: past this the guess is not worth its reads. */
const MAX_MODELS = 64;
const MAX_CONFIG_BYTES = 1 << 20;

/** Whether the start's load will likely open ONNX Runtime, from the files alone. */
export function startLoadsOnnx(o: ServerOptions): boolean {
  if (o.modelControlMode === "explicit" && o.loadModels.length === 0) return false;
  const named = o.modelControlMode === "explicit" && !o.loadModels.includes("*") ? new Set(o.loadModels) : undefined;
  // Object-storage repositories are fetched later, by the repository manager.
  const local = o.modelRepositories.filter((r) => !/^[a-z][a-z0-9+.-]*:\/\//i.test(r));
  let models: ReturnType<typeof scanRepositories>["models"];
  try {
    models = scanRepositories(local, o.modelNamespacing).models;
  } catch {
    return false;
  }
  let looked = 0;
  for (const m of models.values()) {
    if (named && !named.has(m.name)) continue;
    if (++looked > MAX_MODELS) break;
    if (namesOnnx(m.dir, o.modelConfigName)) return true;
  }
  return false;
}

function namesOnnx(dir: string, modelConfigName: string): boolean {
  const config = configPath(dir, modelConfigName);
  if (config) {
    try {
      return statSync(config).size <= MAX_CONFIG_BYTES && /onnx/i.test(readFileSync(config, "utf8"));
    } catch {
      return false;
    }
  }
  return listVersions(dir).some((v) => existsSync(join(dir, String(v), "model.onnx")));
}

/** `--backend-config=onnxruntime,library=...`, else `--backend-config=library=...` (the loader's merge: loader.ts). */
export function onnxLibrarySetting(o: Pick<ServerOptions, "backendConfig">): string | undefined {
  return o.backendConfig.onnxruntime?.library ?? o.backendConfig[""]?.library;
}

/** Starts ONNX Runtime's environment ahead when the start will likely need it; never throws. */
export function preloadOnnxRuntimeForStart(o: ServerOptions): void {
  try {
    // The library the load would name: ONNX Runtime's own setting, else one given without a backend (as the loader merges them).
    if (startLoadsOnnx(o)) void OrtEnvironment.preload(onnxLibrarySetting(o));
  } catch {
    // Best effort: the load opens the library itself and reports what is wrong.
  }
}
