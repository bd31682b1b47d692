/**
 * @module Backend lookup: by config `backend`, by `platform`, or by the default model
 * file found in a version folder (Triton's auto-detection).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Backend } from "./backend.ts";
import type { ModelConfig } from "../core/model-config-types.ts";

export class BackendRegistry {
  readonly #backends: Backend[] = [];

  register(backend: Backend): void {
    this.#backends.push(backend);
  }

  byName(name: string): Backend | undefined {
    return this.#backends.find((b) => b.name === name);
  }

  byPlatform(platform: string): Backend | undefined {
    return this.#backends.find((b) => b.platform === platform);
  }

  /** The backend a config names, or the one whose default file sits in `versionDir`. */
  resolve(config: ModelConfig, versionDir: string | undefined): Backend | undefined {
    if (config.backend) return this.byName(config.backend);
    if (config.platform) return this.byPlatform(config.platform);
    if (!versionDir) return undefined;
    return this.#backends.find((b) => modelFileCandidates(config, b).some((f) => existsSync(join(versionDir, f))));
  }
}

function modelFileCandidates(config: ModelConfig, b: Backend): string[] {
  if (config.default_model_filename) return [config.default_model_filename];
  return [b.defaultModelFilename, ...(b.otherModelFilenames ?? [])];
}

/** The model file of `backend` in `versionDir`: the config's default_model_filename, else the first of the backend's names that exists (its default when none does). */
export function modelFileIn(versionDir: string, config: ModelConfig, backend: Backend): string {
  const names = modelFileCandidates(config, backend);
  return join(versionDir, names.find((f) => existsSync(join(versionDir, f))) ?? names[0]!);
}
