/**
 * @module The only place that imports koffi. getKoffi() finds koffi's native module (an
 * embedded copy in the compiled binary, else the `koffi` package); loadLibrary() opens a
 * shared library, trying candidate paths in order and reporting every failure in one
 * LibraryLoadError (UNAVAILABLE, ffi/errors.ts).
 */
import { createRequire } from "node:module";
import type * as KoffiModule from "koffi";
import { LibraryLoadError } from "./errors.ts";

export { LibraryLoadError };

export type { KoffiFunc, TypeObject as KoffiType } from "koffi";
export type Koffi = typeof KoffiModule;
export type KoffiLibrary = KoffiModule.LibraryHandle;
/** A native pointer as koffi 3 returns it (an address as a bigint), or null. */
export type Pointer = bigint | null;

const require = createRequire(import.meta.url);
let nativePath: string | undefined;
let koffi: Koffi | undefined;

/**
 * For the compiled binary's entry: load koffi's native module from this koffi.node (Bun's
 * bundler cannot follow koffi's own loader). NEREID_KOFFI_NODE does the same from outside.
 */
export function setKoffiNativePath(path: string): void {
  nativePath = path;
}

/** Where koffi's native module was told to load from (setKoffiNativePath), for another thread to load the same. */
export function koffiNativePath(): string | undefined {
  return nativePath;
}

export function getKoffi(): Koffi {
  if (koffi) return koffi;
  const path = nativePath ?? process.env.NEREID_KOFFI_NODE;
  try {
    // A .node path goes through process.dlopen (Node) or Bun's native-module loader.
    koffi = (path ? require(path) : require("koffi")) as Koffi;
  } catch (err) {
    throw new LibraryLoadError(`cannot load koffi's native module from ${path ?? "the koffi package"}: ${(err as Error).message}`, {
      library: "koffi",
      call: "require",
      cause: err,
    });
  }
  return koffi;
}

/** A place that was looked at but cannot hold the library, with the reason (reported, not tried). */
export interface Unusable {
  path: string;
  reason: string;
}

/**
 * Loads the first candidate that opens. `what` names the library in the error, which
 * lists each candidate in order with why it failed.
 */
export function loadLibrary(what: string, candidates: readonly (string | Unusable)[]): { lib: KoffiLibrary; path: string } {
  const k = getKoffi();
  const failures: string[] = [];
  for (const c of candidates) {
    if (typeof c !== "string") {
      failures.push(`  ${c.path}: ${c.reason}`);
      continue;
    }
    try {
      return { lib: k.load(c), path: c };
    } catch (err) {
      failures.push(`  ${c}: ${(err as Error).message}`);
    }
  }
  throw new LibraryLoadError(`cannot load ${what}; tried:\n${failures.join("\n") || "  (no candidates)"}`, { library: what });
}
