/** CLI flags with tritonserver's names and defaults (L-01..L-05, L-07, L-10). */
import { describe, it, expect } from "vitest";
import { parseArgs, UsageError } from "../../src/options.ts";

const run = (...args: string[]) => {
  const r = parseArgs(args);
  if (r.kind !== "run") throw new Error("expected run");
  return r.options;
};

describe("parseArgs", () => {
  it("applies Triton's defaults", () => {
    const o = run("--model-repository=/m");
    expect(o).toMatchObject({
      modelRepositories: ["/m"], httpPort: 8000, grpcPort: 8001, metricsPort: 8002, exitOnError: true,
      strictReadiness: true, id: "triton", httpMaxInputSize: 64 * 1024 * 1024, modelControlMode: "none", repositoryPollSecs: 0,
    });
  });

  it("accepts --flag=value and --flag value, repeats and backend configs", () => {
    const o = run("--model-repository", "/a", "--model-store=/b", "--http-port", "9000", "--allow-grpc=false",
      "--backend-config=onnxruntime,library=/x/libonnxruntime.so.1", "--backend-config=default-max-batch-size=8", "--id=nereid");
    expect(o.modelRepositories).toEqual(["/a", "/b"]);
    expect(o.httpPort).toBe(9000);
    expect(o.allowGrpc).toBe(false);
    expect(o.backendConfig).toEqual({ onnxruntime: { library: "/x/libonnxruntime.so.1" }, "": { "default-max-batch-size": "8" } });
    expect(o.id).toBe("nereid");
  });

  it("maps the deprecated --strict-model-config", () => {
    expect(run("--model-repository=/m", "--strict-model-config=true").disableAutoCompleteConfig).toBe(true);
    expect(run("--model-repository=/m", "--disable-auto-complete-config").disableAutoCompleteConfig).toBe(true);
  });

  it("rejects what tritonserver rejects", () => {
    expect(() => parseArgs(["--model-repository=/m", "--bogus"])).toThrow(new UsageError("unknown option '--bogus'"));
    expect(() => parseArgs(["--http-port=80"])).toThrow("--model-repository must be specified");
    expect(() => parseArgs(["--model-repository=/m", "--http-port=70000"])).toThrow("expected 0..65535");
    expect(() => parseArgs(["--model-repository=/m", "--load-model=a"])).toThrow("only allowed with --model-control-mode=explicit");
    expect(() => parseArgs(["--model-repository=/m", "--grpc-port=8000"])).toThrow("at the same port 8000");
    expect(() => parseArgs(["--model-repository=/m", "stray"])).toThrow("unexpected argument 'stray'");
  });

  it("recognises help and version", () => {
    expect(parseArgs(["--help"])).toEqual({ kind: "help" });
    expect(parseArgs(["--version"])).toEqual({ kind: "version" });
  });
});
