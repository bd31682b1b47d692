/**
 * Where libonnxruntime comes from: explicit setting, then NEREID_ONNXRUNTIME_LIBRARY,
 * then beside the executable, the embedded copy, onnxruntime-node's copy and the system
 * search path; and the load error names every place with its reason.
 */
import { describe, it, expect, afterEach, beforeAll, afterAll } from "vitest";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { ortLibraryCandidates, setEmbeddedOrtLibrary } from "../../ffi/onnxruntime/library.ts";
import { loadLibrary, LibraryLoadError } from "../../ffi/load.ts";

const ARCH = process.arch === "arm64" ? "arm64" : "x64";
const DEV = new RegExp(`/node_modules/onnxruntime-node/bin/napi-v6/linux/${ARCH}/libonnxruntime\\.so\\.1$`);
const saved = { lib: process.env.NEREID_ONNXRUNTIME_LIBRARY, cache: process.env.XDG_CACHE_HOME };
let tmp = "";
beforeAll(() => (tmp = mkdtempSync(join(tmpdir(), "nereid-lookup-"))));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
afterEach(() => {
  setEmbeddedOrtLibrary(undefined);
  for (const [key, value] of [
    ["NEREID_ONNXRUNTIME_LIBRARY", saved.lib],
    ["XDG_CACHE_HOME", saved.cache],
  ] as const) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
});

describe("ortLibraryCandidates", () => {
  it("uses only the explicit --backend-config library when given", () => {
    process.env.NEREID_ONNXRUNTIME_LIBRARY = "/env/libonnxruntime.so.1";
    expect(ortLibraryCandidates("/opt/ort/libonnxruntime.so.1")).toEqual(["/opt/ort/libonnxruntime.so.1"]);
  });

  it("then only the environment variable", () => {
    process.env.NEREID_ONNXRUNTIME_LIBRARY = "/env/libonnxruntime.so.1";
    expect(ortLibraryCandidates(undefined)).toEqual(["/env/libonnxruntime.so.1"]);
  });

  it("otherwise: beside the executable, embedded copy, onnxruntime-node's copy, the system search path", () => {
    delete process.env.NEREID_ONNXRUNTIME_LIBRARY;
    const c = ortLibraryCandidates(undefined);
    expect(c).toHaveLength(4);
    expect(c[0]).toEqual({ path: join(dirname(process.execPath), "libonnxruntime.so.1"), reason: "no such file" });
    expect(c[1]).toEqual({ path: "(embedded copy)", reason: "this build embeds none" });
    expect(c[2]).toMatch(DEV);
    expect(c[3]).toBe("libonnxruntime.so.1");
  });

  it("extracts the embedded copy once into the cache directory and offers it before the development copy", () => {
    delete process.env.NEREID_ONNXRUNTIME_LIBRARY;
    process.env.XDG_CACHE_HOME = join(tmp, "cache");
    const embedded = join(tmp, "embedded.so");
    writeFileSync(embedded, "pretend ELF\n".repeat(100));
    setEmbeddedOrtLibrary(embedded);
    const c = ortLibraryCandidates(undefined);
    const extracted = join(tmp, "cache", "nereid", `onnxruntime-${process.arch}-1200`, "libonnxruntime.so.1");
    expect(c[1]).toBe(extracted);
    expect(readFileSync(extracted, "utf8")).toBe(readFileSync(embedded, "utf8"));
    const mtime = statSync(extracted).mtimeMs;
    expect(ortLibraryCandidates(undefined)[1]).toBe(extracted);
    expect(statSync(extracted).mtimeMs).toBe(mtime);
    expect(c[2]).toMatch(DEV);
  });

  it("reports an embedded copy that cannot be extracted instead of trying it", () => {
    delete process.env.NEREID_ONNXRUNTIME_LIBRARY;
    setEmbeddedOrtLibrary("/nonexistent/embedded.so");
    const c = ortLibraryCandidates(undefined);
    expect(c[1]).toMatchObject({ path: "/nonexistent/embedded.so" });
    expect((c[1] as { reason: string }).reason).toMatch(/^extracting the embedded copy failed: ENOENT/);
  });
});

describe("loadLibrary", () => {
  it("names every place in order, each with its reason, when none loads", () => {
    let err: unknown;
    try {
      loadLibrary("ONNX Runtime (libonnxruntime.so.1)", [
        { path: "/usr/bin/libonnxruntime.so.1", reason: "no such file" },
        { path: "(embedded copy)", reason: "this build embeds none" },
        "/nonexistent/libonnxruntime.so.1",
      ]);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(LibraryLoadError);
    const lines = (err as Error).message.split("\n");
    expect(lines.slice(0, 3)).toEqual([
      "cannot load ONNX Runtime (libonnxruntime.so.1); tried:",
      "  /usr/bin/libonnxruntime.so.1: no such file",
      "  (embedded copy): this build embeds none",
    ]);
    expect(lines[3]).toMatch(/^ {2}\/nonexistent\/libonnxruntime\.so\.1: .*No such file or directory/);
    expect(lines).toHaveLength(4);
  });

  it("says when there was nothing to try", () => {
    expect(() => loadLibrary("X", [])).toThrow("cannot load X; tried:\n  (no candidates)");
  });
});
