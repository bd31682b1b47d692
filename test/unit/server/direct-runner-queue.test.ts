/**
 * A frontend worker's requests beyond MAX_DIRECT_IN_FLIGHT wait in the worker (#30): every
 * request is answered there, in arrival order, none handed to the main thread. Until
 * 2026-11-27 the worker gave those requests back to the main thread, which on a 16-core
 * host carried 8-18 µs of its CPU per request at 256 connections.
 */
import { describe, expect, it } from "vitest";
import { DirectRunner, MAX_DIRECT_IN_FLIGHT } from "../../../src/server/direct-runner.ts";
import { RECORD_WIDTH, SUCCESS, FAILURE, routeKey } from "../../../src/server/direct-table.ts";
import { FAILURE_REASONS } from "../../../src/core/stats.ts";
import type { ModelConfig } from "../../../src/core/model-config-types.ts";
import type { InferenceRequest, InferenceResponse } from "../../../src/core/request.ts";

const i32 = (v: number[]) => new Uint8Array(Int32Array.from(v).buffer);
const values = (data: Uint8Array) => Array.from(new Int32Array(data.buffer, data.byteOffset, data.byteLength / 4));
const tensor = (name: string) => ({ name, data_type: "TYPE_INT32", dims: [1] });
/** e: IN → one step on m (X → Y) → OUT; m is not in the table, so its step goes to the relay, which the test answers when it likes. */
const E = {
  name: "e",
  platform: "ensemble",
  max_batch_size: 0,
  input: [tensor("IN")],
  output: [tensor("OUT")],
  ensemble_scheduling: { step: [{ model_name: "m", model_version: -1, input_map: { X: "IN" }, output_map: { Y: "OUT" } }] },
} as unknown as ModelConfig;

function setup() {
  const held: { value: number; answer: () => void }[] = [];
  const main: string[] = [];
  const r = new DirectRunner(
    () => {},
    (e) => main.push(e.message),
    () => {},
    (req) =>
      new Promise<InferenceResponse>((resolve) => {
        const value = values(req.inputs[0]!.data as Uint8Array)[0]!;
        held.push({
          value,
          answer: () => resolve({ modelName: "m", modelVersion: "1", outputs: [{ name: "Y", datatype: "INT32", shape: [1], data: i32([value]) }] }),
        });
      }),
  );
  r.update({ entries: [{ id: 1, name: "e", version: "1", config: E, instances: [] }], routes: [[routeKey("e", undefined), 1]] });
  const run = (value: number, signal?: AbortSignal) => {
    const req: InferenceRequest = { modelName: "e", parameters: {}, inputs: [{ name: "IN", datatype: "INT32", shape: [1], data: i32([value]) }], signal };
    return r.run("e", undefined, req);
  };
  const records = () => {
    const all = r.take();
    const out: number[][] = [];
    for (let i = 0; i < all.length; i += RECORD_WIDTH) out.push(all.slice(i, i + RECORD_WIDTH));
    return out;
  };
  return { run, held, main, records };
}
const tick = () => new Promise((r) => setImmediate(r));

describe("a frontend worker's requests beyond its runs in flight", () => {
  it("wait in the worker and start in arrival order as runs end; every one is answered here", async () => {
    expect(MAX_DIRECT_IN_FLIGHT).toBe(32);
    const { run, held, main, records } = setup();
    const answers = Array.from({ length: 40 }, (_, i) => run(i));
    // None is given back to the main thread (run() answers undefined for that).
    expect(answers.every((a) => a !== undefined)).toBe(true);
    await tick();
    expect(held.map((h) => h.value)).toEqual(Array.from({ length: 32 }, (_, i) => i));
    // Each end lets the oldest waiting request start.
    held[5]!.answer();
    held[0]!.answer();
    await tick();
    expect(held.slice(32).map((h) => h.value)).toEqual([32, 33]);
    // Answering every held step lets the waiting ones start, until none is left.
    while (held.length > 0) {
      for (const h of held.splice(0)) h.answer();
      await tick();
    }
    const out = await Promise.all(answers);
    expect(out.map((a) => values(a!.outputs[0]!.data as Uint8Array)[0])).toEqual(Array.from({ length: 40 }, (_, i) => i));
    expect(records().map((x) => x[0])).toEqual(Array(40).fill(SUCCESS));
    expect(main).toEqual([]);
  });

  it("a request cancelled while it waits fails as cancelled when its turn comes, and passes the turn on", async () => {
    const { run, held, main, records } = setup();
    const answers = Array.from({ length: MAX_DIRECT_IN_FLIGHT }, (_, i) => run(i));
    const abort = new AbortController();
    const cancelled = run(100, abort.signal)!.catch((e: Error) => e.message);
    const after = run(101);
    abort.abort();
    await tick();
    held[0]!.answer();
    await tick();
    expect(await cancelled).toMatch(/cancel/i);
    // The cancelled request never ran; the one behind it did.
    expect(held.map((h) => h.value).slice(MAX_DIRECT_IN_FLIGHT)).toEqual([101]);
    for (const h of held) h.answer();
    await Promise.all([...answers, after]);
    const kinds = records().map((x) => (x[0] === FAILURE ? `F${x[3]}` : "S"));
    expect(kinds.filter((k) => k === "S").length).toBe(MAX_DIRECT_IN_FLIGHT + 1);
    expect(kinds.filter((k) => k !== "S")).toEqual([`F${FAILURE_REASONS.indexOf("OTHER")}`]);
    expect(main.length).toBe(1);
  });
});
