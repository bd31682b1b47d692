/**
 * Triton's perf_analyzer, from PyPI, for the tests that run it against Nereid.
 *
 * Which build: the perf-analyzer wheels (2.58 and later) are tagged manylinux_2_38, and the
 * perf_analyzer that tritonclient's wheels bundled from 2.52 to 2.60 needs GLIBC_2.38 and
 * GLIBCXX_3.4.32 too (Ubuntu 24.04 builds); Debian 12 has glibc 2.36 and GCC 12's
 * libstdc++ (GLIBCXX_3.4.30), so none of those start here. tritonclient 2.51.0 (Triton
 * 24.10, Ubuntu 22.04) is the newest whose perf_analyzer runs on Debian 12: it needs
 * libb64.so.0d (Debian's libb64-0d) and libcudart.so.12, which NVIDIA's
 * nvidia-cuda-runtime-cu12 wheel provides (loaded at start, used only for CUDA shared
 * memory; no GPU is needed). tritonclient's wheels stopped bundling perf_analyzer at 2.61.
 */
import { spawnSync } from "node:child_process";
import { arch } from "node:os";
import { dirname, join } from "node:path";
import { ensureDebianProgram } from "./debian.ts";
import { venvPython } from "./python-venv.ts";

export const PERF_ANALYZER_VERSION = "2.51.0";

export interface PerfAnalyzer {
  /** The perf_analyzer executable. */
  bin: string;
  /** The environment it runs with (LD_LIBRARY_PATH names the venv's libcudart). */
  env: NodeJS.ProcessEnv;
}

/** perf_analyzer from tritonclient's wheel, in a cached venv; throws saying what is missing, never skips. */
export function perfAnalyzer(): PerfAnalyzer {
  if (arch() !== "x64") throw new Error(`the perf_analyzer tests run tritonclient ${PERF_ANALYZER_VERSION}'s x86-64 build; this machine is ${arch()}`);
  ensureDebianProgram("/usr/lib/x86_64-linux-gnu/libb64.so.0d", "libb64-0d", "perf_analyzer");
  const python = venvPython({
    name: "perf-analyzer",
    packages: [`tritonclient==${PERF_ANALYZER_VERSION}`, "nvidia-cuda-runtime-cu12==12.6.77"],
    imports: ["tritonclient", "nvidia.cuda_runtime"],
  });
  const bin = join(dirname(python), "perf_analyzer");
  const lib = spawnSync(python, ["-c", "import nvidia.cuda_runtime, os; print(os.path.join(nvidia.cuda_runtime.__path__[0], 'lib'))"], {
    encoding: "utf8",
  }).stdout.trim();
  const env = { ...process.env, LD_LIBRARY_PATH: lib };
  const version = spawnSync(bin, ["--version"], { encoding: "utf8", env, timeout: 60_000 });
  const said = `${version.error?.message ?? ""}${version.stdout ?? ""}${version.stderr ?? ""}`;
  if (!said.includes(`Perf Analyzer Version ${PERF_ANALYZER_VERSION}`))
    throw new Error(`${bin} --version did not answer as perf_analyzer ${PERF_ANALYZER_VERSION}:\n${said.slice(-2000)}`);
  return { bin, env };
}
