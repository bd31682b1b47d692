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
 *
 * pip-installed OpenVINO (the `openvino` wheel keeps libopenvino_c.so.<soname> and its
 * plugins in site-packages/openvino/libs) is found without running Python: the wheels of
 * the active environment ($VIRTUAL_ENV, then $CONDA_PREFIX: <prefix>/lib/python3.<n>/
 * site-packages/openvino/libs) come right after the archive install, and the user's and
 * the system's (~/.local/lib/python3.<n>/site-packages, /usr/local/lib/python3.<n>/
 * {dist,site}-packages, /usr/lib/python3/dist-packages) last. Nothing is downloaded.
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

/** The `lib/python3.<n>/<kind>` folders of a Python prefix, highest Python first. */
function sitePackages(prefix: string, kinds: readonly string[]): string[] {
  let pythons: string[];
  try {
    pythons = readdirSync(join(prefix, "lib")).filter((n) => /^python3\.\d+$/.test(n));
  } catch {
    return [];
  }
  pythons.sort((a, b) => Number(b.slice(8)) - Number(a.slice(8)));
  return pythons.flatMap((py) => kinds.map((k) => join(prefix, "lib", py, k)));
}

/**
 * Where pip puts the openvino wheel's libraries: the active environment's
 * ($VIRTUAL_ENV, $CONDA_PREFIX) first, then the user's and the system's.
 */
export function wheelLibDirs(): { active: string[]; other: string[] } {
  const envs = [process.env.VIRTUAL_ENV, process.env.CONDA_PREFIX].filter((p): p is string => !!p);
  const active = envs.flatMap((prefix) => sitePackages(prefix, ["site-packages"]));
  const home = process.env.HOME;
  const other = [
    ...(home ? sitePackages(join(home, ".local"), ["site-packages"]) : []),
    ...sitePackages("/usr/local", ["dist-packages", "site-packages"]),
    "/usr/lib/python3/dist-packages",
  ];
  const libs = (dirs: string[]) => [...new Set(dirs)].map((d) => join(d, "openvino", "libs"));
  return { active: libs(active), other: libs(other) };
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
  const seen = new Set<string>();
  const realVersioned = (paths: string[]): string[] => {
    const found = new Set<string>();
    for (const p of paths) {
      try {
        const real = realpathSync(p);
        if (VERSIONED.test(real.slice(real.lastIndexOf("/") + 1)) && !seen.has(real)) found.add(real);
      } catch {
        // a dangling link
      }
    }
    const sorted = [...found].sort(newerFirst);
    for (const p of sorted) seen.add(p);
    return sorted;
  };
  const wheels = wheelLibDirs();
  // Each active environment in turn, newest first within it.
  const active = wheels.active.flatMap((dir) => realVersioned(versionedIn(dir)));
  out.push(...active);
  const cached = fromLdCache();
  const versioned = realVersioned([...[...new Set(searchDirs)].flatMap(versionedIn), ...(cached ?? [])]);
  out.push(...versioned);
  if (versioned.length === 0) {
    out.push({
      path: `${OPENVINO_C}.<version>`,
      reason: `no versioned library in ${[...new Set(searchDirs)].join(", ")}${cached ? " or ld.so.cache" : ""}`,
    });
  }
  const other = wheels.other.flatMap((dir) => realVersioned(versionedIn(dir)));
  out.push(...other);
  if (active.length === 0 && other.length === 0) {
    const searched = [...wheels.active, ...wheels.other];
    out.push({
      path: `openvino/libs/${OPENVINO_C}.<version>`,
      reason: `no pip-installed openvino in ${searched.join(", ")}${wheels.active.length === 0 ? " (no $VIRTUAL_ENV or $CONDA_PREFIX with a python3 lib folder)" : ""}`,
    });
  }
  return out;
}
