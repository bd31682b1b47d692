/**
 * Where libonnxruntime comes from: explicit setting, then NEREID_ONNXRUNTIME_LIBRARY,
 * then beside the executable, the embedded copy, onnxruntime-node's copy.
 */
import { describe, it, expect, afterEach } from "vitest";
import { ortLibraryCandidates } from "../../ffi/onnxruntime/library.ts";

const saved = process.env.NEREID_ONNXRUNTIME_LIBRARY;
afterEach(() => {
  if (saved === undefined) delete process.env.NEREID_ONNXRUNTIME_LIBRARY;
  else process.env.NEREID_ONNXRUNTIME_LIBRARY = saved;
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

  it("otherwise falls back to onnxruntime-node's copy for this architecture in development", () => {
    delete process.env.NEREID_ONNXRUNTIME_LIBRARY;
    const c = ortLibraryCandidates(undefined);
    expect(c[c.length - 1]).toMatch(new RegExp(`onnxruntime-node/bin/napi-v6/linux/${process.arch === "arm64" ? "arm64" : "x64"}/libonnxruntime\\.so\\.1$`));
  });
});
