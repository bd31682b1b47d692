/**
 * The openvino backend end to end, over HTTP: the shared suite (test/suites/backend-http.ts)
 * on a server whose repository holds the example `simple` model and `ov_double` (backend
 * "openvino"), with `--backend-config=openvino,library=<the test double>`. The double
 * (test/ffi/doubles/fake_openvino_c.c) is NOT OpenVINO: it has OpenVINO's C signatures
 * and a fixed INPUT0 + 1 model, so this checks Nereid's path from HTTP to the C calls,
 * not real OpenVINO (test/e2e/openvino/real-library.test.ts serves through the real
 * library). A second server without the library keeps `ov_double` UNAVAILABLE
 * with the reason while `simple` serves. Here besides: OpenVINO's devices (GPU, NPU) and
 * the library's name, not its path, in the client's error.
 */
import { describe, it, expect } from "vitest";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inferJson as infer } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { backendOverHttpSuite } from "../../suites/backend-http.ts";

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

  backendOverHttpSuite("openvino (test double)", {
    model: "ov_double",
    compute: (x) => x + 1,
    prepare() {
      repo = makeRepository(["simple"]);
      const model = (name: string, config: string) => {
        repo.add(`${name}/config.pbtxt`, config);
        repo.add(`${name}/1/model.xml`, '<?xml version="1.0"?>\n<net name="placeholder" version="11"/>\n');
        repo.add(`${name}/1/model.bin`, new Uint8Array(0));
      };
      model("ov_double", OV_CONFIG);
      // KIND_GPU here is OpenVINO's GPU plugin, not a CUDA device: no CUDA driver is needed.
      model("ov_gpu", OV_CONFIG.replace('"ov_double"', '"ov_gpu"').replace("KIND_CPU", "KIND_GPU"));
      model("ov_npu", OV_CONFIG.replace('"ov_double"', '"ov_npu"') + 'parameters { key: "device" value { string_value: "NPU" } }\n');
      libDir = mkdtempSync(join(tmpdir(), "nereid-fakeov-"));
      fake = join(libDir, "libfake_openvino_c.so");
      execFileSync("cc", ["-shared", "-fPIC", "-O1", "-o", fake, DOUBLE_SOURCE]);
      return repo.dir;
    },
    cleanup() {
      repo?.remove();
      if (libDir) rmSync(libDir, { recursive: true, force: true });
    },
    withLibrary: () => ({ args: [`--backend-config=openvino,library=${fake}`], env: { NEREID_CUDA_LIBRARY: "/nonexistent/libcuda.so.1" } }),
    withoutLibrary: () => ({ args: ["--backend-config=openvino,library=/nonexistent/libopenvino_c.so"] }),
    missing: {
      log: /failed to load 'ov_double' version 1: model 'ov_double': the openvino backend needs OpenVINO's C library: cannot load OpenVINO's C library/,
      error: "the openvino backend needs OpenVINO's C library",
    },

    moreWithLibrary(server) {
      it("serves a KIND_GPU model on OpenVINO's GPU device with no CUDA driver, and names the device OpenVINO refused", async () => {
        const { status, json } = await infer(server(), "ov_gpu", { inputs: [{ name: "INPUT0", shape: [1, 4], datatype: "FP32", data: [1, 2, 3, 4] }] });
        expect(status).toBe(200);
        expect(json.outputs[0].data).toEqual([2, 3, 4, 5]);
        const npu = await fetch(`${server().url}/v2/models/ov_npu/ready`);
        expect(npu.status).toBe(503);
        expect(((await npu.json()) as { error: string }).error).toContain(
          "model 'ov_npu': compiling for OpenVINO device 'NPU': openvino: ov_core_compile_model(NPU): GENERAL_ERROR: [fake openvino] Device with \"NPU\" name is not registered in the OpenVINO Runtime",
        );
      });
    },

    moreWithoutLibrary(server) {
      it("names the library, not the server's path, to the client (#29); the log has the path", async () => {
        const body = (await (await fetch(`${server().url}/v2/models/ov_double/ready`)).json()) as { error: string };
        expect(body.error).toContain("libopenvino_c.so");
        expect(body.error).not.toContain("/nonexistent");
        expect(server().log()).toContain("/nonexistent/libopenvino_c.so");
      });
    },
  });
});
