/**
 * C-07 end to end: a model folder with no config.pbtxt is completed from the ONNX file
 * (batching detected, default max_batch_size 4, dynamic_batching added, a per-item
 * scalar output given dims [1] with reshape []), then served with that shape.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { ElemType, valueInfo, node, initializer, encodeModel } from "../../../scripts/lib/onnx-builder.ts";

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;

beforeAll(async () => {
  repo = makeRepository(["simple"]);
  repo.add(
    "rowsum/1/model.onnx",
    encodeModel({
      name: "rowsum",
      inputs: [valueInfo("X", ElemType.FLOAT, ["batch", 4])],
      outputs: [valueInfo("SUM", ElemType.FLOAT, ["batch"])],
      nodes: [{ ...node("ReduceSum", ["X", "axes"], ["SUM"]), attribute: [{ name: "keepdims", type: 2, i: 0 }] }],
      initializers: [initializer("axes", ElemType.INT64, [1], new Uint8Array(new BigInt64Array([1n]).buffer))],
    }),
  );
  server = await startServerProcess([`--model-repository=${repo.dir}`]);
});

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

describe("auto-complete from the ONNX file", () => {
  it("fills the config the way Triton's onnxruntime backend does", async () => {
    const cfg = (await (await fetch(`${server.url}/v2/models/rowsum/config`)).json()) as any;
    expect(cfg.name).toBe("rowsum");
    expect(cfg.platform).toBe("onnxruntime_onnx");
    expect(cfg.backend).toBe("onnxruntime");
    expect(cfg.default_model_filename).toBe("model.onnx"); // #17 wire bug 5: Triton fills it, it stayed ""
    expect(cfg.max_batch_size).toBe(4);
    expect(cfg.dynamic_batching).toMatchObject({ preferred_batch_size: [4] });
    expect(cfg.input).toEqual([expect.objectContaining({ name: "X", data_type: "TYPE_FP32", dims: [4] })]);
    expect(cfg.output).toEqual([expect.objectContaining({ name: "SUM", data_type: "TYPE_FP32", dims: [1], reshape: { shape: [] } })]);
    expect(cfg.instance_group).toEqual([expect.objectContaining({ name: "rowsum", kind: "KIND_CPU", count: 2 })]);
  });

  it("fills default_model_filename for a model with a config too, as Triton's server side does (#17)", async () => {
    const cfg = (await (await fetch(`${server.url}/v2/models/simple/config`)).json()) as any;
    expect(cfg.default_model_filename).toBe("model.onnx");
  });

  it("serves the reshaped output as [batch, 1]", async () => {
    const res = await fetch(`${server.url}/v2/models/rowsum/infer`, {
      method: "POST",
      body: JSON.stringify({ inputs: [{ name: "X", shape: [2, 4], datatype: "FP32", data: [1, 2, 3, 4, 10, 20, 30, 40] }] }),
    });
    expect(await res.json()).toEqual({
      model_name: "rowsum",
      model_version: "1",
      outputs: [{ name: "SUM", datatype: "FP32", shape: [2, 1], data: [10, 100] }],
    });
  });
});
