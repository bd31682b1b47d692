// The shared scheduler suite (test/suites/scheduler.ts) against every scheduler, each over
// a scripted backend. They are built directly (to give them a manual clock); the last test
// checks createScheduler picks the same class from each config.
import { describe, expect, it } from "vitest";
import { DefaultScheduler } from "../../../src/scheduler/default-scheduler.ts";
import { DynamicBatchScheduler } from "../../../src/scheduler/dynamic-batch-scheduler.ts";
import { SequenceBatchScheduler } from "../../../src/scheduler/sequence-batch-scheduler.ts";
import { EnsembleScheduler } from "../../../src/scheduler/ensemble-scheduler.ts";
import { createScheduler } from "../../../src/scheduler/create.ts";
import { sequenceSettings } from "../../../src/scheduler/sequence/config.ts";
import { prepareForInference } from "../../../src/core/request-validate.ts";
import { ModelStats } from "../../../src/core/stats.ts";
import { ManualBackend, ManualClock, stepRunner, testModel, request, type Execution } from "../../helpers/scheduler-fakes.ts";
import { inRows, schedulerSuite } from "../../suites/scheduler.ts";
import type { ModelConfig } from "../../../src/core/model-config-types.ts";

const finishIdentity = (e: Execution) => e.finish();

schedulerSuite("default (2 instances)", () => {
  const { sig } = testModel();
  const backend = new ManualBackend();
  const stats = new ModelStats();
  const scheduler = new DefaultScheduler("m", [backend.instance("i0"), backend.instance("i1")], stats);
  return { scheduler, backend, stats, request: (v) => request(sig, 1, v), finish: finishIdentity, rows: inRows };
});

schedulerSuite("dynamic batch (preferred 4, 100 µs delay, 2 instances)", () => {
  const { sig, config } = testModel({ dynamic_batching: { preferred_batch_size: [4], max_queue_delay_microseconds: 100 } });
  const backend = new ManualBackend();
  const stats = new ModelStats();
  const clock = new ManualClock();
  const scheduler = new DynamicBatchScheduler({
    modelName: "m",
    instances: [backend.instance("i0"), backend.instance("i1")],
    signature: sig,
    config: config.dynamic_batching!,
    stats,
    clock,
  });
  return { scheduler, backend, stats, clock, request: (v) => request(sig, 1, v), finish: finishIdentity, rows: inRows };
});

const CONTROLS = [
  { name: "START", control: [{ kind: "CONTROL_SEQUENCE_START", int32_false_true: [0, 1] }] },
  { name: "READY", control: [{ kind: "CONTROL_SEQUENCE_READY", bool_false_true: [false, true] }] },
];
const STATE = [{ input_name: "STATE_IN", output_name: "STATE_OUT", data_type: "TYPE_FP32", dims: [2] }];

for (const [name, strategy] of [
  ["direct", { direct: {} }],
  ["oldest", { oldest: { max_candidate_sequences: 8, preferred_batch_size: [4], max_queue_delay_microseconds: 100 } }],
] as const) {
  schedulerSuite(`sequence batch (${name}, max batch 4; each request a one-request sequence)`, () => {
    const { sig, config } = testModel({ max_batch_size: 4, sequence_batching: { ...strategy, control_input: CONTROLS, state: STATE } } as Partial<ModelConfig>);
    const backend = new ManualBackend();
    const stats = new ModelStats();
    const clock = new ManualClock();
    const scheduler = new SequenceBatchScheduler({
      modelName: "m",
      modelDir: "/nonexistent",
      instances: [backend.instance("i0")],
      signature: sig,
      settings: sequenceSettings(config),
      stats,
      clock,
    });
    const ready = (e: Execution) => Array.from(e.inputs.find((t) => t.name === "READY")!.data);
    return {
      scheduler,
      backend,
      stats,
      clock,
      request: (v) => request(sig, 1, v, { parameters: { sequence_id: v, sequence_start: true, sequence_end: true } }),
      // OUT = IN (state starts at zero), STATE_OUT = OUT.
      finish: (e) => {
        const t = e.inputs.find((x) => x.name === "IN")!;
        e.finish([
          { ...t, name: "OUT" },
          { ...t, name: "STATE_OUT" },
        ]);
      },
      rows: (e) => inRows(e).filter((_, i) => ready(e)[i] === 1),
    };
  });
}

schedulerSuite("ensemble (two steps over a default-scheduled composing model)", () => {
  const { sig, config } = testModel({
    platform: "ensemble",
    ensemble_scheduling: {
      step: [
        { model_name: "first", input_map: { IN: "IN" }, output_map: { OUT: "MID" } },
        { model_name: "second", input_map: { IN: "MID" }, output_map: { OUT: "OUT" } },
      ],
    },
  } as Partial<ModelConfig>);
  // Both steps call one identity model, scheduled by a default scheduler over the scripted backend.
  const inner = testModel();
  const backend = new ManualBackend();
  const stats = new ModelStats();
  const composing = new DefaultScheduler("m", [backend.instance("i0")], stats);
  const scheduler = new EnsembleScheduler(
    config,
    stepRunner(async (req) => {
      const r = await composing.enqueue(prepareForInference({ ...req, modelName: inner.sig.name }, inner.sig));
      return { modelName: req.modelName, modelVersion: "1", outputs: r.outputs };
    }),
  );
  return { scheduler, backend, stats, executionsPerRequest: 2, request: (v) => request(sig, 1, v), finish: finishIdentity, rows: inRows };
});

describe("createScheduler picks the scheduler the suite ran for each config", () => {
  const ensembleConfig = {
    platform: "ensemble",
    ensemble_scheduling: { step: [{ model_name: "first", input_map: { IN: "IN" }, output_map: { OUT: "OUT" } }] },
  };
  it.each([
    ["no batching settings", {}, DefaultScheduler],
    ["dynamic_batching", { dynamic_batching: { max_queue_delay_microseconds: 100 } }, DynamicBatchScheduler],
    ["sequence_batching", { max_batch_size: 4, sequence_batching: { direct: {}, control_input: CONTROLS, state: STATE } }, SequenceBatchScheduler],
    ["ensemble_scheduling", ensembleConfig, EnsembleScheduler],
  ] as const)("%s", (_, extra, kind) => {
    const { sig, config } = testModel(extra as Partial<ModelConfig>);
    const backend = new ManualBackend();
    const model = { name: "m", modelDir: "/nonexistent", config, signature: sig, stats: new ModelStats() };
    const runner = stepRunner(() => Promise.reject(new Error("not called")));
    expect(createScheduler(model, [backend.instance("i0")], runner)).toBeInstanceOf(kind);
  });
});
