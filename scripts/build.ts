/**
 * Builds the single executable with `bun build --compile`.
 *
 *   bun scripts/build.ts                          → dist/nereid (this host)
 *   bun scripts/build.ts --target=bun-linux-arm64 → dist/nereid-linux-arm64
 *   ... --outfile=<path>                          → that path instead (scripts/release.sh)
 *   ... --no-bytecode                             → no pre-parsed bytecode: smaller, slower to start
 *
 * Bun's bundler cannot follow koffi's platform-dependent loader, so the entry generated
 * here embeds koffi's native module and ONNX Runtime's CPU library as files; at run
 * time ffi/ loads koffi from the embedded copy and extracts libonnxruntime to a cache
 * directory (unless a library is configured or sits beside the executable). The library
 * is embedded zstd-compressed (46 MB → 13.5 MB; compressed once per library and kept in
 * dist/.build, ~30 s) and decompressed when it is extracted (~0.7 s, once per machine).
 */
import { existsSync, mkdirSync, writeFileSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { join, resolve, relative } from "node:path";
import { spawnSync } from "node:child_process";

const root = resolve(import.meta.dir, "..");
const targetArg = process.argv.find((a) => a.startsWith("--target="))?.slice("--target=".length);
const hostArch = process.arch === "arm64" ? "arm64" : "x64";
const arch = targetArg ? (targetArg.includes("arm64") ? "arm64" : "x64") : hostArch;
const target = targetArg ?? `bun-linux-${hostArch}`;
const outfileArg = process.argv.find((a) => a.startsWith("--outfile="))?.slice("--outfile=".length);
// --no-bytecode: a binary 13 MB smaller (127.7 against 140.7 MB on 2026-11-25) that takes
// about 220 ms longer from start to ready (570 against 350 ms serving `simple` on the 2-core VM).
const BYTECODE = !process.argv.includes("--no-bytecode");
const JIT_POLICY = 8;
const outfile = outfileArg ? resolve(outfileArg) : join(root, "dist", targetArg ? `nereid-linux-${arch}` : "nereid");
const work = join(root, "dist", ".build", arch);
mkdirSync(work, { recursive: true });

function run(cmd: string, args: string[], cwd = root): void {
  const r = spawnSync(cmd, args, { cwd, stdio: "inherit" });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed with ${r.status}`);
}

/** koffi's native module for `arch`: installed for the host, fetched from npm for others. */
function koffiNative(): string {
  const triplet = `linux_${arch}`;
  const installed = join(root, "node_modules", "@koromix", `koffi-linux-${arch}`, triplet, "koffi.node");
  if (existsSync(installed)) return installed;
  const version = JSON.parse(readFileSync(join(root, "node_modules/koffi/package.json"), "utf8")).version;
  const dir = join(work, "koffi");
  const file = join(dir, "package", triplet, "koffi.node");
  if (!existsSync(file)) {
    // Fetched into a folder of this build's own, then renamed: two builds at once never share a half-extracted package.
    const mine = `${dir}.${process.pid}`;
    rmSync(mine, { recursive: true, force: true });
    mkdirSync(mine, { recursive: true });
    run("npm", ["pack", `@koromix/koffi-linux-${arch}@${version}`, "--pack-destination", mine, "--silent"]);
    const tgz = readdirSync(mine).find((f) => f.endsWith(".tgz"));
    if (!tgz) throw new Error(`npm pack @koromix/koffi-linux-${arch} produced no archive`);
    run("tar", ["-xzf", join(mine, tgz), "-C", mine]);
    if (!existsSync(file)) {
      rmSync(dir, { recursive: true, force: true });
      renameSync(mine, dir);
    } else {
      rmSync(mine, { recursive: true, force: true });
    }
  }
  return file;
}

const ortLibrary = join(root, "node_modules/onnxruntime-node/bin/napi-v6/linux", arch, "libonnxruntime.so.1");
if (!existsSync(ortLibrary)) throw new Error(`missing ${ortLibrary}: run npm ci`);
const koffi = koffiNative();

/** ONNX Runtime's library, zstd-compressed, made once per library file (keyed by its size and mtime). */
function compressedOrtLibrary(): { path: string; size: number } {
  const st = statSync(ortLibrary);
  const out = join(work, `libonnxruntime.so.1.${st.size}.${Math.floor(st.mtimeMs)}.zst`);
  if (!existsSync(out)) {
    const tmp = `${out}.${process.pid}`;
    writeFileSync(tmp, Bun.zstdCompressSync(readFileSync(ortLibrary), { level: 19 }));
    renameSync(tmp, out);
  }
  return { path: out, size: st.size };
}
const ortCompressed = compressedOrtLibrary();

const rel = (p: string) => {
  const r = relative(work, p);
  return r.startsWith(".") ? r : `./${r}`;
};
const entry = join(work, "entry.ts");
// Worker threads' entries are entry points of their own; the binary finds their embedded
// copies by these paths from the project root (src/core/worker-url.ts, told by --define).
const HTTP_WORKER = "src/frontends/http/worker-entry.ts";
const GRPC_WORKER = "src/frontends/grpc/worker-entry.ts";
const TS_WORKER = "src/backends/typescript/worker-entry.ts";
const DECODE_WORKER = "src/frontends/http/decode-entry.ts";
const BATCH_THREAD = "src/server/batch-thread-entry.ts";
// Written beside and renamed, so that two builds at once (tests run in parallel) never read a half-written entry.
writeFileSync(
  `${entry}.${process.pid}`,
  `// Generated by scripts/build.ts; do not edit.
import koffiNode from ${JSON.stringify(rel(koffi))} with { type: "file" };
import ortLibrary from ${JSON.stringify(rel(ortCompressed.path))} with { type: "file" };
import { setKoffiNativePath } from ${JSON.stringify(rel(join(root, "ffi/load.ts")))};
import { setEmbeddedOrtLibrary } from ${JSON.stringify(rel(join(root, "ffi/onnxruntime/library.ts")))};
setKoffiNativePath(koffiNode);
setEmbeddedOrtLibrary(ortLibrary, { zstd: true, size: ${ortCompressed.size} });
void import(${JSON.stringify(rel(join(root, "src/main.ts")))}).then(({ runCli }) => runCli());
`,
);
renameSync(`${entry}.${process.pid}`, entry);

mkdirSync(join(root, "dist"), { recursive: true });
const bun = process.execPath;
// --bytecode (which needs CommonJS output, hence no top-level await in the entry) ships
// pre-parsed JavaScriptCore bytecode: start-up to a listening server drops by ~60 ms, and to
// ready serving `simple` by ~220 ms (measured 2026-11-25), for 13 MB more binary.
run(bun, [
  "build",
  "--compile",
  `--target=${target}`,
  "--minify",
  ...(BYTECODE ? ["--bytecode"] : []),
  // The main thread starts with the JIT 8× as reluctant, so that code run once while the
  // server starts stays in the interpreter; src/main.ts sets the normal policy back once
  // the server is up. The JIT thread's CPU to ready fell from ~6.5 to ~1.9 ms with the
  // example start-up models (#30, start → ready; 3 gave 3.2 ms, 24 no less than 8).
  `--compile-jit-policy=${JIT_POLICY}`,
  "--format=cjs",
  "--sourcemap=none",
  "--define",
  "NEREID_COMPILED=true",
  entry,
  HTTP_WORKER,
  GRPC_WORKER,
  TS_WORKER,
  DECODE_WORKER,
  BATCH_THREAD,
  "--outfile",
  outfile,
]);
console.log(`built ${relative(root, outfile)} (${target})`);
