/**
 * The main thread's half of the workers' shared statistics counters (#30 item 2,
 * DirectModels): each worker gets a slot of its own, never one another worker had; a
 * statistics read folds what the workers counted into the version's statistics; the
 * table asks for records while the server observes each request, the table of nothing
 * published at stop included; and a version forgotten a while after it left the table
 * gets a new entry, with counters that are read, should it qualify again.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { DirectModels } from "../../../src/server/direct-models.ts";
import { ModelVersion } from "../../../src/repository/model-version.ts";
import { SharedStatsWriter } from "../../../src/core/shared-stats.ts";
import type { DirectTable } from "../../../src/server/direct-table.ts";
import type { InferenceServer, StatisticsSource } from "../../../src/server/server.ts";
import type { BackendInstance } from "../../../src/backends/backend.ts";
import type { Scheduler } from "../../../src/scheduler/scheduler.ts";
import type { ModelConfig } from "../../../src/core/model-config-types.ts";

const config = { name: "m", platform: "onnxruntime_onnx", max_batch_size: 4, input: [], output: [] } as unknown as ModelConfig;

/** A ready version whose one instance other threads can run. */
function readyVersion(): ModelVersion {
  const mv = new ModelVersion("m", 1, "/nowhere/m", config);
  mv.transition("LOADING");
  const instance = { name: "m_0", execute: async () => ({ outputs: [] }), close: () => {}, share: () => ({ backend: "onnxruntime", spec: {} }) };
  mv.attach(undefined, [instance as unknown as BackendInstance], {} as Scheduler);
  mv.transition("READY");
  return mv;
}

/** The parts of InferenceServer that DirectModels reads, over one version. */
function fakeServer(mv: ModelVersion, observing = false) {
  const sources: StatisticsSource[] = [];
  let controlled = () => {};
  const server = {
    observing,
    trace: undefined,
    onRepositoryControlled: (fn: () => void) => {
      controlled = fn;
    },
    addStatisticsSource: (s: StatisticsSource) => sources.push(s),
    repositoryIndex: () => [{ name: "m", version: "1" }],
    resolve: () => ({ version: mv }),
    cacheEnabled: () => false,
    queued: { share: () => undefined },
    sharedMemoryRegions: () => [],
    onSharedMemoryChange: () => () => {},
    frontendWorkerEnded: (slot: number) => ended.push(slot),
  };
  const ended: number[] = [];
  return { server: server as unknown as InferenceServer, publish: () => controlled(), sources, ended };
}

/** A worker as DirectModels sees it: the tables and slot it was given. */
function subscriber() {
  const tables: { table: DirectTable; slot: number | undefined }[] = [];
  return { tables, s: { publish: (table: DirectTable, slot: number | undefined) => tables.push({ table, slot }), flush: async () => {} } };
}

let stop: (() => void) | undefined;
afterEach(() => {
  stop?.();
  vi.restoreAllMocks();
});

describe("DirectModels and the workers' shared statistics counters", () => {
  it("gives each worker a slot of its own, never one given before, and none past the count", () => {
    const mv = readyVersion();
    const dm = new DirectModels(fakeServer(mv).server, 2);
    stop = () => dm.stop();
    const [a, b, c, d] = [subscriber(), subscriber(), subscriber(), subscriber()];
    const leave = dm.subscribe(a.s);
    dm.subscribe(b.s);
    leave();
    dm.subscribe(c.s);
    dm.subscribe(d.s);
    expect([a, b, c, d].map((x) => x.tables[0]!.slot)).toEqual([0, 1, undefined, undefined]);
    const entry = a.tables[0]!.table.entries[0]!;
    expect(entry.stats).toBeInstanceOf(SharedArrayBuffer);
    expect(a.tables[0]!.table.records).toBeUndefined();
  });

  it("hands the slot of a worker that ended to the server (its shared-memory holds go back), after it left the table too", () => {
    const mv = readyVersion();
    const fake = fakeServer(mv);
    const dm = new DirectModels(fake.server, 1);
    stop = () => dm.stop();
    const [a, b] = [subscriber(), subscriber()];
    const leave = dm.subscribe(a.s);
    dm.subscribe(b.s);
    leave();
    dm.ended(a.s);
    // One without a slot has nothing to give back.
    dm.ended(b.s);
    expect(fake.ended).toEqual([0]);
    // An ended worker takes no more tables.
    const seen = b.tables.length;
    fake.publish();
    expect(b.tables.length).toBe(seen);
  });

  it("folds what a worker counted in its slot into the version's statistics when they are read", async () => {
    const mv = readyVersion();
    const { server, sources } = fakeServer(mv);
    const dm = new DirectModels(server, 2);
    stop = () => dm.stop();
    const w = subscriber();
    dm.subscribe(w.s);
    const writer = new SharedStatsWriter(w.tables[0]!.table.entries[0]!.stats!, w.tables[0]!.slot!);
    writer.recordExecution(3, 10, 20, 30);
    writer.recordSuccess(5_000, 100, 10, 20, 30);
    expect(sources).toEqual([dm]);
    await sources[0]!.settle();
    expect([mv.stats.success.count, mv.stats.inferenceCount, mv.stats.executionCount, mv.stats.metricUs.request]).toEqual([1, 3, 1, 5]);
    // Read again: nothing counted twice.
    sources[0]!.fold!();
    expect(mv.stats.success.count).toBe(1);
  });

  it("asks for records while the server observes each request, in the table published at stop too", () => {
    const mv = readyVersion();
    const dm = new DirectModels(fakeServer(mv, true).server, 1);
    const w = subscriber();
    dm.subscribe(w.s);
    dm.stop();
    expect(w.tables.map((t) => [t.table.entries.length, t.table.records, t.slot])).toEqual([
      [1, true, 0],
      [0, true, 0],
    ]);
  });

  it("gives a version forgotten after it left the table a new entry, whose counters are read, when it qualifies again", async () => {
    let now = 1_000;
    vi.spyOn(performance, "now").mockImplementation(() => now);
    const mv = readyVersion();
    const { server, publish, sources } = fakeServer(mv);
    const dm = new DirectModels(server, 1);
    stop = () => dm.stop();
    const w = subscriber();
    dm.subscribe(w.s);
    const first = w.tables.at(-1)!.table.entries[0]!;
    // It leaves READY (its table goes out), and is forgotten once a minute has passed.
    mv.fail("the backend failed");
    publish();
    now += 61_000;
    publish();
    mv.transition("LOADING");
    mv.transition("READY");
    publish();
    vi.restoreAllMocks();
    const again = w.tables.at(-1)!.table.entries[0]!;
    expect(again.id).not.toBe(first.id);
    expect(again.stats).not.toBe(first.stats);
    new SharedStatsWriter(again.stats!, 0).recordSuccess(2_000, 0, 0, 0, 0);
    await sources[0]!.settle();
    expect(mv.stats.success.count).toBe(1);
  });
});
