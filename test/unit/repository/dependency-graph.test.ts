/**
 * DependencyGraph (#31 item 2): an ensemble's load after its steps' (explicit mode), the
 * required-version and batch-size rules, the decoupled-lineage rule, the wait for a step
 * model's load in progress (not when it waits in turn: a cycle), and unload_dependents.
 * A scripted host stands in for the index and lifecycle around the graph.
 */
import { describe, expect, it } from "vitest";
import { DependencyGraph, dependentsOf, type DependencyHost } from "../../../src/repository/dependency-graph.ts";
import { ModelVersion } from "../../../src/repository/model-version.ts";
import type { RepositoryScan } from "../../../src/repository/layout.ts";
import type { ModelConfig } from "../../../src/core/model-config-types.ts";

const scan: RepositoryScan = { models: new Map(), duplicates: new Map() };

/** `config`'s load prepared by `graph` (no namespace; `chain`: the ensembles loading it). */
const prepare = (graph: DependencyGraph, config: ModelConfig, chain: string[] = []) => graph.prepare(config.name!, undefined, config, scan, chain);

function model(name: string, patch: Partial<ModelConfig> = {}): ModelConfig {
  return { name, platform: "onnxruntime_onnx", max_batch_size: 0, input: [], output: [], ...patch } as ModelConfig;
}

/** An ensemble over `steps`, each [model, input tensors (comma-separated), output tensor, version?]. */
function ensemble(name: string, steps: [string, string, string, number?][], patch: Partial<ModelConfig> = {}): ModelConfig {
  return model(name, {
    platform: "ensemble",
    input: [{ name: "IN", data_type: "TYPE_FP32", dims: [1] }],
    ensemble_scheduling: {
      step: steps.map(([m, i, o, v]) => ({
        model_name: m,
        model_version: v ?? -1,
        input_map: Object.fromEntries(i.split(",").map((t, k) => [`x${k}`, t])),
        output_map: { y: o },
      })),
    },
    ...patch,
  } as Partial<ModelConfig>);
}

function ready(config: ModelConfig, v = 1): ModelVersion {
  const mv = new ModelVersion(config.name!, v, `/nowhere/${config.name}`, config);
  mv.transition("LOADING");
  mv.transition("READY");
  return mv;
}

/** A host whose models are `served` (key → ready versions) and whose loads serve what `loads` says. */
function host(explicit: boolean, served: Record<string, ModelVersion[]>, loads: Record<string, { serve?: ModelVersion[]; errors: string[] }> = {}) {
  const loaded: string[] = [];
  const pending = new Map<string, Promise<unknown>>();
  const h: DependencyHost = {
    explicit,
    stepKey: (_ns, name) => name,
    ready: (key) => served[key] ?? [],
    load: async (key, _scan, chain) => {
      loaded.push(`${key} <- ${chain.join(",")}`);
      const outcome = loads[key] ?? { errors: [`no script for ${key}`] };
      if (outcome.serve) served[key] = outcome.serve;
      return outcome.errors;
    },
    pending: (key) => pending.get(key),
  };
  return { graph: new DependencyGraph(h), loaded, pending };
}

describe("DependencyGraph: an ensemble's step models", () => {
  it("explicit mode loads a step model with no ready version first, naming the ensemble chain", async () => {
    const { graph, loaded } = host(true, { b: [ready(model("b"))] }, { a: { serve: [ready(model("a"))], errors: [] } });
    expect(
      await prepare(
        graph,
        ensemble("ens", [
          ["a", "IN", "T"],
          ["b", "T", "OUT"],
        ]),
        ["outer"],
      ),
    ).toBeUndefined();
    expect(loaded).toEqual(["a <- outer,ens"]);
  });

  it("refuses the ensemble with Triton's reason when a step model cannot be served", async () => {
    const { graph } = host(true, {}, { a: { errors: ["failed to load 'a': bad config"] } });
    expect(await prepare(graph, ensemble("ens", [["a", "IN", "OUT"]]))).toBe(
      "ensemble 'ens' depends on 'a' which has no loaded version. Model 'a' loading failed with error: failed to load 'a': bad config",
    );
  });

  it("refuses a step whose required version is not loaded", async () => {
    const { graph } = host(true, { a: [ready(model("a"), 1)] });
    expect(await prepare(graph, ensemble("ens", [["a", "IN", "OUT", 2]]))).toBe("ensemble 'ens' depends on 'a' whose required version 2 is not loaded.");
  });

  it("loads nothing outside explicit mode, nor a step already in the chain, nor itself", async () => {
    const poll = host(false, {});
    expect(await prepare(poll.graph, ensemble("ens", [["a", "IN", "OUT"]]))).toBeUndefined();
    expect(poll.loaded).toEqual([]);
    const chained = host(true, {});
    expect(
      await prepare(
        chained.graph,
        ensemble("ens", [
          ["outer", "IN", "T"],
          ["ens", "T", "OUT"],
        ]),
        ["outer"],
      ),
    ).toBeUndefined();
    expect(chained.loaded).toEqual([]);
  });

  it("does nothing for a model that is not an ensemble", async () => {
    const { graph, loaded } = host(true, {});
    expect(await prepare(graph, model("a"))).toBeUndefined();
    expect(loaded).toEqual([]);
  });
});

describe("DependencyGraph: ensemble rules from the steps' served configs", () => {
  const decoupled = (name: string) => model(name, { model_transaction_policy: { decoupled: true } });

  it("makes an ensemble with a decoupled step decoupled", async () => {
    const { graph } = host(false, { a: [ready(decoupled("a"))], b: [ready(model("b"))] });
    const config = ensemble("ens", [
      ["a", "IN", "T"],
      ["b", "T", "OUT"],
    ]);
    expect(await prepare(graph, config)).toBeUndefined();
    expect(config.model_transaction_policy?.decoupled).toBe(true);
    const plain = ensemble("plain", [["b", "IN", "OUT"]]);
    expect(await prepare(graph, plain)).toBeUndefined();
    expect(plain.model_transaction_policy).toBeUndefined();
  });

  it("refuses a step fed by two decoupled lineages, with Triton's message", async () => {
    const { graph } = host(false, { a: [ready(decoupled("a"))], b: [ready(decoupled("b"))], c: [ready(model("c"))] });
    const config = ensemble("ens", [
      ["a", "IN", "TA"],
      ["b", "IN", "TB"],
      ["c", "TA,TB", "OUT"],
    ]);
    expect(await prepare(graph, config)).toBe("in ensemble ens, step of model 'c' receives inputs originated from different decoupled models");
  });

  it("refuses a batching step whose max_batch_size is below the ensemble's (S-15)", async () => {
    const { graph } = host(false, { a: [ready(model("a", { max_batch_size: 4 }))] });
    expect(await prepare(graph, ensemble("ens", [["a", "IN", "OUT"]], { max_batch_size: 8 }))).toBe(
      "ensemble ens allows maximum batch size 8, but it contains model a which only allows maximum batch size to be 4",
    );
  });

  it("reads the required version's config, not the latest", async () => {
    const { graph } = host(false, { a: [ready(decoupled("a"), 1), ready(model("a"), 2)] });
    const v1 = ensemble("ens", [["a", "IN", "OUT", 1]]);
    await prepare(graph, v1);
    expect(v1.model_transaction_policy?.decoupled).toBe(true);
    const latest = ensemble("ens", [["a", "IN", "OUT"]]);
    await prepare(graph, latest);
    expect(latest.model_transaction_policy).toBeUndefined();
  });
});

describe("DependencyGraph: waiting for a step model's load", () => {
  it("waits for a step model's load in progress and then reads its config", async () => {
    const served: Record<string, ModelVersion[]> = {};
    const { graph, pending } = host(false, served);
    let finish!: () => void;
    pending.set("a", new Promise<void>((r) => (finish = r)));
    const config = ensemble("ens", [["a", "IN", "OUT"]]);
    let settled = false;
    const prep = prepare(graph, config).then((r) => {
      settled = true;
      return r;
    });
    await new Promise((r) => setImmediate(r));
    expect(settled).toBe(false);
    served.a = [ready(model("a", { model_transaction_policy: { decoupled: true } }))];
    finish();
    expect(await prep).toBeUndefined();
    expect(config.model_transaction_policy?.decoupled).toBe(true);
  });

  it("does not wait for a model that waits for it (two ensembles naming each other)", async () => {
    const { graph, pending } = host(false, {});
    let finishTwo!: () => void;
    pending.set("two", new Promise<void>((r) => (finishTwo = r)));
    pending.set("one", new Promise<void>(() => {})); // one's load is in progress (it is the one preparing)
    let oneDone = false;
    const one = prepare(graph, ensemble("one", [["two", "IN", "OUT"]])).then(() => (oneDone = true));
    await new Promise((r) => setImmediate(r));
    // two's load now prepares while one waits for it: it must not wait for one in turn.
    expect(await prepare(graph, ensemble("two", [["one", "IN", "OUT"]]))).toBeUndefined();
    expect(oneDone).toBe(false);
    finishTwo();
    await one;
    expect(oneDone).toBe(true);
  });
});

describe("dependentsOf", () => {
  it("names the loaded ensembles with a step calling the model", () => {
    const ens = ready(ensemble("ens", [["a", "IN", "OUT"]]));
    const other = ready(ensemble("other", [["b", "IN", "OUT"]]));
    const unloaded = ready(ensemble("gone", [["a", "IN", "OUT"]]));
    unloaded.transition("UNLOADING");
    const entry = (mv: ModelVersion) => ({ location: { name: mv.name, repository: "r", dir: "/nowhere" }, versions: new Map([[1, mv]]) });
    const models: [string, ReturnType<typeof entry>][] = [
      ["/repo\0ens", entry(ens)],
      ["other", entry(other)],
      ["gone", entry(unloaded)],
      ["a", entry(ready(model("a")))],
    ];
    expect(dependentsOf("a", models)).toEqual(["ens"]);
    expect(dependentsOf("b", models)).toEqual(["other"]);
    expect(dependentsOf("c", models)).toEqual([]);
  });
});
