/**
 * @module Triton's repository layout: model folders in one or more repositories,
 * numeric version folders (names with a leading "0" or non-digits are ignored), and the
 * config file location (config.pbtxt, or configs/<name>.pbtxt with --model-config-name).
 */
import { readdirSync, statSync, existsSync } from "node:fs";
import { join } from "node:path";

export interface ModelLocation {
  name: string;
  repository: string;
  dir: string;
  /**
   * With --model-namespacing, the repository the model came from (Triton's namespace is
   * the repository path); "" otherwise.
   */
  namespace?: string;
  /** The folder holds a load's file overrides: the client's files, not the operator's. */
  clientFiles?: boolean;
}

/** A model's key in the repository manager: its name, or namespace and name under --model-namespacing. */
export function modelKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}\0${name}` : name;
}

export interface RepositoryScan {
  /** Keyed by modelKey(): the name alone unless namespacing is on. */
  models: Map<string, ModelLocation>;
  /** Names found in more than one repository: Triton makes them unavailable. */
  duplicates: Map<string, string[]>;
}

const isDir = (p: string) => {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
};

/**
 * The model folders of every repository. A name in two repositories is a duplicate (Triton
 * serves neither) unless `namespacing` is on, when each repository's copy is its own model.
 * `names`: what --model-repository said for each folder, where it differs (an object-storage
 * URL whose local copy is scanned); messages and namespaces use it.
 */
export function scanRepositories(folders: readonly string[], namespacing = false, names: readonly string[] = folders): RepositoryScan {
  const models = new Map<string, ModelLocation>();
  const duplicates = new Map<string, string[]>();
  for (const [i, folder] of folders.entries()) {
    const repo = names[i] ?? folder;
    let entries: string[];
    try {
      entries = readdirSync(folder);
    } catch (err) {
      throw new Error(`failed to read model repository '${repo}': ${(err as Error).message}`);
    }
    for (const name of entries.sort()) {
      // node_modules holds packages TypeScript models import, not a model (a Nereid difference).
      if (name.startsWith(".") || name === "node_modules") continue;
      const dir = join(folder, name);
      if (!isDir(dir)) continue;
      if (namespacing) {
        models.set(modelKey(repo, name), { name, repository: repo, dir, namespace: repo });
        continue;
      }
      const prev = models.get(name);
      if (prev) {
        duplicates.set(name, [...(duplicates.get(name) ?? [prev.repository]), repo]);
        continue;
      }
      models.set(name, { name, repository: repo, dir });
    }
  }
  return { models, duplicates };
}

/** Numeric version folders, ascending. */
export function listVersions(modelDir: string): number[] {
  let entries: string[];
  try {
    entries = readdirSync(modelDir);
  } catch {
    return [];
  }
  return entries
    .filter((e) => /^[1-9][0-9]*$/.test(e) && isDir(join(modelDir, e)))
    .map(Number)
    .filter(Number.isSafeInteger)
    .sort((a, b) => a - b);
}

/** Path of the config file Triton would read, or undefined when there is none. */
export function configPath(modelDir: string, modelConfigName: string): string | undefined {
  if (modelConfigName) {
    const custom = join(modelDir, "configs", `${modelConfigName}.pbtxt`);
    if (existsSync(custom)) return custom;
  }
  const p = join(modelDir, "config.pbtxt");
  return existsSync(p) ? p : undefined;
}

/** A file's path, size and modification time, as fingerprint() lists each file ("" when it cannot be read: the load says why). */
export function fileStamp(path: string): string {
  try {
    const st = statSync(path);
    return `${path}:${st.size}:${st.mtimeMs}`;
  } catch {
    return "";
  }
}

/** Files, sizes and modification times under a version folder: a reload of an unchanged folder keeps its version. */
export function fingerprint(dir: string): string {
  const parts: string[] = [];
  const walk = (d: string) => {
    let names: string[];
    try {
      names = readdirSync(d).sort();
    } catch {
      return;
    }
    for (const n of names) {
      const p = join(d, n);
      const st = statSync(p, { throwIfNoEntry: false });
      if (!st) continue;
      if (st.isDirectory()) walk(p);
      else parts.push(`${p}:${st.size}:${st.mtimeMs}`);
    }
  };
  walk(dir);
  return parts.join("|");
}
