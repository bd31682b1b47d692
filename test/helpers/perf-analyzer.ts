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
import { execFile, spawnSync } from "node:child_process";
import { arch } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
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

/** The genai-perf release the tests run (PyPI); it drives the perf_analyzer on its PATH. */
export const GENAI_PERF_VERSION = "0.0.16";

export interface GenaiPerf {
  /** Runs `genai-perf <args>` in `cwd`; resolves with its output, rejects on a non-zero exit. */
  run(args: string[], cwd: string): Promise<string>;
  /**
   * Writes a Hugging Face tokenizer (tokenizer.json + tokenizer_config.json) into `dir`:
   * a word-level vocabulary of 25 English words split on whitespace, so a text of n words is
   * n tokens. genai-perf needs one to make prompts and count tokens, and its default is
   * downloaded from the Hugging Face Hub.
   */
  writeTokenizer(dir: string): void;
}

/** genai-perf in a cached venv of its own, with `pa` (perfAnalyzer()) as its perf_analyzer. */
export function genaiPerf(pa: PerfAnalyzer): GenaiPerf {
  const python = venvPython({
    name: "genai-perf",
    packages: [`genai-perf==${GENAI_PERF_VERSION}`],
    imports: ["genai_perf.main", "tokenizers"],
    systemSitePackages: false,
  });
  const env = { ...pa.env, PATH: `${dirname(pa.bin)}:${process.env.PATH ?? "/usr/bin:/bin"}`, HF_HUB_OFFLINE: "1" };
  return {
    // The venv's bin/genai-perf names the folder it was built in (python-venv.ts renames it): call main from its python.
    run: async (args, cwd) => {
      const { stdout, stderr } = await promisify(execFile)(python, ["-c", "import sys; from genai_perf.main import main; sys.exit(main())", ...args], {
        cwd,
        env,
        encoding: "utf8",
        timeout: 300_000,
        maxBuffer: 64 * 1024 * 1024,
      });
      return `${stdout}${stderr}`;
    },
    writeTokenizer: (dir) => {
      const script = [
        "import json, os, sys",
        "from tokenizers import Tokenizer, models, pre_tokenizers",
        "words = ['[UNK]'] + 'the a of and to in is it that for on with as was at by be this from or an are not have'.split()",
        "tok = Tokenizer(models.WordLevel(vocab={w: i for i, w in enumerate(words)}, unk_token='[UNK]'))",
        "tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()",
        "os.makedirs(sys.argv[1], exist_ok=True)",
        "tok.save(os.path.join(sys.argv[1], 'tokenizer.json'))",
        "json.dump({'tokenizer_class': 'PreTrainedTokenizerFast', 'unk_token': '[UNK]'}, open(os.path.join(sys.argv[1], 'tokenizer_config.json'), 'w'))",
      ].join("\n");
      const r = spawnSync(python, ["-c", script, dir], { encoding: "utf8" });
      if (r.status !== 0) throw new Error(`writing the test tokenizer failed:\n${r.stderr}`);
    },
  };
}
