/**
 * @module A repository-extension load's file overrides: the client's model name and
 * `file:<path>` contents become a temporary model folder, which the repository manager
 * serves from until a later load replaces it, and removes with the model.
 */
import { rmSync, mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname, resolve, sep } from "node:path";
import { invalidArg } from "../core/errors.ts";

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
 * Writes a load's `file:<path>` overrides into a fresh model folder `<tmp>/nereid-override-XXXX/<name>`;
 * paths may not leave it. Errors name the override, never a path of this machine.
 */
export function writeOverrideFiles(name: string, files: Record<string, Uint8Array>): string {
  const root = mkdtempSync(join(tmpdir(), "nereid-override-"));
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
    rmSync(root, { recursive: true, force: true });
    throw err;
  }
  return dir;
}

/** Removes an override model folder and the temporary folder made for it. */
export function removeOverrideFiles(dir: string): void {
  rmSync(dirname(dir), { recursive: true, force: true });
}
