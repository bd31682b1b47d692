/**
 * Where a frontend worker's DirectRunner counts its requests (#30 item 2): in its slot of
 * the version's shared counters when the table gives it one (nothing posted to the main
 * thread), as records when the table asks for them (the server observes each request) or
 * gives no slot, and an execution whose batch size has no row left in its slot as a
 * record of its own, beside the rest in the counters. Folded, the counts are the same.
 */
import { describe, expect, it } from "vitest";
import { DirectRunner } from "../../../src/server/direct-runner.ts";
import { EXECUTION, HIT, MISS, RECORD_WIDTH, routeKey, SUCCESS, type DirectEntry, type DirectTable } from "../../../src/server/direct-table.ts";
import { SharedResponseCache } from "../../../src/cache/shared-cache.ts";
import { MAX_BATCH_ROWS, SharedStatsReader, sharedStatsBuffer } from "../../../src/core/shared-stats.ts";
import { ModelStats } from "../../../src/core/stats.ts";
import type { ModelConfig } from "../../../src/core/model-config-types.ts";
import type { InferenceRequest } from "../../../src/core/request.ts";
import { echoStep } from "../../helpers/scheduler-fakes.ts";

const tensor = (name: string) => ({ name, data_type: "TYPE_INT32", dims: [2] });
/** e: IN → one step on m (X → Y) → OUT, batches up to 32. */
const ENSEMBLE = {
  name: "e",
  platform: "ensemble",
  max_batch_size: 32,
  input: [tensor("IN")],
  output: [tensor("OUT")],
  ensemble_scheduling: { step: [{ model_name: "m", model_version: -1, input_map: { X: "IN" }, output_map: { Y: "OUT" } }] },
} as unknown as ModelConfig;

const request = (batch: number): InferenceRequest => ({
  modelName: "e",
  parameters: {},
  inputs: [{ name: "IN", datatype: "INT32", shape: [batch, 2], data: new Uint8Array(batch * 8) }],
});

function setup(table: Partial<DirectTable>, slot: number | undefined, cached = false) {
  const stats = sharedStatsBuffer(2, 32);
  const entry: DirectEntry = { id: 1, name: "e", version: "1", config: ENSEMBLE, instances: [], stats, ...(cached ? { cached: "e" } : {}) };
  let flushes = 0;
  const r = new DirectRunner(
    () => flushes++,
    () => {},
    () => {},
    echoStep,
  );
  r.update({ entries: [entry], routes: [[routeKey("e", undefined), 1]], ...table }, slot);
  const folded = () => {
    const s = new ModelStats();
    new SharedStatsReader(stats).fold(s);
    return s;
  };
  const records = () => {
    const all = r.take();
    const out: number[][] = [];
    for (let i = 0; i < all.length; i += RECORD_WIDTH) out.push(all.slice(i, i + RECORD_WIDTH));
    return out;
  };
  return { r, folded, records, flushes: () => flushes };
}

describe("a frontend worker's statistics", () => {
  it("go into its slot of the shared counters, and nothing is posted", async () => {
    const { r, folded, records, flushes } = setup({}, 1);
    await r.run("e", undefined, request(3));
    await expect(r.run("e", undefined, { ...request(1), inputs: [] })!).rejects.toThrow();
    expect(records()).toEqual([]);
    expect(flushes()).toBe(0);
    const s = folded();
    expect([s.success.count, s.fail.count, s.failures.OTHER, s.executionCount, s.inferenceCount]).toEqual([1, 1, 1, 1, 3]);
    expect([...s.batch.keys()]).toEqual([3]);
  });

  it("go as records when the table asks for them, or gives no slot", async () => {
    for (const [table, slot] of [[{ records: true }, 0] as const, [{}, undefined] as const]) {
      const { r, folded, records, flushes } = setup(table, slot);
      await r.run("e", undefined, request(2));
      const taken = records();
      expect(taken.map((x) => [x[0], x[1], x[6]])).toEqual([[SUCCESS, 1, 2]]);
      expect(flushes()).toBe(1);
      expect(folded().success.count).toBe(0);
    }
  });

  it(`posts an execution whose batch size finds no row among its slot's ${MAX_BATCH_ROWS} as a record, the rest in the counters`, async () => {
    const { r, folded, records } = setup({}, 0);
    for (let b = 1; b <= MAX_BATCH_ROWS + 2; b++) await r.run("e", undefined, request(b));
    const taken = records();
    expect(taken.map((x) => [x[0], x[1], x[2]])).toEqual([
      [EXECUTION, 1, MAX_BATCH_ROWS + 1],
      [EXECUTION, 1, MAX_BATCH_ROWS + 2],
    ]);
    const s = folded();
    expect([s.success.count, s.executionCount]).toEqual([MAX_BATCH_ROWS + 2, MAX_BATCH_ROWS]);
    expect(s.batch.size).toBe(MAX_BATCH_ROWS);
  });

  it("count a response-cache hit and miss as the core does: in the counters, or as HIT and MISS records beside the miss's execution", async () => {
    const cache = SharedResponseCache.create(1 << 16)!;
    const { r, folded } = setup({ cache: cache.buffer }, 0, true);
    const first = await r.run("e", undefined, request(2))!;
    const again = await r.run("e", undefined, request(2))!;
    expect(again.outputs).toEqual(first.outputs);
    const s = folded();
    expect([s.success.count, s.executionCount, s.inferenceCount, s.cacheHit.count, s.cacheMiss.count]).toEqual([2, 1, 2, 1, 1]);
    expect(s.queue.count).toBe(2);
    // Another worker (records), on the same cache: the entry is already there.
    const other = setup({ cache: cache.buffer, records: true }, 0, true);
    await other.r.run("e", undefined, request(2));
    await other.r.run("e", undefined, request(4));
    expect(other.records().map((x) => [x[0], x[1], x[0] === EXECUTION ? x[2] : 0])).toEqual([
      [HIT, 1, 0],
      [EXECUTION, 1, 4],
      [MISS, 1, 0],
    ]);
    expect(cache.counters()).toMatchObject({ entries: 2, lookups: 4, hits: 2, misses: 2 });
  });
});
