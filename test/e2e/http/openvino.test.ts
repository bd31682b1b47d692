/**
 * The openvino backend end to end, over HTTP: a server whose repository holds the
 * example `simple` model and `ov_double` (backend "openvino"), with
 * `--backend-config=openvino,library=<the test double>`. The double
 * (test/ffi/doubles/fake_openvino_c.c) is NOT OpenVINO: it has OpenVINO's C signatures
 * and a fixed INPUT0 + 1 model, so this checks Nereid's path from HTTP to the C calls,
 * not real OpenVINO (test/e2e/openvino/real-library.test.ts serves through the real
 * library). A second server without the library keeps `ov_double` UNAVAILABLE with the
 * reason while `simple` serves.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inferJson as infer, SIMPLE_TWOS_AND_THREES as simpleRequest, startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";

const hasCompiler = spawnSync("cc", ["--version"], { stdio: "ignore" }).status === 0;
const DOUBLE_SOURCE = join(import.meta.dirname, "..", "..", "ffi", "doubles", "fake_openvino_c.c");

const OV_CONFIG = `name: "ov_double"
backend: "openvino"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
`;

describe.skipIf(!hasCompiler)("the openvino backend over HTTP (with the test double, not OpenVINO)", () => {
  let repo: ReturnType<typeof makeRepository>;
  let libDir = "";
  let fake = "";

  beforeAll(() => {
    repo = makeRepository(["simple"]);
    repo.add("ov_double/config.pbtxt", OV_CONFIG);
    repo.add("ov_double/1/model.xml", '<?xml version="1.0"?>\n<net name="placeholder" version="11"/>\n');
    repo.add("ov_double/1/model.bin", new Uint8Array(0));
    // KIND_GPU here is OpenVINO's GPU plugin, not a CUDA device: no CUDA driver is needed.
    repo.add("ov_gpu/config.pbtxt", OV_CONFIG.replace('"ov_double"', '"ov_gpu"').replace("KIND_CPU", "KIND_GPU"));
    repo.add("ov_gpu/1/model.xml", '<?xml version="1.0"?>\n<net name="placeholder" version="11"/>\n');
    repo.add("ov_gpu/1/model.bin", new Uint8Array(0));
    repo.add("ov_npu/config.pbtxt", OV_CONFIG.replace('"ov_double"', '"ov_npu"') + 'parameters { key: "device" value { string_value: "NPU" } }\n');
    repo.add("ov_npu/1/model.xml", '<?xml version="1.0"?>\n<net name="placeholder" version="11"/>\n');
    repo.add("ov_npu/1/model.bin", new Uint8Array(0));
    libDir = mkdtempSync(join(tmpdir(), "nereid-fakeov-"));
    fake = join(libDir, "libfake_openvino_c.so");
    execFileSync("cc", ["-shared", "-fPIC", "-O1", "-o", fake, DOUBLE_SOURCE]);
  });
  afterAll(() => {
    repo?.remove();
    if (libDir) rmSync(libDir, { recursive: true, force: true });
  });

  describe("with the library", () => {
    let server: ServerProcess;
    beforeAll(async () => {
      server = await startServerProcess([`--model-repository=${repo.dir}`, "--exit-on-error=false", `--backend-config=openvino,library=${fake}`], {
        env: { NEREID_CUDA_LIBRARY: "/nonexistent/libcuda.so.1" },
      });
    });
    afterAll(async () => {
      await server?.stop();
    });

    it("loads the model and describes it", async () => {
      expect(server.log()).toMatch(/successfully loaded 'ov_double' version 1/);
      const res = await fetch(`${server.url}/v2/models/ov_double`);
      expect(res.status).toBe(200);
      const meta = (await res.json()) as any;
      expect(meta.inputs).toEqual([{ name: "INPUT0", datatype: "FP32", shape: [-1, 4] }]);
      expect(meta.outputs).toEqual([{ name: "OUTPUT0", datatype: "FP32", shape: [-1, 4] }]);
    });

    it("answers an inference with exact values", async () => {
      const { status, json } = await infer(server, "ov_double", {
        inputs: [{ name: "INPUT0", shape: [2, 4], datatype: "FP32", data: [0, 1.5, -2, 1000, 0.25, -0.5, 3, 4] }],
      });
      expect(status).toBe(200);
      expect(json.outputs).toEqual([{ name: "OUTPUT0", datatype: "FP32", shape: [2, 4], data: [1, 2.5, -1, 1001, 1.25, 0.5, 4, 5] }]);
    });

    it("serves a KIND_GPU model on OpenVINO's GPU device with no CUDA driver, and names the device OpenVINO refused", async () => {
      const { status, json } = await infer(server, "ov_gpu", { inputs: [{ name: "INPUT0", shape: [1, 4], datatype: "FP32", data: [1, 2, 3, 4] }] });
      expect(status).toBe(200);
      expect(json.outputs[0].data).toEqual([2, 3, 4, 5]);
      const npu = await fetch(`${server.url}/v2/models/ov_npu/ready`);
      expect(npu.status).toBe(503);
      expect(((await npu.json()) as { error: string }).error).toContain(
        "model 'ov_npu': compiling for OpenVINO device 'NPU': openvino: ov_core_compile_model(NPU): GENERAL_ERROR: [fake openvino] Device with \"NPU\" name is not registered in the OpenVINO Runtime",
      );
    });

    it("refuses a wrong shape before the backend, and keeps serving both models", async () => {
      const wrong = await infer(server, "ov_double", { inputs: [{ name: "INPUT0", shape: [1, 3], datatype: "FP32", data: [1, 2, 3] }] });
      expect(wrong.status).toBe(400);
      expect((await infer(server, "simple", simpleRequest)).json.outputs[0].data).toEqual(Array(16).fill(5));
      const again = await infer(server, "ov_double", { inputs: [{ name: "INPUT0", shape: [1, 4], datatype: "FP32", data: [1, 2, 3, 4] }] });
      expect(again.json.outputs[0].data).toEqual([2, 3, 4, 5]);
    });
  });

  describe("without the library", () => {
    let server: ServerProcess;
    beforeAll(async () => {
      server = await startServerProcess([
        `--model-repository=${repo.dir}`,
        "--exit-on-error=false",
        "--backend-config=openvino,library=/nonexistent/libopenvino_c.so",
      ]);
    });
    afterAll(async () => {
      await server?.stop();
    });

    it("keeps ov_double UNAVAILABLE with the reason", async () => {
      expect(server.log()).toMatch(
        /failed to load 'ov_double' version 1: model 'ov_double': the openvino backend needs OpenVINO's C library: cannot load OpenVINO's C library/,
      );
      const res = await fetch(`${server.url}/v2/models/ov_double/ready`);
      expect(res.status).toBe(503);
      const body = (await res.json()) as { error: string };
      expect(body.error).toContain("the openvino backend needs OpenVINO's C library");
      // The library's name, not the server's path (#29); the log line has the path.
      expect(body.error).toContain("libopenvino_c.so");
      expect(body.error).not.toContain("/nonexistent");
      expect(server.log()).toContain("/nonexistent/libopenvino_c.so");
      const index = await fetch(`${server.url}/v2/repository/index`, { method: "POST", body: "{}" });
      const entry = ((await index.json()) as { name: string; state: string; reason: string }[]).find((m) => m.name === "ov_double");
      expect(entry?.state).toBe("UNAVAILABLE");
      expect(entry?.reason).toContain("the openvino backend needs OpenVINO's C library");
    });

    it("still serves simple", async () => {
      const { status, json } = await infer(server, "simple", simpleRequest);
      expect(status).toBe(200);
      expect(json.outputs[0].data).toEqual(Array(16).fill(5));
    });
  });
});
