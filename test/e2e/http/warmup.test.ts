/**
 * model_warmup (issue #6): samples run on every instance before READY, do not count in
 * statistics, and a sample that fails (in validation or in ONNX Runtime itself) keeps
 * the version from becoming READY, with the reason.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;

const warm = (name: string, extra: string, dims1 = 16) =>
  `model_warmup [ { name: "${name}" batch_size: 2 count: 3 inputs { key: "INPUT0" value: { data_type: TYPE_INT32 dims: [ 16 ] zero_data: true } } ` +
  `inputs { key: "INPUT1" value: { data_type: TYPE_INT32 dims: [ ${dims1} ] ${extra} } } } ]`;

function variant(name: string, extra: string) {
  const config = readFileSync(join(repo.dir, "simple", "config.pbtxt"), "utf8").replace('name: "simple"', `name: "${name}"`);
  repo.add(`${name}/config.pbtxt`, `${config}\n${extra}\n`);
  repo.add(`${name}/1/model.onnx`, readFileSync(join(repo.dir, "simple", "1", "model.onnx")));
}

beforeAll(async () => {
  repo = makeRepository(["simple", "ocr_det"]);
  variant("warm_zero_random", warm("zr", "random_data: true"));
  variant("warm_file", warm("file", 'input_data_file: "in1"'));
  repo.add("warm_file/warmup/in1", new Uint8Array(new Int32Array(16).fill(7).buffer));
  variant("warm_bad_shape", warm("bad", "zero_data: true", 15));
  // ocr_det's sides must be multiples of 32: ONNX Runtime itself fails on 40×40.
  const det = readFileSync(join(repo.dir, "ocr_det", "config.pbtxt"), "utf8");
  repo.add(
    "ocr_det/config.pbtxt",
    `${det}\nmodel_warmup [ { name: "odd" batch_size: 1 inputs { key: "x" value: { data_type: TYPE_FP32 dims: [ 3, 40, 40 ] zero_data: true } } } ]\n`,
  );
  server = await startServerProcess([`--model-repository=${repo.dir}`, "--exit-on-error=false"]);
});

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

const index = async () =>
  (await (await fetch(`${server.url}/v2/repository/index`, { method: "POST" })).json()) as { name: string; state?: string; reason?: string }[];

describe("model_warmup", () => {
  it("warms up with zero, random and file data before READY, outside the statistics", async () => {
    const entries = await index();
    for (const name of ["warm_zero_random", "warm_file"]) {
      expect(entries.find((e) => e.name === name)?.state).toBe("READY");
      const stats = (await (await fetch(`${server.url}/v2/models/${name}/stats`)).json()) as {
        model_stats: { execution_count: number; inference_count: number }[];
      };
      expect(stats.model_stats[0]).toMatchObject({ execution_count: 0, inference_count: 0 });
    }
    expect(server.log()).toContain("warming up 'warm_file' version 1 (1 sample(s) on 1 instance(s))");
  });

  it("keeps a version whose warmup fails validation out of READY, with the reason", async () => {
    const e = (await index()).find((x) => x.name === "warm_bad_shape")!;
    expect(e.state).toBe("UNAVAILABLE");
    expect(e.reason).toBe(
      "warmup sample 'bad' of model 'warm_bad_shape' failed: unexpected shape for input 'INPUT1' for model 'warm_bad_shape'. Expected [-1,16], got [2,15]. " +
        "NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to be prepended to each input shape. " +
        "If you want to specify the full shape including the batch dim in your input dims config, try setting max_batch_size to zero. " +
        "See the model configuration docs for more info on max_batch_size.",
    );
  });

  it("runs the samples in ONNX Runtime: a run that fails there fails the load", async () => {
    const e = (await index()).find((x) => x.name === "ocr_det")!;
    expect(e.state).toBe("UNAVAILABLE");
    expect(e.reason).toMatch(/^warmup sample 'odd' of model 'ocr_det' failed: .+/);
  });
});
