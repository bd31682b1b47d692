/**
 * @module A repository-extension load's file overrides: the client's model name and
 * `file:<path>` contents become a temporary model folder, which the repository manager
 * serves from until a later load replaces it, and removes with the model.
 */
import { rmSync, mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname, resolve, sep, basename } from "node:path";
import { invalidArg } from "../core/errors.ts";
import type { ModelConfig } from "../core/model-config-types.ts";

/**
 * What a load's overrides may not bring without `--allow-model-code-overrides=true`: the
 * override files are the client's, and code among them would run as the server's user.
 */
const MODEL_CODE_FLAG = "--allow-model-code-overrides=true";

/**
 * File names that are code to some loader: JavaScript and TypeScript modules (the
 * `typescript` backend imports them; Bun and Node load `.node` addons), Python (Triton's
 * `python` backend) and shared libraries (custom backends, plugins, custom ops).
 * Matched on the last path segment, in any case.
 */
const CODE_FILE = /\.(?:[cm]?[jt]s|[jt]sx|py[cdiowz]?|pyx|so(?:\.[0-9][0-9.]*)?|dylib|dll|node|wasm)$/i;

/** Backends that run files of the model folder as code rather than read a graph from them. */
const CODE_BACKENDS = new Set(["typescript", "python"]);

/**
 * Execution-accelerator and `session.*` parameter keys that name a file or folder the
 * server would read, write or dlopen (ONNX Runtime's TensorRT provider loads
 * `trt_extra_plugin_lib_paths`, writes `trt_engine_cache_path`), or hand it raw pointers
 * (`user_compute_stream`): the operator's to set, not a client's.
 */
const HOST_PARAMETER = /path|dir|file|lib|plugin|cache|stream|alloc|free|pointer|handle/i;

/**
 * A model name from a client must be one folder name, as in a repository: it becomes a
 * folder of the override files and must not lead anywhere else.
 */
export function checkModelName(name: string): void {
  if (name === "" || name === "." || name === ".." || /[/\\\0]/.test(name)) {
    throw invalidArg(`invalid model name ${JSON.stringify(name)}: a model name is a single folder name (no '/', '\\', NUL, '.' or '..')`);
  }
}

/**
 * Refuses a load override that would run code of the client's: file overrides named as
 * code (after `..` and case are resolved), and accelerator or session parameters that name
 * host files, libraries or pointers. INVALID_ARG unless `allowCode`.
 */
export function checkOverride(name: string, config: ModelConfig | undefined, files: Record<string, Uint8Array> | undefined, allowCode: boolean): void {
  if (allowCode) return;
  for (const rel of Object.keys(files ?? {})) {
    const last = basename(resolve("/", rel.replace(/\\/g, "/")));
    if (CODE_FILE.test(last)) {
      throw invalidArg(`file override '${rel}' of model '${name}' is executable model code, refused unless the server runs with ${MODEL_CODE_FLAG}`);
    }
  }
  if (!config) return;
  const params: [string, string][] = Object.keys(config.parameters ?? {})
    .filter((k) => k.startsWith("session."))
    .map((k) => [k, "parameter"]);
  const acc = (
    config.optimization as { execution_accelerators?: Record<string, { name?: string; parameters?: Record<string, unknown> }[] | undefined> } | undefined
  )?.execution_accelerators;
  for (const list of Object.values(acc ?? {})) {
    for (const a of list ?? []) for (const k of Object.keys(a.parameters ?? {})) params.push([k, `'${a.name}' accelerator parameter`]);
  }
  const host = params.find(([k]) => HOST_PARAMETER.test(k));
  if (host) {
    throw invalidArg(
      `config override of model '${name}': ${host[1]} '${host[0]}' names host files or memory, refused unless the server runs with ${MODEL_CODE_FLAG}`,
    );
  }
}

/**
 * Refuses a backend that runs model-folder files as code for a model whose folder the
 * client wrote (file overrides), unless `allowCode`: whatever the files are named, that
 * backend would run them.
 */
export function checkOverrideBackend(name: string, backend: string, allowCode: boolean): void {
  if (!allowCode && CODE_BACKENDS.has(backend)) {
    throw invalidArg(
      `model '${name}': backend '${backend}' runs the model's files as code, and the file overrides are the client's; refused unless the server runs with ${MODEL_CODE_FLAG}`,
    );
  }
}

/**
 * Writes a load's `file:<path>` overrides into a fresh model folder `<tmp>/nereid-override-XXXX/<name>`;
 * paths may not leave it. Errors name the override, never a path of this machine.
 */
export function writeOverrideFiles(name: string, files: Record<string, Uint8Array>): string {
  const root = mkdtempSync(join(tmpdir(), "nereid-override-"));
  liveRoots.add(root);
  if (liveRoots.size === 1 && !exitHooked) {
    exitHooked = true;
    process.once("exit", removeAllOverrideFiles);
  }
  const dir = join(root, name);
  const code = (err: unknown) => (err as { code?: string }).code ?? "error";
  try {
    try {
      mkdirSync(dir);
    } catch (err) {
      throw invalidArg(`cannot make a folder for the file overrides of model '${name}' (${code(err)})`); // e.g. ENAMETOOLONG
    }
    for (const [rel, bytes] of Object.entries(files)) {
      const full = resolve(dir, rel);
      if (rel.includes("\0") || !full.startsWith(dir + sep)) throw invalidArg(`file override path '${rel}' of model '${name}' leaves the model folder`);
      try {
        mkdirSync(dirname(full), { recursive: true });
        writeFileSync(full, bytes);
      } catch (err) {
        const conflict = ["EEXIST", "ENOTDIR", "EISDIR"].includes(code(err));
        throw invalidArg(`cannot write file override '${rel}' of model '${name}' (${code(err)})${conflict ? ": the override paths conflict" : ""}`);
      }
    }
  } catch (err) {
    removeRoot(root);
    throw err;
  }
  return dir;
}

/** The temporary folders of override files not yet removed, across all models. */
const liveRoots = new Set<string>();
let exitHooked = false;

function removeRoot(root: string): void {
  rmSync(root, { recursive: true, force: true });
  liveRoots.delete(root);
}

/** Removes an override model folder and the temporary folder made for it. */
export function removeOverrideFiles(dir: string): void {
  removeRoot(dirname(dir));
}

/**
 * Removes every override folder still on disk: at exit, however the process ends (a
 * drain that timed out leaves models loaded), since they hold the clients' files.
 */
export function removeAllOverrideFiles(): void {
  for (const root of [...liveRoots]) removeRoot(root);
}
