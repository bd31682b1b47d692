/**
 * @module Backend lookup: by config `backend`, by `platform`, or by the default model
 * file found in a version folder (Triton's auto-detection).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Backend, BackendLoadContext, BackendModel, ModelFileIO } from "./backend.ts";
import type { ModelConfig } from "../core/model-config-types.ts";

/** What the registry and the loader read of a backend before loading a model with it. */
export type BackendTraits = Pick<Backend, "name" | "platform" | "defaultModelFilename" | "gpus" | "gpuOnly" | "otherModelFilenames"> & {
  /** Whether the backend has autoComplete / describe. */
  readonly autoComplete?: true;
  readonly describe?: true;
};

/**
 * A backend whose module is imported when a model first needs it, so that a repository
 * without such models never evaluates it (#30: start-up). `traits` must be the backend's
 * own (test/unit/backends/registry.test.ts compares them).
 */
export function lazyBackend(traits: BackendTraits, create: () => Promise<Backend>): Backend {
  let real: Promise<Backend> | undefined;
  // A failed import is tried again by the next load, as a failed load of a model is.
  const backend = () =>
    (real ??= create().catch((err: unknown) => {
      real = undefined;
      throw err;
    }));
  const { autoComplete, describe, ...fields } = traits;
  return {
    ...fields,
    ...(autoComplete && {
      autoComplete: async (config: ModelConfig, modelPath: string): Promise<ModelConfig> => (await backend()).autoComplete!(config, modelPath),
    }),
    ...(describe && {
      describe: async (modelPath: string, backendConfig: Record<string, string>): Promise<ModelFileIO> => (await backend()).describe!(modelPath, backendConfig),
    }),
    load: async (ctx: BackendLoadContext): Promise<BackendModel> => (await backend()).load(ctx),
  };
}

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
