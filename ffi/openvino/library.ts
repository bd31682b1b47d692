/**
 * @module Where libopenvino_c comes from. An explicit path
 * (`--backend-config=openvino,library=PATH`) is the only candidate when given, then
 * likewise NEREID_OPENVINO_LIBRARY. Otherwise, in order: `libopenvino_c.so` through the
 * system's search (LD_LIBRARY_PATH, ld.so.cache: the archive after setupvars.sh, the
 * -dev packages); the archive's default install (/opt/intel/openvino, or
 * $INTEL_OPENVINO_DIR); then the versioned files that releases ship without the bare
 * name (`libopenvino_c.so.2510` soname links and `libopenvino_c.so.2025.1.0` files in
 * the APT/YUM packages and pip wheels), newest first, found in LD_LIBRARY_PATH, the
 * install directories, the system library directories and ld.so.cache.
 */
import { existsSync, readdirSync, readFileSync, realpathSync } from "node:fs";
import { join } from "node:path";
import type { Unusable } from "../load.ts";

export const OPENVINO_C = "libopenvino_c.so";
const ARCH_DIRS = process.arch === "arm64" ? ["aarch64", "arm64"] : ["intel64"];
const TRIPLET = process.arch === "arm64" ? "aarch64-linux-gnu" : "x86_64-linux-gnu";
/** `libopenvino_c.so.2510` (soname: YY M P) or `libopenvino_c.so.2025.1.0` (the file). */
const VERSIONED = /^libopenvino_c\.so\.(\d+(?:\.\d+)*)$/;

/** Archive install roots: $INTEL_OPENVINO_DIR (set by setupvars.sh), then the default. */
function installLibDirs(): string[] {
  const roots = [process.env.INTEL_OPENVINO_DIR, "/opt/intel/openvino"].filter((r): r is string => !!r);
  return [...new Set(roots)].flatMap((root) => ARCH_DIRS.map((a) => join(root, "runtime", "lib", a)));
}

/** [year, minor, patch] of a versioned name's suffix; sonames are "<YY><M><P>". */
export function versionOf(suffix: string): number[] {
  if (/^\d{4}$/.test(suffix)) return [2000 + Number(suffix.slice(0, 2)), Number(suffix[2]), Number(suffix[3])];
  return suffix.split(".").map(Number);
}

function newerFirst(a: string, b: string): number {
  const va = versionOf(VERSIONED.exec(a.slice(a.lastIndexOf("/") + 1))![1]!);
  const vb = versionOf(VERSIONED.exec(b.slice(b.lastIndexOf("/") + 1))![1]!);
  for (let i = 0; i < Math.max(va.length, vb.length); i++) {
    const d = (vb[i] ?? 0) - (va[i] ?? 0);
    if (d !== 0) return d;
  }
  return a.localeCompare(b);
}

function versionedIn(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((n) => VERSIONED.test(n))
      .map((n) => join(dir, n));
  } catch {
    return [];
  }
}

/** Paths of libopenvino_c.so.<version> that ld.so.cache knows (its strings hold the full paths). */
function fromLdCache(): string[] | undefined {
  let text: string;
  try {
    text = readFileSync("/etc/ld.so.cache", "latin1");
  } catch {
    return undefined;
  }
  return [...text.matchAll(/\/[^\0]*\/libopenvino_c\.so\.\d+(?:\.\d+)*(?=\0)/g)].map((m) => m[0]);
}

/**
 * Candidates in priority order. Places that were searched without finding a library come
 * back as Unusable, so a load error still names them.
 */
export function openVinoLibraryCandidates(explicit: string | undefined): (string | Unusable)[] {
  if (explicit) return [explicit];
  const env = process.env.NEREID_OPENVINO_LIBRARY;
  if (env) return [env];
  const out: (string | Unusable)[] = [OPENVINO_C]; // dlopen's own search
  for (const dir of installLibDirs()) {
    const p = join(dir, OPENVINO_C);
    out.push(existsSync(p) ? p : { path: p, reason: "no such file" });
  }
  const searchDirs = [
    ...(process.env.LD_LIBRARY_PATH ?? "").split(":").filter(Boolean),
    ...installLibDirs(),
    `/usr/lib/${TRIPLET}`,
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
  ];
  // Soname links and the files they point to are one library: keep the file's own path.
  const found = new Set<string>();
  const add = (p: string) => {
    try {
      const real = realpathSync(p);
      if (VERSIONED.test(real.slice(real.lastIndexOf("/") + 1))) found.add(real);
    } catch {
      // a dangling link
    }
  };
  for (const dir of new Set(searchDirs)) for (const p of versionedIn(dir)) add(p);
  const cached = fromLdCache();
  for (const p of cached ?? []) add(p);
  const versioned = [...found].sort(newerFirst);
  out.push(...versioned);
  if (versioned.length === 0) {
    out.push({
      path: `${OPENVINO_C}.<version>`,
      reason: `no versioned library in ${[...new Set(searchDirs)].join(", ")}${cached ? " or ld.so.cache" : ""}`,
    });
  }
  return out;
}
