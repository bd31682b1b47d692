/**
 * Which requests a frontend worker's DirectRunner answers itself and which it leaves to the
 * main thread (#30): `priority` and `timeout` parameters and classifications stay in the
 * worker (its answers are the main thread's: frontend-direct.test and
 * frontend-batch-thread.test compare them through the binary); sequence parameters for a
 * version without a sequence batcher, control fields that do not parse and shared-memory
 * tensors in regions the table does not list go to the main thread (run() returns
 * undefined; direct-shared-memory.test has the listed ones).
 */
import { describe, expect, it } from "vitest";
import { DirectRunner } from "../../../src/server/direct-runner.ts";
import { labelsOf, routeKey, sharedLabels, type DirectEntry } from "../../../src/server/direct-table.ts";
import type { ModelConfig } from "../../../src/core/model-config-types.ts";
import type { InferenceRequest } from "../../../src/core/request.ts";
import { echoStep } from "../../helpers/scheduler-fakes.ts";

/** e: IN → one step on m (X → Y) → OUT, which has labels; batches up to 32. */
const ENSEMBLE = {
  name: "e",
  platform: "ensemble",
  max_batch_size: 32,
  input: [{ name: "IN", data_type: "TYPE_INT32", dims: [2] }],
  output: [{ name: "OUT", data_type: "TYPE_INT32", dims: [2], label_filename: "labels.txt" }],
  ensemble_scheduling: { step: [{ model_name: "m", model_version: -1, input_map: { X: "IN" }, output_map: { Y: "OUT" } }] },
} as unknown as ModelConfig;

function runner(): DirectRunner {
  const entry: DirectEntry = { id: 1, name: "e", version: "1", config: ENSEMBLE, instances: [], labels: sharedLabels(new Map([["OUT", ["first", "second"]]])) };
  const r = new DirectRunner(
    () => {},
    () => {},
    () => {},
    echoStep,
  );
  r.update({ entries: [entry], routes: [[routeKey("e", undefined), 1]] }, undefined);
  return r;
}

const request = (more: Partial<InferenceRequest> = {}): InferenceRequest => ({
  modelName: "e",
  parameters: {},
  inputs: [{ name: "IN", datatype: "INT32", shape: [1, 2], data: new Uint8Array(Int32Array.of(3, 7).buffer) }],
  ...more,
});

describe("the requests a frontend worker answers itself", () => {
  it("answers requests with priority and timeout parameters", async () => {
    const answer = await runner().run("e", undefined, request({ parameters: { priority: 2, timeout: 1000, custom: "x" } }));
    expect(answer?.outputs.map((o) => [o.name, [...new Int32Array(o.data.slice().buffer)]])).toEqual([["OUT", [3, 7]]]);
  });

  it("classifies, with the labels of the table's entry", async () => {
    const answer = await runner().run("e", undefined, request({ outputs: [{ name: "OUT", parameters: { classification: 2 } }] }));
    const out = answer!.outputs[0]!;
    expect({ datatype: out.datatype, shape: out.shape }).toEqual({ datatype: "BYTES", shape: [1, 2] });
    const texts: string[] = [];
    for (let at = 0; at < out.data.byteLength; ) {
      const n = new DataView(out.data.buffer, out.data.byteOffset + at).getUint32(0, true);
      texts.push(new TextDecoder().decode(out.data.subarray(at + 4, at + 4 + n)));
      at += 4 + n;
    }
    expect(texts).toEqual(["7:1:second", "3:0:first"]);
  });

  it("leaves to the main thread sequence parameters without a sequence batcher here, control fields that do not parse, and regions it does not list", () => {
    const r = runner();
    expect(r.run("e", undefined, request({ parameters: { sequence_id: 5, sequence_start: true } }))).toBeUndefined();
    expect(r.run("e", undefined, request({ parameters: { priority: -1 } }))).toBeUndefined();
    expect(r.run("e", undefined, request({ parameters: { timeout: 1.5 } }))).toBeUndefined();
    const inShm = request();
    inShm.inputs[0]!.parameters = { shared_memory_region: "r", shared_memory_byte_size: 8 };
    expect(r.run("e", undefined, inShm)).toBeUndefined();
    expect(
      r.run("e", undefined, request({ outputs: [{ name: "OUT", parameters: { shared_memory_region: "r", shared_memory_byte_size: 8 } }] })),
    ).toBeUndefined();
  });

  it("carries the labels in shared memory, read back whole", () => {
    const labels = new Map([
      ["A", ["x", "é", ""]],
      ["__proto__", ["p"]],
    ]);
    const buffer = sharedLabels(labels);
    expect(buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(labelsOf(buffer)).toEqual(labels);
  });
});
