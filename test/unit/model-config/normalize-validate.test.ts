/**
 * §2.3, §4.3, §7.13: config normalization (defaults visible in /config), ONNX Runtime
 * auto-complete from the model file's inputs and outputs, and load-time validation.
 */
import { describe, it, expect } from "vitest";
import { normalizeModelConfig, autoCompleteConfig } from "../../../src/model-config/normalize.ts";
import { validateModelConfig } from "../../../src/model-config/validate.ts";
import { ServerError } from "../../../src/core/errors.ts";
import type { ModelConfig, ModelInput, ModelOutput } from "../../../src/model-config/types.ts";
import type { ModelFileIO } from "../../../src/backends/backend.ts";

const cpu = { modelName: "m", gpuCount: 0 };
const twoGpus = { modelName: "m", gpuCount: 2 };
const PINNED = { input_pinned_memory: { enable: true }, output_pinned_memory: { enable: true } };

describe("normalizeModelConfig", () => {
  it("fills Triton's defaults into an empty config", () => {
    expect(normalizeModelConfig({}, cpu)).toEqual({
      name: "m",
      max_batch_size: 0,
      version_policy: { latest: { num_versions: 1 } },
      instance_group: [{ name: "m", kind: "KIND_CPU", count: 1 }],
      optimization: PINNED,
    });
  });

  it("does not modify the config it is given", () => {
    const input: ModelConfig = { dynamic_batching: {}, max_batch_size: 4, instance_group: [{}] };
    const before = structuredClone(input);
    normalizeModelConfig(input, twoGpus);
    expect(input).toEqual(before);
  });

  it("keeps values that are already set", () => {
    const config: ModelConfig = {
      name: "m",
      max_batch_size: 4,
      version_policy: { all: {} },
      dynamic_batching: { preferred_batch_size: [2] },
      instance_group: [{ name: "g", kind: "KIND_CPU", count: 3 }],
      optimization: { input_pinned_memory: { enable: false }, output_pinned_memory: { enable: false }, graph: { level: 1 } },
    };
    expect(normalizeModelConfig(config, cpu)).toEqual(config);
  });

  it("sets the name from the model directory only when missing or empty", () => {
    expect(normalizeModelConfig({ name: "" }, cpu).name).toBe("m");
    expect(normalizeModelConfig({ name: "other" }, cpu).name).toBe("other");
  });

  describe("version policy", () => {
    it("defaults to latest 1 and keeps any given policy", () => {
      expect(normalizeModelConfig({}, cpu).version_policy).toEqual({ latest: { num_versions: 1 } });
      expect(normalizeModelConfig({ version_policy: { specific: { versions: [1, 3] } } }, cpu).version_policy).toEqual({ specific: { versions: [1, 3] } });
      expect(normalizeModelConfig({ version_policy: { latest: { num_versions: 2 } } }, cpu).version_policy).toEqual({ latest: { num_versions: 2 } });
    });
  });

  describe("dynamic batching", () => {
    it("sets preferred_batch_size to [max_batch_size] when none is given", () => {
      expect(normalizeModelConfig({ max_batch_size: 8, dynamic_batching: {} }, cpu).dynamic_batching).toEqual({ preferred_batch_size: [8] });
      expect(normalizeModelConfig({ max_batch_size: 8, dynamic_batching: { preferred_batch_size: [] } }, cpu).dynamic_batching).toEqual({ preferred_batch_size: [8] });
    });

    it("keeps a given preferred_batch_size and adds none when max_batch_size is 0", () => {
      expect(normalizeModelConfig({ max_batch_size: 8, dynamic_batching: { preferred_batch_size: [2, 4] } }, cpu).dynamic_batching).toEqual({ preferred_batch_size: [2, 4] });
      expect(normalizeModelConfig({ dynamic_batching: { max_queue_delay_microseconds: 5 } }, cpu).dynamic_batching).toEqual({ max_queue_delay_microseconds: 5 });
    });

    it("adds no dynamic batching where there was none", () => {
      expect(normalizeModelConfig({ max_batch_size: 8 }, cpu)).not.toHaveProperty("dynamic_batching");
    });
  });

  describe("sequence batching", () => {
    it("sets max_sequence_idle_microseconds to 1000000 when absent or 0, and keeps other values", () => {
      expect(normalizeModelConfig({ sequence_batching: {} }, cpu).sequence_batching).toEqual({ max_sequence_idle_microseconds: 1000000 });
      expect(normalizeModelConfig({ sequence_batching: { max_sequence_idle_microseconds: 0 } }, cpu).sequence_batching).toEqual({ max_sequence_idle_microseconds: 1000000 });
      expect(normalizeModelConfig({ sequence_batching: { max_sequence_idle_microseconds: 5 } }, cpu).sequence_batching).toEqual({ max_sequence_idle_microseconds: 5 });
    });

    // BUG (src/model-config/normalize.ts): Triton's NormalizeModelConfig also sets
    // sequence_batching.oldest.preferred_batch_size = [max_batch_size] when the oldest strategy
    // gives none (reference §2.3 lists it among the values visible in /config); Nereid leaves it out.
    it.fails("sets oldest.preferred_batch_size to [max_batch_size] when none is given", () => {
      const seq = normalizeModelConfig({ max_batch_size: 4, sequence_batching: { oldest: { max_candidate_sequences: 2 } } }, cpu).sequence_batching;
      expect(seq).toEqual({ oldest: { max_candidate_sequences: 2, preferred_batch_size: [4] }, max_sequence_idle_microseconds: 1000000 });
    });
  });

  describe("instance groups", () => {
    it("names unnamed groups <model>_<index> and keeps given names", () => {
      const groups = normalizeModelConfig({ instance_group: [{}, { name: "mine" }, { name: "" }] }, cpu).instance_group;
      expect(groups!.map((g) => g.name)).toEqual(["m_0", "mine", "m_2"]);
    });

    it("names groups after the config's own name when it has one", () => {
      expect(normalizeModelConfig({ name: "cfg", instance_group: [{}] }, cpu).instance_group![0]!.name).toBe("cfg_0");
    });

    it("resolves KIND_AUTO (or no kind) to KIND_CPU without GPUs", () => {
      expect(normalizeModelConfig({ instance_group: [{}, { kind: "KIND_AUTO" }] }, cpu).instance_group).toEqual([
        { name: "m_0", kind: "KIND_CPU", count: 1 },
        { name: "m_1", kind: "KIND_CPU", count: 1 },
      ]);
    });

    it("resolves KIND_AUTO to KIND_GPU on every GPU when there are GPUs, and keeps listed GPUs", () => {
      expect(normalizeModelConfig({ instance_group: [{}, { kind: "KIND_AUTO", gpus: [1] }, { kind: "KIND_GPU", count: 2 }] }, twoGpus).instance_group).toEqual([
        { name: "m_0", kind: "KIND_GPU", count: 1, gpus: [0, 1] },
        { name: "m_1", kind: "KIND_GPU", count: 1, gpus: [1] },
        { name: "m_2", kind: "KIND_GPU", count: 2, gpus: [0, 1] },
      ]);
      expect(normalizeModelConfig({}, twoGpus).instance_group).toEqual([{ name: "m", kind: "KIND_GPU", count: 1, gpus: [0, 1] }]);
    });

    it("keeps KIND_CPU and KIND_MODEL as given, with no GPU list", () => {
      expect(normalizeModelConfig({ instance_group: [{ kind: "KIND_CPU" }, { kind: "KIND_MODEL" }] }, twoGpus).instance_group).toEqual([
        { name: "m_0", kind: "KIND_CPU", count: 1 },
        { name: "m_1", kind: "KIND_MODEL", count: 1 },
      ]);
    });

    it("gives 2 instances to an onnxruntime group that resolves to CPU, 1 otherwise", () => {
      const ort = (gpuCount: number, instance_group?: ModelConfig["instance_group"]) =>
        normalizeModelConfig({ backend: "onnxruntime", instance_group }, { modelName: "m", gpuCount }).instance_group;
      expect(ort(0)).toEqual([{ name: "m", kind: "KIND_CPU", count: 2 }]);
      expect(ort(0, [{}, { count: 3 }])).toEqual([
        { name: "m_0", kind: "KIND_CPU", count: 2 },
        { name: "m_1", kind: "KIND_CPU", count: 3 },
      ]);
      expect(ort(2)).toEqual([{ name: "m", kind: "KIND_GPU", count: 1, gpus: [0, 1] }]);
      // Other backends: 1.
      expect(normalizeModelConfig({ backend: "python" }, cpu).instance_group).toEqual([{ name: "m", kind: "KIND_CPU", count: 1 }]);
      expect(normalizeModelConfig({ platform: "onnxruntime_onnx" }, cpu).instance_group).toEqual([{ name: "m", kind: "KIND_CPU", count: 1 }]);
    });

    // BUG (src/model-config/normalize.ts): the count-2 rule requires `!g.kind`, but Triton's
    // SetDefaultInstanceCount gives 2 to every KIND_CPU group of the onnxruntime (and
    // tensorflow) backend once the kind is resolved, explicit `kind: KIND_CPU` included
    // (reference §4.3: "KIND_CPU with backend onnxruntime → 2").
    it("gives 2 instances to an onnxruntime group with an explicit KIND_CPU and no count", () => {
      const groups = normalizeModelConfig({ backend: "onnxruntime", instance_group: [{ kind: "KIND_CPU" }, { kind: "KIND_AUTO" }] }, cpu).instance_group;
      expect(groups).toEqual([
        { name: "m_0", kind: "KIND_CPU", count: 2 },
        { name: "m_1", kind: "KIND_CPU", count: 2 },
      ]);
    });

    // BUG (src/model-config/normalize.ts): when the config has no instance_group, Triton's
    // NormalizeInstanceGroup adds one named after the model ("m"), not "m_0" (reference §4.3:
    // "no group → one group named after the model"); only groups listed without a name get
    // "<model>_<index>". Nereid names the added group "m_0" (and test/e2e/http/autocomplete
    // expects "rowsum_0").
    it("names the group it adds after the model", () => {
      expect(normalizeModelConfig({}, cpu).instance_group).toEqual([{ name: "m", kind: "KIND_CPU", count: 1 }]);
    });

    // BUG (src/model-config/normalize.ts): Triton resolves KIND_AUTO to KIND_CPU when any GPU
    // the group lists is not present; Nereid makes it KIND_GPU whenever any GPU exists.
    it.fails("resolves KIND_AUTO to KIND_CPU when a listed GPU does not exist", () => {
      const groups = normalizeModelConfig({ instance_group: [{ gpus: [5] }] }, { modelName: "m", gpuCount: 1 }).instance_group;
      expect(groups![0]!.kind).toBe("KIND_CPU");
    });
  });

  describe("pinned memory", () => {
    it("enables input and output pinned memory unless the config says otherwise", () => {
      expect(normalizeModelConfig({}, cpu).optimization).toEqual(PINNED);
      expect(normalizeModelConfig({ optimization: { graph: { level: 1 } } }, cpu).optimization).toEqual({ graph: { level: 1 }, ...PINNED });
      expect(normalizeModelConfig({ optimization: { input_pinned_memory: { enable: false } } }, cpu).optimization).toEqual({
        input_pinned_memory: { enable: false },
        output_pinned_memory: { enable: true },
      });
      // A present but empty message counts as set (enable: false).
      expect(normalizeModelConfig({ optimization: { output_pinned_memory: {} } }, cpu).optimization).toEqual({
        output_pinned_memory: {},
        input_pinned_memory: { enable: true },
      });
    });
  });

  describe("ensembles", () => {
    it("get no instance groups and no optimization, but the other defaults", () => {
      expect(normalizeModelConfig({ platform: "ensemble", max_batch_size: 4, ensemble_scheduling: { step: [] } }, twoGpus)).toEqual({
        name: "m",
        platform: "ensemble",
        max_batch_size: 4,
        version_policy: { latest: { num_versions: 1 } },
        ensemble_scheduling: { step: [] },
      });
    });
  });
});

// ------------------------------------------------------------------------- auto-complete

const spec = (name: string, datatype: ModelFileIO["inputs"][number]["datatype"], shape: number[]) => ({ name, datatype, shape });
/** x: FP32 [-1, 3], y: INT64 [-1] (scalar per batch item). */
const BATCHABLE: ModelFileIO = { inputs: [spec("x", "FP32", [-1, 3])], outputs: [spec("y", "INT64", [-1])] };
/** x: FP32 [2, 3], y: BYTES [] (a true scalar). */
const FIXED: ModelFileIO = { inputs: [spec("x", "FP32", [2, 3])], outputs: [spec("y", "BYTES", [])] };

describe("autoCompleteConfig", () => {
  it("gives a batchable model the default max_batch_size, dynamic batching and I/O without the batch dim", () => {
    expect(autoCompleteConfig({}, BATCHABLE, { defaultMaxBatchSize: 4 })).toEqual({
      max_batch_size: 4,
      dynamic_batching: {},
      input: [{ name: "x", data_type: "TYPE_FP32", dims: [3] }],
      // A per-item scalar: dims [1] plus an empty reshape.
      output: [{ name: "y", data_type: "TYPE_INT64", dims: [1], reshape: { shape: [] } }],
    });
  });

  it("adds no dynamic batching when the default max_batch_size is 1", () => {
    expect(autoCompleteConfig({}, BATCHABLE, { defaultMaxBatchSize: 1 })).toEqual({
      max_batch_size: 1,
      input: [{ name: "x", data_type: "TYPE_FP32", dims: [3] }],
      output: [{ name: "y", data_type: "TYPE_INT64", dims: [1], reshape: { shape: [] } }],
    });
  });

  it("adds no dynamic batching when another scheduler is configured", () => {
    for (const scheduler of [{ sequence_batching: {} }, { dynamic_batching: { max_queue_delay_microseconds: 5 } }, { ensemble_scheduling: {} }]) {
      const out = autoCompleteConfig(scheduler, BATCHABLE, { defaultMaxBatchSize: 4 });
      expect(out).toEqual({ ...scheduler, max_batch_size: 4, input: expect.any(Array), output: expect.any(Array) });
    }
  });

  it("keeps a non-zero max_batch_size the config gives", () => {
    const out = autoCompleteConfig({ max_batch_size: 1 }, BATCHABLE, { defaultMaxBatchSize: 4 });
    expect(out).toEqual({
      max_batch_size: 1,
      input: [{ name: "x", data_type: "TYPE_FP32", dims: [3] }],
      output: [{ name: "y", data_type: "TYPE_INT64", dims: [1], reshape: { shape: [] } }],
    });
  });

  // BUG (src/model-config/normalize.ts): Triton's ONNX Runtime auto-complete adds
  // `dynamic_batching {}` whenever the model can batch, max_batch_size > 1 and no scheduler is
  // configured — also when the config itself gave max_batch_size. Nereid adds it only when it
  // chose the default max_batch_size itself.
  it.fails("adds dynamic batching for a config-given max_batch_size > 1 on a batchable model", () => {
    expect(autoCompleteConfig({ max_batch_size: 8 }, BATCHABLE, { defaultMaxBatchSize: 4 })).toHaveProperty("dynamic_batching", {});
  });

  it("keeps an explicit max_batch_size 0 and then keeps the batch dim in dims", () => {
    // Nereid tells an explicit 0 from a missing field; Triton (proto3) cannot and would set the default.
    expect(autoCompleteConfig({ max_batch_size: 0 }, BATCHABLE, { defaultMaxBatchSize: 4 })).toEqual({
      max_batch_size: 0,
      input: [{ name: "x", data_type: "TYPE_FP32", dims: [-1, 3] }],
      output: [{ name: "y", data_type: "TYPE_INT64", dims: [-1] }],
    });
  });

  it("leaves a non-batchable model without max_batch_size, with full dims and no reshape for scalars", () => {
    expect(autoCompleteConfig({}, FIXED, { defaultMaxBatchSize: 4 })).toEqual({
      input: [{ name: "x", data_type: "TYPE_FP32", dims: [2, 3] }],
      output: [{ name: "y", data_type: "TYPE_STRING", dims: [1] }],
    });
  });

  it("treats a model as batchable only if every input and output starts with -1", () => {
    const mixed: ModelFileIO = { inputs: [spec("a", "INT32", [-1, 2]), spec("b", "INT32", [2])], outputs: [spec("c", "INT32", [-1])] };
    expect(autoCompleteConfig({}, mixed, { defaultMaxBatchSize: 4 }).max_batch_size).toBeUndefined();
    const scalarIn: ModelFileIO = { inputs: [spec("a", "INT32", [])], outputs: [spec("c", "INT32", [-1])] };
    expect(autoCompleteConfig({}, scalarIn, { defaultMaxBatchSize: 4 }).max_batch_size).toBeUndefined();
  });

  it("refuses a non-zero max_batch_size for a model that cannot batch", () => {
    expect(() => autoCompleteConfig({ name: "n", max_batch_size: 2 }, FIXED, { defaultMaxBatchSize: 4 })).toThrow(
      new ServerError("INVALID_ARG", "model 'n': model does not support batching while non-zero max_batch_size is specified"),
    );
  });

  it("fills data_type and dims of listed inputs from the model, keeping what the config gives", () => {
    const io: ModelFileIO = {
      inputs: [spec("x", "FP32", [-1, 3]), spec("s", "INT32", [-1])],
      outputs: [spec("y", "INT64", [-1, 5])],
    };
    const out = autoCompleteConfig(
      {
        max_batch_size: 2,
        input: [{ name: "x" }, { name: "s", data_type: "TYPE_INT64" }, { name: "unknown", optional: true }],
        output: [{ name: "y", data_type: "TYPE_INT32", dims: [7] }],
      },
      io,
      { defaultMaxBatchSize: 4 },
    );
    expect(out).toEqual({
      max_batch_size: 2,
      input: [
        { name: "x", data_type: "TYPE_FP32", dims: [3] },
        // data_type from the config; dims from the model, with the scalar reshape.
        { name: "s", data_type: "TYPE_INT64", dims: [1], reshape: { shape: [] } },
        // Not in the model: left alone.
        { name: "unknown", optional: true },
      ],
      output: [{ name: "y", data_type: "TYPE_INT32", dims: [7] }],
    });
  });

  it("fills the outputs when only inputs are given", () => {
    const out = autoCompleteConfig({ input: [{ name: "x", data_type: "TYPE_FP32", dims: [3] }] }, BATCHABLE, { defaultMaxBatchSize: 4 });
    expect(out.output).toEqual([{ name: "y", data_type: "TYPE_INT64", dims: [1], reshape: { shape: [] } }]);
  });

  it("does not modify the config it is given", () => {
    const input: ModelConfig = { input: [{ name: "x" }] };
    autoCompleteConfig(input, BATCHABLE, { defaultMaxBatchSize: 4 });
    expect(input).toEqual({ input: [{ name: "x" }] });
  });
});

// ---------------------------------------------------------------------------- validation

const IN: ModelInput = { name: "a", data_type: "TYPE_FP32", dims: [1] };
const OUT: ModelOutput = { name: "b", data_type: "TYPE_FP32", dims: [1] };

function validationError(config: ModelConfig, modelName = "m"): ServerError {
  try {
    validateModelConfig(config, modelName);
  } catch (e) {
    expect(e).toBeInstanceOf(ServerError);
    return e as ServerError;
  }
  throw new Error(`no error for ${JSON.stringify(config)}`);
}

describe("validateModelConfig", () => {
  it("returns the very config it checked when it is valid", () => {
    const config: ModelConfig = {
      name: "m",
      max_batch_size: 4,
      input: [{ ...IN, dims: [-1, 3], reshape: { shape: [3, -1] } }],
      output: [{ ...OUT, dims: [1], reshape: { shape: [] } }],
      instance_group: [{ count: 1 }],
      dynamic_batching: { preferred_batch_size: [1, 4], priority_levels: 2, default_priority_level: 2, default_queue_policy: { max_queue_size: 3 } },
    };
    expect(validateModelConfig(config, "m")).toBe(config);
  });

  it("accepts a config without a name, and a python model without inputs or outputs", () => {
    expect(() => validateModelConfig({ input: [IN] }, "m")).not.toThrow();
    expect(() => validateModelConfig({ output: [OUT] }, "m")).not.toThrow();
    expect(() => validateModelConfig({ backend: "python" }, "m")).not.toThrow();
  });

  it("accepts priority levels 0 without a default level, and the default level at either end", () => {
    for (const db of [{ priority_levels: 0 }, { priority_levels: 3, default_priority_level: 1 }, { priority_levels: 3, default_priority_level: 3 }]) {
      expect(() => validateModelConfig({ input: [IN], max_batch_size: 1, dynamic_batching: db }, "m")).not.toThrow();
    }
  });

  const cases: [string, ModelConfig, string][] = [
    ["a name other than the directory's", { name: "x", input: [IN] }, "model 'm': config name 'x' does not match the model directory name"],
    ["a negative max_batch_size", { max_batch_size: -1, input: [IN] }, "model 'm' field 'max_batch_size': 'max_batch_size' must be non-negative"],
    ["no inputs and no outputs", {}, "model 'm': model must specify inputs and outputs"],
    ["empty input and output lists", { input: [], output: [], backend: "onnxruntime" }, "model 'm': model must specify inputs and outputs"],
    ["an empty input name", { input: [{ ...IN, name: "" }] }, "model 'm' field 'input.0.name': input must have a name"],
    ["an empty output name", { input: [IN], output: [{ ...OUT, name: "" }] }, "model 'm' field 'output.0.name': output must have a name"],
    ["TYPE_INVALID", { input: [{ ...IN, data_type: "TYPE_INVALID" }] }, "model 'm' field 'input.0.data_type': input must specify 'data_type'"],
    ["no dims", { input: [IN], output: [{ name: "b", data_type: "TYPE_FP32" }] }, "model 'm' field 'output.0': output must specify 'dims'"],
    ["empty dims", { input: [{ ...IN, dims: [] }] }, "model 'm' field 'input.0': input must specify 'dims'"],
    ["a zero dim", { input: [{ ...IN, dims: [-1, 0] }] }, "model 'm' field 'input.0.dims.1': dims must be -1 or positive"],
    ["a dim below -1", { input: [{ ...IN, dims: [-2] }] }, "model 'm' field 'input.0.dims.0': dims must be -1 or positive"],
    ["a zero reshape dim", { input: [{ ...IN, reshape: { shape: [0] } }] }, "model 'm' field 'input.0.reshape.shape.0': dims must be -1 or positive"],
    ["an instance count of 0", { input: [IN], instance_group: [{ count: 1 }, { count: 0 }] }, "model 'm' field 'instance_group.1.count': instance group count must be >= 1"],
    ["dynamic batching without max_batch_size", { input: [IN], dynamic_batching: {} }, "model 'm': dynamic batching requires 'max_batch_size' >= 1"],
    ["dynamic batching with max_batch_size 0", { input: [IN], max_batch_size: 0, dynamic_batching: {} }, "model 'm': dynamic batching requires 'max_batch_size' >= 1"],
    ["a preferred size above max_batch_size", { input: [IN], max_batch_size: 4, dynamic_batching: { preferred_batch_size: [2, 5] } }, "model 'm': dynamic batching preferred size must be in 1..max_batch_size"],
    ["a preferred size of 0", { input: [IN], max_batch_size: 4, dynamic_batching: { preferred_batch_size: [0] } }, "model 'm': dynamic batching preferred size must be in 1..max_batch_size"],
    ["a fractional preferred size", { input: [IN], max_batch_size: 4, dynamic_batching: { preferred_batch_size: [1.5] } }, "model 'm': dynamic batching preferred size must be in 1..max_batch_size"],
    ["priority levels without a default level", { input: [IN], max_batch_size: 4, dynamic_batching: { priority_levels: 2 } }, "model 'm': default_priority_level must be in 1..priority_levels"],
    ["a default level above the levels", { input: [IN], max_batch_size: 4, dynamic_batching: { priority_levels: 2, default_priority_level: 3 } }, "model 'm': default_priority_level must be in 1..priority_levels"],
    ["duplicate input names", { input: [IN, IN] }, "model 'm': input names must be unique"],
    ["duplicate output names", { input: [IN], output: [OUT, OUT] }, "model 'm': output names must be unique"],
  ];

  it.each(cases)("rejects %s", (_, config, message) => {
    const err = validationError(config);
    expect(err.code).toBe("INVALID_ARG");
    expect(err.message).toBe(message);
  });

  it("allows an input and an output with the same name", () => {
    expect(() => validateModelConfig({ input: [IN], output: [{ ...OUT, name: "a" }] }, "m")).not.toThrow();
  });

  // BUG (src/model-config/validate.ts): the custom messages are attached to v.string(), which
  // valibot uses for a wrong type but not for a missing key; a config.pbtxt input without
  // `name` or `data_type` (both common mistakes) fails with valibot's internal text instead:
  //   model 'm' field 'input.0.name': Invalid key: Expected "name" but received undefined
  //   model 'm' field 'input.0.data_type': Invalid key: Expected "data_type" but received undefined
  it.fails("says 'input must have a name' / 'must specify data_type' when the key is missing", () => {
    expect(validationError({ input: [{ data_type: "TYPE_FP32", dims: [1] }] }).message).toBe("model 'm' field 'input.0.name': input must have a name");
    expect(validationError({ input: [{ name: "a", dims: [1] }] }).message).toBe("model 'm' field 'input.0.data_type': input must specify 'data_type'");
  });
});
