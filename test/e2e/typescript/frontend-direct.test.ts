/**
 * A TypeScript model's worker-thread instances reached from the frontend worker threads
 * directly (#30 item 1), through the compiled binary: the log names the versions; the
 * answers (outputs, response parameters, a model's thrown error, a BLS call's result)
 * and the statistics equal one thread's over HTTP JSON, HTTP binary and gRPC; requests
 * are answered while the main thread's event loop is held by another model; an instance
 * still runs one request at a time when two frontend workers send to it; a worker that
 * dies fails only its request, with the reason; and unload, load and a version swap under load from four
 * client loops answer every request exactly or refuse it cleanly.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ServerProcess } from "../../helpers/server-process.ts";
import { startOnThreads, onOneAndTwoThreads } from "../../helpers/thread-servers.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { inferenceClient } from "../../helpers/grpc-client.ts";
import { LoadLoops } from "../../helpers/load-loops.ts";
import { eventually } from "../../helpers/eventually.ts";
import { holdModel } from "../../helpers/hold-model.ts";
import { postText } from "../../helpers/http-text.ts";

const dir = mkdtempSync(join(tmpdir(), "nereid-ts-direct-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const X = Array.from({ length: 16 }, (_, i) => i * 3 - 20);
const Y = Array.from({ length: 16 }, (_, i) => 7 - i);
const ADD = X.map((x, i) => x + Y[i]!);
const SUB = X.map((x, i) => x - Y[i]!);

const io = (inputs: string[], outputs: string[]) =>
  `max_batch_size: 0\ninput [ ${inputs.map((n) => `{ name: "${n}" data_type: TYPE_INT32 dims: [ 16 ] }`).join(", ")} ]\n` +
  `output [ ${outputs.map((n) => `{ name: "${n}" data_type: TYPE_INT32 dims: [ 16 ] }`).join(", ")} ]\n`;

/** tsadd: two worker-thread instances; A[0] = 1000 throws, A[0] = 2000 ends its worker. */
const TSADD = `
export default class Add {
  execute(requests) {
    return requests.map((r) => {
      const a = r.input("A").data, b = r.input("B").data;
      if (a[0] === 1000) throw new Error("no thousands");
      if (a[0] === 2000) process.exit(3);
      return {
        outputs: [
          { name: "SUM", datatype: "INT32", shape: [16], data: a.map((x, i) => x + b[i]) },
          { name: "DIFF", datatype: "INT32", shape: [16], data: a.map((x, i) => x - b[i]) },
        ],
        parameters: { id: r.id, sum0: a[0] + b[0] },
      };
    });
  }
}
`;

/** tscall: a BLS call to tsadd, its SUM returned. */
const TSCALL = `
export default class Call {
  async execute(requests) {
    const out = [];
    for (const r of requests) {
      const res = await r.infer({ model: "tsadd", inputs: r.inputs, outputs: ["SUM"] });
      out.push({ outputs: [{ ...res.output("SUM"), name: "SUM" }] });
    }
    return out;
  }
}
`;

/** gate: one worker-thread instance whose execute waits between its start and end (an async model). */
const gate = (log: string) => `
import { appendFileSync } from "node:fs";
export default class Gate {
  async execute(requests) {
    appendFileSync(${JSON.stringify(log)}, "start\\n");
    await new Promise((r) => setTimeout(r, 40));
    appendFileSync(${JSON.stringify(log)}, "end\\n");
    return requests.map((r) => ({ outputs: [{ name: "SUM", datatype: "INT32", shape: [16], data: r.input("A").data }] }));
  }
}
`;

/** tsid: Y = X, FP32 of any length (large inputs cross by transfer). */
const TSID = `
export default class Id {
  execute(requests) {
    return requests.map((r) => ({ outputs: [{ ...r.input("X"), name: "Y" }] }));
  }
}
`;

function repository(name: string, gateLog: string) {
  const repo = makeRepository([]);
  const model = (name: string, inputs: string[], outputs: string[], source: string, extra = "") => {
    repo.add(`${name}/config.pbtxt`, `name: "${name}"\nbackend: "typescript"\n${io(inputs, outputs)}${extra}`);
    repo.add(`${name}/1/model.js`, source);
  };
  model("tsadd", ["A", "B"], ["SUM", "DIFF"], TSADD, "instance_group [ { count: 2 kind: KIND_CPU } ]\n");
  model("tscall", ["A", "B"], ["SUM"], TSCALL);
  repo.add(
    "tsid/config.pbtxt",
    `name: "tsid"\nbackend: "typescript"\nmax_batch_size: 0\ninput [ { name: "X" data_type: TYPE_FP32 dims: [ -1 ] } ]\noutput [ { name: "Y" data_type: TYPE_FP32 dims: [ -1 ] } ]\n`,
  );
  repo.add("tsid/1/model.js", TSID);
  model(
    "hold",
    ["A"],
    ["SUM"],
    holdModel(join(dir, `held-${name}`), join(dir, `release-${name}`)),
    `parameters { key: "execution_thread" value: { string_value: "main" } }\n`,
  );
  model("gate", ["A"], ["SUM"], gate(gateLog));
  return repo;
}

async function start(threads: number, name: string, extra: string[] = []) {
  const gateLog = join(dir, `gate-${name}.txt`);
  const repo = repository(name, gateLog);
  return { repo, server: await startOnThreads(repo.dir, threads, extra), gateLog };
}

const inputs = (a = X) => [
  { name: "A", datatype: "INT32", shape: [16], data: a },
  { name: "B", datatype: "INT32", shape: [16], data: Y },
];
const int32 = (v: number[]) => new Uint8Array(Int32Array.from(v).buffer);

/** A POST on a connection of its own (so that requests spread over the HTTP worker threads). */
async function post(server: ServerProcess, path: string, body: string): Promise<{ status: number; text: string }> {
  const r = await postText(`${server.url}${path}`, body).result;
  if ("error" in r) throw new Error(`POST ${path}: ${r.error}`);
  return r;
}

/** The same requests on every protocol; every answer as text. */
async function exchange(server: ServerProcess, model: string, n: number): Promise<string[]> {
  const out: string[] = [];
  const path = `/v2/models/${model}/infer`;
  const { client, call } = inferenceClient(server.grpcTarget!);
  try {
    for (let i = 0; i < n; i++) {
      const a = X.map((x) => x + i);
      const r = await post(server, path, JSON.stringify({ id: `j${i}`, inputs: inputs(a) }));
      out.push(`${r.status} ${r.text}`);
      const header = new TextEncoder().encode(
        JSON.stringify({
          id: `b${i}`,
          inputs: inputs(a).map(({ data: _, ...t }) => ({ ...t, parameters: { binary_data_size: 64 } })),
          outputs: [{ name: "SUM", parameters: { binary_data: true } }],
        }),
      );
      const body = Buffer.concat([header, int32(a), int32(Y)]);
      const b = await fetch(`${server.url}${path}`, { method: "POST", body, headers: { "inference-header-content-length": String(header.byteLength) } });
      out.push(`${b.status} ${b.headers.get("inference-header-content-length")} ${Buffer.from(await b.arrayBuffer()).toString("base64")}`);
      const g = await call("ModelInfer")({
        model_name: model,
        id: `g${i}`,
        inputs: inputs(a).map(({ data: _, ...t }) => t),
        raw_input_contents: [int32(a), int32(Y)],
      });
      out.push(JSON.stringify({ ...g, raw_output_contents: g.raw_output_contents.map((c: Uint8Array) => Buffer.from(c).toString("base64")) }));
    }
    // The model's own error, on each protocol.
    const bad = await post(server, path, JSON.stringify({ inputs: inputs(X.map((_, i) => (i === 0 ? 1000 : 1))) }));
    out.push(`${bad.status} ${bad.text}`);
    const e = await call("ModelInfer")({
      model_name: model,
      inputs: inputs().map(({ data: _, ...t }) => t),
      raw_input_contents: [int32(X.map((_, i) => (i === 0 ? 1000 : 1))), int32(Y)],
    }).catch((err: { code: number; details: string }) => err);
    out.push(`${e.code} ${e.details}`);
  } finally {
    client.close();
  }
  return out;
}

/** Every count of the model's statistics and metrics (no durations). */
async function counts(server: ServerProcess, model: string) {
  const s = ((await (await fetch(`${server.url}/v2/models/${model}/stats`)).json()) as any).model_stats[0];
  const metrics = await (await fetch(`${server.metricsUrl}/metrics`)).text();
  const lines = metrics
    .split("\n")
    .filter((l) => /^nv_inference_(request_success|request_failure|count|exec_count)\{/.test(l) && l.includes(`model="${model}"`));
  const stats = s.inference_stats;
  return {
    inference: s.inference_count,
    execution: s.execution_count,
    ...Object.fromEntries(Object.entries(stats).map(([k, v]: [string, any]) => [k, v.count])),
    batches: s.batch_stats.map((b: any) => [b.batch_size, b.compute_input.count, b.compute_infer.count, b.compute_output.count]),
    metrics: lines.sort(),
  };
}

describe("a TypeScript model's worker-thread instances, reached from the frontend workers directly", () => {
  let one: Awaited<ReturnType<typeof start>>;
  let two: Awaited<ReturnType<typeof start>>;
  onOneAndTwoThreads(start, (a, b) => {
    [one, two] = [a, b];
  });

  it("the workers take the worker-thread TypeScript models and leave the main-thread one to the main thread", () => {
    const line = /frontend worker threads run these model versions themselves: (.*)/.exec(two.server.log())?.[1];
    expect(line?.split(", ").sort()).toEqual(["gate:1", "tsadd:1", "tscall:1", "tsid:1"]);
    expect(one.server.log()).not.toMatch(/frontend worker threads run/);
  });

  it("answers every protocol byte for byte as one thread does (outputs, parameters, the model's error, a BLS call), with the same statistics", async () => {
    for (const model of ["tsadd", "tscall"]) {
      const [a, b] = [await exchange(one.server, model, 6), await exchange(two.server, model, 6)];
      expect(b).toEqual(a);
      expect(JSON.parse(a[0]!.slice(4)).outputs[0]).toEqual({ name: "SUM", datatype: "INT32", shape: [16], data: ADD });
      expect(a.at(-2)).toMatch(/^500 \{"error":"model '(tsadd|tscall)': .*no thousands"\}$/);
      expect(a.at(-1)).toMatch(/^13 model '(tsadd|tscall)': .*no thousands$/);
      const [ca, cb] = [await counts(one.server, model), await counts(two.server, model)];
      expect(cb).toEqual(ca);
      expect(ca).toMatchObject({ inference: 20, execution: 20, success: 18, fail: 2 });
    }
    expect(JSON.parse((await exchange(two.server, "tsadd", 1))[0]!.slice(4))).toEqual({
      id: "j0",
      model_name: "tsadd",
      model_version: "1",
      parameters: { id: "j0", sum0: ADD[0] },
      outputs: [
        { name: "SUM", datatype: "INT32", shape: [16], data: ADD },
        { name: "DIFF", datatype: "INT32", shape: [16], data: SUB },
      ],
    });
  });

  it("large tensors (1 MiB, transferred to the instance's worker) come back exact over HTTP binary and gRPC", async () => {
    const n = 1 << 18;
    const x = Float32Array.from({ length: n }, (_, i) => (i % 1000) / 8 - 60);
    const bytes = new Uint8Array(x.buffer);
    for (const s of [one, two]) {
      for (let i = 0; i < 6; i++) {
        const header = new TextEncoder().encode(
          JSON.stringify({
            inputs: [{ name: "X", datatype: "FP32", shape: [n], parameters: { binary_data_size: n * 4 } }],
            outputs: [{ name: "Y", parameters: { binary_data: true } }],
          }),
        );
        const r = await fetch(`${s.server.url}/v2/models/tsid/infer`, {
          method: "POST",
          body: Buffer.concat([header, bytes]),
          headers: { "inference-header-content-length": String(header.byteLength) },
        });
        expect(r.status).toBe(200);
        const length = Number(r.headers.get("inference-header-content-length"));
        expect(
          Buffer.from(await r.arrayBuffer())
            .subarray(length)
            .equals(Buffer.from(bytes)),
        ).toBe(true);
        const { client, call } = inferenceClient(s.server.grpcTarget!);
        try {
          const g = await call("ModelInfer")({ model_name: "tsid", inputs: [{ name: "X", datatype: "FP32", shape: [n] }], raw_input_contents: [bytes] });
          expect(Buffer.from(g.raw_output_contents[0]).equals(Buffer.from(bytes))).toBe(true);
        } finally {
          client.close();
        }
      }
    }
    const [ca, cb] = [await counts(one.server, "tsid"), await counts(two.server, "tsid")];
    expect(cb).toEqual(ca);
    expect(ca).toMatchObject({ inference: 12, execution: 12, success: 12 });
  });

  it("answers while the main thread's event loop is held by another model", async () => {
    const body = JSON.stringify({ inputs: inputs() });
    // Every HTTP worker gets a request first: each then holds a port to both instances.
    for (let i = 0; i < 24; i++) expect((await post(two.server, "/v2/models/tsadd/infer", body)).status).toBe(200);
    const order: string[] = [];
    const held = post(two.server, "/v2/models/hold/infer", JSON.stringify({ inputs: [{ name: "A", datatype: "INT32", shape: [16], data: X }] })).then((r) =>
      order.push(`hold ${r.status}`),
    );
    await eventually(async () => expect(existsSync(join(dir, "held-two"))).toBe(true));
    // The main thread is inside hold's execute until the release file appears, written once these are answered.
    const answers = await Promise.all(Array.from({ length: 8 }, () => post(two.server, "/v2/models/tsadd/infer", body)));
    order.push(...answers.map((r) => `tsadd ${r.status} ${JSON.parse(r.text).outputs[0].data.join(",") === ADD.join(",")}`));
    writeFileSync(join(dir, "release-two"), "");
    await held;
    expect(order).toEqual([...Array.from({ length: 8 }, () => "tsadd 200 true"), "hold 200"]);
  });

  it("an instance runs one request at a time when several frontend workers send to it", async () => {
    const body = JSON.stringify({ inputs: [{ name: "A", datatype: "INT32", shape: [16], data: X }] });
    for (let i = 0; i < 16; i++) await post(two.server, "/v2/models/gate/infer", body);
    rmSync(two.gateLog, { force: true });
    const answers = await Promise.all(Array.from({ length: 12 }, () => post(two.server, "/v2/models/gate/infer", body)));
    expect(answers.map((r) => r.status)).toEqual(Array(12).fill(200));
    expect(readFileSync(two.gateLog, "utf8").trim().split("\n")).toEqual(Array(12).fill(["start", "end"]).flat());
  });

  it("a worker that ends fails the request it ran with the reason, and every request after it is answered", async () => {
    const r = await post(two.server, "/v2/models/tsadd/infer", JSON.stringify({ inputs: inputs(X.map((_, i) => (i === 0 ? 2000 : 1))) }));
    expect(r.status).toBe(500);
    expect(JSON.parse(r.text).error).toMatch(/^model 'tsadd' instance tsadd_0_[01]: the worker ended: the model called process\.exit\(3\)$/);
    for (let i = 0; i < 10; i++) {
      const next = await post(two.server, "/v2/models/tsadd/infer", JSON.stringify({ inputs: inputs() }));
      expect([next.status, JSON.parse(next.text).outputs?.[0].data]).toEqual([200, ADD]);
    }
  });
});

describe("unload, load and a version swap of a TypeScript model while four clients run requests on the workers", () => {
  let s: Awaited<ReturnType<typeof start>>;
  beforeAll(async () => {
    s = await start(2, "swap", ["--model-control-mode=explicit", "--load-model=tsadd"]);
  });
  afterAll(async () => {
    if (s) expect(await s.server.stop(), s.server.log().slice(-4000)).toBe(0);
    s?.repo.remove();
  });

  it("every answer is exact or a clean refusal; nothing crashes, nothing is lost", async () => {
    const server = s.server;
    const REFUSAL = /Request for unknown model: 'tsadd'|is not at ready state|unloaded|stopped accepting/;
    const run = new LoadLoops(REFUSAL);
    const tally = run.tally;
    const body = JSON.stringify({ inputs: inputs() });
    const httpLoop = async () => {
      while (!run.stop) {
        const r = await post(server, "/v2/models/tsadd/infer", body);
        if (r.status === 200) {
          const j = JSON.parse(r.text);
          if (JSON.stringify(j.outputs.map((o: any) => o.data)) === JSON.stringify([ADD, SUB]) && ["1", "2"].includes(j.model_version)) tally.ok++;
          else tally.wrong.push(r.text);
        } else if (REFUSAL.test(r.text)) tally.refused++;
        else tally.wrong.push(`${r.status} ${r.text}`);
      }
    };
    const grpcLoop = run.grpc(
      server.grpcTarget!,
      () => ({ model_name: "tsadd", inputs: inputs().map(({ data: _, ...t }) => t), raw_input_contents: [int32(X), int32(Y)] }),
      (g) => Buffer.from(g.raw_output_contents[0]).equals(Buffer.from(int32(ADD))),
    );
    const loops = [httpLoop, httpLoop, grpcLoop, grpcLoop].map((loop) => run.guard(loop));
    await run.churnModel(loops, server.url, s.repo.dir, "tsadd", 200);
    expect(tally.wrong, server.log().slice(-4000)).toEqual([]);
    expect(tally.ok).toBeGreaterThan(0);
    const last = await post(server, "/v2/models/tsadd/infer", body);
    expect(JSON.parse(last.text).outputs[0].data).toEqual(ADD);
    expect(server.log()).not.toMatch(/Segmentation|SIGSEGV|panic/);
  });
});
