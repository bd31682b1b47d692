/**
 * @module Where libonnxruntime comes from, in order: an explicit path
 * (`--backend-config=onnxruntime,library=PATH`), NEREID_ONNXRUNTIME_LIBRARY,
 * libonnxruntime.so.1 beside the executable, the copy embedded in the compiled binary
 * (extracted once to a cache directory), and onnxruntime-node's copy in development.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync, renameSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { homedir } from "node:os";

const LIB = "libonnxruntime.so.1";
let embedded: string | undefined;

/** Registers the embedded library (a path inside the compiled binary's file system). */
export function setEmbeddedOrtLibrary(path: string): void {
  embedded = path;
}

function cacheDir(): string {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), ".cache");
  return join(base, "nereid");
}

/** Copies the embedded library to the cache once (keyed by size) and returns the copy's path. */
function extractEmbedded(path: string): string {
  const size = statSync(path).size;
  const dir = join(cacheDir(), `onnxruntime-${process.arch}-${size}`);
  const target = join(dir, LIB);
  if (existsSync(target) && statSync(target).size === size) return target;
  const data = readFileSync(path);
  mkdirSync(dir, { recursive: true });
  const tmp = `${target}.${process.pid}.tmp`;
  writeFileSync(tmp, data, { mode: 0o755 });
  renameSync(tmp, target);
  return target;
}

function nodeModulesCopy(): string | undefined {
  try {
    const require = createRequire(import.meta.url);
    const pkg = require.resolve("onnxruntime-node/package.json");
    const p = join(dirname(pkg), "bin", "napi-v6", "linux", process.arch === "arm64" ? "arm64" : "x64", LIB);
    return existsSync(p) ? p : undefined;
  } catch {
    return undefined;
  }
}

/** Candidate paths in priority order; lazily extracts the embedded copy when reached. */
export function ortLibraryCandidates(explicit: string | undefined): string[] {
  const out: string[] = [];
  if (explicit) return [explicit];
  if (process.env.NEREID_ONNXRUNTIME_LIBRARY) return [process.env.NEREID_ONNXRUNTIME_LIBRARY];
  const beside = join(dirname(process.execPath), LIB);
  if (existsSync(beside)) out.push(beside);
  if (embedded) {
    try {
      out.push(extractEmbedded(embedded));
    } catch (err) {
      out.push(`${embedded} (extraction failed: ${(err as Error).message})`);
    }
  }
  const dev = nodeModulesCopy();
  if (dev) out.push(dev);
  if (out.length === 0) out.push(LIB);
  return out;
}
