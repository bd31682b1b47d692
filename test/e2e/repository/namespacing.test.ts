/**
 * --model-namespacing through the binary (#17), the cases of Triton's
 * qa/L0_model_namespacing: two repositories, `addsub` and `subadd`, whose models answer
 * OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1 (addsub) or the other way round
 * (subadd). Same-named models in the two repositories load side by side; a request for a
 * name that both serve gets Triton's ambiguity error (INVALID_ARG, HTTP 400); an
 * ensemble's step calls its own repository's model, or the only one of that name when its
 * own is gone. Poll and explicit modes; the `namespace` metric label.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { appendFileSync, mkdtempSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServerProcess, inferJson, type ServerProcess } from "../../helpers/server-process.ts";

const root = mkdtempSync(join(tmpdir(), "nereid-namespacing-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const TENSOR = (name: string) => `{ name: "${name}" data_type: TYPE_INT32 dims: [ 16 ] }`;
const IO = `input [ ${TENSOR("INPUT0")}, ${TENSOR("INPUT1")} ]\noutput [ ${TENSOR("OUTPUT0")}, ${TENSOR("OUTPUT1")} ]\n`;

/** A TypeScript model: addsub gives (a + b, a - b), subadd (a - b, a + b). */
function composing(kind: "addsub" | "subadd"): string {
  const [first, second] = kind === "addsub" ? ["a[i] + b[i]", "a[i] - b[i]"] : ["a[i] - b[i]", "a[i] + b[i]"];
  return `export default class Model {
  execute(requests) {
    return requests.map((r) => {
      const a = r.input("INPUT0").data, b = r.input("INPUT1").data;
      const out = (f) => Int32Array.from(a, (_, i) => f(i));
      return { outputs: [
        { name: "OUTPUT0", datatype: "INT32", shape: [16], data: out((i) => ${first}) },
        { name: "OUTPUT1", datatype: "INT32", shape: [16], data: out((i) => ${second}) },
      ] };
    });
  }
}
`;
}

function ensemble(name: string, step: string): string {
  const map = (k: string) => `{ key: "${k}" value: "${k}" }`;
  return (
    `name: "${name}"\nplatform: "ensemble"\nmax_batch_size: 0\n${IO}` +
    `ensemble_scheduling { step [ { model_name: "${step}" model_version: -1 input_map [ ${map("INPUT0")}, ${map("INPUT1")} ] output_map [ ${map("OUTPUT0")}, ${map("OUTPUT1")} ] } ] }\n`
  );
}

/** Writes `models` (folder name → the composing kind, or an ensemble's step) into a new repository. */
function repository(parent: string, name: string, models: Record<string, "addsub" | "subadd" | { step: string }>): string {
  const dir = join(parent, name);
  for (const [model, what] of Object.entries(models)) {
    mkdirSync(join(dir, model, "1"), { recursive: true });
    if (typeof what === "string") {
      writeFileSync(join(dir, model, "config.pbtxt"), `name: "${model}"\nbackend: "typescript"\nmax_batch_size: 0\n${IO}`);
      writeFileSync(join(dir, model, "1", "model.js"), composing(what));
    } else {
      writeFileSync(join(dir, model, "config.pbtxt"), ensemble(model, what.step));
    }
  }
  return dir;
}

/** Two repositories, `addsub_repo` and `subadd_repo`, of one case. */
function repositories(
  name: string,
  addsub: Parameters<typeof repository>[2],
  subadd: Parameters<typeof repository>[2],
): { dir: string; addsub: string; subadd: string } {
  const dir = join(root, name);
  return { dir, addsub: repository(dir, "addsub_repo", addsub), subadd: repository(dir, "subadd_repo", subadd) };
}

const DATA = Array.from({ length: 16 }, (_, i) => i);
const REQUEST = { inputs: ["INPUT0", "INPUT1"].map((name) => ({ name, datatype: "INT32", shape: [16], data: DATA })) };
const SUM = DATA.map((v) => v + v);
const DIFF = DATA.map(() => 0);

async function answer(server: ServerProcess, model: string): Promise<"addsub" | "subadd"> {
  const { status, json } = await inferJson(server, model, REQUEST);
  expect(status, `${model}: ${JSON.stringify(json)}`).toBe(200);
  const out = Object.fromEntries((json.outputs as { name: string; data: number[] }[]).map((o) => [o.name, o.data]));
  if (JSON.stringify([out.OUTPUT0, out.OUTPUT1]) === JSON.stringify([SUM, DIFF])) return "addsub";
  if (JSON.stringify([out.OUTPUT0, out.OUTPUT1]) === JSON.stringify([DIFF, SUM])) return "subadd";
  throw new Error(`${model}: unexpected outputs ${JSON.stringify(out)}`);
}

const ambiguity = (model: string) => ({
  status: 400,
  json: { error: `There are 2 identifiers of model '${model}' in global map, model namespace must be provided to resolve ambiguity.` },
});

let server: ServerProcess | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

const start = async (repos: { addsub: string; subadd: string }, ...flags: string[]) => {
  server = await startServerProcess([
    `--model-repository=${repos.addsub}`,
    `--model-repository=${repos.subadd}`,
    "--model-namespacing=true",
    "--allow-grpc=false",
    ...flags,
  ]);
  return server;
};

const until = async (check: () => Promise<boolean>, what: string) => {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
};

describe("--model-namespacing (poll mode, as qa/L0_model_namespacing's ModelNamespacePoll)", () => {
  it("no duplication: every model serves by its name", async () => {
    const s = await start(
      repositories(
        "none",
        { simple_addsub: { step: "composing_addsub" }, composing_addsub: "addsub" },
        { simple_subadd: { step: "composing_subadd" }, composing_subadd: "subadd" },
      ),
    );
    expect((await fetch(`${s.url}/v2/health/ready`)).status).toBe(200);
    expect([await answer(s, "simple_addsub"), await answer(s, "composing_addsub")]).toEqual(["addsub", "addsub"]);
    expect([await answer(s, "simple_subadd"), await answer(s, "composing_subadd")]).toEqual(["subadd", "subadd"]);
  });

  it("duplication: each ensemble calls its own repository's composing_model; the name alone is ambiguous; the index lists both; metrics carry the namespace", async () => {
    const repos = repositories(
      "dup",
      { simple_addsub: { step: "composing_model" }, composing_model: "addsub" },
      { simple_subadd: { step: "composing_model" }, composing_model: "subadd" },
    );
    const s = await start(repos);
    expect((await fetch(`${s.url}/v2/health/ready`)).status).toBe(200);
    expect(await answer(s, "simple_addsub")).toBe("addsub");
    expect(await answer(s, "simple_subadd")).toBe("subadd");
    expect(await inferJson(s, "composing_model", REQUEST)).toEqual(ambiguity("composing_model"));
    const meta = await fetch(`${s.url}/v2/models/composing_model`);
    expect([meta.status, await meta.json()]).toEqual([400, ambiguity("composing_model").json]);
    const index = await (await fetch(`${s.url}/v2/repository/index`, { method: "POST", body: "{}" })).json();
    expect(index).toEqual([
      { name: "composing_model", version: "1", state: "READY" },
      { name: "composing_model", version: "1", state: "READY" },
      { name: "simple_addsub", version: "1", state: "READY" },
      { name: "simple_subadd", version: "1", state: "READY" },
    ]);
    const metrics = await (await fetch(`${s.metricsUrl}/metrics`)).text();
    const success = metrics.split("\n").filter((l) => l.startsWith("nv_inference_request_success{") && l.includes('model="composing_model"'));
    expect(success.sort()).toEqual(
      [
        `nv_inference_request_success{model="composing_model",version="1",namespace="${repos.addsub}"} 1`,
        `nv_inference_request_success{model="composing_model",version="1",namespace="${repos.subadd}"} 1`,
      ].sort(),
    );
  });

  it("duplication with the response cache (S-17) on both composing_models: each ensemble still gets its own repository's answer, the second from the cache", async () => {
    const repos = repositories(
      "cached",
      { simple_addsub: { step: "composing_model" }, composing_model: "addsub" },
      { simple_subadd: { step: "composing_model" }, composing_model: "subadd" },
    );
    for (const repo of [repos.addsub, repos.subadd]) appendFileSync(join(repo, "composing_model", "config.pbtxt"), "response_cache { enable: true }\n");
    const s = await start(repos, "--cache-config=local,size=1048576");
    // Same inputs, same model name and version: only the namespace tells the two entries apart.
    expect([await answer(s, "simple_addsub"), await answer(s, "simple_subadd")]).toEqual(["addsub", "subadd"]);
    expect([await answer(s, "simple_subadd"), await answer(s, "simple_addsub")]).toEqual(["subadd", "addsub"]);
    const metrics = await (await fetch(`${s.metricsUrl}/metrics`)).text();
    const hits = metrics.split("\n").filter((l) => l.startsWith("nv_cache_num_hits_per_model{") && l.includes('model="composing_model"'));
    expect(hits.sort()).toEqual(
      [
        `nv_cache_num_hits_per_model{model="composing_model",version="1",namespace="${repos.addsub}"} 1`,
        `nv_cache_num_hits_per_model{model="composing_model",version="1",namespace="${repos.subadd}"} 1`,
      ].sort(),
    );
  });

  it("ensemble duplication: the composing models serve; the shared ensemble name is ambiguous", async () => {
    const s = await start(
      repositories(
        "ens",
        { simple_ensemble: { step: "composing_addsub" }, composing_addsub: "addsub" },
        { simple_ensemble: { step: "composing_subadd" }, composing_subadd: "subadd" },
      ),
    );
    expect(await answer(s, "composing_addsub")).toBe("addsub");
    expect(await answer(s, "composing_subadd")).toBe("subadd");
    expect(await inferJson(s, "simple_ensemble", REQUEST)).toEqual(ambiguity("simple_ensemble"));
  });

  it("dynamic resolution: with addsub's composing_model gone both ensembles use subadd's; back again, each its own", async () => {
    const repos = repositories(
      "dyn",
      { simple_addsub: { step: "composing_model" }, composing_model: "addsub" },
      { simple_subadd: { step: "composing_model" }, composing_model: "subadd" },
    );
    const s = await start(repos, "--model-control-mode=poll", "--repository-poll-secs=1");
    const away = join(repos.dir, "composing_model");
    renameSync(join(repos.addsub, "composing_model"), away);
    await until(async () => (await inferJson(s, "composing_model", REQUEST)).status === 200, "the poll to unload addsub's composing_model");
    expect([await answer(s, "simple_subadd"), await answer(s, "simple_addsub"), await answer(s, "composing_model")]).toEqual(["subadd", "subadd", "subadd"]);
    renameSync(away, join(repos.addsub, "composing_model"));
    await until(async () => (await inferJson(s, "composing_model", REQUEST)).status === 400, "the poll to load addsub's composing_model again");
    expect(await answer(s, "simple_addsub")).toBe("addsub");
    expect(await answer(s, "simple_subadd")).toBe("subadd");
    expect(await inferJson(s, "composing_model", REQUEST)).toEqual(ambiguity("composing_model"));
  });
});

describe("--model-namespacing (explicit mode, as ModelNamespaceExplicit)", () => {
  const load = async (s: ServerProcess, model: string) => (await fetch(`${s.url}/v2/repository/models/${model}/load`, { method: "POST", body: "{}" })).status;

  it("loading an ensemble loads its own repository's composing model; both ensembles answer their own way", async () => {
    const s = await start(
      repositories(
        "xdup",
        { simple_addsub: { step: "composing_model" }, composing_model: "addsub" },
        { simple_subadd: { step: "composing_model" }, composing_model: "subadd" },
      ),
      "--model-control-mode=explicit",
    );
    expect(await load(s, "simple_addsub")).toBe(200);
    // Only addsub's composing_model is loaded so far: the name is not ambiguous yet.
    expect(await answer(s, "composing_model")).toBe("addsub");
    expect(await load(s, "simple_subadd")).toBe(200);
    expect(await answer(s, "simple_addsub")).toBe("addsub");
    expect(await answer(s, "simple_subadd")).toBe("subadd");
    expect(await inferJson(s, "composing_model", REQUEST)).toEqual(ambiguity("composing_model"));
  });

  it("a load by a shared name loads it from every repository, each ensemble with its own steps", async () => {
    const s = await start(
      repositories(
        "xens",
        { simple_ensemble: { step: "composing_addsub" }, composing_addsub: "addsub" },
        { simple_ensemble: { step: "composing_subadd" }, composing_subadd: "subadd" },
      ),
      "--model-control-mode=explicit",
    );
    expect(await load(s, "simple_ensemble")).toBe(200);
    expect(await answer(s, "composing_addsub")).toBe("addsub");
    expect(await answer(s, "composing_subadd")).toBe("subadd");
    expect(await inferJson(s, "simple_ensemble", REQUEST)).toEqual(ambiguity("simple_ensemble"));
    expect((await fetch(`${s.url}/v2/repository/models/simple_ensemble/unload`, { method: "POST", body: "{}" })).status).toBe(200);
    const index = (await (await fetch(`${s.url}/v2/repository/index`, { method: "POST", body: JSON.stringify({ ready: true }) })).json()) as { name: string }[];
    expect(index.map((e) => e.name)).toEqual(["composing_addsub", "composing_subadd"]);
  });
});

describe("without --model-namespacing", () => {
  it("a name in two repositories is served by neither (Triton's rule), and the rest serve", async () => {
    const repos = repositories(
      "off",
      { simple_addsub: { step: "composing_model" }, composing_model: "addsub", only_addsub: "addsub" },
      { composing_model: "subadd" },
    );
    server = await startServerProcess([
      `--model-repository=${repos.addsub}`,
      `--model-repository=${repos.subadd}`,
      "--allow-grpc=false",
      "--strict-readiness=false",
      "--exit-on-error=false",
    ]);
    expect(await answer(server, "only_addsub")).toBe("addsub");
    const { status } = await inferJson(server, "composing_model", REQUEST);
    expect(status).toBe(503);
  });
});
