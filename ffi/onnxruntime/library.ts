/**
 * @module Where libonnxruntime comes from. An explicit path
 * (`--backend-config=onnxruntime,library=PATH`) is the only candidate when given, then
 * likewise NEREID_ONNXRUNTIME_LIBRARY; otherwise, in order: libonnxruntime.so.1 beside
 * the executable, the copy embedded in the compiled binary (extracted once to a cache
 * directory), onnxruntime-node's copy (development), and the system's library search path.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync, renameSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { homedir } from "node:os";
import type { Unusable } from "../load.ts";
import { LibraryLoadError } from "../errors.ts";

const LIB = "libonnxruntime.so.1";
const ARCH_DIR = process.arch === "arm64" ? "arm64" : "x64";
let embedded: string | undefined;
/** How the embedded copy is stored: zstd-compressed (scripts/build.ts), with the library's own size. */
let embeddedForm: { zstd: boolean; size: number } | undefined;

/**
 * Registers the embedded library (a path inside the compiled binary's file system),
 * zstd-compressed when `form` says so; undefined unsets it.
 */
export function setEmbeddedOrtLibrary(path: string | undefined, form?: { zstd: boolean; size: number }): void {
  embedded = path;
  embeddedForm = form;
}

declare const Bun: { zstdDecompressSync(data: Uint8Array): Uint8Array } | undefined;

function cacheDir(): string {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), ".cache");
  return join(base, "nereid");
}

/** Copies the embedded library to the cache once (keyed by its size), decompressed, and returns the copy's path. */
function extractEmbedded(path: string): string {
  const size = embeddedForm?.size ?? statSync(path).size;
  const dir = join(cacheDir(), `onnxruntime-${process.arch}-${size}`);
  const target = join(dir, LIB);
  if (existsSync(target) && statSync(target).size === size) return target;
  const stored = readFileSync(path);
  if (embeddedForm?.zstd && typeof Bun === "undefined")
    throw new LibraryLoadError("onnxruntime: the embedded library is zstd-compressed and only Bun decompresses it here", {
      library: "onnxruntime",
      call: "extract",
    });
  const data = embeddedForm?.zstd ? Bun!.zstdDecompressSync(stored) : stored;
  if (data.byteLength !== size)
    throw new LibraryLoadError(`onnxruntime: the embedded library decompressed to ${data.byteLength} bytes, not ${size}`, {
      library: "onnxruntime",
      call: "extract",
    });
  mkdirSync(dir, { recursive: true });
  const tmp = `${target}.${process.pid}.tmp`;
  writeFileSync(tmp, data, { mode: 0o755 });
  renameSync(tmp, target);
  return target;
}

function nodeModulesCopy(): string | Unusable {
  let pkg: string;
  try {
    pkg = createRequire(import.meta.url).resolve("onnxruntime-node/package.json");
  } catch {
    return { path: `onnxruntime-node/bin/napi-v6/linux/${ARCH_DIR}/${LIB}`, reason: "onnxruntime-node is not installed" };
  }
  const p = join(dirname(pkg), "bin", "napi-v6", "linux", ARCH_DIR, LIB);
  return existsSync(p) ? p : { path: p, reason: "no such file" };
}

/**
 * Candidates in priority order; the embedded copy is extracted when reached. Places that
 * cannot hold the library come back as Unusable, so a load error still names them.
 */
export function ortLibraryCandidates(explicit: string | undefined): (string | Unusable)[] {
  if (explicit) return [explicit];
  const env = process.env.NEREID_ONNXRUNTIME_LIBRARY;
  if (env) return [env];
  const out: (string | Unusable)[] = [];
  const beside = join(dirname(process.execPath), LIB);
  out.push(existsSync(beside) ? beside : { path: beside, reason: "no such file" });
  if (embedded) {
    try {
      out.push(extractEmbedded(embedded));
    } catch (err) {
      out.push({ path: embedded, reason: `extracting the embedded copy failed: ${(err as Error).message}` });
    }
  } else {
    out.push({ path: "(embedded copy)", reason: "this build embeds none" });
  }
  out.push(nodeModulesCopy());
  out.push(LIB); // dlopen's own search: LD_LIBRARY_PATH, then ld.so.cache
  return out;
}

/**
 * The shared library ONNX Runtime loads, from the folder its own library is in, when a
 * session asks for an execution provider built as a separate library (CUDA, TensorRT,
 * OpenVINO, ...); undefined for providers linked into libonnxruntime itself (CPU, and
 * those not listed).
 */
const PROVIDER_LIBRARIES: Record<string, string> = {
  CUDAExecutionProvider: "libonnxruntime_providers_cuda.so",
  TensorrtExecutionProvider: "libonnxruntime_providers_tensorrt.so",
  OpenVINOExecutionProvider: "libonnxruntime_providers_openvino.so",
  MIGraphXExecutionProvider: "libonnxruntime_providers_migraphx.so",
  ROCMExecutionProvider: "libonnxruntime_providers_rocm.so",
  DnnlExecutionProvider: "libonnxruntime_providers_dnnl.so",
  QNNExecutionProvider: "libonnxruntime_providers_qnn.so",
};

/**
 * Whether ONNX Runtime at `libraryPath` can load `provider`: a provider linked in, or one
 * whose library (and libonnxruntime_providers_shared.so) sits beside it. A present library
 * still needs its own dependencies (CUDA, cuDNN, TensorRT), checked only when a session
 * asks for the provider. Returns the missing file's name when it cannot.
 */
export function missingProviderLibrary(libraryPath: string, provider: string): string | undefined {
  const lib = PROVIDER_LIBRARIES[provider];
  if (!lib) return undefined;
  const dir = dirname(libraryPath);
  for (const needed of [lib, "libonnxruntime_providers_shared.so"]) if (!existsSync(join(dir, needed))) return needed;
  return undefined;
}
