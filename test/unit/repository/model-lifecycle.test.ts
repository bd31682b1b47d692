/**
 * ModelLifecycle (#31 item 2): the load pool, per-model locks, retries, and a reload's
 * swap: versions built beside the served ones, unchanged ones kept, a failed reload
 * keeping the old version, replaced versions retired (drained) with shutdown waiting.
 * A scripted loader stands in for the ModelLoader, so each outcome is chosen.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { LateRunner } from "../../../src/core/runner.ts";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { KeyedLocks, LoadSlots, ModelLifecycle } from "../../../src/repository/model-lifecycle.ts";
import { ModelIndex } from "../../../src/repository/model-index.ts";
import type { ModelVersion } from "../../../src/repository/model-version.ts";
import type { ModelConfig } from "../../../src/core/model-config-types.ts";
import type { Scheduler } from "../../../src/scheduler/scheduler.ts";

const roots: string[] = [];
afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

/** A model folder `m` with version folders `versions`. */
function modelDir(...versions: number[]): string {
  const root = mkdtempSync(join(tmpdir(), "nereid-lifecycle-"));
  roots.push(root);
  for (const v of versions) mkdirSync(join(root, "m", String(v)), { recursive: true });
  return join(root, "m");
}

function deferred<T = void>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

const flush = () => new Promise((r) => setImmediate(r));

const baseConfig = (patch: Partial<ModelConfig> = {}): ModelConfig =>
  ({ name: "m", platform: "onnxruntime_onnx", max_batch_size: 0, input: [], output: [], ...patch }) as ModelConfig;

/**
 * Stands in for ModelLoader.loadVersion: each call takes the next outcome ("ok" → READY,
 * anything else → UNAVAILABLE with that reason; "ok" once they run out), after `gate` when set.
 */
class ScriptedLoader {
  calls: string[] = [];
  running = 0;
  mostAtOnce = 0;
  gate: Promise<void> | undefined;
  constructor(public outcomes: string[] = []) {}
  async loadVersion(mv: ModelVersion): Promise<void> {
    this.calls.push(`${mv.name}:${mv.version}`);
    mv.transition("LOADING");
    this.running++;
    this.mostAtOnce = Math.max(this.mostAtOnce, this.running);
    await flush();
    if (this.gate) await this.gate;
    this.running--;
    const outcome = this.outcomes.shift() ?? "ok";
    if (outcome === "ok") mv.transition("READY");
    else mv.transition("UNAVAILABLE", outcome);
  }
}

const context = { runner: new LateRunner(), knows: () => true };

function setup(opts: { loadThreadCount?: number; loadRetryCount?: number } = {}, outcomes: string[] = []) {
  const index = new ModelIndex({ repositories: [] });
  const loader = new ScriptedLoader(outcomes);
  const lifecycle = new ModelLifecycle(index, loader, opts);
  const load = (dir: string, config = baseConfig()) =>
    lifecycle.load({ key: "m", location: { name: "m", repository: "r", dir }, resolved: { config, backend: undefined }, old: index.entry("m"), context });
  const states = () => [...(index.entry("m")?.versions.values() ?? [])].map((v) => `${v.version}:${v.state}${v.reason ? `:${v.reason}` : ""}`);
  return { index, loader, lifecycle, load, states };
}

describe("LoadSlots", () => {
  it("runs at most `limit` tasks at once and starts the rest in order", async () => {
    const slots = new LoadSlots(2);
    const gates = [deferred(), deferred(), deferred(), deferred()];
    const started: number[] = [];
    const runs = gates.map((g, i) =>
      slots.run(async () => {
        started.push(i);
        await g.promise;
        return i;
      }),
    );
    await flush();
    expect(started).toEqual([0, 1]);
    gates[1]!.resolve();
    await flush();
    expect(started).toEqual([0, 1, 2]);
    gates[0]!.resolve();
    gates[2]!.resolve();
    gates[3]!.resolve();
    expect(await Promise.all(runs)).toEqual([0, 1, 2, 3]);
  });

  it("frees the slot of a task that throws", async () => {
    const slots = new LoadSlots(1);
    await expect(slots.run(async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(await slots.run(async () => "next")).toBe("next");
  });
});

describe("KeyedLocks", () => {
  it("runs one key's tasks one after another, whatever the one before ended in; other keys do not wait", async () => {
    const locks = new KeyedLocks();
    const order: string[] = [];
    const gate = deferred();
    const first = locks.run("a", async () => {
      order.push("a1 start");
      await gate.promise;
      order.push("a1 end");
      throw new Error("a1 failed");
    });
    const second = locks.run("a", async () => {
      order.push("a2");
      return 2;
    });
    const other = locks.run("b", async () => {
      order.push("b1");
      return 1;
    });
    expect(await other).toBe(1);
    expect(locks.pending("a")).toBeDefined();
    gate.resolve();
    await expect(first).rejects.toThrow("a1 failed");
    expect(await second).toBe(2);
    expect(order).toEqual(["a1 start", "b1", "a1 end", "a2"]);
    await flush();
    expect(locks.pending("a")).toBeUndefined();
  });
});

describe("ModelLifecycle.load", () => {
  it("loads the versions the policy selects and lists them LOADING until they settle", async () => {
    const dir = modelDir(1, 2, 3);
    const { index, loader, load, states } = setup();
    const gate = deferred();
    loader.gate = gate.promise;
    const loading = load(dir, baseConfig({ version_policy: { latest: { num_versions: 2 } } }));
    await flush();
    expect(index.index()).toEqual([
      { name: "m", version: "2", state: "LOADING" },
      { name: "m", version: "3", state: "LOADING" },
    ]);
    gate.resolve();
    expect(await loading).toEqual([]);
    expect(loader.calls).toEqual(["m:2", "m:3"]);
    expect(states()).toEqual(["2:READY", "3:READY"]);
  });

  it("tries a failed version again up to the retry count, then reports it", async () => {
    const dir = modelDir(1);
    const once = setup({ loadRetryCount: 1 }, ["flaky"]);
    expect(await once.load(dir)).toEqual([]);
    expect(once.loader.calls).toEqual(["m:1", "m:1"]);
    expect(once.states()).toEqual(["1:READY"]);

    const never = setup({ loadRetryCount: 0 }, ["flaky"]);
    expect(await never.load(dir)).toEqual(["failed to load 'm' version 1: flaky"]);
    expect(never.loader.calls).toEqual(["m:1"]);
    expect(never.states()).toEqual(["1:UNAVAILABLE:flaky"]);
  });

  it("loads versions in a pool of --model-load-thread-count", async () => {
    const dir = modelDir(1, 2, 3, 4);
    const all = baseConfig({ version_policy: { all: {} } });
    const one = setup({ loadThreadCount: 1 });
    await one.load(dir, all);
    expect(one.loader.mostAtOnce).toBe(1);
    const three = setup({ loadThreadCount: 3 });
    await three.load(dir, all);
    expect(three.loader.mostAtOnce).toBe(3);
  });

  it("keeps an unchanged version serving as it is on reload, and swaps a changed one in, retiring the old", async () => {
    const dir = modelDir(1);
    const { index, loader, lifecycle, load } = setup();
    await load(dir);
    const first = index.getModel("m");
    expect(await load(dir)).toEqual([]);
    expect(loader.calls).toEqual(["m:1"]);
    expect(index.getModel("m")).toBe(first);

    // The old version drains before it is freed: its scheduler's stop holds the retirement, and shutdown waits for it.
    const draining = deferred();
    first.attach(undefined, [], { stop: () => draining.promise } as unknown as Scheduler);
    expect(await load(dir, baseConfig({ max_batch_size: 4 }))).toEqual([]);
    const second = index.getModel("m");
    expect(second).not.toBe(first);
    expect(second.config.max_batch_size).toBe(4);
    expect(first.state).toBe("UNLOADING");
    let shutDown = false;
    const shutdown = lifecycle.unloadAll().then(() => (shutDown = true));
    await flush();
    expect(shutDown).toBe(false);
    draining.resolve();
    await shutdown;
    expect(first.unloaded).toBe(true);
    expect(second.unloaded).toBe(true);
  });

  it("keeps the old version serving when its reload fails", async () => {
    const dir = modelDir(1);
    const { index, loader, load, states } = setup();
    await load(dir);
    const first = index.getModel("m");
    loader.outcomes = ["bad file"];
    expect(await load(dir, baseConfig({ max_batch_size: 2 }))).toEqual(["failed to load 'm' version 1: bad file"]);
    expect(index.getModel("m")).toBe(first);
    expect(states()).toEqual(["1:READY"]);
  });

  it("keeps a served version the policy no longer selects listed, UNAVAILABLE unloaded once drained", async () => {
    const dir = modelDir(1, 2);
    const { index, load, lifecycle } = setup();
    await load(dir, baseConfig({ version_policy: { specific: { versions: [1] } } }));
    const v1 = index.getModel("m", "1");
    await load(dir, baseConfig({ version_policy: { specific: { versions: [2] } } }));
    await lifecycle.unloadAll();
    expect(v1.unloaded).toBe(true);
    expect([...index.entry("m")!.versions.keys()].sort()).toEqual([1, 2]);
  });

  it("fails a model with no version under its policy, and lists a missing specific version UNAVAILABLE", async () => {
    const empty = setup();
    expect(await empty.load(modelDir())).toEqual(["failed to load 'm': at least one version must be available under the version policy of model 'm'"]);
    expect(empty.index.entry("m")?.failure).toBe("at least one version must be available under the version policy of model 'm'");

    const specific = setup();
    expect(await specific.load(modelDir(1), baseConfig({ version_policy: { specific: { versions: [1, 5] } } }))).toEqual([]);
    expect(specific.states()).toEqual(["1:READY", "5:UNAVAILABLE:version 5 of model 'm' is not in the model repository"]);
  });
});
