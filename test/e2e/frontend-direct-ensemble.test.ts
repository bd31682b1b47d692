/**
 * Ensembles run in the frontend worker threads themselves (#30 item 2), through the
 * compiled binary: an ensemble whose every step's model the workers run (default-scheduled
 * ONNX, dynamically batched ONNX on the scheduling thread, a TypeScript model's
 * worker-thread instances, a nested ensemble) is in their table (the log names it) and one
 * that is not stays on the main thread; answers (outputs, a validation error, a step's
 * error in Triton's "in ensemble" wording) and the statistics of the ensembles and of
 * every composing model equal one thread's over HTTP JSON, HTTP binary and gRPC; the
 * ensembles are answered while the main thread's event loop is held by another model; and
 * a composing model unloaded, loaded and swapped under ensemble requests from four client
 * loops: every answer exact or a clean refusal, no crash.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServerProcess, type ServerProcess } from "../helpers/server-process.ts";
import { startOnThreads, onOneAndTwoThreads } from "../helpers/thread-servers.ts";
import { makeRepository } from "../helpers/repo.ts";
import { inferenceClient } from "../helpers/grpc-client.ts";
import { LoadLoops } from "../helpers/load-loops.ts";
import { modelCounts } from "../helpers/model-counts.ts";
import { eventually } from "../helpers/eventually.ts";
import { holdModel } from "../helpers/hold-model.ts";

const dir = mkdtempSync(join(tmpdir(), "nereid-ensemble-direct-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const A = Array.from({ length: 16 }, (_, i) => i * 5 - 7);
const B = Array.from({ length: 16 }, (_, i) => 3 - i);
const twice = (v: number[]) => v.map((x) => 2 * x);
const i32 = (v: number[]) => new Uint8Array(Int32Array.from(v).buffer);

const io = (names: string[], dir: "input" | "output", dims = "16") =>
  `${dir} [ ${names.map((n) => `{ name: "${n}" data_type: TYPE_INT32 dims: [ ${dims} ] }`).join(", ")} ]`;
const map = (kind: "input_map" | "output_map", pairs: [string, string][]) => pairs.map(([k, v]) => `${kind} { key: "${k}" value: "${v}" }`).join(" ");
const step = (model: string, inputs: [string, string][], outputs: [string, string][]) =>
  `{ model_name: "${model}" model_version: -1 ${map("input_map", inputs)} ${map("output_map", outputs)} }`;
const ensemble = (name: string, maxBatch: number, inputs: string, outputs: string, steps: string[], extra = "") =>
  `name: "${name}"\nplatform: "ensemble"\nmax_batch_size: ${maxBatch}\n${inputs}\n${outputs}\nensemble_scheduling { ${extra} step [ ${steps.join(", ")} ] }\n`;

/** tsadd: SUM and DIFF of A and B, in worker-thread instances. */
const TSADD = `
export default class Add {
  execute(requests) {
    return requests.map((r) => {
      const a = r.input("A").data, b = r.input("B").data;
      return { outputs: [
        { name: "SUM", datatype: "INT32", shape: [16], data: a.map((x, i) => x + b[i]) },
        { name: "DIFF", datatype: "INT32", shape: [16], data: a.map((x, i) => x - b[i]) },
      ] };
    });
  }
}
`;

/**
 * The ensembles (inputs IN_A, IN_B):
 * - chain: simple(IN_A, IN_B) → SUM, DIFF; batched(SUM, DIFF) → 2a, 2b; simple(IN_A, IN_A) → 2a.
 * - outer: chain → X, Y; simple(X, Y) → 2a + 2b (an ensemble in an ensemble).
 * - loose: simple on inputs of any length (a wrong length fails in the step, in Triton's words).
 * - tsmix: tsadd twice (2a, 2b).
 * - gated: simple with max_inflight_requests (a bound across threads: the main thread's).
 * - held: hold (a main-thread model: the main thread's).
 */
function repository(name: string) {
  const repo = makeRepository(["simple"]);
  cpSync(join(repo.dir, "simple"), join(repo.dir, "batched"), { recursive: true });
  repo.add(
    "batched/config.pbtxt",
    `${readFileSync(join(repo.dir, "simple", "config.pbtxt"), "utf8").replace(/name: "simple"/, 'name: "batched"')}\ndynamic_batching { }\n`,
  );
  const simpleStep = (a: string, b: string, out: [string, string][]) =>
    step(
      "simple",
      [
        ["INPUT0", a],
        ["INPUT1", b],
      ],
      out,
    );
  const add = (model: string, config: string, file = "1/.keep", content = "") => {
    repo.add(`${model}/config.pbtxt`, config);
    repo.add(`${model}/${file}`, content);
  };
  add(
    "chain",
    ensemble("chain", 8, io(["IN_A", "IN_B"], "input"), io(["TWICE_A", "TWICE_B", "A_PLUS_A"], "output"), [
      simpleStep("IN_A", "IN_B", [
        ["OUTPUT0", "SUM"],
        ["OUTPUT1", "DIFF"],
      ]),
      step(
        "batched",
        [
          ["INPUT0", "SUM"],
          ["INPUT1", "DIFF"],
        ],
        [
          ["OUTPUT0", "TWICE_A"],
          ["OUTPUT1", "TWICE_B"],
        ],
      ),
      simpleStep("IN_A", "IN_A", [["OUTPUT0", "A_PLUS_A"]]),
    ]),
  );
  add(
    "outer",
    ensemble("outer", 8, io(["IN_A", "IN_B"], "input"), io(["OUT"], "output"), [
      step(
        "chain",
        [
          ["IN_A", "IN_A"],
          ["IN_B", "IN_B"],
        ],
        [
          ["TWICE_A", "X"],
          ["TWICE_B", "Y"],
        ],
      ),
      simpleStep("X", "Y", [["OUTPUT0", "OUT"]]),
    ]),
  );
  add("loose", ensemble("loose", 8, io(["IN_A", "IN_B"], "input", "-1"), io(["OUT"], "output", "-1"), [simpleStep("IN_A", "IN_B", [["OUTPUT0", "OUT"]])]));
  add(
    "gated",
    ensemble("gated", 8, io(["IN_A", "IN_B"], "input"), io(["OUT"], "output"), [simpleStep("IN_A", "IN_B", [["OUTPUT0", "OUT"]])], "max_inflight_requests: 2"),
  );
  const ts = (model: string, inputs: string[], outputs: string[], source: string, extra = "") =>
    add(model, `name: "${model}"\nbackend: "typescript"\nmax_batch_size: 0\n${io(inputs, "input")}\n${io(outputs, "output")}\n${extra}`, "1/model.js", source);
  ts("tsadd", ["A", "B"], ["SUM", "DIFF"], TSADD);
  ts(
    "hold",
    ["A"],
    ["SUM"],
    holdModel(join(dir, `held-${name}`), join(dir, `release-${name}`)),
    `parameters { key: "execution_thread" value: { string_value: "main" } }\n`,
  );
  add(
    "tsmix",
    ensemble("tsmix", 0, io(["IN_A", "IN_B"], "input"), io(["TWICE_A", "TWICE_B"], "output"), [
      step(
        "tsadd",
        [
          ["A", "IN_A"],
          ["B", "IN_B"],
        ],
        [
          ["SUM", "S"],
          ["DIFF", "D"],
        ],
      ),
      step(
        "tsadd",
        [
          ["A", "S"],
          ["B", "D"],
        ],
        [
          ["SUM", "TWICE_A"],
          ["DIFF", "TWICE_B"],
        ],
      ),
    ]),
  );
  add("held", ensemble("held", 0, io(["IN_A"], "input"), io(["OUT"], "output"), [step("hold", [["A", "IN_A"]], [["SUM", "OUT"]])]));
  return repo;
}

async function start(threads: number, name: string, extra: string[] = []) {
  const repo = repository(name);
  return { repo, server: await startOnThreads(repo.dir, threads, extra) };
}

/** Each ensemble's outputs, and the shape of its inputs (tsmix's model takes no batch dimension). */
const ENSEMBLES: Record<string, { outputs: string[]; shape: number[]; expected: number[][] }> = {
  chain: { outputs: ["TWICE_A", "TWICE_B", "A_PLUS_A"], shape: [1, 16], expected: [twice(A), twice(B), twice(A)] },
  outer: { outputs: ["OUT"], shape: [1, 16], expected: [A.map((a, i) => 2 * a + 2 * B[i]!)] },
  loose: { outputs: ["OUT"], shape: [1, 16], expected: [A.map((a, i) => a + B[i]!)] },
  tsmix: { outputs: ["TWICE_A", "TWICE_B"], shape: [16], expected: [twice(A), twice(B)] },
};

const jsonBody = (shape: number[], dt = "INT32", a = A, b = B) =>
  JSON.stringify({
    inputs: [
      { name: "IN_A", datatype: dt, shape, data: a },
      { name: "IN_B", datatype: "INT32", shape, data: b },
    ],
  });
function binaryBody(shape: number[], outputs: string[]): { body: Uint8Array; headerLength: number } {
  const header = new TextEncoder().encode(
    JSON.stringify({
      inputs: ["IN_A", "IN_B"].map((name) => ({ name, datatype: "INT32", shape, parameters: { binary_data_size: 64 } })),
      outputs: outputs.map((name) => ({ name, parameters: { binary_data: true } })),
    }),
  );
  const body = new Uint8Array(header.byteLength + 128);
  body.set(header);
  body.set(i32(A), header.byteLength);
  body.set(i32(B), header.byteLength + 64);
  return { body, headerLength: header.byteLength };
}
const grpcRequest = (model: string, shape: number[], dt = "INT32") => ({
  model_name: model,
  inputs: [
    { name: "IN_A", datatype: dt, shape },
    { name: "IN_B", datatype: "INT32", shape },
  ],
  raw_input_contents: [i32(A), i32(B)],
});
const grpcOutputs = (g: any) => g.raw_output_contents.map((b: Uint8Array) => Array.from(new Int32Array(new Uint8Array(b).buffer)));

/** Sends the same mix on every protocol: n good requests each, then a bad datatype each; returns every answer as text. */
async function mix(server: ServerProcess, model: string, n: number): Promise<string[]> {
  const { shape, outputs } = ENSEMBLES[model]!;
  const out: string[] = [];
  const url = `${server.url}/v2/models/${model}/infer`;
  const { client, call } = inferenceClient(server.grpcTarget!);
  try {
    for (let i = 0; i < n; i++) {
      const r = await fetch(url, { method: "POST", body: jsonBody(shape) });
      out.push(`${r.status} ${await r.text()}`);
      const { body, headerLength } = binaryBody(shape, outputs);
      const b = await fetch(url, { method: "POST", body, headers: { "inference-header-content-length": String(headerLength) } });
      out.push(`${b.status} ${b.headers.get("inference-header-content-length")} ${Buffer.from(await b.arrayBuffer()).toString("base64")}`);
      const g = await call("ModelInfer")(grpcRequest(model, shape));
      out.push(JSON.stringify({ model: g.model_name, version: g.model_version, outputs: g.outputs, raw: grpcOutputs(g) }));
    }
    const bad = await fetch(url, { method: "POST", body: jsonBody(shape, "FP32") });
    out.push(`${bad.status} ${await bad.text()}`);
    const e = await call("ModelInfer")(grpcRequest(model, shape, "FP32")).catch((err: { code: number; details: string }) => err);
    out.push(`${e.code} ${e.details}`);
  } finally {
    client.close();
  }
  return out;
}

/** A step's refusal of `loose`'s request with inputs of 8, as one thread words it. */
const SHORT_ERROR =
  "in ensemble 'loose', unexpected shape for input 'INPUT0' for model 'simple'. Expected [-1,16], got [1,8]. NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to be prepended to each input shape. If you want to specify the full shape including the batch dim in your input dims config, try setting max_batch_size to zero. See the model configuration docs for more info on max_batch_size.";

const post = async (server: ServerProcess, model: string, body: string) => {
  const r = await fetch(`${server.url}/v2/models/${model}/infer`, { method: "POST", body });
  return { status: r.status, text: await r.text() };
};
const dataOf = (text: string) => (JSON.parse(text).outputs as { data: number[] }[]).map((o) => o.data);

describe("ensembles in the frontend workers: the same answers and statistics as one thread", () => {
  let one: Awaited<ReturnType<typeof start>>;
  let two: Awaited<ReturnType<typeof start>>;
  onOneAndTwoThreads(start, (a, b) => {
    [one, two] = [a, b];
  });

  it("the workers run the ensembles whose every step they run, nested ones too; not those with a bound across threads or a main-thread step", () => {
    const line = /frontend worker threads run these model versions themselves: (.*)/.exec(two.server.log())?.[1];
    expect(line?.split(", ").sort()).toEqual(["chain:1", "loose:1", "outer:1", "simple:1", "tsadd:1", "tsmix:1"]);
    expect(two.server.log()).toMatch(/frontend worker threads submit these model versions' requests to the scheduling thread: batched:1\n/);
  });

  it("answers every protocol byte for byte as one thread does, and counts the same statistics for the ensembles and their steps", async () => {
    for (const model of Object.keys(ENSEMBLES)) {
      const [a, b] = [await mix(one.server, model, 4), await mix(two.server, model, 4)];
      expect(b).toEqual(a);
      expect(JSON.parse(a[2]!)).toMatchObject({ model, version: "1", raw: ENSEMBLES[model]!.expected });
      expect(a.at(-2)).toBe(`400 {"error":"inference input 'IN_A' data-type is 'FP32', but model '${model}' expects 'INT32'"}`);
      expect(a.at(-1)).toBe(`3 inference input 'IN_A' data-type is 'FP32', but model '${model}' expects 'INT32'`);
    }
    // A step's failure: the composing model's validation, in the ensemble's words.
    const short = jsonBody([1, 8], "INT32", A.slice(0, 8), B.slice(0, 8));
    for (const s of [one.server, two.server]) {
      const r = await post(s, "loose", short);
      expect(`${r.status} ${r.text}`).toBe(`400 ${JSON.stringify({ error: SHORT_ERROR })}`);
      const { client, call } = inferenceClient(s.grpcTarget!);
      try {
        const e = await call("ModelInfer")({ ...grpcRequest("loose", [1, 8]), raw_input_contents: [i32(A.slice(0, 8)), i32(B.slice(0, 8))] }).catch(
          (err) => err,
        );
        expect(`${e.code} ${e.details}`).toBe(`3 ${SHORT_ERROR}`);
      } finally {
        client.close();
      }
    }
    // Read at once: what the workers counted is flushed before the statistics are answered.
    for (const model of ["chain", "outer", "loose", "tsmix", "simple", "batched", "tsadd"]) {
      const [ca, cb] = [await modelCounts(one.server, model), await modelCounts(two.server, model)];
      expect(cb, model).toEqual(ca);
    }
    // Every request counted once: 12 good and 2 bad per ensemble; outer's steps count in chain and simple.
    expect(await modelCounts(one.server, "chain")).toMatchObject({ success: 24, fail: 2, executionCount: 24, metricSuccess: 24, metricOther: 2 });
    expect(await modelCounts(one.server, "loose")).toMatchObject({ success: 12, fail: 4, metricOther: 4 });
    expect(await modelCounts(one.server, "simple")).toMatchObject({ success: 24 * 2 + 12 + 12, fail: 2, executionCount: 24 * 2 + 12 + 12 });
    expect(await modelCounts(one.server, "tsadd")).toMatchObject({ success: 24, executionCount: 24 });
  });

  it("answers the ensembles while the main thread's event loop is held by another model", async () => {
    const body = jsonBody([1, 16]);
    // Every worker has borrowed its sessions first.
    for (let i = 0; i < 16; i++) expect((await post(two.server, "outer", body)).status).toBe(200);
    const order: string[] = [];
    const held = post(two.server, "held", JSON.stringify({ inputs: [{ name: "IN_A", datatype: "INT32", shape: [16], data: A }] })).then((r) =>
      order.push(`held ${r.status}`),
    );
    await eventually(async () => expect(existsSync(join(dir, "held-two"))).toBe(true));
    // The main thread is inside hold's execute until the release file appears, written once these are answered.
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => post(two.server, i % 2 ? "outer" : "chain", body)));
    order.push(
      ...answers.map(
        (r, i) =>
          `${i % 2 ? "outer" : "chain"} ${r.status} ${JSON.stringify(dataOf(r.text)) === JSON.stringify(ENSEMBLES[i % 2 ? "outer" : "chain"]!.expected)}`,
      ),
    );
    writeFileSync(join(dir, "release-two"), "");
    await held;
    expect(order).toEqual([...Array.from({ length: 4 }, () => ["chain 200 true", "outer 200 true"]).flat(), "held 200"]);
  });
});

describe("a composing model unloaded, loaded and swapped under ensemble requests on the workers", () => {
  let s: Awaited<ReturnType<typeof start>>;
  beforeAll(async () => {
    s = await start(2, "churn", ["--model-control-mode=explicit", "--load-model=outer"]);
  });
  afterAll(async () => {
    if (s) expect(await s.server.stop(), s.server.log().slice(-4000)).toBe(0);
    s?.repo.remove();
  });

  it("every answer is exact or a clean refusal; nothing crashes", async () => {
    const server = s.server;
    // A refusal names the composing model's state (not loaded, or unloading under the step) in the ensemble's words, or the ensemble's own.
    const REFUSAL = /^(in ensemble '(outer|chain)', )*(Request for unknown model: '(simple|chain)'|.*is not at ready state|.*unloaded|.*stopped accepting)/;
    const run = new LoadLoops(REFUSAL);
    const tally = run.tally;
    const httpLoop = (model: "chain" | "outer") => async () => {
      while (!run.stop) {
        const r = await post(server, model, jsonBody([1, 16]));
        if (r.status === 200) {
          if (JSON.stringify(dataOf(r.text)) === JSON.stringify(ENSEMBLES[model]!.expected)) tally.ok++;
          else tally.wrong.push(r.text);
        } else if (REFUSAL.test(JSON.parse(r.text).error)) tally.refused++;
        else tally.wrong.push(`${r.status} ${r.text}`);
      }
    };
    const grpcLoop = run.grpc(
      server.grpcTarget!,
      () => grpcRequest("outer", [1, 16]),
      (g) => JSON.stringify(grpcOutputs(g)) === JSON.stringify(ENSEMBLES.outer!.expected),
    );
    const loops = [httpLoop("chain"), httpLoop("outer"), httpLoop("outer"), grpcLoop].map((loop) => run.guard(loop));
    await run.churnModel(loops, server.url, s.repo.dir, "simple");
    expect(tally.wrong, server.log().slice(-4000)).toEqual([]);
    expect(tally.ok).toBeGreaterThan(0);
    expect(tally.refused).toBeGreaterThan(0);
    // The workers' table followed the composing model: the ensembles left it with simple, and came back with each version loaded.
    const tables = [...server.log().matchAll(/frontend worker threads run these model versions themselves: (.*)/g)].map((m) =>
      m[1]!.split(", ").sort().join(", "),
    );
    expect(tables).toContain("(none)");
    expect(tables).toContain("chain:1, outer:1, simple:2");
    expect(tables.at(-1)).toBe("chain:1, outer:1, simple:1");
    // Still serving, exactly, in the workers.
    expect(dataOf((await post(server, "outer", jsonBody([1, 16]))).text)).toEqual(ENSEMBLES.outer!.expected);
    expect(server.log()).not.toMatch(/Segmentation|SIGSEGV|panic|session is closed/);
  });
});

/** tswide: Y = X + 1 over 16,384 INT32 (64 KiB: a size a frontend worker would move to an instance rather than copy). */
const WIDE = 16384;
const TSWIDE = `
export default class Inc {
  execute(requests) {
    return requests.map((r) => ({ outputs: [{ name: "Y", datatype: "INT32", shape: [${WIDE}], data: r.input("X").data.map((x) => x + 1) }] }));
  }
}
`;

describe("an ensemble's wide tensor read by two TypeScript steps in a worker", () => {
  let server: ServerProcess;
  let repo: ReturnType<typeof makeRepository>;
  beforeAll(async () => {
    repo = makeRepository([]);
    const wide = (names: string[], d: "input" | "output") => io(names, d, String(WIDE));
    repo.add("tswide/config.pbtxt", `name: "tswide"\nbackend: "typescript"\nmax_batch_size: 0\n${wide(["X"], "input")}\n${wide(["Y"], "output")}\n`);
    repo.add("tswide/1/model.js", TSWIDE);
    // Both steps read the ensemble's input X in the same wave, and X is an output too.
    repo.add(
      "wide/config.pbtxt",
      ensemble("wide", 0, wide(["X"], "input"), wide(["Y1", "Y2", "XO"], "output"), [
        step("tswide", [["X", "X"]], [["Y", "Y1"]]),
        step("tswide", [["X", "X"]], [["Y", "Y2"]]),
        step("tswide", [["X", "Y1"]], [["Y", "XO"]]),
      ]),
    );
    repo.add("wide/1/.keep", "");
    server = await startServerProcess([`--model-repository=${repo.dir}`, "--http-thread-count=2", "--allow-grpc=false", "--log-verbose=1"]);
  });
  afterAll(async () => {
    if (server) expect(await server.stop(), server.log().slice(-3000)).toBe(0);
    repo?.remove();
  });

  it("is answered exactly every time: a step's input is copied to its instance, never moved from the ensemble", async () => {
    expect(/frontend worker threads run these model versions themselves: (.*)/.exec(server.log())?.[1]?.split(", ").sort()).toEqual(["tswide:1", "wide:1"]);
    const x = Array.from({ length: WIDE }, (_, i) => (i % 1000) - 500);
    const body = JSON.stringify({ inputs: [{ name: "X", shape: [WIDE], datatype: "INT32", data: x }] });
    // The first requests reach the instances through the main thread, until each worker has its channel; later ones go directly.
    for (let i = 0; i < 12; i++) {
      const r = await fetch(`${server.url}/v2/models/wide/infer`, { method: "POST", body });
      const text = await r.text();
      expect(r.status, text.slice(0, 300)).toBe(200);
      const out = Object.fromEntries((JSON.parse(text).outputs as { name: string; data: number[] }[]).map((o) => [o.name, o.data]));
      expect(out.Y1).toEqual(x.map((v) => v + 1));
      expect(out.Y2).toEqual(x.map((v) => v + 1));
      expect(out.XO).toEqual(x.map((v) => v + 2));
    }
  });
});
