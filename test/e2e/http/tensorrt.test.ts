/**
 * The tensorrt backend end to end, over HTTP: a server whose repository holds the example
 * `simple` model, `trt_double` (platform "tensorrt_plan", KIND_GPU) and `trt_bad` (a plan
 * TensorRT refuses), started with NEREID_CUDA_LIBRARY and
 * `--backend-config=tensorrt,library=<the double>`. The doubles
 * (test/ffi/doubles/fake_nvinfer.cpp, fake_cuda.c) are NOT TensorRT and NOT a GPU: they
 * keep TensorRT 10's binary interface and compute OUTPUT0 = INPUT0 * 2 on the host, so
 * this checks Nereid's path from HTTP to the vtable calls, not real TensorRT. A second
 * server, with the CUDA double but no TensorRT, keeps `trt_double` UNAVAILABLE with the
 * reason while `simple` serves.
 *
 * The server needs the backend registered in src/main.ts; with NEREID_TEST_USE_BUN=1 it
 * runs `bun src/main.ts` (a dist/nereid built before that would not know the backend).
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inferJson as infer, SIMPLE_TWOS_AND_THREES as simpleRequest, startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";

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

  beforeAll(() => {
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
  });
  afterAll(() => {
    repo?.remove();
    if (libDir) rmSync(libDir, { recursive: true, force: true });
  });

  describe("with the library", () => {
    let server: ServerProcess;
    beforeAll(async () => {
      server = await startServerProcess([`--model-repository=${repo.dir}`, "--exit-on-error=false", `--backend-config=tensorrt,library=${trt}`], {
        env: cleanEnv({ NEREID_CUDA_LIBRARY: cuda }),
        cleanEnv: true,
      });
    });
    afterAll(async () => {
      await server?.stop();
    });

    it("loads trt_double and describes it", async () => {
      expect(server.log()).toMatch(/successfully loaded 'trt_double' version 1/);
      // TensorRT's log reaches the server log through the ILogger the binding built.
      expect(server.log()).toMatch(/ffi\/tensorrt\/logger\.ts\] Loaded engine size: 0 MiB \(fake\)/);
      expect((await fetch(`${server.url}/v2/models/trt_double/ready`)).status).toBe(200);
      const meta = (await (await fetch(`${server.url}/v2/models/trt_double`)).json()) as any;
      expect(meta.platform).toBe("tensorrt_plan");
      expect(meta.inputs).toEqual([{ name: "INPUT0", datatype: "FP32", shape: [-1, 4] }]);
      expect(meta.outputs).toEqual([{ name: "OUTPUT0", datatype: "FP32", shape: [-1, 4] }]);
    });

    it("answers inferences with exact doubled values at batch 1 and 3", async () => {
      const one = await infer(server, "trt_double", { inputs: [{ name: "INPUT0", shape: [1, 4], datatype: "FP32", data: [1, 2, 3, 4] }] });
      expect(one.status).toBe(200);
      expect(one.json.outputs).toEqual([{ name: "OUTPUT0", datatype: "FP32", shape: [1, 4], data: [2, 4, 6, 8] }]);
      const input = [0, 1.5, -2, 1000, 0.25, -0.5, 3, 4, 1e-3, -7.75, 65504, 0.1];
      const three = await infer(server, "trt_double", { inputs: [{ name: "INPUT0", shape: [3, 4], datatype: "FP32", data: input }] });
      expect(three.status).toBe(200);
      expect(three.json.outputs[0].shape).toEqual([3, 4]);
      expect(three.json.outputs[0].data).toEqual(Array.from(new Float32Array(input).map((v) => v * 2)));
      const stats = (await (await fetch(`${server.url}/v2/models/trt_double/stats`)).json()) as any;
      expect(stats.model_stats[0].inference_count).toBe(4);
    });

    it("resolves KIND_AUTO to KIND_GPU on the driver's devices, as Triton does for TensorRT", async () => {
      const cfg = (await (await fetch(`${server.url}/v2/models/trt_auto/config`)).json()) as any;
      expect(cfg.instance_group).toEqual([expect.objectContaining({ name: "trt_auto", kind: "KIND_GPU", count: 1, gpus: [0] })]);
      const one = await infer(server, "trt_auto", { inputs: [{ name: "INPUT0", shape: [1, 4], datatype: "FP32", data: [1, 2, 3, 4] }] });
      expect(one.json.outputs).toEqual([{ name: "OUTPUT0", datatype: "FP32", shape: [1, 4], data: [2, 4, 6, 8] }]);
    });

    it("keeps a plan TensorRT refuses UNAVAILABLE with TensorRT's reason, and serves simple", async () => {
      for (const path of ["/v2/models/trt_bad/ready", "/v2/models/trt_bad"]) {
        const res = await fetch(server.url + path);
        expect(res.status).toBe(503);
        expect(((await res.json()) as { error: string }).error).toMatch(/TensorRT IRuntime::deserializeCudaEngine failed: .*the blob is not a fake plan/);
      }
      const simple = await infer(server, "simple", simpleRequest);
      expect(simple.status).toBe(200);
      expect(simple.json.outputs[0].data).toEqual(Array(16).fill(5));
    });
  });

  describe("without the library", () => {
    let server: ServerProcess;
    beforeAll(async () => {
      server = await startServerProcess([`--model-repository=${repo.dir}`, "--exit-on-error=false"], {
        env: cleanEnv({ NEREID_CUDA_LIBRARY: cuda }),
        cleanEnv: true,
      });
    });
    afterAll(async () => {
      await server?.stop();
    });

    it("keeps trt_double UNAVAILABLE with the reason on ready and metadata", async () => {
      expect(server.log()).toMatch(
        /failed to load 'trt_double' version 1: model 'trt_double': the tensorrt backend cannot use TensorRT: cannot load TensorRT \(libnvinfer\.so\.10\); tried:/,
      );
      for (const path of ["/v2/models/trt_double/ready", "/v2/models/trt_double"]) {
        const res = await fetch(server.url + path);
        expect(res.status).toBe(503);
        const error = ((await res.json()) as { error: string }).error;
        expect(error).toMatch(/^Request for unknown model: 'trt_double'/);
        expect(error).toContain("the tensorrt backend cannot use TensorRT: cannot load TensorRT (libnvinfer.so.10); tried:");
      }
    });

    it("still serves simple", async () => {
      const { status, json } = await infer(server, "simple", simpleRequest);
      expect(status).toBe(200);
      expect(json.outputs[0].data).toEqual(Array(16).fill(5));
    });
  });
});
