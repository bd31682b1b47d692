// S-15: EnsembleScheduler data flow and max_inflight_requests, with a scripted runner.
import { describe, expect, it } from "vitest";
import { EnsembleScheduler, checkEnsembleFlow, ensembleDecoupled } from "../../../src/scheduler/ensemble-scheduler.ts";
import { request, settle, stepRunner, testModel } from "../../helpers/scheduler-fakes.ts";
import type { InferenceRequest, InferenceResponse } from "../../../src/core/request.ts";
import type { ModelConfig } from "../../../src/core/model-config-types.ts";

function ensemble(extra: object = {}) {
  const { sig, config } = testModel({
    platform: "ensemble",
    ensemble_scheduling: {
      ...extra,
      step: [
        { model_name: "first", input_map: { IN: "IN" }, output_map: { OUT: "MID" } },
        { model_name: "second", input_map: { IN: "MID" }, output_map: { OUT: "OUT" } },
      ],
    },
  } as Partial<ModelConfig>);
  return { sig, config };
}

/** Runs steps when the test says so; OUT = IN + 1 for 'first', IN * 10 for 'second'. */
function scriptedRunner() {
  const calls: { req: InferenceRequest; finish: () => void }[] = [];
  let active = new Map<string, number>();
  const peak = new Map<string, number>();
  const run = (req: InferenceRequest) =>
    new Promise<InferenceResponse>((resolve) => {
      active.set(req.modelName, (active.get(req.modelName) ?? 0) + 1);
      peak.set(req.modelName, Math.max(peak.get(req.modelName) ?? 0, active.get(req.modelName)!));
      calls.push({
        req,
        finish: () => {
          active.set(req.modelName, active.get(req.modelName)! - 1);
          const x = new Float32Array(req.inputs[0]!.data.slice().buffer).map((v) => (req.modelName === "first" ? v + 1 : v * 10));
          resolve({ modelName: req.modelName, modelVersion: "1", outputs: [{ ...req.inputs[0]!, name: "OUT", data: new Uint8Array(x.buffer) }] });
        },
      });
    });
  return { run, calls, peak, reset: () => (active = new Map()) };
}

describe("EnsembleScheduler", () => {
  it("feeds each step's outputs to the next and returns the ensemble outputs", async () => {
    const { sig, config } = ensemble();
    const r = scriptedRunner();
    const s = new EnsembleScheduler(config, stepRunner(r.run));
    const p = s.enqueue(request(sig, 1, 2));
    await settle();
    expect(r.calls.map((c) => c.req.modelName)).toEqual(["first"]);
    r.calls[0]!.finish();
    await settle();
    expect(r.calls[1]!.req.inputs[0]!.name).toBe("IN");
    r.calls[1]!.finish();
    const out = await p;
    expect(out.outputs[0]!.name).toBe("OUT");
    expect(Array.from(new Float32Array(out.outputs[0]!.data.slice().buffer))).toEqual([30, 30]);
  });

  it("max_inflight_requests holds each step to that many requests at once", async () => {
    const { sig, config } = ensemble({ max_inflight_requests: 1 });
    const r = scriptedRunner();
    const s = new EnsembleScheduler(config, stepRunner(r.run));
    const results = [1, 2, 3].map((v) => s.enqueue(request(sig, 1, v)));
    for (let i = 0; i < 40; i++) {
      await settle();
      r.calls.shift()?.finish();
    }
    const outs = await Promise.all(results);
    expect(outs.map((o) => new Float32Array(o.outputs[0]!.data.slice().buffer)[0])).toEqual([20, 30, 40]);
    expect(r.peak.get("first")).toBe(1);
    expect(r.peak.get("second")).toBe(1);
  });

  it("without the limit, every request's step runs at once", async () => {
    const { sig, config } = ensemble();
    const r = scriptedRunner();
    const s = new EnsembleScheduler(config, stepRunner(r.run));
    const results = [1, 2, 3].map((v) => s.enqueue(request(sig, 1, v)));
    await settle();
    expect(r.peak.get("first")).toBe(3);
    for (let i = 0; i < 40; i++) {
      r.calls.shift()?.finish();
      await settle();
    }
    await Promise.all(results);
  });

  it("checks the data flow at load", () => {
    const { config } = ensemble();
    expect(() => checkEnsembleFlow(config)).not.toThrow();
    const broken = { ...config, output: [{ name: "NEVER", data_type: "TYPE_FP32", dims: [2] }] } as ModelConfig;
    expect(() => checkEnsembleFlow(broken)).toThrow("ensemble 'm': output 'NEVER' is not produced by any step");
  });
});

describe("ensembleDecoupled: Triton's decoupled data-flow rule (#16 item 3)", () => {
  const flow = (steps: [string, Record<string, string>, Record<string, string>][]) =>
    ({
      name: "e",
      input: [{ name: "IN" }],
      ensemble_scheduling: { step: steps.map(([model_name, input_map, output_map]) => ({ model_name, input_map, output_map })) },
    }) as unknown as ModelConfig;
  const decoupled =
    (...names: string[]) =>
    (m: string) =>
      names.includes(m);

  it("no decoupled step: not decoupled", () => {
    expect(
      ensembleDecoupled(
        flow([
          ["a", { X: "IN" }, { Y: "M" }],
          ["b", { X: "M" }, { Y: "OUT" }],
        ]),
        decoupled(),
      ),
    ).toBe(false);
  });

  it("a decoupled step makes the ensemble decoupled; the steps after it, and one reading two of its outputs, share its lineage", () => {
    const config = flow([
      ["d", { X: "IN" }, { Y: "M1", Z: "M2" }],
      ["a", { X: "M1" }, { Y: "M3" }],
      ["b", { X: "M3", W: "M2" }, { Y: "OUT" }],
    ]);
    expect(ensembleDecoupled(config, decoupled("d"))).toBe(true);
  });

  it("refuses a step that mixes a decoupled lineage with the ensemble's inputs or with another decoupled step's", () => {
    const message = "in ensemble e, step of model 'b' receives inputs originated from different decoupled models";
    expect(() =>
      ensembleDecoupled(
        flow([
          ["d", { X: "IN" }, { Y: "M" }],
          ["b", { X: "M", W: "IN" }, { Y: "OUT" }],
        ]),
        decoupled("d"),
      ),
    ).toThrow(message);
    expect(() =>
      ensembleDecoupled(
        flow([
          ["d", { X: "IN" }, { Y: "M1" }],
          ["d2", { X: "IN" }, { Y: "M2" }],
          ["b", { X: "M1", W: "M2" }, { Y: "OUT" }],
        ]),
        decoupled("d", "d2"),
      ),
    ).toThrow(message);
    // The same two steps, neither decoupled: one lineage, accepted.
    expect(
      ensembleDecoupled(
        flow([
          ["d", { X: "IN" }, { Y: "M1" }],
          ["d2", { X: "IN" }, { Y: "M2" }],
          ["b", { X: "M1", W: "M2" }, { Y: "OUT" }],
        ]),
        decoupled(),
      ),
    ).toBe(false);
  });
});
