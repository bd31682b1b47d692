/**
 * @module The only place that imports koffi. Finds koffi's native module (an embedded
 * copy in the compiled binary, else the `koffi` package) and loads shared libraries,
 * trying candidate paths in order and reporting every failure in one error.
 */
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

// The native module is loaded by path, so its declared types do not apply; the
// surface used is typed where it is used.
export type Koffi = any;
export type KoffiLibrary = any;
export type KoffiFunction = ((...args: any[]) => any) & { async: (...args: any[]) => void };
/** A native pointer as koffi returns it (a bigint address in koffi 3), or null. */
export type Pointer = bigint | null;

let nativePath: string | undefined;
let koffi: Koffi | undefined;

/** Used by the compiled binary's entry: load koffi from this koffi.node instead of the package. */
export function setKoffiNativePath(path: string): void {
  nativePath = path;
}

export function getKoffi(): Koffi {
  if (!koffi) koffi = nativePath ? require(nativePath) : require("koffi");
  return koffi;
}

export class LibraryLoadError extends Error {}

/**
 * Loads the first candidate that opens. `what` names the library in the error, which
 * lists each candidate tried and why it failed.
 */
export function loadLibrary(what: string, candidates: readonly string[]): { lib: KoffiLibrary; path: string } {
  const k = getKoffi();
  const failures: string[] = [];
  for (const path of candidates) {
    try {
      return { lib: k.load(path), path };
    } catch (err) {
      failures.push(`  ${path}: ${(err as Error).message}`);
    }
  }
  throw new LibraryLoadError(`cannot load ${what}; tried:\n${failures.join("\n") || "  (no candidates)"}`);
}
