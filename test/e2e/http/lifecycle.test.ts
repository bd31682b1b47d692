/**
 * R-, L- items of the repository extension in explicit mode through the server binary:
 * --load-model, load / unload over HTTP and gRPC, reload with a config override and
 * with file overrides, a failed reload that keeps the old version serving, and a
 * reload under steady load that loses no request.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository, simpleConfigJson } from "../../helpers/repo.ts";
import { inferenceClient } from "../../helpers/grpc-client.ts";
import { eventually } from "../../helpers/eventually.ts";

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;

const post = (path: string, body?: object) => fetch(`${server.url}${path}`, { method: "POST", body: body === undefined ? undefined : JSON.stringify(body) });

const index = async () => (await (await post("/v2/repository/index")).json()) as { name: string; version?: string; state?: string; reason?: string }[];

function simpleBody(batch: number, base: number) {
  return JSON.stringify({
    inputs: [
      { name: "INPUT0", shape: [batch, 16], datatype: "INT32", data: Array.from({ length: 16 * batch }, (_, i) => base + i) },
      { name: "INPUT1", shape: [batch, 16], datatype: "INT32", data: Array(16 * batch).fill(1) },
    ],
  });
}

/** The `chain` ensemble (A + B through `simple`): outputs S. */
async function inferChain(batch: number) {
  const body = JSON.stringify({
    inputs: [
      { name: "A", shape: [batch, 16], datatype: "INT32", data: Array.from({ length: 16 * batch }, (_, i) => 2 + i) },
      { name: "B", shape: [batch, 16], datatype: "INT32", data: Array(16 * batch).fill(1) },
    ],
  });
  const res = await fetch(`${server.url}/v2/models/chain/infer`, { method: "POST", body });
  const json = (await res.json()) as { error?: string; outputs?: { name: string; data: number[] }[] };
  return { status: res.status, json: { ...json, outputs: json.outputs?.map((o) => ({ ...o, name: o.name === "S" ? "OUTPUT0" : o.name })) } };
}

async function inferSimple(model: string, batch: number, base: number) {
  const res = await fetch(`${server.url}/v2/models/${model}/infer`, { method: "POST", body: simpleBody(batch, base) });
  return { status: res.status, json: (await res.json()) as { error?: string; outputs?: { name: string; data: number[] }[] } };
}

const expectSum = (r: Awaited<ReturnType<typeof inferSimple>>, batch: number, base: number) => {
  expect(r.status).toBe(200);
  expect(r.json.outputs!.find((o) => o.name === "OUTPUT0")!.data).toEqual(Array.from({ length: 16 * batch }, (_, i) => base + i + 1));
};

beforeAll(async () => {
  repo = makeRepository(["simple", "simple_identity"]);
  server = await startServerProcess([`--model-repository=${repo.dir}`, "--model-control-mode=explicit", "--load-model=simple"]);
});

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

describe("explicit model control", () => {
  it("loads only --load-model models at start; the others are listed without a state", async () => {
    expect(await index()).toEqual([{ name: "simple", version: "1", state: "READY" }, { name: "simple_identity" }]);
    expect((await fetch(`${server.url}/v2/health/ready`)).status).toBe(200);
    expect((await fetch(`${server.url}/v2/models/simple_identity/ready`)).status).toBe(404);
  });

  it("lists a model folder added after the start before anything loads it, and forgets it once removed (P-17)", async () => {
    repo.add("late_model/config.pbtxt", 'name: "late_model"\nbackend: "onnxruntime"\n');
    try {
      expect(await index()).toEqual([{ name: "late_model" }, { name: "simple", version: "1", state: "READY" }, { name: "simple_identity" }]);
      expect(await post("/v2/repository/index", { ready: true }).then((r) => r.json())).toEqual([{ name: "simple", version: "1", state: "READY" }]);
    } finally {
      rmSync(join(repo.dir, "late_model"), { recursive: true, force: true });
    }
    expect(await index()).toEqual([{ name: "simple", version: "1", state: "READY" }, { name: "simple_identity" }]);
  });

  it("loads and unloads over HTTP; an unloaded model is UNAVAILABLE 'unloaded' and the server stays ready", async () => {
    const load = await post("/v2/repository/models/simple_identity/load");
    expect(load.status).toBe(200);
    expect(await load.text()).toBe("");
    expect((await fetch(`${server.url}/v2/models/simple_identity/ready`)).status).toBe(200);
    expect((await index()).find((e) => e.name === "simple_identity")).toEqual({ name: "simple_identity", version: "1", state: "READY" });

    expect((await post("/v2/repository/models/simple_identity/unload", { parameters: { unload_dependents: false } })).status).toBe(200);
    expect((await index()).find((e) => e.name === "simple_identity")).toEqual({
      name: "simple_identity",
      version: "1",
      state: "UNAVAILABLE",
      reason: "unloaded",
    });
    const r = await fetch(`${server.url}/v2/models/simple_identity/infer`, { method: "POST", body: "{}" });
    expect(r.status).toBe(503);
    expect((await fetch(`${server.url}/v2/health/ready`)).status).toBe(200);
    expect(await index().then((i) => i.filter((e) => e.state === "READY").map((e) => e.name))).toEqual(["simple"]);
  });

  it("answers an unknown model's load with 400 and the reason", async () => {
    const r = await post("/v2/repository/models/nope/load");
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({ error: "failed to load 'nope': model not found in any model repository" });
  });

  it("reloads with a config override, and keeps the old version serving when a reload fails", async () => {
    const ok = await post("/v2/repository/models/simple/load", { parameters: { config: simpleConfigJson({ max_batch_size: 4 }) } });
    expect(ok.status).toBe(200);
    const cfg = (await (await fetch(`${server.url}/v2/models/simple/config`)).json()) as { max_batch_size: number };
    expect(cfg.max_batch_size).toBe(4);
    const tooBig = await inferSimple("simple", 5, 0);
    expect(tooBig.status).toBe(400);
    expect(tooBig.json.error).toBe("inference request batch-size must be <= 4 for 'simple'");

    const bad = await post("/v2/repository/models/simple/load", { parameters: { config: simpleConfigJson({ backend: "tensorflow", platform: "" }) } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toContain("failed to load 'simple'");
    expectSum(await inferSimple("simple", 4, 10), 4, 10);
    expect((await index()).find((e) => e.name === "simple")).toEqual({ name: "simple", version: "1", state: "READY" });

    const junk = await post("/v2/repository/models/simple/load", { parameters: { config: "{not json" } });
    expect(junk.status).toBe(400);

    // Back to the file's config.
    expect((await post("/v2/repository/models/simple/load")).status).toBe(200);
    expectSum(await inferSimple("simple", 8, 0), 8, 0);
  });

  it("loads a model built from file overrides, under a name the repository does not have", async () => {
    const model = readFileSync(join(repo.dir, "simple", "1", "model.onnx")).toString("base64");
    const r = await post("/v2/repository/models/simple_from_files/load", {
      parameters: { config: simpleConfigJson({ name: "simple_from_files" }), "file:1/model.onnx": model },
    });
    expect(r.status).toBe(200);
    expectSum(await inferSimple("simple_from_files", 2, 100), 2, 100);
    const leaving = await post("/v2/repository/models/x/load", { parameters: { config: simpleConfigJson({ name: "x" }), "file:../evil": model } });
    expect(leaving.status).toBe(400);
    expect(((await leaving.json()) as { error: string }).error).toBe("file override path '../evil' of model 'x' leaves the model folder");
  });

  it("loads and unloads over gRPC", async () => {
    const { client, call } = inferenceClient(server.grpcTarget!);
    await call("RepositoryModelLoad")({ model_name: "simple_identity" });
    expect((await call("ModelReady")({ name: "simple_identity" })).ready).toBe(true);
    await call("RepositoryModelUnload")({ model_name: "simple_identity" });
    expect((await call("ModelReady")({ name: "simple_identity" })).ready ?? false).toBe(false);
    await expect(call("RepositoryModelLoad")({ model_name: "nope" })).rejects.toMatchObject({ code: 3 });
    client.close();
  });

  it("reloads under steady load without losing or corrupting a request", async () => {
    let stop = false;
    let sent = 0;
    const failures: string[] = [];
    const worker = async (w: number) => {
      while (!stop) {
        const base = w * 1000 + (sent++ % 500);
        const r = await inferSimple("simple", 1, base);
        const got = r.json.outputs?.find((o) => o.name === "OUTPUT0")?.data;
        if (r.status !== 200 || JSON.stringify(got) !== JSON.stringify(Array.from({ length: 16 }, (_, i) => base + i + 1))) {
          failures.push(`${r.status} ${JSON.stringify(r.json).slice(0, 200)}`);
        }
      }
    };
    const workers = [0, 1, 2, 3].map(worker);
    // Ten reloads ~300 ms apart (~3 s of load); each changes the instance count, so each
    // really builds new sessions and retires the old ones under traffic.
    const started = Date.now();
    const marks: number[] = [];
    for (let i = 0; i < 10; i++) {
      await new Promise((res) => setTimeout(res, 300));
      marks.push(sent);
      const cfg = simpleConfigJson({ instance_group: [{ count: 1 + (i % 2), kind: "KIND_CPU" }] });
      expect((await post("/v2/repository/models/simple/load", { parameters: { config: cfg } })).status).toBe(200);
    }
    await new Promise((res) => setTimeout(res, 300));
    stop = true;
    await Promise.all(workers);
    const seconds = (Date.now() - started) / 1000;
    console.log(`reload under load: ${sent} requests in ${seconds.toFixed(1)} s (${Math.round(sent / seconds)} req/s), 10 reloads`);
    expect(failures).toEqual([]);
    // Traffic kept flowing between every two reloads.
    marks.slice(1).forEach((m, i) => expect(m).toBeGreaterThan(marks[i]!));
  });

  it("unload_dependents also unloads the ensembles that call the model; without it they stay", async () => {
    repo.add(
      "chain/config.pbtxt",
      `name: "chain"\nplatform: "ensemble"\nmax_batch_size: 8\n` +
        `input [ { name: "A" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "B" data_type: TYPE_INT32 dims: [ 16 ] } ]\n` +
        `output [ { name: "S" data_type: TYPE_INT32 dims: [ 16 ] } ]\n` +
        `ensemble_scheduling { step [ { model_name: "simple" input_map { key: "INPUT0" value: "A" } input_map { key: "INPUT1" value: "B" } output_map { key: "OUTPUT0" value: "S" } } ] }\n`,
    );
    repo.add("chain/1/.keep", "");
    expect((await post("/v2/repository/models/chain/load")).status).toBe(200);
    const state = async (name: string) => (await index()).find((e) => e.name === name)?.state;
    expect(await state("chain")).toBe("READY");
    const bad = await post("/v2/repository/models/simple/unload", { parameters: { unload_dependents: "yes" } });
    expect(await bad.json()).toEqual({ error: "'unload_dependents' must be a boolean" });

    expect((await post("/v2/repository/models/simple/unload")).status).toBe(200);
    expect(await state("chain")).toBe("READY");
    expect((await post("/v2/repository/models/simple/load")).status).toBe(200);

    expect((await post("/v2/repository/models/simple/unload", { parameters: { unload_dependents: true } })).status).toBe(200);
    expect(await state("simple")).toBe("UNAVAILABLE");
    expect(await state("chain")).toBe("UNAVAILABLE");
  });

  it("loading an ensemble loads its unloaded composing model first, over HTTP and gRPC (#17 wire bug 3)", async () => {
    const state = async (name: string) => (await index()).find((e) => e.name === name)?.state;
    // Left by the test above: simple and chain unloaded. Before, the load answered 200 and
    // showed chain READY while every inference on it failed with 503.
    expect(await state("simple")).toBe("UNAVAILABLE");
    expect((await post("/v2/repository/models/chain/load")).status).toBe(200);
    expect(await state("simple")).toBe("READY");
    expect(await state("chain")).toBe("READY");
    expectSum(await inferChain(3), 3, 2);

    expect((await post("/v2/repository/models/simple/unload", { parameters: { unload_dependents: true } })).status).toBe(200);
    expect(await state("simple")).toBe("UNAVAILABLE");
    const { client, call } = inferenceClient(server.grpcTarget!);
    try {
      await call("RepositoryModelLoad")({ model_name: "chain" });
    } finally {
      client.close();
    }
    expect(await state("simple")).toBe("READY");
    expectSum(await inferChain(3), 3, 2);
  });

  it("an ensemble whose composing model cannot load fails with Triton's reason, and is not READY", async () => {
    repo.add(
      "chain_broken/config.pbtxt",
      `name: "chain_broken"\nplatform: "ensemble"\nmax_batch_size: 8\n` +
        `input [ { name: "A" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "B" data_type: TYPE_INT32 dims: [ 16 ] } ]\n` +
        `output [ { name: "S" data_type: TYPE_INT32 dims: [ 16 ] } ]\n` +
        `ensemble_scheduling { step [ { model_name: "nofile" input_map { key: "INPUT0" value: "A" } input_map { key: "INPUT1" value: "B" } output_map { key: "OUTPUT0" value: "S" } } ] }\n`,
    );
    repo.add("chain_broken/1/.keep", "");
    repo.add(
      "nofile/config.pbtxt",
      'name: "nofile"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 8\ninput [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] } ]\noutput [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] } ]\n',
    );
    repo.add("nofile/1/README", "no model.onnx");
    const res = await post("/v2/repository/models/chain_broken/load");
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: string };
    expect(error).toMatch(
      /^failed to load 'chain_broken': ensemble 'chain_broken' depends on 'nofile' which has no loaded version\. Model 'nofile' loading failed with error: failed to load 'nofile'/,
    );
    expect((await index()).find((e) => e.name === "chain_broken")?.state).not.toBe("READY");
    // The next test loads the whole repository: take the broken pair out again.
    for (const m of ["chain_broken", "nofile"]) rmSync(join(repo.dir, m), { recursive: true, force: true });
  });

  it("keeps a version the version policy drops listed as UNAVAILABLE 'unloaded', as Triton does", async () => {
    const onnx = readFileSync(join(repo.dir, "simple", "1", "model.onnx"));
    repo.add("multi/config.pbtxt", readFileSync(join(repo.dir, "simple", "config.pbtxt"), "utf8").replace('name: "simple"', 'name: "multi"'));
    repo.add("multi/1/model.onnx", onnx);
    repo.add("multi/2/model.onnx", onnx);
    try {
      expect((await post("/v2/repository/models/multi/load")).status).toBe(200);
      expect((await index()).filter((e) => e.name === "multi")).toEqual([{ name: "multi", version: "2", state: "READY" }]);
      const specific = await post("/v2/repository/models/multi/load", {
        parameters: { config: simpleConfigJson({ name: "multi", version_policy: { specific: { versions: [1] } } }) },
      });
      expect(specific.status).toBe(200);
      // Version 2 drains first (UNLOADING), then shows as Triton shows it.
      await eventually(async () =>
        expect((await index()).filter((e) => e.name === "multi")).toEqual([
          { name: "multi", version: "1", state: "READY" },
          { name: "multi", version: "2", state: "UNAVAILABLE", reason: "unloaded" },
        ]),
      );
      const v2 = await fetch(`${server.url}/v2/models/multi/versions/2/infer`, { method: "POST", body: simpleBody(1, 0) });
      expect(v2.status).toBe(503);
      expectSum(await inferSimple("multi", 2, 5), 2, 5);
    } finally {
      await post("/v2/repository/models/multi/unload");
      rmSync(join(repo.dir, "multi"), { recursive: true, force: true });
    }
  });
});

describe("a failed version the version policy drops", () => {
  it("goes from the index, so it stops holding the server's readiness back", async () => {
    const own = makeRepository(["simple"]);
    own.add(
      "half/config.pbtxt",
      readFileSync(join(own.dir, "simple", "config.pbtxt"), "utf8").replace('name: "simple"', 'name: "half"') + "version_policy { all {} }\n",
    );
    own.add("half/1/model.onnx", readFileSync(join(own.dir, "simple", "1", "model.onnx")));
    own.add("half/2/README", "no model file");
    const s = await startServerProcess([`--model-repository=${own.dir}`, "--model-control-mode=explicit", "--allow-grpc=false", "--allow-metrics=false"]);
    const at = (path: string, body?: object) => fetch(`${s.url}${path}`, { method: "POST", body: body === undefined ? undefined : JSON.stringify(body) });
    const listed = async () =>
      ((await (await at("/v2/repository/index")).json()) as { name: string; version?: string; state?: string }[]).filter((e) => e.name === "half");
    try {
      expect((await at("/v2/repository/models/half/load")).status).toBe(400);
      expect((await listed()).map((e) => [e.version, e.state])).toEqual([
        ["1", "READY"],
        ["2", "UNAVAILABLE"],
      ]);
      expect((await fetch(`${s.url}/v2/health/ready`)).status).toBe(400);
      const only1 = await at("/v2/repository/models/half/load", {
        parameters: { config: simpleConfigJson({ name: "half", version_policy: { specific: { versions: [1] } } }) },
      });
      expect(only1.status).toBe(200);
      expect(await listed()).toEqual([{ name: "half", version: "1", state: "READY" }]);
      expect((await fetch(`${s.url}/v2/health/ready`)).status).toBe(200);
    } finally {
      await s.stop();
      own.remove();
    }
  });
});

describe("--load-model=*", () => {
  it("loads every model of the repository in explicit mode", async () => {
    const s = await startServerProcess([`--model-repository=${repo.dir}`, "--model-control-mode=explicit", "--load-model=*"]);
    try {
      const entries = (await (await fetch(`${s.url}/v2/repository/index`, { method: "POST" })).json()) as { name: string; state?: string }[];
      expect(entries.filter((e) => e.name === "simple" || e.name === "simple_identity").map((e) => e.state)).toEqual(["READY", "READY"]);
    } finally {
      await s.stop();
    }
  });
});
