/**
 * The tensorrt backend end to end, over HTTP: the shared suite (test/suites/backend-http.ts)
 * on a server whose repository holds the example `simple` model, `trt_double` (platform
 * "tensorrt_plan", KIND_GPU), `trt_auto` and `trt_bad` (a plan TensorRT refuses), started
 * with NEREID_CUDA_LIBRARY and `--backend-config=tensorrt,library=<the double>`. The doubles
 * (test/ffi/doubles/fake_nvinfer.cpp, fake_cuda.c) are NOT TensorRT and NOT a GPU: they
 * keep TensorRT 10's binary interface and compute OUTPUT0 = INPUT0 * 2 on the host, so
 * this checks Nereid's path from HTTP to the vtable calls, not real TensorRT. A second
 * server, with the CUDA double but no TensorRT, keeps `trt_double` UNAVAILABLE with the
 * reason while `simple` serves.
 *
 * The server needs the backend registered in src/main.ts; with NEREID_TEST_USE_BUN=1 it
 * runs `bun src/main.ts` (a dist/nereid built before that would not know the backend).
 */
import { describe, it, expect } from "vitest";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inferJson as infer, SIMPLE_TWOS_AND_THREES as simpleRequest } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { backendOverHttpSuite } from "../../suites/backend-http.ts";

const hasCompilers = ["cc", "c++"].every((c) => spawnSync(c, ["--version"], { stdio: "ignore" }).status === 0);
const DOUBLES = join(import.meta.dirname, "..", "..", "ffi", "doubles");

const config = (name: string) => `name: "${name}"
platform: "tensorrt_plan"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]
`;

/** The environment without any TensorRT / CUDA overrides the test runner may carry. */
function cleanEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^(NEREID_TENSORRT_LIBRARY|NEREID_CUDA_LIBRARY|FAKE_TRT_|FAKE_CUDA_)/.test(k)) env[k] = v;
  }
  return { ...env, ...extra };
}

describe.skipIf(!hasCompilers)("the tensorrt backend over HTTP (with test doubles, not TensorRT or a GPU)", () => {
  let repo: ReturnType<typeof makeRepository>;
  let libDir = "";
  let trt = "";
  let cuda = "";

  backendOverHttpSuite("tensorrt (test doubles)", {
    model: "trt_double",
    compute: (x) => x * 2,
    prepare() {
      repo = makeRepository(["simple"]);
      repo.add("trt_double/config.pbtxt", config("trt_double"));
      repo.add("trt_double/1/model.plan", "FAKEPLAN");
      // No instance_group: KIND_AUTO becomes KIND_GPU on every device the (fake) driver reports.
      repo.add("trt_auto/config.pbtxt", config("trt_auto").replace(/instance_group.*\n/, ""));
      repo.add("trt_auto/1/model.plan", "FAKEPLAN");
      repo.add("trt_bad/config.pbtxt", config("trt_bad"));
      repo.add("trt_bad/1/model.plan", "not a TensorRT plan");
      libDir = mkdtempSync(join(tmpdir(), "nereid-faketrt-"));
      trt = join(libDir, "libfake_nvinfer.so");
      cuda = join(libDir, "libfake_cuda.so");
      execFileSync("c++", ["-shared", "-fPIC", "-std=c++17", "-O1", "-o", trt, join(DOUBLES, "fake_nvinfer.cpp")]);
      execFileSync("cc", ["-shared", "-fPIC", "-O1", "-o", cuda, join(DOUBLES, "fake_cuda.c")]);
      return repo.dir;
    },
    cleanup() {
      repo?.remove();
      if (libDir) rmSync(libDir, { recursive: true, force: true });
    },
    withLibrary: () => ({ args: [`--backend-config=tensorrt,library=${trt}`], env: cleanEnv({ NEREID_CUDA_LIBRARY: cuda }), cleanEnv: true }),
    withoutLibrary: () => ({ args: [], env: cleanEnv({ NEREID_CUDA_LIBRARY: cuda }), cleanEnv: true }),
    missing: {
      log: /failed to load 'trt_double' version 1: model 'trt_double': the tensorrt backend cannot use TensorRT: cannot load TensorRT \(libnvinfer\.so\.10\); tried:/,
      error: "the tensorrt backend cannot use TensorRT: cannot load TensorRT (libnvinfer.so.10); tried:",
    },

    moreWithLibrary(server) {
      it("passes TensorRT's log to the server log, and names the platform", async () => {
        // TensorRT's log reaches the server log through the ILogger the binding built.
        expect(server().log()).toMatch(/ffi\/tensorrt\/logger\.ts\] Loaded engine size: 0 MiB \(fake\)/);
        const meta = (await (await fetch(`${server().url}/v2/models/trt_double`)).json()) as any;
        expect(meta.platform).toBe("tensorrt_plan");
      });

      it("resolves KIND_AUTO to KIND_GPU on the driver's devices, as Triton does for TensorRT", async () => {
        const cfg = (await (await fetch(`${server().url}/v2/models/trt_auto/config`)).json()) as any;
        expect(cfg.instance_group).toEqual([expect.objectContaining({ name: "trt_auto", kind: "KIND_GPU", count: 1, gpus: [0] })]);
        const one = await infer(server(), "trt_auto", { inputs: [{ name: "INPUT0", shape: [1, 4], datatype: "FP32", data: [1, 2, 3, 4] }] });
        expect(one.json.outputs).toEqual([{ name: "OUTPUT0", datatype: "FP32", shape: [1, 4], data: [2, 4, 6, 8] }]);
      });

      it("keeps a plan TensorRT refuses UNAVAILABLE with TensorRT's reason, and serves simple", async () => {
        for (const path of ["/v2/models/trt_bad/ready", "/v2/models/trt_bad"]) {
          const res = await fetch(server().url + path);
          expect(res.status).toBe(503);
          expect(((await res.json()) as { error: string }).error).toMatch(/TensorRT IRuntime::deserializeCudaEngine failed: .*the blob is not a fake plan/);
        }
        const simple = await infer(server(), "simple", simpleRequest);
        expect(simple.status).toBe(200);
        expect(simple.json.outputs[0].data).toEqual(Array(16).fill(5));
      });
    },
  });
});
