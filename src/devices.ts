/**
 * @module `nereid devices [--self-test] [--cuda-library=<path>]`: what the CUDA driver
 * sees, and with --self-test a round trip on every GPU that exercises the binding the
 * way the server will use it: allocate, copy host→device→host synchronously and on a
 * stream, and hand the allocation to a second process through a CUDA IPC handle (the
 * CUDA shared-memory extension's path), which reads it back and reports a checksum.
 * Last, which TensorRT runtime the tensorrt backend would load ("TensorRT <version>
 * (<path>)" or "no TensorRT: <reason>"; NEREID_TENSORRT_LIBRARY overrides the search),
 * which OpenVINO C library the openvino backend would load ("OpenVINO <build>
 * (<path>)" or "no OpenVINO: <reason>"; NEREID_OPENVINO_LIBRARY overrides the search),
 * and the ONNX Runtime the onnxruntime backend loads, with the execution providers it
 * can load, apart from those compiled in whose provider library is absent.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { CudaDriver } from "../ffi/cuda/driver.ts";
import { probeTensorRt } from "../ffi/tensorrt/library.ts";
import { OpenVinoRuntime } from "../ffi/openvino/runtime.ts";
import { OrtEnvironment } from "../ffi/onnxruntime/handles.ts";
import { missingProviderLibrary } from "../ffi/onnxruntime/library.ts";

/** One line (or an error's lines) on the TensorRT runtime library. */
export function tensorRtReport(): string {
  try {
    const { path, version, supported } = probeTensorRt();
    return supported ? `TensorRT ${version.text} (${path})` : `TensorRT ${version.text} (${path}): not usable, the tensorrt backend needs TensorRT 10`;
  } catch (err) {
    return `no TensorRT: ${(err as Error).message}`;
  }
}

/** One line (or an error's lines) on OpenVINO's C library. */
export function openVinoReport(): string {
  try {
    const rt = OpenVinoRuntime.get();
    return `OpenVINO ${rt.version} (${rt.path}), element types of ${rt.elementTypes.table.label}`;
  } catch (err) {
    return `no OpenVINO: ${(err as Error).message}`;
  }
}

/**
 * One line (or an error's lines) on the ONNX Runtime library and its providers: those it
 * can load, and those compiled in whose provider library is not beside it (which no
 * KIND_GPU instance or execution accelerator can use here).
 */
export function onnxRuntimeReport(): string {
  try {
    const env = OrtEnvironment.get();
    const usable: string[] = [];
    const missing: string[] = [];
    for (const p of env.availableProviders()) {
      const lib = missingProviderLibrary(env.api.libraryPath, p);
      if (lib) missing.push(`${p} (no ${lib} beside it)`);
      else usable.push(p);
    }
    const unusable = missing.length > 0 ? `; compiled in but not usable here: ${missing.join(", ")}` : "";
    return `ONNX Runtime ${env.version} (${env.api.libraryPath}), execution providers: ${usable.join(", ")}${unusable}`;
  } catch (err) {
    return `no ONNX Runtime: ${(err as Error).message}`;
  }
}

export function runDevices(args: { cudaLibrary?: string; selfTest?: boolean; ipcOpen?: string }): number {
  if (args.ipcOpen) return cudaDevices(args);
  const code = cudaDevices(args);
  process.stdout.write(`${tensorRtReport()}\n${openVinoReport()}\n${onnxRuntimeReport()}\n`);
  return code;
}

function cudaDevices(args: { cudaLibrary?: string; selfTest?: boolean; ipcOpen?: string }): number {
  let driver: CudaDriver;
  try {
    driver = CudaDriver.get(args.cudaLibrary);
  } catch (err) {
    process.stdout.write(`no CUDA driver: ${(err as Error).message}\n`);
    return args.selfTest ? 1 : 0;
  }
  try {
    if (args.ipcOpen) return ipcChild(driver, args.ipcOpen);
    const count = driver.deviceCount();
    process.stdout.write(`CUDA driver ${driver.version()} (${driver.path}), ${count} device(s)\n`);
    let failures = 0;
    for (let i = 0; i < count; i++) {
      const d = driver.device(i);
      process.stdout.write(
        `  GPU ${d.ordinal}: ${d.name}, compute capability ${d.computeCapability}, ${d.multiprocessors} SMs, ${(d.totalMemoryBytes / 2 ** 30).toFixed(1)} GiB\n`,
      );
      if (args.selfTest) failures += selfTest(driver, i, args.cudaLibrary) ? 0 : 1;
    }
    return failures === 0 ? 0 : 1;
  } catch (err) {
    process.stderr.write(`CUDA driver error: ${(err as Error).message}\n`);
    return 2;
  }
}

const SIZE = 16 * 1024 * 1024;

function pattern(seed: number): Uint8Array {
  const out = new Uint8Array(SIZE);
  let s = seed >>> 0;
  for (let i = 0; i < SIZE; i++) {
    s = (s * 1664525 + 1013904223) >>> 0;
    out[i] = s >>> 24;
  }
  return out;
}

const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex").slice(0, 16);

function selfTest(driver: CudaDriver, ordinal: number, library?: string): boolean {
  const report = (what: string, ok: boolean, detail = "") => {
    process.stdout.write(`    ${ok ? "ok  " : "FAIL"} ${what}${detail ? `: ${detail}` : ""}\n`);
    return ok;
  };
  const ctx = driver.primaryContext(ordinal);
  const buf = ctx.alloc(SIZE);
  const stream = ctx.stream();
  try {
    const a = pattern(ordinal + 1);
    buf.write(a);
    const back = new Uint8Array(SIZE);
    buf.read(back);
    let ok = report("16 MiB host→device→host (sync)", Buffer.compare(a, back) === 0, sha(back));
    const b = pattern(ordinal + 7);
    buf.write(b, stream);
    const back2 = new Uint8Array(SIZE);
    buf.read(back2, stream);
    stream.synchronize();
    ok = report("16 MiB host→device→host (async on a stream)", Buffer.compare(b, back2) === 0, sha(back2)) && ok;
    const handle = Buffer.from(buf.ipcHandle()).toString("hex");
    const child = spawnSync(
      process.execPath,
      [...process.execArgv, ...childEntry(), "devices", `--ipc-open=${ordinal}:${handle}`, ...(library ? [`--cuda-library=${library}`] : [])],
      { encoding: "utf8", timeout: 60_000 },
    );
    const got = /sha256 (\w+)/.exec(child.stdout)?.[1];
    ok = report("CUDA IPC handle opened in a second process", got === sha(b), got ? `child read ${got}` : (child.stderr || child.stdout).trim()) && ok;
    return ok;
  } finally {
    stream.destroy();
    buf.free();
    ctx.release();
  }
}

/** How to start this same program again: the compiled binary needs nothing, `bun src/main.ts` needs its script. */
function childEntry(): string[] {
  const script = process.argv[1];
  // A compiled binary's own entry lives in Bun's embedded filesystem (/$bunfs/...).
  return script && /\.(ts|js)$/.test(script) && !script.includes("$bunfs") && !script.startsWith("B:/~BUN") ? [script] : [];
}

function ipcChild(driver: CudaDriver, spec: string): number {
  const [ordinal, hex] = spec.split(":");
  const ctx = driver.primaryContext(Number(ordinal));
  const buf = ctx.openIpc(Buffer.from(hex ?? "", "hex"), SIZE);
  try {
    const out = new Uint8Array(SIZE);
    buf.read(out);
    process.stdout.write(`sha256 ${sha(out)}\n`);
    return 0;
  } finally {
    buf.free();
    ctx.release();
  }
}
