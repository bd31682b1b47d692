/**
 * An ensemble in a frontend worker's direct table (#30 item 2): DirectRunner runs it
 * through the ensemble scheduler, each step whose model is not in its table handed to the
 * relay (the main thread's inferStep), and records what the main thread records (the
 * ensemble's success with one execution of its steps' summed compute durations, as Triton's
 * ensemble reports them; its failure as OTHER; a step's failure is its ensemble's to
 * report, in Triton's "in ensemble" wording, nested ensembles included).
 */
import { describe, expect, it } from "vitest";
import { DirectRunner } from "../../../src/server/direct-runner.ts";
import { workerDirectRunner } from "../../../src/frontends/worker-threads.ts";
import { FAILURE, RECORD_WIDTH, SUCCESS, routeKey, type DirectEntry } from "../../../src/server/direct-table.ts";
import { FAILURE_REASONS } from "../../../src/core/stats.ts";
import { ServerError } from "../../../src/core/errors.ts";
import type { ModelConfig } from "../../../src/core/model-config-types.ts";
import type { InferenceRequest, InferenceResponse } from "../../../src/core/request.ts";

const i32 = (v: number[]) => new Uint8Array(Int32Array.from(v).buffer);
const values = (data: Uint8Array) => Array.from(new Int32Array(data.buffer, data.byteOffset, data.byteLength / 4));
const tensor = (name: string) => ({ name, data_type: "TYPE_INT32", dims: [2] });

/** `name`: IN → step on `model` (X → Y) → MID → step on `model` → OUT. */
function ensembleConfig(name: string, model: string): ModelConfig {
  return {
    name,
    platform: "ensemble",
    max_batch_size: 0,
    input: [tensor("IN")],
    output: [tensor("OUT")],
    ensemble_scheduling: {
      step: [
        { model_name: model, model_version: -1, input_map: { X: "IN" }, output_map: { Y: "MID" } },
        { model_name: model, model_version: -1, input_map: { X: "MID" }, output_map: { Y: "OUT" } },
      ],
    },
  } as unknown as ModelConfig;
}
/** outer: IN → step on e (IN → OUT) → OUT. */
const OUTER = {
  name: "outer",
  platform: "ensemble",
  max_batch_size: 0,
  input: [tensor("IN")],
  output: [tensor("OUT")],
  ensemble_scheduling: { step: [{ model_name: "e", input_map: { IN: "IN" }, output_map: { OUT: "OUT" } }] },
} as unknown as ModelConfig;

const entry = (id: number, config: ModelConfig): DirectEntry => ({ id, name: config.name!, version: "1", config, instances: [] });
const request = (data = [3, -4]): InferenceRequest => ({
  modelName: "",
  parameters: {},
  inputs: [{ name: "IN", datatype: "INT32", shape: [2], data: i32(data) }],
});

function runner(relay: (r: InferenceRequest) => Promise<InferenceResponse>) {
  const failures: string[] = [];
  const relayed: InferenceRequest[] = [];
  const r = new DirectRunner(
    () => {},
    (e, model) => failures.push(`${model}: ${e.code} ${e.message}`),
    () => {},
    (req) => {
      relayed.push(req);
      return relay(req);
    },
  );
  r.update({
    entries: [entry(1, ensembleConfig("e", "m")), entry(2, OUTER)],
    routes: [
      [routeKey("e", undefined), 1],
      [routeKey("outer", undefined), 2],
    ],
  });
  const records = () => {
    const all = r.take();
    const out: number[][] = [];
    for (let i = 0; i < all.length; i += RECORD_WIDTH) out.push(all.slice(i, i + RECORD_WIDTH));
    return out;
  };
  return { r, failures, relayed, records };
}

/** m doubles X into Y, as the main thread would answer the step. */
const doubling = async (req: InferenceRequest): Promise<InferenceResponse> => ({
  modelName: req.modelName,
  modelVersion: "1",
  outputs: [{ name: "Y", datatype: "INT32", shape: [2], data: i32(values(req.inputs[0]!.data as Uint8Array).map((v) => 2 * v)) }],
});

describe("an ensemble in a frontend worker's table", () => {
  it("runs its steps through the relay when their model is not in the table, and records one execution of the steps' summed compute", async () => {
    // The main thread adds each step's compute durations to the step's stepTimes (what the relay carries back).
    const { r, relayed, records, failures } = runner(async (req) => {
      if (req.stepTimes) {
        req.stepTimes.input += 10;
        req.stepTimes.infer += 200;
        req.stepTimes.output += 3;
      }
      return doubling(req);
    });
    const answer = await r.run("e", undefined, { ...request(), id: "r1" })!;
    expect(answer).toMatchObject({ modelName: "e", modelVersion: "1", id: "r1", outputs: [{ name: "OUT", datatype: "INT32", shape: [2] }] });
    expect(values(answer.outputs[0]!.data as Uint8Array)).toEqual([12, -16]);
    // Each step as the ensemble scheduler makes it: the step's model, no version (-1), its inputs renamed, its outputs asked for.
    expect(relayed.map((q) => [q.modelName, q.modelVersion, q.inputs.map((t) => t.name), q.outputs])).toEqual([
      ["m", undefined, ["X"], [{ name: "Y" }]],
      ["m", undefined, ["X"], [{ name: "Y" }]],
    ]);
    const [rec, ...rest] = records();
    expect(rest).toEqual([]);
    // SUCCESS: id, (request ns), compute input, infer, output summed over the two steps, batch size at least 1, queue 0.
    expect([rec![0], rec![1], ...rec!.slice(3)]).toEqual([SUCCESS, 1, 20, 400, 6, 1, 0]);
    expect(failures).toEqual([]);
  });

  it("a step's failure is the ensemble's, in Triton's words, counted OTHER and reported once", async () => {
    const { r, records, failures } = runner(() => Promise.reject(new ServerError("INVALID_ARG", "bad step", { reason: "BACKEND" })));
    const err = await r.run("e", undefined, request())!.catch((e: ServerError) => e);
    expect(err).toBeInstanceOf(ServerError);
    expect([(err as ServerError).code, (err as ServerError).message]).toEqual(["INVALID_ARG", "in ensemble 'e', bad step"]);
    expect(records().map((x) => [x[0], x[1], x[3]])).toEqual([[FAILURE, 1, FAILURE_REASONS.indexOf("OTHER")]]);
    expect(failures).toEqual(["e: INVALID_ARG in ensemble 'e', bad step"]);
  });

  it("runs an ensemble inside an ensemble here, each recorded as the main thread records a step and a request", async () => {
    const { r, records, failures } = runner(doubling);
    const answer = await r.run("outer", undefined, request([1, 2]))!;
    expect(answer.modelName).toBe("outer");
    expect(values(answer.outputs[0]!.data as Uint8Array)).toEqual([4, 8]);
    expect(records().map((x) => [x[0], x[1], x[6]])).toEqual([
      [SUCCESS, 1, 1],
      [SUCCESS, 2, 1],
    ]);
    expect(failures).toEqual([]);

    const failing = runner(() => Promise.reject(new ServerError("UNAVAILABLE", "Request for unknown model: 'm' is not found")));
    const err = (await failing.r.run("outer", undefined, request())!.catch((e: ServerError) => e)) as ServerError;
    expect(err.message).toBe("in ensemble 'outer', in ensemble 'e', Request for unknown model: 'm' is not found");
    const other = FAILURE_REASONS.indexOf("OTHER");
    expect(failing.records().map((x) => [x[0], x[1], x[3]])).toEqual([
      [FAILURE, 1, other],
      [FAILURE, 2, other],
    ]);
    expect(failing.failures).toEqual([`outer: UNAVAILABLE ${err.message}`]);
  });

  it("an ensemble's validation failure is its own (OTHER), before any step", async () => {
    const { r, relayed, records, failures } = runner(doubling);
    const bad = request();
    bad.inputs[0]!.datatype = "FP32";
    const err = (await r.run("e", undefined, bad)!.catch((e: ServerError) => e)) as ServerError;
    expect(err.message).toBe("inference input 'IN' data-type is 'FP32', but model 'e' expects 'INT32'");
    expect(relayed).toEqual([]);
    expect(records().map((x) => [x[0], x[1], x[3]])).toEqual([[FAILURE, 1, FAILURE_REASONS.indexOf("OTHER")]]);
    expect(failures).toHaveLength(1);
  });

  it("through the worker's relay, each relayed step adds only its own durations (the main thread gets a fresh sum, a copy)", async () => {
    const posted: { t: string; id?: number; request?: InferenceRequest }[] = [];
    const { runner: r, receive } = workerDirectRunner(
      (m) => posted.push(m as never),
      (m) => m,
    );
    receive({ t: "models", table: { entries: [entry(1, ensembleConfig("e", "m"))], routes: [[routeKey("e", undefined), 1]] } } as never);
    const answer = r.run("e", undefined, request());
    // The main thread, as DirectLink does: runs each step on a structured copy, adds its 100 ns of infer, answers with the copy's sums.
    for (let k = 0; k < 2; k++) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      const step = posted.filter((m) => m.t === "step")[k]!;
      const copy = structuredClone(step.request!);
      copy.stepTimes!.infer += 100;
      receive({ t: "stepped", id: step.id, response: await doubling(copy), times: copy.stepTimes } as never);
    }
    await answer;
    const rec = r.take();
    expect([rec[0], rec[1], rec[3], rec[4], rec[5]]).toEqual([SUCCESS, 1, 0, 200, 0]);
  });
});

describe("a frontend worker's table behind the newest one published", () => {
  it("hands its requests to the main thread until the newer table arrives (a load's answer may reach a client before another worker's table)", async () => {
    const { r, relayed } = runner(doubling);
    const published = new Int32Array(new SharedArrayBuffer(4));
    const table = (generation: number) => ({
      entries: [entry(1, ensembleConfig("e", "m"))],
      routes: [[routeKey("e", undefined), 1]] as [string, number][],
      generation,
      published: published.buffer as SharedArrayBuffer,
    });
    Atomics.store(published, 0, 1);
    r.update(table(1));
    expect(values((await r.run("e", undefined, request())!).outputs[0]!.data as Uint8Array)).toEqual([12, -16]);
    expect(relayed).toHaveLength(2); // its two steps
    // The main thread published table 2 (a reload answered); this worker has not taken it yet.
    Atomics.store(published, 0, 2);
    expect(r.run("e", undefined, request())).toBeUndefined();
    r.update(table(2));
    expect(values((await r.run("e", undefined, request())!).outputs[0]!.data as Uint8Array)).toEqual([12, -16]);
    expect(relayed).toHaveLength(4);
  });
});
