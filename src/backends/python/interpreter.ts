/**
 * @module Which Python runs a model's stub, as Triton picks it: the model's
 * EXECUTION_ENV_PATH parameter (a folder holding bin/python3, or a conda-pack style
 * .tar.gz of one, unpacked into a private temporary folder) when it sets one, else the
 * operator's `--backend-config=python,interpreter=<path>`, else `python3` on the
 * server's PATH. EXECUTION_ENV_PATH must lie inside the model's folder (Triton's
 * `$$TRITON_MODEL_DIRECTORY` names it), so a config sent with a load request cannot
 * make the server run a program from elsewhere.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, realpathSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, sep } from "node:path";
import { invalidArg } from "../../core/errors.ts";
import type { ModelConfig } from "../../core/model-config-types.ts";

export interface Interpreter {
  /** The program to run (a path, or `python3` looked up on PATH). */
  command: string;
  /** Extra environment: the environment's bin folder first on PATH. */
  env: Record<string, string>;
  /** Removes an unpacked environment (a no-op otherwise). */
  dispose(): void;
}

/** A string parameter of the model's config. */
export function stringParameter(config: ModelConfig, key: string): string | undefined {
  const v = (config.parameters as Record<string, { string_value?: string }> | undefined)?.[key]?.string_value;
  return v === undefined || v === "" ? undefined : v;
}

export function resolveInterpreter(model: string, config: ModelConfig, modelDir: string, backendConfig: Record<string, string>): Interpreter {
  const envPath = stringParameter(config, "EXECUTION_ENV_PATH");
  if (!envPath) return { command: backendConfig["interpreter"] || "python3", env: {}, dispose: () => {} };
  const root = realpathSync(modelDir);
  const given = resolve(modelDir, envPath.replaceAll("$$TRITON_MODEL_DIRECTORY", modelDir));
  if (!existsSync(given)) throw invalidArg(`model '${model}': EXECUTION_ENV_PATH '${envPath}' does not exist`);
  const real = realpathSync(given);
  if (real !== root && !real.startsWith(root + sep)) {
    throw invalidArg(`model '${model}': EXECUTION_ENV_PATH must lie inside the model's folder ($$TRITON_MODEL_DIRECTORY), not '${envPath}'`);
  }
  let envDir = real;
  let dispose = () => {};
  if (!statSync(real).isDirectory()) {
    if (!/\.(tar\.gz|tgz)$/.test(real)) throw invalidArg(`model '${model}': EXECUTION_ENV_PATH must be a folder or a .tar.gz, not '${envPath}'`);
    envDir = mkdtempSync(join(tmpdir(), "nereid-python-env-"));
    try {
      execFileSync("tar", ["-xzf", real, "-C", envDir], { stdio: "pipe" });
    } catch (err) {
      rmSync(envDir, { recursive: true, force: true });
      throw invalidArg(`model '${model}': cannot unpack EXECUTION_ENV_PATH '${envPath}': ${String((err as { stderr?: Buffer }).stderr ?? err).trim()}`);
    }
    const dir = envDir;
    dispose = () => rmSync(dir, { recursive: true, force: true });
  }
  const command = join(envDir, "bin", "python3");
  if (!existsSync(command)) {
    dispose();
    throw invalidArg(`model '${model}': EXECUTION_ENV_PATH '${envPath}' has no bin/python3`);
  }
  return { command, env: { PATH: `${join(envDir, "bin")}:${process.env.PATH ?? ""}` }, dispose };
}
