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
    return this.#backends.find((b) => existsSync(join(versionDir, config.default_model_filename || b.defaultModelFilename)));
  }
}
