/**
 * Issue #32 item 3, TypeScript API parity with Triton's Python backend, through the
 * binary: a response's `parameters` reach the client over HTTP, gRPC (ModelInfer and
 * ModelStreamInfer) and generate / generate_stream, and a model's custom metrics
 * (`args.metrics`: counter, gauge, histogram) are exported on /metrics, from a
 * worker-thread instance (relayed to the main thread) and a main-thread one alike.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { startServerProcess, inferJson, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { inferenceClient, streamInfer } from "../../helpers/grpc-client.ts";

/** ts_params: Y = X; parameters from the request (a bad kind returns bad parameters). */
const PARAMS = `
export default class Params {
  execute(requests) {
    return requests.map((r) => {
      const x = r.input("X").data[0];
      const outputs = [{ name: "Y", datatype: "INT32", shape: [1], data: [x] }];
      if (r.parameters.bad === "array") return { outputs, parameters: [1] };
      if (r.parameters.bad === "value") return { outputs, parameters: { nested: { a: 1 } } };
      return { outputs, parameters: { note: "x is " + x, count: x * 2, ratio: x / 4, even: x % 2 === 0 } };
    });
  }
}
`;

const PARAMS_CONFIG = (name: string) => `name: "${name}"
backend: "typescript"
input [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] } ]
`;

/** ts_params_bls: calls ts_params (with infer) and ts_params_stream (with stream) and answers their parameters as JSON. */
const BLS = `
export default class Bls {
  async execute(requests) {
    const out = [];
    for (const r of requests) {
      const one = await r.infer({ model: "ts_params", inputs: [{ name: "X", datatype: "INT32", shape: [1], data: [6] }] });
      const seen = [];
      for await (const s of r.stream({ model: "ts_params_stream", inputs: [{ name: "N", datatype: "INT32", shape: [1], data: [2] }] })) seen.push(s.parameters);
      out.push({ outputs: [{ name: "P", datatype: "BYTES", shape: [2], data: [JSON.stringify(one.parameters), JSON.stringify(seen)] }] });
    }
    return out;
  }
}
`;

const BLS_CONFIG = (name: string, thread: string) => `name: "${name}"
backend: "typescript"
input [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "P" data_type: TYPE_STRING dims: [ 2 ] } ]
parameters { key: "execution_thread" value: { string_value: "${thread}" } }
`;

/** ts_params_stream (decoupled): N responses OUT = i with parameters { index: i, last }, the final flag on the last. */
const STREAM = `
export default class Stream {
  execute(requests) {
    for (const r of requests) {
      const n = r.input("N").data[0];
      const sender = r.getResponseSender();
      for (let i = 0; i < n; i++) {
        sender.send({ outputs: [{ name: "OUT", datatype: "INT32", shape: [1], data: [i] }], parameters: { index: i, last: i === n - 1, tag: "s" } }, { final: i === n - 1 });
      }
    }
  }
}
`;

const STREAM_CONFIG = `name: "ts_params_stream"
backend: "typescript"
model_transaction_policy { decoupled: true }
input [ { name: "N" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
`;

/** ts_metrics*: a counter, a gauge and a histogram per model; COUNT is the counter's value after the request, CLASH what a clashing family said. */
const METRICS = `
export default class Metrics {
  async initialize(args) {
    const labels = { model: args.modelName, version: String(args.modelVersion) };
    this.requests = await (await args.metrics.family({ name: "ts_custom_requests", description: "Requests seen", kind: "counter" })).metric({ labels });
    this.last = await (await args.metrics.family({ name: "ts_custom_last", description: "Last X", kind: "gauge" })).metric({ labels });
    this.hist = await (await args.metrics.family({ name: "ts_custom_x", description: "X values", kind: "histogram" })).metric({ labels, buckets: [1, 5] });
    this.clash = await args.metrics.family({ name: "ts_custom_requests", description: "Another help", kind: "gauge" }).then(() => "no error", (e) => e.code + ": " + e.message);
    try {
      this.requests.set(1);
      this.misuse = "no error";
    } catch (e) {
      this.misuse = e.message;
    }
  }
  async execute(requests) {
    const out = [];
    for (const r of requests) {
      const x = r.input("X").data[0];
      this.requests.increment(1);
      this.last.set(x);
      this.hist.observe(x);
      out.push({ outputs: [
        { name: "COUNT", datatype: "FP64", shape: [1], data: [await this.requests.value()] },
        { name: "CLASH", datatype: "BYTES", shape: [2], data: [this.clash, this.misuse] },
      ] });
    }
    return out;
  }
}
`;

const METRICS_CONFIG = (name: string, thread: string) => `name: "${name}"
backend: "typescript"
input [ { name: "X" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "COUNT" data_type: TYPE_FP64 dims: [ 1 ] }, { name: "CLASH" data_type: TYPE_STRING dims: [ 2 ] } ]
parameters { key: "execution_thread" value: { string_value: "${thread}" } }
`;

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;

beforeAll(async () => {
  repo = makeRepository([]);
  repo.add("ts_params/config.pbtxt", PARAMS_CONFIG("ts_params"));
  repo.add("ts_params/1/model.js", PARAMS);
  repo.add("ts_params_main/config.pbtxt", PARAMS_CONFIG("ts_params_main") + `parameters { key: "execution_thread" value: { string_value: "main" } }\n`);
  repo.add("ts_params_main/1/model.js", PARAMS);
  repo.add("ts_params_stream/config.pbtxt", STREAM_CONFIG);
  repo.add("ts_params_stream/1/model.js", STREAM);
  for (const thread of ["worker", "main"]) {
    repo.add(`ts_params_bls_${thread}/config.pbtxt`, BLS_CONFIG(`ts_params_bls_${thread}`, thread));
    repo.add(`ts_params_bls_${thread}/1/model.js`, BLS);
  }
  repo.add("ts_metrics/config.pbtxt", METRICS_CONFIG("ts_metrics", "worker"));
  repo.add("ts_metrics/1/model.js", METRICS);
  repo.add("ts_metrics_main/config.pbtxt", METRICS_CONFIG("ts_metrics_main", "main"));
  repo.add("ts_metrics_main/1/model.js", METRICS);
  server = await startServerProcess([`--model-repository=${repo.dir}`, "--model-control-mode=explicit", "--load-model=*"]);
}, 120_000);

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

const post = (path: string, body: unknown) => fetch(`${server.url}${path}`, { method: "POST", body: JSON.stringify(body) });
const x = (v: number) => ({ inputs: [{ name: "X", datatype: "INT32", shape: [1], data: [v] }] });

describe("TypeScript response parameters", () => {
  it.each(["ts_params", "ts_params_main"])("%s: over HTTP, the response's parameters as JSON", async (model) => {
    const r = await inferJson(server, model, x(3));
    expect(r.status).toBe(200);
    expect(r.json).toEqual({
      model_name: model,
      model_version: "1",
      parameters: { note: "x is 3", count: 6, ratio: 0.75, even: false },
      outputs: [{ name: "Y", datatype: "INT32", shape: [1], data: [3] }],
    });
  });

  it("over gRPC ModelInfer: string, int64, double and bool parameters", async () => {
    const { client, call } = inferenceClient(server.grpcTarget!);
    try {
      const r = await call("ModelInfer")({ model_name: "ts_params", inputs: [{ name: "X", datatype: "INT32", shape: [1], contents: { int_contents: [4] } }] });
      expect(r.parameters).toEqual({
        note: { string_param: "x is 4", parameter_choice: "string_param" },
        count: { int64_param: 8, parameter_choice: "int64_param" },
        ratio: { int64_param: 1, parameter_choice: "int64_param" },
        even: { bool_param: true, parameter_choice: "bool_param" },
      });
      const half = await call("ModelInfer")({
        model_name: "ts_params",
        inputs: [{ name: "X", datatype: "INT32", shape: [1], contents: { int_contents: [2] } }],
      });
      expect(half.parameters.ratio).toEqual({ double_param: 0.5, parameter_choice: "double_param" });
    } finally {
      client.close();
    }
  });

  it("over generate: the parameters beside the outputs", async () => {
    const r = await post("/v2/models/ts_params/generate", { X: 5 });
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ model_name: "ts_params", model_version: "1", Y: 5, note: "x is 5", count: 10, ratio: 1.25, even: false });
  });

  it("a decoupled model's sends carry their own parameters: gRPC streaming and generate_stream", async () => {
    const responses = await streamInfer(server.grpcTarget!, [
      {
        model_name: "ts_params_stream",
        id: "s1",
        inputs: [{ name: "N", datatype: "INT32", shape: [1], contents: { int_contents: [2] } }],
      },
    ]);
    expect(responses.map((m) => [m.error_message ?? "", m.infer_response.id, m.infer_response.parameters])).toEqual([
      [
        "",
        "s1",
        {
          index: { int64_param: 0, parameter_choice: "int64_param" },
          last: { bool_param: false, parameter_choice: "bool_param" },
          tag: { string_param: "s", parameter_choice: "string_param" },
          triton_final_response: { bool_param: false, parameter_choice: "bool_param" },
        },
      ],
      [
        "",
        "s1",
        {
          index: { int64_param: 1, parameter_choice: "int64_param" },
          last: { bool_param: true, parameter_choice: "bool_param" },
          tag: { string_param: "s", parameter_choice: "string_param" },
          triton_final_response: { bool_param: true, parameter_choice: "bool_param" },
        },
      ],
    ]);
    const res = await post("/v2/models/ts_params_stream/generate_stream", { N: 3 });
    const events = (await res.text())
      .split("\n")
      .filter((l) => l.startsWith("data: "))
      .map((l) => JSON.parse(l.slice(6)));
    expect(events).toEqual([0, 1, 2].map((i) => ({ model_name: "ts_params_stream", model_version: "1", OUT: i, index: i, last: i === 2, tag: "s" })));
  });

  it.each(["worker", "main"])("BLS (%s thread): infer() and stream() responses carry the callee's parameters", async (thread) => {
    const r = await inferJson(server, `ts_params_bls_${thread}`, x(0));
    expect(r.status).toBe(200);
    expect(r.json.outputs[0].data.map((d: string) => JSON.parse(d))).toEqual([
      { note: "x is 6", count: 12, ratio: 1.5, even: true },
      [
        { index: 0, last: false, tag: "s" },
        { index: 1, last: true, tag: "s" },
      ],
    ]);
  });

  it("parameters that are not an object of strings, booleans and finite numbers fail that request", async () => {
    const array = await inferJson(server, "ts_params", { ...x(1), parameters: { bad: "array" } });
    expect([array.status, array.json]).toEqual([500, { error: "model 'ts_params' returned response 'parameters' that are not an object" }]);
    const value = await inferJson(server, "ts_params", { ...x(1), parameters: { bad: "value" } });
    expect([value.status, value.json]).toEqual([
      500,
      { error: "model 'ts_params' returned response parameter 'nested' that is not a string, boolean or finite number" },
    ]);
    expect((await inferJson(server, "ts_params", x(1))).status).toBe(200);
  });
});

describe("TypeScript custom metrics", () => {
  it.each(["ts_metrics", "ts_metrics_main"])("%s: counter, gauge and histogram on /metrics after requests over HTTP, gRPC and generate", async (model) => {
    const f32 = (v: number) => ({ inputs: [{ name: "X", datatype: "FP32", shape: [1], data: [v] }] });
    const first = await inferJson(server, model, f32(3));
    expect(first.json.outputs).toEqual([
      { name: "COUNT", datatype: "FP64", shape: [1], data: [1] },
      {
        name: "CLASH",
        datatype: "BYTES",
        shape: [2],
        data: [
          "INVALID_ARG: metric family 'ts_custom_requests' already exists with another kind or description",
          "metric family 'ts_custom_requests' is a counter: set() is for gauge metrics",
        ],
      },
    ]);
    const { client, call } = inferenceClient(server.grpcTarget!);
    try {
      const r = await call("ModelInfer")({
        model_name: model,
        inputs: [{ name: "X", datatype: "FP32", shape: [1], contents: { fp32_contents: [7] } }],
        outputs: [{ name: "COUNT" }],
      });
      expect(Array.from(new Float64Array(new Uint8Array(r.raw_output_contents[0]).slice().buffer))).toEqual([2]);
    } finally {
      client.close();
    }
    const g = await post(`/v2/models/${model}/generate`, { X: 0.5 });
    expect(((await g.json()) as any).COUNT).toBe(3);
    const lines = (await (await fetch(`${server.metricsUrl}/metrics`)).text()).split("\n");
    const l = `model="${model}",version="1"`;
    for (const line of [
      "# HELP ts_custom_requests Requests seen",
      "# TYPE ts_custom_requests counter",
      `ts_custom_requests{${l}} 3`,
      "# HELP ts_custom_last Last X",
      "# TYPE ts_custom_last gauge",
      `ts_custom_last{${l}} 0.5`,
      "# TYPE ts_custom_x histogram",
      `ts_custom_x_bucket{${l},le="1"} 1`,
      `ts_custom_x_bucket{${l},le="5"} 2`,
      `ts_custom_x_bucket{${l},le="+Inf"} 3`,
      `ts_custom_x_sum{${l}} 10.5`,
      `ts_custom_x_count{${l}} 3`,
    ]) {
      expect(lines).toContain(line);
    }
  });

  it("an unloaded model's metrics leave /metrics; the other model's stay", async () => {
    await post("/v2/repository/models/ts_metrics_main/unload", {});
    let text = "";
    for (let i = 0; i < 50; i++) {
      text = await (await fetch(`${server.metricsUrl}/metrics`)).text();
      if (!text.includes('model="ts_metrics_main"')) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(text).not.toContain('model="ts_metrics_main"');
    expect(text.split("\n")).toContain('ts_custom_requests{model="ts_metrics",version="1"} 3');
  });
});
