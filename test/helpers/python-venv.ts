/**
 * Python packages from PyPI, pinned, in a virtual environment made from Debian's
 * /usr/bin/python3 with --system-site-packages (so Debian's numpy is used). Each
 * environment is cached under the OS temp dir, keyed by its name and pinned packages, so
 * a rerun does not pip-install again; CI starts clean and installs once (pip needs PyPI).
 * Anything missing is an error saying what, never a skip.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureDebianProgram } from "./debian.ts";

export const SYSTEM_PYTHON = "/usr/bin/python3";

export function runPython(cmd: string, args: string[], timeout: number) {
  const r = spawnSync(cmd, args, { encoding: "utf8", timeout, env: { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: "1", PYTHONNOUSERSITE: "1" } });
  return { ok: r.status === 0, output: `${r.error?.message ?? ""}${r.stdout ?? ""}${r.stderr ?? ""}`.slice(-3000) };
}

export interface VenvSpec {
  /** A short name for messages and the cache folder ("tritonclient", "openvino"). */
  name: string;
  /** pip requirement strings, each pinned with == (e.g. "openvino==2026.4.1"). */
  packages: string[];
  /** Modules that must import once installed (checked on every call). */
  imports: string[];
  /** Whether the venv sees Debian's site-packages (numpy); default true. */
  systemSitePackages?: boolean;
}

/** The venv's python, with `spec.imports` importable; makes the venv first when the cache lacks it. */
export function venvPython(spec: VenvSpec): string {
  const key = createHash("sha256")
    .update(JSON.stringify([spec.packages, spec.systemSitePackages ?? true]))
    .digest("hex")
    .slice(0, 12);
  const dir = join(tmpdir(), `nereid-venv-${spec.name}-${key}`);
  const python = join(dir, "bin", "python");
  const check = ["-c", spec.imports.map((m) => `import ${m}`).join("; ") || "pass"];
  if (existsSync(python) && runPython(python, check, 120_000).ok) return python;
  if (spec.systemSitePackages ?? true) {
    const numpy = runPython(SYSTEM_PYTHON, ["-c", "import numpy"], 60_000);
    if (!numpy.ok) throw new Error(`the ${spec.name} tests need ${SYSTEM_PYTHON} with numpy (apt-get install python3-numpy):\n${numpy.output}`);
  }
  // Debian keeps ensurepip (which `python3 -m venv` needs) in python3.X-venv.
  const stdlib = spawnSync(SYSTEM_PYTHON, ["-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])"], { encoding: "utf8" }).stdout.trim();
  const version = spawnSync(SYSTEM_PYTHON, ["-c", "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"], { encoding: "utf8" }).stdout.trim();
  ensureDebianProgram(join(stdlib, "ensurepip", "__init__.py"), `python${version}-venv`, `The ${spec.name} tests' virtual environment`);
  // Built beside the cache and renamed into place, so an interrupted run leaves no half-made venv.
  const building = mkdtempSync(join(tmpdir(), `nereid-venv-build-`));
  try {
    const venv = runPython(SYSTEM_PYTHON, ["-m", "venv", ...((spec.systemSitePackages ?? true) ? ["--system-site-packages"] : []), building], 300_000);
    if (!venv.ok) throw new Error(`${SYSTEM_PYTHON} -m venv failed:\n${venv.output}`);
    const pip = runPython(join(building, "bin", "python"), ["-m", "pip", "install", "-q", ...spec.packages], 900_000);
    if (!pip.ok) throw new Error(`pip install ${spec.packages.join(" ")} failed (the tests need PyPI):\n${pip.output}`);
    // A test file running beside this one may have made it meanwhile: keep that one, which may be in use.
    if (existsSync(python) && runPython(python, check, 120_000).ok) return python;
    rmSync(dir, { recursive: true, force: true });
    renameSync(building, dir);
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
  // A venv's scripts name its folder: the renamed venv's python still finds its site-packages
  // (pyvenv.cfg sits beside bin/), which this check confirms.
  const after = runPython(python, check, 120_000);
  if (!after.ok) throw new Error(`${spec.packages.join(" ")} does not import from ${dir} after installing it:\n${after.output}`);
  return python;
}
