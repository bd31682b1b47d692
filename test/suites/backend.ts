/**
 * The shared backend suite: what every backend owes the server through the Backend
 * interface (src/backends/backend.ts), run against ONNX Runtime and against the
 * TensorRT and OpenVINO backends over their test doubles.
 *
 * Each setup serves one model: input INPUT0 and output OUTPUT0, FP32 of shape [-1, 4]
 * (batch first), where OUTPUT0 = compute(INPUT0) element by element. The suite loads it
 * with a config it writes itself (max_batch_size 8, one instance of the setup's kind).
 */
import { LateRunner } from "../../src/core/runner.ts";
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { ServerError, type ErrorCode } from "../../src/core/errors.ts";
import type { Backend, BackendInstance, BackendLoadContext, BackendModel } from "../../src/backends/backend.ts";
import type { ModelConfig } from "../../src/core/model-config-types.ts";
import type { Tensor } from "../../src/core/tensor.ts";

export interface BackendUnderTest {
  backend: Backend;
  /** The model file (or directory) to load. */
  modelPath: string;
  modelDir: string;
  backendConfig: Record<string, string>;
  kind: "KIND_CPU" | "KIND_GPU";
  /** What the model does to each element. */
  compute(x: number): number;
  /**
   * The codes a wrong input shape and a wrong input datatype get from execute(). The
   * server validates inputs against the config before any backend sees them (see
   * BackendInstance.execute), so these are the runtime's own refusals, mapped; "unchecked"
   * says the backend trusts that validation and runs the bytes as they come.
   */
  refuses: { shape: ErrorCode; datatype: ErrorCode | "unchecked" };
  /** Native objects alive now, where the runtime (or its double) can count them. */
  live?(): number;
  /** Called after the suite (remove files, restore the environment). */
  cleanup?(): void;
}

const f32 = (values: number[], shape: number[]): Tensor => ({
  name: "INPUT0",
  datatype: "FP32",
  shape,
  data: new Uint8Array(new Float32Array(values).buffer),
});
const floats = (t: Tensor) => Array.from(new Float32Array(t.data.slice().buffer));

export function backendSuite(label: string, setup: () => BackendUnderTest | Promise<BackendUnderTest>): void {
  describe(`backend suite: ${label}`, () => {
    let h: BackendUnderTest;
    const name = "suite_model";
    const config = (): ModelConfig => ({
      name,
      backend: h.backend.name,
      max_batch_size: 8,
      input: [{ name: "INPUT0", data_type: "TYPE_FP32", dims: [4] }],
      output: [{ name: "OUTPUT0", data_type: "TYPE_FP32", dims: [4] }],
      instance_group: [{ name: `${name}_0`, kind: h.kind, count: 1, ...(h.kind === "KIND_GPU" ? { gpus: [0] } : {}) }],
    });
    const context = (): BackendLoadContext => ({
      config: config(),
      modelName: name,
      version: 1,
      modelDir: h.modelDir,
      modelPath: h.modelPath,
      backendConfig: h.backendConfig,
      runner: new LateRunner(),
    });
    const open = async (): Promise<{ model: BackendModel; instance: BackendInstance }> => {
      const model = await h.backend.load(context());
      return { model, instance: await model.createInstance(`${name}_0`, h.kind, 0) };
    };
    const rejection = async (p: Promise<unknown>): Promise<ServerError> => {
      const err = await p.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, "expected a ServerError").toBeInstanceOf(ServerError);
      return err as ServerError;
    };

    beforeAll(async () => {
      h = await setup();
    });
    afterAll(() => h?.cleanup?.());

    it("describe(), where the backend has it, reports the model's inputs and outputs", async () => {
      if (!h.backend.describe) return;
      const io = await h.backend.describe(h.modelPath, h.backendConfig);
      expect(io.inputs.map((t) => [t.name, t.datatype, t.shape.length, t.shape.at(-1)])).toEqual([["INPUT0", "FP32", 2, 4]]);
      expect(io.outputs.map((t) => [t.name, t.datatype, t.shape.length, t.shape.at(-1)])).toEqual([["OUTPUT0", "FP32", 2, 4]]);
    });

    it("loads, makes an instance and executes batches of 1 and 3 with exact outputs", async () => {
      const { model, instance } = await open();
      try {
        const one = await instance.execute([f32([1, 2, 3, 4], [1, 4])], []);
        expect(one.outputs.map((o) => [o.name, o.datatype, o.shape])).toEqual([["OUTPUT0", "FP32", [1, 4]]]);
        expect(floats(one.outputs[0]!)).toEqual([1, 2, 3, 4].map(h.compute));
        for (const k of ["computeInputNs", "computeInferNs", "computeOutputNs"] as const) {
          if (one[k] !== undefined) expect(one[k]).toBeGreaterThanOrEqual(0);
        }
        const values = [0.5, -1, 2.25, 1e6, 7, 8, 9, 10, -3.5, 0, 0.125, 42];
        const three = await instance.execute([f32(values, [3, 4])], ["OUTPUT0"]);
        expect(three.outputs.map((o) => [o.name, o.shape])).toEqual([["OUTPUT0", [3, 4]]]);
        expect(floats(three.outputs[0]!)).toEqual(values.map((v) => Math.fround(h.compute(v))));
      } finally {
        instance.close();
        model.close();
      }
    });

    it("refuses a wrong shape (and datatype, unless it trusts the server's validation) with a ServerError, and still runs afterwards", async () => {
      const { model, instance } = await open();
      try {
        const shape = await rejection(instance.execute([f32([1, 2, 3, 4, 5], [1, 5])], []));
        expect([shape.code, shape.message]).toEqual([h.refuses.shape, expect.stringContaining("INPUT0")]);
        const wrongType: Tensor = { ...f32([1, 2, 3, 4], [1, 4]), datatype: "INT32", data: new Uint8Array(new Int32Array([1, 2, 3, 4]).buffer) };
        if (h.refuses.datatype === "unchecked") {
          // The bytes run as FP32: no crash, an answer of the right shape.
          const r = await instance.execute([wrongType], []);
          expect(r.outputs[0]!.shape).toEqual([1, 4]);
        } else {
          const dtype = await rejection(instance.execute([wrongType], []));
          expect(dtype.code).toBe(h.refuses.datatype);
        }
        const again = await instance.execute([f32([4, 3, 2, 1], [1, 4])], []);
        expect(floats(again.outputs[0]!)).toEqual([4, 3, 2, 1].map(h.compute));
      } finally {
        instance.close();
        model.close();
      }
    });

    it("close() frees the instance and the model exactly once; a second close() is a no-op", async () => {
      const before = h.live?.();
      const { model, instance } = await open();
      await instance.execute([f32([1, 1, 1, 1], [1, 4])], []);
      if (before !== undefined) expect(h.live!()).toBeGreaterThan(before);
      instance.close();
      expect(() => instance.close()).not.toThrow();
      model.close();
      expect(() => model.close()).not.toThrow();
      if (before !== undefined) expect(h.live!()).toBe(before);
    });

    it("a closed model can be loaded again", async () => {
      for (let k = 0; k < 2; k++) {
        const { model, instance } = await open();
        const r = await instance.execute([f32([k, k, k, k], [1, 4])], []);
        expect(floats(r.outputs[0]!)).toEqual([k, k, k, k].map(h.compute));
        instance.close();
        model.close();
      }
    });
  });
}
