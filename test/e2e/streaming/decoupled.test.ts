/**
 * Issue #16: decoupled TypeScript models and streaming through the server binary.
 * S-16 (0..N responses, final flag), G-05/G-06 (ModelStreamInfer, triton_final_response,
 * triton_enable_empty_final_response), G-07 (unary ModelInfer refused), P-31 (generate and
 * generate_stream over SSE, for decoupled and ordinary models), P-21 (response_stats over
 * HTTP and gRPC), BLS streaming (a model iterating a decoupled model's responses), and
 * ensembles with a decoupled step (decoupled themselves; Triton's load-time flow rule).
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { type Client, credentials, makeGenericClientConstructor, Metadata, type ClientDuplexStream } from "@grpc/grpc-js";
import { gzipSync } from "node:zlib";
import { serviceDefinition } from "../../../src/frontends/grpc/protos.ts";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { inferenceClient } from "../../helpers/grpc-client.ts";

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;

/**
 * ts_repeat: for input N, sends N responses OUT = 0..N-1 after execute has returned
 * (100 at a time, yielding between), then a response-less final; with parameter
 * final_with_last the last response carries the final flag instead; with fail_at = k an
 * error response (final) replaces response k.
 */
const REPEAT = `
export default class Repeat {
  execute(requests) {
    for (const r of requests) {
      const n = r.input("N").data[0];
      const p = r.parameters;
      const sender = r.getResponseSender();
      let i = 0;
      const step = () => {
        for (;;) {
          if (i === p.fail_at) return sender.send({ error: { message: "failed at response " + i, code: "INVALID_ARG" } }, { final: true });
          if (i >= n) {
            if (!p.final_with_last || n === 0) sender.send(undefined, { final: true });
            return;
          }
          const last = i === n - 1;
          sender.send({ outputs: [{ name: "OUT", datatype: "INT32", shape: [1], data: [i] }] }, { final: p.final_with_last === true && last });
          i++;
          if (i % 100 === 0) return setTimeout(step, 0);
        }
      };
      setTimeout(step, 0);
    }
  }
}
`;

const REPEAT_CONFIG = (name: string, extra = "") => `name: "${name}"
backend: "typescript"
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [ { name: "N" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
${extra}`;

/** ts_stream_sum: an ordinary model that calls ts_repeat through BLS streaming and answers COUNT and SUM of what it got. */
const STREAM_SUM = `
export default class StreamSum {
  async execute(requests) {
    return Promise.all(requests.map(async (r) => {
      let count = 0, sum = 0, order = true;
      for await (const res of r.stream({ model: "ts_repeat", inputs: [{ name: "N", datatype: "INT32", shape: [1], data: r.input("N").data }] })) {
        const v = res.output("OUT").data[0];
        order = order && v === count;
        count++;
        sum += v;
      }
      return { outputs: [{ name: "COUNT", datatype: "INT32", shape: [1], data: [order ? count : -1] }, { name: "SUM", datatype: "INT32", shape: [1], data: [sum] }] };
    }));
  }
}
`;

/** ts_stream_first3: stops iterating after three responses (the stream behind is cancelled) and answers COUNT and SUM of those. */
const STREAM_FIRST3 = `
export default class StreamFirst3 {
  async execute(requests) {
    return Promise.all(requests.map(async (r) => {
      let count = 0, sum = 0;
      for await (const res of r.stream({ model: "ts_repeat", inputs: [{ name: "N", datatype: "INT32", shape: [1], data: r.input("N").data }] })) {
        sum += res.output("OUT").data[0];
        if (++count === 3) break;
      }
      return { outputs: [{ name: "COUNT", datatype: "INT32", shape: [1], data: [count] }, { name: "SUM", datatype: "INT32", shape: [1], data: [sum] }] };
    }));
  }
}
`;

/** ts_slow: response 0 at once, then after 2 s responses 1..9, the last final (a client that left by then makes them cancelled). */
const SLOW = `
export default class Slow {
  execute(requests) {
    for (const r of requests) {
      const sender = r.getResponseSender();
      const out = (i) => ({ outputs: [{ name: "OUT", datatype: "INT32", shape: [1], data: [i] }] });
      sender.send(out(0));
      setTimeout(() => {
        for (let i = 1; i < 10; i++) sender.send(out(i), { final: i === 9 });
      }, 2000);
    }
  }
}
`;

/** ts_double: an ordinary model, OUT = 2 × IN. ts_add: OUT = A + B. */
const DOUBLE = `export default class Double { execute(requests) { return requests.map((r) => ({ outputs: [{ name: "OUT", datatype: "INT32", shape: [1], data: [2 * r.input("IN").data[0]] }] })); } }`;
const ADD = `export default class Add { execute(requests) { return requests.map((r) => ({ outputs: [{ name: "OUT", datatype: "INT32", shape: [1], data: [r.input("A").data[0] + r.input("B").data[0]] }] })); } }`;
const INT1 = (name: string) => `{ name: "${name}" data_type: TYPE_INT32 dims: [ 1 ] }`;
const tsModel = (name: string, inputs: string[]) =>
  `name: "${name}"\nbackend: "typescript"\nmax_batch_size: 0\ninstance_group [ { count: 1 kind: KIND_CPU } ]\ninput [ ${inputs.map(INT1).join(", ")} ]\noutput [ ${INT1("OUT")} ]\n`;
/** An ensemble from N to `output`; each step is [model, {input: tensor}, {output: tensor}]. */
const ensembleConfig = (name: string, output: string, steps: [string, Record<string, string>, Record<string, string>][]) => {
  const map = (m: Record<string, string>) =>
    Object.entries(m)
      .map(([k, v]) => `{ key: "${k}" value: "${v}" }`)
      .join(", ");
  return `name: "${name}"\nplatform: "ensemble"\nmax_batch_size: 0\ninput [ ${INT1("N")} ]\noutput [ ${INT1(output)} ]\nensemble_scheduling { step [ ${steps
    .map(([m, i, o]) => `{ model_name: "${m}" model_version: -1 input_map [ ${map(i)} ] output_map [ ${map(o)} ] }`)
    .join(", ")} ] }\n`;
};

beforeAll(async () => {
  repo = makeRepository(["simple"]);
  repo.add("ts_double/config.pbtxt", tsModel("ts_double", ["IN"]));
  repo.add("ts_double/1/model.js", DOUBLE);
  repo.add("ens_repeat_double/1/.keep", "");
  repo.add(
    "ens_repeat_double/config.pbtxt",
    ensembleConfig("ens_repeat_double", "DOUBLED", [
      ["ts_repeat", { N: "N" }, { OUT: "counted" }],
      ["ts_double", { IN: "counted" }, { OUT: "DOUBLED" }],
    ]),
  );
  for (const name of ["ts_slow_grpc", "ts_slow_sse"]) {
    repo.add(`${name}/config.pbtxt`, REPEAT_CONFIG(name));
    repo.add(`${name}/1/model.js`, SLOW);
  }
  repo.add("ts_repeat/config.pbtxt", REPEAT_CONFIG("ts_repeat"));
  repo.add("ts_repeat/1/model.js", REPEAT);
  repo.add("ts_repeat_stats/config.pbtxt", REPEAT_CONFIG("ts_repeat_stats"));
  repo.add("ts_repeat_stats/1/model.js", REPEAT);
  repo.add("ts_repeat_worker/config.pbtxt", REPEAT_CONFIG("ts_repeat_worker", `parameters { key: "execution_thread" value: { string_value: "worker" } }`));
  repo.add("ts_repeat_worker/1/model.js", REPEAT);
  repo.add(
    "ts_stream_sum/config.pbtxt",
    `name: "ts_stream_sum"
backend: "typescript"
max_batch_size: 0
input [ { name: "N" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "COUNT" data_type: TYPE_INT32 dims: [ 1 ] }, { name: "SUM" data_type: TYPE_INT32 dims: [ 1 ] } ]
`,
  );
  repo.add("ts_stream_sum/1/model.js", STREAM_SUM);
  const sumConfig = (name: string) => `name: "${name}"
backend: "typescript"
max_batch_size: 0
input [ { name: "N" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "COUNT" data_type: TYPE_INT32 dims: [ 1 ] }, { name: "SUM" data_type: TYPE_INT32 dims: [ 1 ] } ]
parameters { key: "execution_thread" value: { string_value: "worker" } }
`;
  repo.add("ts_stream_sum_worker/config.pbtxt", sumConfig("ts_stream_sum_worker"));
  repo.add("ts_stream_sum_worker/1/model.js", STREAM_SUM);
  repo.add("ts_stream_first3_worker/config.pbtxt", sumConfig("ts_stream_first3_worker"));
  repo.add("ts_stream_first3_worker/1/model.js", STREAM_FIRST3);
  server = await startServerProcess([`--model-repository=${repo.dir}`], { timeoutMs: 60_000 });
}, 120_000);

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

const int32 = (v: number) => Buffer.from(new Int32Array([v]).buffer);

function repeatRequest(model: string, n: number, opts: { id?: string; finalWithLast?: boolean; emptyFinal?: boolean; failAt?: number } = {}) {
  const parameters: Record<string, object> = {};
  if (opts.finalWithLast) parameters.final_with_last = { bool_param: true };
  if (opts.emptyFinal) parameters.triton_enable_empty_final_response = { bool_param: true };
  if (opts.failAt !== undefined) parameters.fail_at = { int64_param: opts.failAt };
  return { model_name: model, id: opts.id ?? "", inputs: [{ name: "N", datatype: "INT32", shape: [1] }], raw_input_contents: [int32(n)], parameters };
}

/** Writes `requests` on one ModelStreamInfer call, half-closes it, and collects every message until the server ends the stream. */
function streamAll(requests: object[]): Promise<any[]> {
  const Ctor = makeGenericClientConstructor(serviceDefinition("inference.GRPCInferenceService"), "GRPCInferenceService");
  const c = new Ctor(server.grpcTarget!, credentials.createInsecure()) as unknown as Client & { ModelStreamInfer: () => ClientDuplexStream<object, any> };
  const stream = c.ModelStreamInfer();
  const out: any[] = [];
  return new Promise((resolve, reject) => {
    stream.on("data", (m) => out.push(m));
    stream.on("end", () => {
      c.close();
      resolve(out);
    });
    stream.on("error", reject);
    for (const r of requests) stream.write(r);
    stream.end();
  });
}

const outValue = (m: any) => Buffer.from(m.infer_response.raw_output_contents[0]).readInt32LE(0);
const finalFlag = (m: any) => m.infer_response.parameters?.triton_final_response?.bool_param;

/** The `data:` payloads of an SSE body. */
function events(text: string): any[] {
  expect(text.endsWith("\n\n") || text === "").toBe(true);
  return text
    .split("\n\n")
    .filter((e) => e.length > 0)
    .map((e) => {
      expect(e.startsWith("data: ")).toBe(true);
      return JSON.parse(e.slice(6));
    });
}

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${server.url}${path}`, { method: "POST", body: typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body), headers });

describe("ModelStreamInfer with a decoupled model (S-16, G-05, G-06)", () => {
  it.each([0, 1, 1000])(
    "N = %i: exactly N responses in order, none final, no empty final unless asked",
    async (n) => {
      // A second request (N = 1, final on its response) follows, so N = 0 is seen to send nothing.
      const msgs = await streamAll([repeatRequest("ts_repeat", n, { id: "a" }), repeatRequest("ts_repeat", 1, { id: "b", finalWithLast: true })]);
      const a = msgs.filter((m) => m.infer_response.id === "a");
      const b = msgs.filter((m) => m.infer_response.id === "b");
      expect(msgs.map((m) => m.error_message).filter((e) => e)).toEqual([]);
      expect(a.map(outValue)).toEqual(Array.from({ length: n }, (_, i) => i));
      expect(a.every((m) => finalFlag(m) === false)).toBe(true);
      expect(b.map((m) => [outValue(m), finalFlag(m)])).toEqual([[0, true]]);
      expect(msgs.length).toBe(n + 1);
    },
    60_000,
  );

  it.each([0, 1, 1000])(
    "N = %i with triton_enable_empty_final_response: N responses then one empty final",
    async (n) => {
      const msgs = await streamAll([repeatRequest("ts_repeat", n, { id: "e", emptyFinal: true })]);
      expect(msgs.length).toBe(n + 1);
      expect(msgs.slice(0, n).map(outValue)).toEqual(Array.from({ length: n }, (_, i) => i));
      expect(msgs.slice(0, n).every((m) => finalFlag(m) === false)).toBe(true);
      const last = msgs[n];
      expect(last.error_message ?? "").toBe("");
      expect(last.infer_response.id).toBe("e");
      expect(last.infer_response.model_name).toBe("ts_repeat");
      expect(last.infer_response.outputs).toEqual([]);
      expect(finalFlag(last)).toBe(true);
    },
    60_000,
  );

  it("the final flag on the last response when the model sets it there", async () => {
    const msgs = await streamAll([repeatRequest("ts_repeat", 3, { finalWithLast: true })]);
    expect(msgs.map((m) => [outValue(m), finalFlag(m)])).toEqual([
      [0, false],
      [1, false],
      [2, true],
    ]);
  });

  it("an error response travels in-band after the responses before it; the stream goes on", async () => {
    const msgs = await streamAll([repeatRequest("ts_repeat", 5, { id: "f", failAt: 2 }), repeatRequest("ts_repeat", 1, { id: "g", finalWithLast: true })]);
    const f = msgs.filter((m) => m.infer_response.id === "f");
    expect(f.slice(0, 2).map(outValue)).toEqual([0, 1]);
    expect(f[2].error_message).toBe("failed at response 2");
    expect(f.length).toBe(3);
    expect(msgs.filter((m) => m.infer_response.id === "g").map(outValue)).toEqual([0]);
  });

  it("triton_grpc_error mode: the first error ends the stream with its gRPC status (G-06)", async () => {
    const Ctor = makeGenericClientConstructor(serviceDefinition("inference.GRPCInferenceService"), "GRPCInferenceService");
    const c = new Ctor(server.grpcTarget!, credentials.createInsecure()) as unknown as Client & {
      ModelStreamInfer: (md: Metadata) => ClientDuplexStream<object, any>;
    };
    const md = new Metadata();
    md.set("triton_grpc_error", "true");
    const stream = c.ModelStreamInfer(md);
    const got: number[] = [];
    const err = await new Promise<any>((resolve) => {
      stream.on("data", (m) => got.push(outValue(m)));
      stream.on("error", resolve);
      stream.on("end", () => resolve(undefined));
      stream.write(repeatRequest("ts_repeat", 5, { failAt: 2 }));
    });
    c.close();
    expect(got).toEqual([0, 1]);
    expect(err).toMatchObject({ code: 3, details: "failed at response 2" });
  });

  it("a worker-thread decoupled model streams the same way", async () => {
    const msgs = await streamAll([repeatRequest("ts_repeat_worker", 250, { finalWithLast: true })]);
    expect(msgs.map(outValue)).toEqual(Array.from({ length: 250 }, (_, i) => i));
    expect(msgs.map(finalFlag).filter((f) => f).length).toBe(1);
    expect(finalFlag(msgs[249])).toBe(true);
  }, 60_000);

  it("an ordinary model on the stream: one response, final", async () => {
    const A = Array.from({ length: 16 }, (_, i) => i);
    const raw = (v: number[]) => Buffer.from(new Int32Array(v).buffer);
    const msgs = await streamAll([
      {
        model_name: "simple",
        id: "s",
        inputs: [
          { name: "INPUT0", datatype: "INT32", shape: [1, 16] },
          { name: "INPUT1", datatype: "INT32", shape: [1, 16] },
        ],
        raw_input_contents: [raw(A), raw(A)],
      },
    ]);
    expect(msgs.length).toBe(1);
    expect(finalFlag(msgs[0])).toBe(true);
    expect(Array.from(new Int32Array(new Uint8Array(msgs[0].infer_response.raw_output_contents[0]).slice().buffer))).toEqual(A.map((v) => 2 * v));
  });
});

describe("refusals (G-07, S-16)", () => {
  it("unary ModelInfer on a decoupled model: UNIMPLEMENTED with Triton's text", async () => {
    const { client, call } = inferenceClient(server.grpcTarget!);
    try {
      await expect(call("ModelInfer")(repeatRequest("ts_repeat", 1))).rejects.toMatchObject({
        code: 12,
        details: "ModelInfer RPC doesn't support models with decoupled transaction policy",
      });
    } finally {
      client.close();
    }
  });

  it("HTTP /infer on a decoupled model: 501 with Triton's text", async () => {
    const res = await post("/v2/models/ts_repeat/infer", { inputs: [{ name: "N", shape: [1], datatype: "INT32", data: [1] }] });
    expect(res.status).toBe(501);
    expect(await res.json()).toEqual({ error: "HTTP end point doesn't support models with decoupled transaction policy" });
  });
});

describe("generate and generate_stream (P-31)", () => {
  it.each([0, 1, 1000])(
    "generate_stream, N = %i: exactly N events in order",
    async (n) => {
      const res = await post("/v2/models/ts_repeat/generate_stream", { id: "x", N: n });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
      const evs = events(await res.text());
      expect(evs).toEqual(Array.from({ length: n }, (_, i) => ({ id: "x", model_name: "ts_repeat", model_version: "1", OUT: i })));
    },
    60_000,
  );

  it("generate_stream with a version in the path, and the worker-thread model", async () => {
    const res = await post("/v2/models/ts_repeat_worker/versions/1/generate_stream", { N: 3, final_with_last: true });
    expect(events(await res.text()).map((e) => e.OUT)).toEqual([0, 1, 2]);
  });

  it("an error after the first event arrives as a data: {error} event, status 200", async () => {
    const res = await post("/v2/models/ts_repeat/generate_stream", { N: 5, fail_at: 2 });
    expect(res.status).toBe(200);
    expect(events(await res.text())).toEqual([
      { model_name: "ts_repeat", model_version: "1", OUT: 0 },
      { model_name: "ts_repeat", model_version: "1", OUT: 1 },
      { error: "failed at response 2" },
    ]);
  });

  it("an error before the first response keeps its status and Triton's JSON shape", async () => {
    const res = await post("/v2/models/ts_repeat/generate_stream", { N: 5, fail_at: 0 });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: "failed at response 0" });
    const missing = await post("/v2/models/no_such_model/generate_stream", { N: 1 });
    expect(missing.status).toBe(404);
    const bad = await post("/v2/models/ts_repeat/generate", "{not json");
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error).toMatch(/^failed to parse the request JSON buffer/);
  });

  it("a compressed body is refused (400)", async () => {
    const res = await post("/v2/models/ts_repeat/generate", gzipSync(JSON.stringify({ N: 1 })), { "content-encoding": "gzip" });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: "Unsupported Content-Encoding 'gzip' for generate: only identity is accepted" });
  });

  it("generate: one response as one JSON object; other than one is an error", async () => {
    const one = await post("/v2/models/ts_repeat/generate", { N: 1, id: "one" });
    expect(one.status).toBe(200);
    expect(await one.json()).toEqual({ id: "one", model_name: "ts_repeat", model_version: "1", OUT: 0 });
    for (const n of [0, 2]) {
      const r = await post("/v2/models/ts_repeat/generate", { N: n });
      expect(r.status).toBe(400);
      expect(await r.json()).toEqual({
        error: `generate expects the model to produce exactly one response, it produced ${n}; use generate_stream for models producing 0 or several responses`,
      });
    }
  });

  it("generate and generate_stream on an ordinary model: fields become inputs, shapes from the config", async () => {
    const A = Array.from({ length: 16 }, (_, i) => i);
    const B = A.map(() => 1);
    const expected = { model_name: "simple", model_version: "1", OUTPUT0: A.map((v) => v + 1), OUTPUT1: A.map((v) => v - 1) };
    const res = await post("/v2/models/simple/generate", { INPUT0: A, INPUT1: B });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(expected);
    const s = await post("/v2/models/simple/generate_stream", { INPUT0: A, INPUT1: B, parameters: { note: "kept as a parameter" } });
    expect(events(await s.text())).toEqual([expected]);
    const short = await post("/v2/models/simple/generate", { INPUT0: [1, 2], INPUT1: B });
    expect(short.status).toBe(400);
    expect(((await short.json()) as any).error).toBe("generate: field 'INPUT0' has 2 element(s), which do not fit input 'INPUT0' with dims [16]");
  });
});

describe("BLS streaming from a worker-thread instance (#16 item 3)", () => {
  it("iterates a decoupled model's responses in order, relayed from the main thread", async () => {
    for (const n of [0, 1, 1000]) {
      const res = await post("/v2/models/ts_stream_sum_worker/generate", { N: n });
      expect(await res.json()).toEqual({ model_name: "ts_stream_sum_worker", model_version: "1", COUNT: n, SUM: n === 0 ? 0 : (n * (n - 1)) / 2 });
    }
  }, 60_000);

  it("stops after a break: the stream behind it is cancelled and the next call is served", async () => {
    for (let i = 0; i < 2; i++) {
      const res = await post("/v2/models/ts_stream_first3_worker/generate", { N: 1000 });
      expect(await res.json()).toEqual({ model_name: "ts_stream_first3_worker", model_version: "1", COUNT: 3, SUM: 3 });
    }
  }, 60_000);
});

describe("BLS streaming", () => {
  it("a model iterates a decoupled model's responses in order", async () => {
    for (const n of [0, 1, 1000]) {
      const res = await post("/v2/models/ts_stream_sum/generate", { N: n });
      expect(await res.json()).toEqual({ model_name: "ts_stream_sum", model_version: "1", COUNT: n, SUM: n === 0 ? 0 : (n * (n - 1)) / 2 });
    }
  }, 60_000);
});

describe("response_stats (P-21)", () => {
  it("counts each response index over HTTP and gRPC", async () => {
    await streamAll([repeatRequest("ts_repeat_stats", 2, { emptyFinal: true }), repeatRequest("ts_repeat_stats", 1)]);
    const http = ((await (await fetch(`${server.url}/v2/models/ts_repeat_stats/stats`)).json()) as any).model_stats[0].response_stats;
    expect(Object.keys(http)).toEqual(["0", "1", "2"]);
    const counts = (r: any) => [r.compute_infer.count, r.compute_output.count, r.success.count, r.fail.count, r.empty_response.count, r.cancel.count];
    // index 0: both requests' first response; 1: the first request's second, the second's empty final; 2: the first's empty final.
    expect(counts(http["0"])).toEqual([2, 2, 2, 0, 0, 0]);
    expect(counts(http["1"])).toEqual([1, 1, 1, 0, 1, 0]);
    expect(counts(http["2"])).toEqual([0, 0, 0, 0, 1, 0]);
    const { client, call } = inferenceClient(server.grpcTarget!);
    try {
      const g = (await call("ModelStatistics")({ name: "ts_repeat_stats" })).model_stats[0].response_stats;
      const n = (d: any) => Number(d?.count ?? 0);
      expect(Object.keys(g).sort()).toEqual(["0", "1", "2"]);
      expect([n(g["0"].success), n(g["1"].success), n(g["1"].empty_response), n(g["2"].empty_response)]).toEqual([2, 1, 1, 1]);
    } finally {
      client.close();
    }
  });
});

describe("a client that goes away stops its stream (the request's signal)", () => {
  /** The model's response_stats once its tenth response has been counted. */
  async function statsAfterAll(model: string): Promise<Record<string, any>> {
    for (let tries = 0; tries < 200; tries++) {
      const j = (await (await fetch(`${server.url}/v2/models/${model}/stats`)).json()) as any;
      const r = j.model_stats[0].response_stats;
      if (r["9"]) return r;
      await new Promise((res) => setTimeout(res, 100));
    }
    throw new Error(`${model}: the tenth response was never counted`);
  }
  const expected = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [String(i), i === 0 ? { success: 1, cancel: 0 } : { success: 0, cancel: 1 }]));
  const counts = (r: Record<string, any>) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, { success: v.success.count, cancel: v.cancel.count }]));

  it("a cancelled gRPC stream: the responses after it are counted as cancelled, not sent", async () => {
    const Ctor = makeGenericClientConstructor(serviceDefinition("inference.GRPCInferenceService"), "GRPCInferenceService");
    const c = new Ctor(server.grpcTarget!, credentials.createInsecure()) as unknown as Client & { ModelStreamInfer: () => ClientDuplexStream<object, any> };
    const stream = c.ModelStreamInfer();
    const got: number[] = [];
    await new Promise<void>((resolve) => {
      stream.on("data", (m) => {
        got.push(outValue(m));
        stream.cancel();
        resolve();
      });
      stream.on("error", () => undefined);
      stream.write(repeatRequest("ts_slow_grpc", 1));
    });
    expect(counts(await statsAfterAll("ts_slow_grpc"))).toEqual(expected);
    expect(got).toEqual([0]);
    c.close();
  }, 30_000);

  it("an SSE client that disconnects after the first event: the rest are counted as cancelled", async () => {
    const controller = new AbortController();
    const res = await fetch(`${server.url}/v2/models/ts_slow_sse/generate_stream`, {
      method: "POST",
      body: JSON.stringify({ N: 1 }),
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(events(first)).toEqual([{ model_name: "ts_slow_sse", model_version: "1", OUT: 0 }]);
    controller.abort();
    expect(counts(await statsAfterAll("ts_slow_sse"))).toEqual(expected);
  }, 30_000);
});

describe("an ensemble with a decoupled step (#16 item 3)", () => {
  it.each([0, 3, 1000])(
    "is decoupled: N = %i streams N responses of the later step in order over SSE and gRPC",
    async (n) => {
      const res = await post("/v2/models/ens_repeat_double/generate_stream", { N: n });
      expect(res.status).toBe(200);
      expect(events(await res.text())).toEqual(Array.from({ length: n }, (_, i) => ({ model_name: "ens_repeat_double", model_version: "1", DOUBLED: 2 * i })));
      const msgs = await streamAll([repeatRequest("ens_repeat_double", n, { id: "d", emptyFinal: true })]);
      expect(msgs.map((m) => m.error_message).filter((e) => e)).toEqual([]);
      // The final flag goes with the response sent when no step is left in flight, or alone after
      // the last one (which of the two depends on whether ts_repeat's final or ts_double's last
      // answer comes first, as in Triton): exactly one message is final, the last.
      const answers = msgs.filter((m) => m.infer_response.outputs.length > 0);
      expect(answers.map(outValue)).toEqual(Array.from({ length: n }, (_, i) => 2 * i));
      expect(answers.every((m) => m.infer_response.model_name === "ens_repeat_double")).toBe(true);
      expect(msgs.map(finalFlag)).toEqual([...Array(msgs.length - 1).fill(false), true]);
      expect(msgs.length - answers.length).toBeLessThanOrEqual(1);
    },
    60_000,
  );

  it("refuses /infer and unary ModelInfer as for any decoupled model; the config says decoupled", async () => {
    const res = await post("/v2/models/ens_repeat_double/infer", { inputs: [{ name: "N", shape: [1], datatype: "INT32", data: [1] }] });
    expect([res.status, await res.json()]).toEqual([501, { error: "HTTP end point doesn't support models with decoupled transaction policy" }]);
    const config = (await (await fetch(`${server.url}/v2/models/ens_repeat_double/config`)).json()) as { model_transaction_policy?: { decoupled: boolean } };
    expect(config.model_transaction_policy).toEqual({ decoupled: true });
  });

  it("a step error ends the stream with it, in Triton's ensemble wording; no step starts after it", async () => {
    // ts_repeat sends 0 and 1, then the error: what ts_double answers after the error is dropped,
    // as Triton's ensemble sends nothing once its status is an error. Over gRPC: the responses
    // that made it, then the error, then nothing.
    const msgs = await streamAll([repeatRequest("ens_repeat_double", 5, { failAt: 2 })]);
    const error = "in ensemble 'ens_repeat_double', failed at response 2";
    expect(msgs.at(-1).error_message).toBe(error);
    expect(msgs.slice(0, -1).map(outValue)).toEqual([0, 2].slice(0, msgs.length - 1));
    const res = await post("/v2/models/ens_repeat_double/generate_stream", { N: 5, fail_at: 0 });
    expect([res.status, await res.json()]).toEqual([400, { error: "in ensemble 'ens_repeat_double', failed at response 0" }]);
  });

  it("refuses at load a step fed by two decoupled lineages, with Triton's message", async () => {
    const bad = makeRepository([]);
    bad.add("ts_repeat/config.pbtxt", REPEAT_CONFIG("ts_repeat"));
    bad.add("ts_repeat/1/model.js", REPEAT);
    bad.add("ts_repeat_b/config.pbtxt", REPEAT_CONFIG("ts_repeat_b"));
    bad.add("ts_repeat_b/1/model.js", REPEAT);
    bad.add("ts_add/config.pbtxt", tsModel("ts_add", ["A", "B"]));
    bad.add("ts_add/1/model.js", ADD);
    // A decoupled step's outputs with the ensemble's own input, and with another decoupled step's.
    for (const name of ["ens_mixed", "ens_two"]) bad.add(`${name}/1/.keep`, "");
    bad.add(
      "ens_mixed/config.pbtxt",
      ensembleConfig("ens_mixed", "SUM", [
        ["ts_repeat", { N: "N" }, { OUT: "c" }],
        ["ts_add", { A: "c", B: "N" }, { OUT: "SUM" }],
      ]),
    );
    bad.add(
      "ens_two/config.pbtxt",
      ensembleConfig("ens_two", "SUM", [
        ["ts_repeat", { N: "N" }, { OUT: "c1" }],
        ["ts_repeat_b", { N: "N" }, { OUT: "c2" }],
        ["ts_add", { A: "c1", B: "c2" }, { OUT: "SUM" }],
      ]),
    );
    const explicit = await startServerProcess([`--model-repository=${bad.dir}`, "--model-control-mode=explicit", "--allow-grpc=false"]);
    try {
      for (const name of ["ens_mixed", "ens_two"]) {
        const res = await fetch(`${explicit.url}/v2/repository/models/${name}/load`, { method: "POST" });
        expect([res.status, await res.json()]).toEqual([
          400,
          { error: `failed to load '${name}': in ensemble ${name}, step of model 'ts_add' receives inputs originated from different decoupled models` },
        ]);
      }
    } finally {
      await explicit.stop();
      bad.remove();
    }
  });
});
