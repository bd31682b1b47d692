/**
 * §2.3, §4.3, §7.13: config normalization (Triton's defaults, visible in /config) and the
 * ONNX Runtime backend's auto-complete from the model file's inputs and outputs.
 */
import { describe, it, expect } from "vitest";
import { normalizeModelConfig, autoCompleteConfig } from "../../../src/model-config/normalize.ts";
import { ServerError } from "../../../src/core/errors.ts";
import type { ModelConfig } from "../../../src/core/model-config-types.ts";
import type { ModelFileIO } from "../../../src/model-config/model-file-io.ts";

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
      expect(normalizeModelConfig({ max_batch_size: 8, dynamic_batching: { preferred_batch_size: [] } }, cpu).dynamic_batching).toEqual({
        preferred_batch_size: [8],
      });
    });

    it("keeps a given preferred_batch_size and adds none when max_batch_size is 0", () => {
      expect(normalizeModelConfig({ max_batch_size: 8, dynamic_batching: { preferred_batch_size: [2, 4] } }, cpu).dynamic_batching).toEqual({
        preferred_batch_size: [2, 4],
      });
      expect(normalizeModelConfig({ dynamic_batching: { max_queue_delay_microseconds: 5 } }, cpu).dynamic_batching).toEqual({
        max_queue_delay_microseconds: 5,
      });
    });

    it("adds no dynamic batching where there was none", () => {
      expect(normalizeModelConfig({ max_batch_size: 8 }, cpu)).not.toHaveProperty("dynamic_batching");
    });
  });

  describe("sequence batching", () => {
    it("sets max_sequence_idle_microseconds to 1000000 when absent or 0, and keeps other values", () => {
      expect(normalizeModelConfig({ sequence_batching: {} }, cpu).sequence_batching).toEqual({ max_sequence_idle_microseconds: 1000000 });
      expect(normalizeModelConfig({ sequence_batching: { max_sequence_idle_microseconds: 0 } }, cpu).sequence_batching).toEqual({
        max_sequence_idle_microseconds: 1000000,
      });
      expect(normalizeModelConfig({ sequence_batching: { max_sequence_idle_microseconds: 5 } }, cpu).sequence_batching).toEqual({
        max_sequence_idle_microseconds: 5,
      });
    });

    it("sets oldest.preferred_batch_size to [max_batch_size] when none is given and the model batches", () => {
      const seq = normalizeModelConfig({ max_batch_size: 4, sequence_batching: { oldest: { max_candidate_sequences: 2 } } }, cpu).sequence_batching;
      expect(seq).toEqual({ oldest: { max_candidate_sequences: 2, preferred_batch_size: [4] }, max_sequence_idle_microseconds: 1000000 });
      expect(normalizeModelConfig({ max_batch_size: 4, sequence_batching: { oldest: { preferred_batch_size: [2] } } }, cpu).sequence_batching).toEqual({
        oldest: { preferred_batch_size: [2] },
        max_sequence_idle_microseconds: 1000000,
      });
      expect(normalizeModelConfig({ sequence_batching: { oldest: {} } }, cpu).sequence_batching).toEqual({
        oldest: {},
        max_sequence_idle_microseconds: 1000000,
      });
      // The direct strategy has no preferred sizes.
      expect(normalizeModelConfig({ max_batch_size: 4, sequence_batching: { direct: {} } }, cpu).sequence_batching).toEqual({
        direct: {},
        max_sequence_idle_microseconds: 1000000,
      });
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

    // Triton's SetDefaultInstanceCount runs after the kind is resolved, so an explicit KIND_CPU counts too.
    it("gives 2 instances to an onnxruntime group with an explicit KIND_CPU and no count", () => {
      const groups = normalizeModelConfig({ backend: "onnxruntime", instance_group: [{ kind: "KIND_CPU" }, { kind: "KIND_AUTO" }] }, cpu).instance_group;
      expect(groups).toEqual([
        { name: "m_0", kind: "KIND_CPU", count: 2 },
        { name: "m_1", kind: "KIND_CPU", count: 2 },
      ]);
    });

    // Triton's NormalizeInstanceGroup names the group it adds after the model, not "<model>_0".
    it("names the group it adds after the model", () => {
      expect(normalizeModelConfig({}, cpu).instance_group).toEqual([{ name: "m", kind: "KIND_CPU", count: 1 }]);
      expect(normalizeModelConfig({ name: "cfg" }, cpu).instance_group).toEqual([{ name: "cfg", kind: "KIND_CPU", count: 1 }]);
    });

    it("resolves KIND_AUTO to KIND_CPU when a GPU it lists does not exist, keeping the list", () => {
      const one = { modelName: "m", gpuCount: 1 };
      expect(normalizeModelConfig({ instance_group: [{ gpus: [5] }, { kind: "KIND_AUTO", gpus: [0, 1] }, { gpus: [0] }] }, one).instance_group).toEqual([
        { name: "m_0", kind: "KIND_CPU", count: 1, gpus: [5] },
        { name: "m_1", kind: "KIND_CPU", count: 1, gpus: [0, 1] },
        { name: "m_2", kind: "KIND_GPU", count: 1, gpus: [0] },
      ]);
    });

    it("leaves the GPU list of an explicit KIND_GPU group empty when there are no GPUs", () => {
      // validateModelConfig (or the loader) reports it; normalization invents no GPU.
      expect(normalizeModelConfig({ instance_group: [{ kind: "KIND_GPU" }] }, cpu).instance_group).toEqual([{ name: "m_0", kind: "KIND_GPU", count: 1 }]);
    });

    it("replaces a count below 1 with the default", () => {
      expect(normalizeModelConfig({ instance_group: [{ count: 0 }, { count: -3, kind: "KIND_CPU" }] }, cpu).instance_group).toEqual([
        { name: "m_0", kind: "KIND_CPU", count: 1 },
        { name: "m_1", kind: "KIND_CPU", count: 1 },
      ]);
    });

    it("gives 2 CPU instances to the tensorflow backend as well", () => {
      expect(normalizeModelConfig({ backend: "tensorflow" }, cpu).instance_group).toEqual([{ name: "m", kind: "KIND_CPU", count: 2 }]);
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
    it("are recognized by ensemble_scheduling alone", () => {
      expect(normalizeModelConfig({ ensemble_scheduling: { step: [] } }, cpu)).toEqual({
        name: "m",
        max_batch_size: 0,
        version_policy: { latest: { num_versions: 1 } },
        ensemble_scheduling: { step: [] },
      });
    });

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
    for (const scheduler of [
      { sequence_batching: {} },
      { dynamic_batching: { max_queue_delay_microseconds: 5 } },
      { ensemble_scheduling: {} },
    ] as ModelConfig[]) {
      const out = autoCompleteConfig(scheduler, BATCHABLE, { defaultMaxBatchSize: 4 });
      expect(out).toEqual({ ...scheduler, max_batch_size: 4, input: expect.any(Array), output: expect.any(Array) });
    }
  });

  it("keeps a non-zero max_batch_size the config gives (1: no dynamic batching)", () => {
    const out = autoCompleteConfig({ max_batch_size: 1 }, BATCHABLE, { defaultMaxBatchSize: 4 });
    expect(out).toEqual({
      max_batch_size: 1,
      input: [{ name: "x", data_type: "TYPE_FP32", dims: [3] }],
      output: [{ name: "y", data_type: "TYPE_INT64", dims: [1], reshape: { shape: [] } }],
    });
  });

  // Triton adds it whenever the model can batch, max_batch_size > 1 and no scheduler is set.
  it("adds dynamic batching for a config-given max_batch_size > 1 on a batchable model", () => {
    expect(autoCompleteConfig({ max_batch_size: 8 }, BATCHABLE, { defaultMaxBatchSize: 4 })).toEqual({
      max_batch_size: 8,
      dynamic_batching: {},
      input: [{ name: "x", data_type: "TYPE_FP32", dims: [3] }],
      output: [{ name: "y", data_type: "TYPE_INT64", dims: [1], reshape: { shape: [] } }],
    });
  });

  it("treats max_batch_size 0 as absent, as Triton (proto3) does", () => {
    expect(autoCompleteConfig({ max_batch_size: 0 }, BATCHABLE, { defaultMaxBatchSize: 4 })).toEqual(
      autoCompleteConfig({}, BATCHABLE, { defaultMaxBatchSize: 4 }),
    );
  });

  it("with a default max_batch_size of 0, leaves the model unbatched and keeps the batch dim in dims", () => {
    expect(autoCompleteConfig({}, BATCHABLE, { defaultMaxBatchSize: 0 })).toEqual({
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
      new ServerError("INVALID_ARG", "autofill failed for model 'n': model does not support batching while non-zero max_batch_size is specified"),
    );
    // Also when only some tensors are incomplete, and naming the model given in opts.
    const partial: ModelConfig = { max_batch_size: 2, input: [{ name: "x" }], output: [{ name: "y", data_type: "TYPE_STRING", dims: [1] }] };
    expect(() => autoCompleteConfig(partial, FIXED, { defaultMaxBatchSize: 4, modelName: "dir" })).toThrow(
      new ServerError("INVALID_ARG", "autofill failed for model 'dir': model does not support batching while non-zero max_batch_size is specified"),
    );
  });

  it("is skipped when the config lists complete inputs and outputs, as the ONNX Runtime backend does", () => {
    const config: ModelConfig = { input: [{ name: "x", data_type: "TYPE_FP32", dims: [-1, 3] }], output: [{ name: "y", data_type: "TYPE_INT64", dims: [-1] }] };
    // No max_batch_size, no dynamic batching, dims untouched, even though the model could batch.
    expect(autoCompleteConfig(config, BATCHABLE, { defaultMaxBatchSize: 4 })).toEqual(config);
    // Nor does it check batching: a non-batchable model with max_batch_size passes (and fails later at load).
    const fixed: ModelConfig = { ...config, max_batch_size: 2 };
    expect(autoCompleteConfig(fixed, FIXED, { defaultMaxBatchSize: 4 })).toEqual(fixed);
  });

  it("counts batch inputs as inputs: with outputs listed it is skipped, without them only outputs are filled", () => {
    const withBatchInput: ModelConfig = {
      batch_input: [{ kind: "BATCH_ELEMENT_COUNT", target_name: ["n"], data_type: "TYPE_INT32", source_input: ["x"] }],
      output: [{ name: "y", data_type: "TYPE_INT64", dims: [1] }],
    };
    expect(autoCompleteConfig(withBatchInput, BATCHABLE, { defaultMaxBatchSize: 4 })).toEqual(withBatchInput);
    const { output: _, ...noOutputs } = withBatchInput;
    expect(autoCompleteConfig(noOutputs, BATCHABLE, { defaultMaxBatchSize: 4 })).toEqual({
      ...noOutputs,
      max_batch_size: 4,
      dynamic_batching: {},
      output: [{ name: "y", data_type: "TYPE_INT64", dims: [1], reshape: { shape: [] } }],
    });
  });

  it("treats TYPE_INVALID and empty dims as missing", () => {
    const out = autoCompleteConfig(
      { max_batch_size: 4, input: [{ name: "x", data_type: "TYPE_INVALID", dims: [] }], output: [{ name: "y", data_type: "TYPE_INT64", dims: [2] }] },
      BATCHABLE,
      { defaultMaxBatchSize: 4 },
    );
    expect(out.input).toEqual([{ name: "x", data_type: "TYPE_FP32", dims: [3] }]);
    expect(out.output).toEqual([{ name: "y", data_type: "TYPE_INT64", dims: [2] }]);
  });

  it("keeps a reshape the config gives when it fills scalar dims", () => {
    const out = autoCompleteConfig({ input: [{ name: "x", data_type: "TYPE_FP32", dims: [3] }], output: [{ name: "y", reshape: { shape: [1] } }] }, BATCHABLE, {
      defaultMaxBatchSize: 4,
    });
    expect(out.output).toEqual([{ name: "y", data_type: "TYPE_INT64", dims: [1], reshape: { shape: [1] } }]);
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
      dynamic_batching: {},
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
