/**
 * Deterministic pieces for scheduler tests: a clock that only moves when told, and a
 * backend instance whose executions finish when the test says so.
 */
import { prepareForInference, type PreparedRequest } from "../../src/core/request-validate.ts";
import { signatureOf, type ModelSignature } from "../../src/core/signature.ts";
import { normalizeModelConfig } from "../../src/model-config/normalize.ts";
import type { BackendInstance, ExecuteResult } from "../../src/backends/backend.ts";
import type { SchedulerClock } from "../../src/scheduler/timer.ts";
import type { Tensor } from "../../src/core/tensor.ts";
import type { ModelConfig } from "../../src/core/model-config-types.ts";
import type { InferenceRequest, InferenceResponse, Parameters } from "../../src/core/request.ts";
import type { ModelRunner } from "../../src/core/runner.ts";

export class ManualClock implements SchedulerClock {
  t = 0;
  #timers: { at: number; fn: () => void; live: boolean }[] = [];

  now(): number {
    return this.t;
  }

  after(ns: number, fn: () => void): () => void {
    const timer = { at: this.t + ns, fn, live: true };
    this.#timers.push(timer);
    return () => (timer.live = false);
  }

  /** Moves time forward, firing due timers in time order. */
  advance(ns: number): void {
    const end = this.t + ns;
    for (;;) {
      const due = this.#timers.filter((x) => x.live && x.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      due.live = false;
      this.t = Math.max(this.t, due.at);
      due.fn();
    }
    this.t = end;
    this.#timers = this.#timers.filter((x) => x.live);
  }

  get pendingTimers(): number {
    return this.#timers.filter((x) => x.live).length;
  }
}

export interface Execution {
  instance: string;
  inputs: Tensor[];
  outputNames: readonly string[];
  /** Answers with OUT = IN (same shape, same bytes), or with `outputs` when given. */
  finish(outputs?: Tensor[]): void;
  fail(err: Error): void;
}

/** Instances that record each execution and leave it running until the test finishes it. */
export class ManualBackend {
  readonly executions: Execution[] = [];

  instance(name: string): BackendInstance {
    return {
      name,
      execute: (inputs, outputNames) =>
        new Promise<ExecuteResult>((resolve, reject) => {
          this.executions.push({
            instance: name,
            inputs,
            outputNames,
            finish: (outputs) =>
              resolve({
                outputs: outputs ?? inputs.map((t) => ({ ...t, name: t.name.replace("IN", "OUT") })),
                computeInputNs: 10,
                computeInferNs: 100,
                computeOutputNs: 1,
              }),
            fail: reject,
          });
        }),
      close() {},
    };
  }

  /** Executions started and not yet looked at. */
  get count(): number {
    return this.executions.length;
  }
}

/** A batching model with one FP32 input IN and output OUT of `dims`, plus `extra` config. */
export function testModel(extra: Partial<ModelConfig> = {}, dims: number[] = [2]): { sig: ModelSignature; config: ModelConfig } {
  const config: ModelConfig = normalizeModelConfig(
    {
      name: "m",
      backend: "onnxruntime",
      max_batch_size: 8,
      input: [{ name: "IN", data_type: "TYPE_FP32", dims }],
      output: [{ name: "OUT", data_type: "TYPE_FP32", dims }],
      ...extra,
    } as ModelConfig,
    { modelName: "m", gpuCount: 0 },
  );
  return { sig: signatureOf(config), config };
}

/** A validated request of `batch` rows, each row filled with `value`. */
export function request(sig: ModelSignature, batch: number, value: number, opts: { id?: string; parameters?: Parameters; row?: number } = {}): PreparedRequest {
  const row = opts.row ?? 2;
  const data = new Float32Array(batch * row).fill(value);
  return prepareForInference(
    {
      modelName: sig.name,
      id: opts.id,
      parameters: opts.parameters ?? {},
      inputs: [{ name: "IN", datatype: "FP32", shape: [batch, row], data: new Uint8Array(data.buffer) }],
    },
    sig,
  );
}

export const floats = (t: Tensor) => Array.from(new Float32Array(t.data.slice().buffer));

/** Lets promise callbacks run. */
export const settle = () => new Promise((r) => setImmediate(r));

/** A model runner (ensemble steps) that answers through `infer`; the streaming entry is not expected. */
export function stepRunner(infer: (request: InferenceRequest) => Promise<InferenceResponse>): ModelRunner {
  return {
    inferStep: infer,
    inferStepStream: () => {
      throw new Error("inferStepStream: not expected in this test");
    },
  };
}

/** A step model that echoes its first input as Y: the main thread's answer to a step an ensemble relays there. */
export const echoStep = async (req: InferenceRequest): Promise<InferenceResponse> => ({
  modelName: req.modelName,
  modelVersion: "1",
  outputs: [{ ...req.inputs[0]!, name: "Y" }],
});
