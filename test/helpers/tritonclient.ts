/**
 * Triton's own Python client (tritonclient[http,grpc], pinned) in a virtual environment
 * made from Debian's /usr/bin/python3 with --system-site-packages (so Debian's numpy is
 * used). The environment is cached under the OS temp dir, keyed by the pinned version, so
 * a rerun does not pip-install again; CI starts clean and installs it once (pip needs
 * PyPI). Anything missing is an error saying what, never a skip.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureDebianProgram } from "./debian.ts";

export const SYSTEM_PYTHON = "/usr/bin/python3";
/** The tritonclient release the tests use (PyPI). */
export const TRITONCLIENT_VERSION = "2.73.0";

function run(cmd: string, args: string[], timeout: number) {
  const r = spawnSync(cmd, args, { encoding: "utf8", timeout, env: { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: "1", PYTHONNOUSERSITE: "1" } });
  return { ok: r.status === 0, output: `${r.error?.message ?? ""}${r.stdout ?? ""}${r.stderr ?? ""}`.slice(-3000) };
}

const usable = (python: string) => existsSync(python) && run(python, ["-c", "import numpy, tritonclient.http, tritonclient.grpc"], 60_000).ok;

/** The venv's python, with tritonclient importable; makes the venv first when the cache lacks it. */
export function tritonclientPython(): string {
  const dir = join(tmpdir(), `nereid-tritonclient-${TRITONCLIENT_VERSION}`);
  const python = join(dir, "bin", "python");
  if (usable(python)) return python;
  const numpy = run(SYSTEM_PYTHON, ["-c", "import numpy"], 60_000);
  if (!numpy.ok) throw new Error(`the tritonclient tests need ${SYSTEM_PYTHON} with numpy (apt-get install python3-numpy):\n${numpy.output}`);
  // Debian keeps ensurepip (which `python3 -m venv` needs) in python3.X-venv.
  const stdlib = spawnSync(SYSTEM_PYTHON, ["-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])"], { encoding: "utf8" }).stdout.trim();
  const version = spawnSync(SYSTEM_PYTHON, ["-c", "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"], { encoding: "utf8" }).stdout.trim();
  ensureDebianProgram(join(stdlib, "ensurepip", "__init__.py"), `python${version}-venv`, "The tritonclient tests' virtual environment");
  // Built beside the cache and renamed into place, so an interrupted run leaves no half-made venv.
  const building = mkdtempSync(join(tmpdir(), `nereid-tritonclient-build-`));
  try {
    const venv = run(SYSTEM_PYTHON, ["-m", "venv", "--system-site-packages", building], 300_000);
    if (!venv.ok) throw new Error(`${SYSTEM_PYTHON} -m venv failed:\n${venv.output}`);
    const pip = run(join(building, "bin", "python"), ["-m", "pip", "install", "-q", `tritonclient[http,grpc]==${TRITONCLIENT_VERSION}`], 600_000);
    if (!pip.ok) throw new Error(`pip install tritonclient[http,grpc]==${TRITONCLIENT_VERSION} failed (the tests need PyPI):\n${pip.output}`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(building, dir);
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
  // A venv's scripts name its folder: the renamed venv's python still finds its site-packages
  // (pyvenv.cfg sits beside bin/), which this check confirms.
  if (!usable(python))
    throw new Error(
      `tritonclient ${TRITONCLIENT_VERSION} does not import from ${dir} after installing it:\n${run(python, ["-c", "import tritonclient.grpc"], 60_000).output}`,
    );
  return python;
}
