/**
 * The backends other than ONNX Runtime are registered lazily (#30: start-up): their traits
 * are written in src/backends/lazy.ts so that a repository without their models never
 * evaluates them. Those traits must be the backends' own, and the wrapper must import once
 * and hand every call to the real backend.
 */
import { describe, it, expect } from "vitest";
import { LAZY_BACKENDS } from "../../../src/backends/lazy.ts";
import { BackendRegistry, lazyBackend } from "../../../src/backends/registry.ts";
import type { Backend, BackendLoadContext, BackendModel } from "../../../src/backends/backend.ts";
import { TensorRtBackend } from "../../../src/backends/tensorrt/backend.ts";
import { OpenVinoBackend } from "../../../src/backends/openvino/backend.ts";
import { TypeScriptBackend } from "../../../src/backends/typescript/backend.ts";
import { PythonBackend } from "../../../src/backends/python/backend.ts";

const traits = (b: Backend) => ({
  name: b.name,
  platform: b.platform,
  defaultModelFilename: b.defaultModelFilename,
  gpus: b.gpus,
  gpuOnly: b.gpuOnly,
  otherModelFilenames: b.otherModelFilenames,
  autoComplete: typeof b.autoComplete === "function",
  describe: typeof b.describe === "function",
  load: typeof b.load === "function",
});

describe("lazy backends", () => {
  it("have each backend's own name, platform, model files, GPU traits and optional methods", () => {
    const real = [new TensorRtBackend(), new OpenVinoBackend(), new TypeScriptBackend(), new PythonBackend()];
    expect(LAZY_BACKENDS.map((make) => traits(make({})))).toEqual(real.map(traits));
  });

  it("import once, on the first call, and hand every call and its result (or error) to the real backend", async () => {
    const calls: string[] = [];
    let imports = 0;
    const model = {} as BackendModel;
    const real: Backend = {
      name: "fake",
      defaultModelFilename: "model.fake",
      autoComplete: async (config) => (calls.push(`autoComplete ${config.name}`), { ...config, max_batch_size: 8 }),
      load: async (ctx) => {
        calls.push(`load ${ctx.modelName}`);
        if (ctx.modelName === "bad") throw new Error("no such model");
        return model;
      },
    };
    const lazy = lazyBackend({ name: "fake", defaultModelFilename: "model.fake", autoComplete: true }, async () => (imports++, real));
    expect(imports).toBe(0);
    expect(lazy.describe).toBeUndefined();
    expect(await lazy.autoComplete!({ name: "m" }, "/x/model.fake")).toEqual({ name: "m", max_batch_size: 8 });
    expect(await lazy.load({ modelName: "m" } as BackendLoadContext)).toBe(model);
    await expect(lazy.load({ modelName: "bad" } as BackendLoadContext)).rejects.toThrow("no such model");
    expect(imports).toBe(1);
    expect(calls).toEqual(["autoComplete m", "load m", "load bad"]);
  });

  it("import again on the next call after an import failed", async () => {
    let imports = 0;
    const model = {} as BackendModel;
    const lazy = lazyBackend({ name: "fake", defaultModelFilename: "model.fake" }, async () => {
      if (++imports === 1) throw new Error("cannot evaluate the backend");
      return { name: "fake", defaultModelFilename: "model.fake", load: async () => model };
    });
    await expect(lazy.load({ modelName: "m" } as BackendLoadContext)).rejects.toThrow("cannot evaluate the backend");
    expect(await lazy.load({ modelName: "m" } as BackendLoadContext)).toBe(model);
    expect(await lazy.load({ modelName: "m" } as BackendLoadContext)).toBe(model);
    expect(imports).toBe(2);
  });

  it("are found by backend name, platform and model file like the eager ones", () => {
    const registry = new BackendRegistry();
    for (const make of LAZY_BACKENDS) registry.register(make({}));
    expect(registry.resolve({ backend: "python" }, undefined)?.name).toBe("python");
    expect(registry.resolve({ platform: "tensorrt_plan" }, undefined)?.name).toBe("tensorrt");
    expect(registry.resolve({ backend: "openvino" }, undefined)?.gpus).toBe("own");
  });
});
