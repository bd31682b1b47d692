/**
 * Issue #15: the `typescript` backend through the server binary: model.ts / model.js
 * (auto-detected), HTTP and gRPC, several requests unmerged in one execute with dynamic
 * batching, BYTES and request parameters, BLS into an ONNX model (the callee's statistics
 * count it), BLS errors the caller catches, recursion refused with the chain named, model
 * failures (import, initialize, execute, bad responses) with the model named, finalize
 * once on unload, warmup, response cache and an ensemble step.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { mkdtempSync, readFileSync, existsSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServerProcess, inferJson, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { inferenceClient } from "../../helpers/grpc-client.ts";

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;
const markers = mkdtempSync(join(tmpdir(), "nereid-ts-markers-"));

const A = Array.from({ length: 16 }, (_, i) => i + 1);

/** ts_ident: identity on IN plus N, the number of requests its execute got; IN < 0 fails that request alone. */
const IDENT = `
import type { InferenceRequest, InferenceResponse } from "./api-types.ts";
export default class Ident {
  execute(requests: InferenceRequest[]): InferenceResponse[] {
    return requests.map((r) => {
      const t = r.input("IN")!;
      const data = t.data as Float32Array;
      if (data[0]! < 0) return { error: { message: "negative input", code: "INVALID_ARG" } };
      return { outputs: [{ name: "OUT", datatype: "FP32", shape: t.shape, data }, { name: "N", datatype: "INT32", shape: [t.shape[0]!, 1], data: new Array(t.shape[0]).fill(requests.length) }] };
    });
  }
}
`;

/** A model may \`import type\` the API; a relative type-only import is erased. */
const API_TYPES = `export type { InferenceRequest, InferenceResponse } from ${JSON.stringify(join(process.cwd(), "src/backends/typescript/api.ts"))};\n`;

/** ts_echo (model.js, no backend in its config): upper-cases BYTES with a package from <repo>/node_modules, reports the request's id and parameters. */
const ECHO = `
import shout from "shout";
const dec = new TextDecoder();
export default class Echo {
  execute(requests) {
    return requests.map((r) => ({
      outputs: [
        { name: "OUT", datatype: "BYTES", shape: r.input("IN").shape, data: r.input("IN").data.map((b) => shout(dec.decode(b))) },
        { name: "META", datatype: "BYTES", shape: [2], data: [r.id, JSON.stringify(r.parameters)] },
      ],
    }));
  }
}
`;

/**
 * ts_bls / ts_hop: HOPS lists the models to go through; the last hop is called with
 * simple's inputs (two concurrent calls: A+A and A+0, summed), earlier hops with A and the
 * rest of the list. A failed call is caught into MSG unless the parameter uncaught is set.
 */
const BLS = `
const dec = new TextDecoder();
export default class Bls {
  async execute(requests) {
    return Promise.all(requests.map(async (r) => {
      const a = r.input("A").data;
      const hops = r.input("HOPS").data.map((b) => dec.decode(b));
      const [target, ...rest] = hops;
      try {
        let sum, msg;
        if (rest.length === 0) {
          const call = (b) => r.infer({ model: target, inputs: [{ name: "INPUT0", datatype: "INT32", shape: [1, 16], data: a }, { name: "INPUT1", datatype: "INT32", shape: [1, 16], data: b }] });
          const [x, y] = await Promise.all([call(a), call(new Array(16).fill(0))]);
          const p = x.output("OUTPUT0").data, q = y.output("OUTPUT0").data;
          sum = Array.from(p, (v, i) => v + q[i]);
          msg = "ok via " + x.model + " v" + x.version;
        } else {
          const res = await r.infer({ model: target, inputs: [{ name: "A", datatype: "INT32", shape: [16], data: a }, { name: "HOPS", datatype: "BYTES", shape: [rest.length], data: rest }] });
          sum = res.output("SUM").data;
          msg = dec.decode(res.output("MSG").data[0]);
        }
        return { outputs: [{ name: "SUM", datatype: "INT32", shape: [16], data: sum }, { name: "MSG", datatype: "BYTES", shape: [1], data: [msg] }] };
      } catch (e) {
        if (r.parameters.uncaught) throw e;
        return { outputs: [{ name: "SUM", datatype: "INT32", shape: [16], data: new Int32Array(16) }, { name: "MSG", datatype: "BYTES", shape: [1], data: [e.code + ": " + e.message] }] };
      }
    }));
  }
}
`;
const BLS_CONFIG = (name: string) => `name: "${name}"
backend: "typescript"
input [ { name: "A" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "HOPS" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "SUM" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "MSG" data_type: TYPE_STRING dims: [ 1 ] } ]
`;

/** ts_faulty: IN's value picks the failure. */
const FAULTY = `
export default class Faulty {
  execute(requests) {
    const mode = requests[0].input("IN").data[0];
    if (mode === 0) throw new Error("kaput");
    if (mode === 1) throw Object.assign(new Error("bad input"), { code: "INVALID_ARG" });
    if (mode === 2) return [];
    if (mode === 3) return [{ outputs: [{ name: "OUT", datatype: "INT32", shape: [1], data: [3] }] }];
    if (mode === 4) return [{ outputs: [{ name: "OUT", datatype: "FP32", shape: [2], data: [4, 4] }] }];
    if (mode === 5) return [{ error: "refused politely" }];
    return [{ outputs: [{ name: "OUT", datatype: "FP32", shape: [1], data: [mode] }] }];
  }
}
`;

/** ts_counter: COUNT is how many executes this instance ran (warmup included). */
const COUNTER = `
export default class Counter {
  n = 0;
  execute(requests) {
    this.n++;
    return requests.map((r) => ({ outputs: [{ name: "COUNT", datatype: "INT32", shape: [1, 1], data: [this.n] }] }));
  }
}
`;

/** ts_final: initialize and finalize append to the marker file named by its parameter. */
const FINAL = `
import { appendFileSync } from "node:fs";
export default class Final {
  initialize(args) { this.file = args.parameters.marker; this.name = args.instanceName; appendFileSync(this.file, "initialize " + args.instanceName + " " + args.modelName + " v" + args.modelVersion + "\\n"); }
  execute(requests) { return requests.map((r) => ({ outputs: [{ name: "OUT", datatype: "INT32", shape: [1], data: r.input("IN").data }] })); }
  finalize() { appendFileSync(this.file, "finalize " + this.name + "\\n"); }
}
`;

/** ts_double: INT32 [16] doubled (an ensemble step and the gRPC check). */
const DOUBLE = `
export default class Double {
  execute(requests) {
    return requests.map((r) => { const t = r.input("X"); return { outputs: [{ name: "Y", datatype: "INT32", shape: t.shape, data: Array.from(t.data, (v) => v * 2) }] }; });
  }
}
`;

beforeAll(async () => {
  repo = makeRepository(["simple"]);
  repo.add("api-types.ts", API_TYPES);
  repo.add(
    "ts_ident/config.pbtxt",
    `backend: "typescript"
max_batch_size: 8
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 2 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 2 ] }, { name: "N" data_type: TYPE_INT32 dims: [ 1 ] } ]
dynamic_batching { preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 20000000 }
`,
  );
  repo.add("ts_ident/1/model.ts", IDENT.replace("./api-types.ts", "../../api-types.ts"));
  repo.add(
    "ts_echo/config.pbtxt",
    `input [ { name: "IN" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "OUT" data_type: TYPE_STRING dims: [ -1 ] }, { name: "META" data_type: TYPE_STRING dims: [ 2 ] } ]
`,
  );
  repo.add("ts_echo/1/model.js", ECHO);
  // A bare import resolves from <repo>/node_modules, which the repository scan skips.
  repo.add("node_modules/shout/package.json", JSON.stringify({ name: "shout", version: "1.0.0", main: "index.js" }));
  repo.add("node_modules/shout/index.js", "module.exports = (s) => s.toUpperCase();\n");
  repo.add("ts_bls/config.pbtxt", BLS_CONFIG("ts_bls"));
  repo.add("ts_bls/1/model.js", BLS);
  repo.add("ts_hop/config.pbtxt", BLS_CONFIG("ts_hop"));
  repo.add("ts_hop/1/model.js", BLS);
  const faultyIo = `backend: "typescript"\ninput [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "OUT" data_type: TYPE_FP32 dims: [ 1 ] } ]\n`;
  repo.add("ts_faulty/config.pbtxt", faultyIo);
  repo.add("ts_faulty/1/model.js", FAULTY);
  repo.add("ts_import_fail/config.pbtxt", faultyIo);
  repo.add("ts_import_fail/1/model.ts", `throw new Error("boom at import");\nexport default class X { execute() { return []; } }\n`);
  repo.add("ts_init_fail/config.pbtxt", faultyIo + `parameters { key: "execution_thread" value: { string_value: "main" } }\n`);
  repo.add("ts_init_fail/1/model.ts", `export default class X {\n  initialize() { throw new Error("init exploded"); }\n  execute() { return []; }\n}\n`);
  repo.add("ts_worker_init_fail/config.pbtxt", faultyIo + `parameters { key: "execution_thread" value: { string_value: "worker" } }\n`);
  repo.add(
    "ts_worker_init_fail/1/model.ts",
    `export default class X {\n  initialize() { throw new Error("worker init exploded"); }\n  execute() { return []; }\n}\n`,
  );
  repo.add(
    "ts_counter/config.pbtxt",
    `backend: "typescript"
max_batch_size: 4
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 2 ] } ]
output [ { name: "COUNT" data_type: TYPE_INT32 dims: [ 1 ] } ]
response_cache { enable: true }
model_warmup [ { name: "w" batch_size: 1 inputs { key: "IN" value: { data_type: TYPE_FP32 dims: [ 2 ] zero_data: true } } } ]
`,
  );
  repo.add("ts_counter/1/model.ts", COUNTER);
  repo.add(
    "ts_final/config.pbtxt",
    `backend: "typescript"
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { kind: KIND_CPU count: 2 } ]
parameters { key: "marker" value: { string_value: "${join(markers, "final.txt")}" } }
`,
  );
  repo.add("ts_final/1/model.ts", FINAL);
  repo.add(
    "ts_double/config.pbtxt",
    `backend: "typescript"\nmax_batch_size: 8\ninput [ { name: "X" data_type: TYPE_INT32 dims: [ 16 ] } ]\noutput [ { name: "Y" data_type: TYPE_INT32 dims: [ 16 ] } ]\n`,
  );
  repo.add("ts_double/1/model.ts", DOUBLE);
  // Worker thread: burns CPU until the release file exists, then BLS-calls simple.
  repo.add(
    "ts_burn/config.pbtxt",
    `backend: "typescript"
input [ { name: "A" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "SUM" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "SPINS" data_type: TYPE_INT32 dims: [ 1 ] } ]
parameters { key: "execution_thread" value: { string_value: "worker" } }
parameters { key: "release" value: { string_value: "${join(markers, "release")}" } }
`,
  );
  repo.add(
    "ts_burn/1/model.ts",
    `import { existsSync } from "node:fs";
export default class Burn {
  initialize(args: any) { this.release = args.parameters.release; args.logger.info("burn ready in a worker"); }
  release = "";
  async execute(requests: any[]) {
    let spins = 0;
    const end = Date.now() + 30000;
    while (!existsSync(this.release) && Date.now() < end) spins++;
    const r = requests[0];
    const a = r.input("A");
    const res = await r.infer({ model: "simple", inputs: [{ name: "INPUT0", datatype: "INT32", shape: [1, 16], data: a.data }, { name: "INPUT1", datatype: "INT32", shape: [1, 16], data: a.data }] });
    return [{ outputs: [{ name: "SUM", datatype: "INT32", shape: [16], data: res.output("OUTPUT0").data }, { name: "SPINS", datatype: "INT32", shape: [1], data: [spins > 0 ? 1 : 0] }] }];
  }
}
`,
  );
  // Sequence batcher: START as a control input, the running sum in implicit state.
  repo.add(
    "ts_seq/config.pbtxt",
    `backend: "typescript"
max_batch_size: 4
input [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "SUM" data_type: TYPE_INT32 dims: [ 1 ] }, { name: "INFO" data_type: TYPE_STRING dims: [ 1 ] } ]
sequence_batching {
  control_input [ { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ]
  state [ { input_name: "ACC_IN" output_name: "ACC_OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
}
`,
  );
  repo.add(
    "ts_seq/1/model.ts",
    `export default class Seq {
  execute(requests: any[]) {
    return requests.map((r) => {
      const sum = r.input("ACC_IN").data[0] + r.input("X").data[0];
      const info = [r.correlationId, r.input("START").data[0], r.flags.sequenceStart, r.flags.sequenceEnd].join(" ");
      return { outputs: [
        { name: "SUM", datatype: "INT32", shape: [1, 1], data: [sum] },
        { name: "INFO", datatype: "BYTES", shape: [1, 1], data: [info] },
        { name: "ACC_OUT", datatype: "INT32", shape: [1, 1], data: [sum] },
      ] };
    });
  }
}
`,
  );
  // No config.pbtxt: the class's static autoCompleteConfig fills it in.
  repo.add(
    "ts_auto/1/model.ts",
    `export default class Auto {
  static autoCompleteConfig(config: any) {
    return { ...config, max_batch_size: 2, input: [{ name: "X", data_type: "TYPE_INT32", dims: [16] }], output: [{ name: "Y", data_type: "TYPE_INT32", dims: [16] }] };
  }
${DOUBLE.split("\n").slice(2, -2).join("\n")}
}
`,
  );
  repo.add(
    "ts_ens/config.pbtxt",
    `platform: "ensemble"
max_batch_size: 8
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 16 ] } ]
ensemble_scheduling { step [
  { model_name: "simple" input_map { key: "INPUT0" value: "IN" } input_map { key: "INPUT1" value: "IN" } output_map { key: "OUTPUT0" value: "SUM" } },
  { model_name: "ts_double" input_map { key: "X" value: "SUM" } output_map { key: "Y" value: "OUT" } }
] }
`,
  );
  repo.add("ts_ens/1/.keep", "");
  server = await startServerProcess([
    `--model-repository=${repo.dir}`,
    "--exit-on-error=false",
    "--model-control-mode=explicit",
    "--load-model=*",
    "--cache-config=local,size=1048576",
  ]);
});

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

const stats = async (model: string): Promise<any> => ((await (await fetch(`${server.url}/v2/models/${model}/stats`)).json()) as any).model_stats[0];
const blsCall = (hops: string[], parameters: object = {}) =>
  inferJson(server, "ts_bls", {
    parameters,
    inputs: [
      { name: "A", datatype: "INT32", shape: [16], data: A },
      { name: "HOPS", datatype: "BYTES", shape: [hops.length], data: hops },
    ],
  });

describe("typescript backend", () => {
  it("serves an identity model.ts over HTTP, several requests unmerged in one execute with dynamic batching", async () => {
    const one = (x: number) => inferJson(server, "ts_ident", { inputs: [{ name: "IN", datatype: "FP32", shape: [1, 2], data: [x, x + 0.5] }] });
    const before = await stats("ts_ident");
    const rs = await Promise.all([one(1), one(2), one(-1), one(4)]);
    expect(rs.map((r) => r.status)).toEqual([200, 200, 400, 200]);
    expect(rs[0]!.json.outputs).toEqual([
      { name: "OUT", datatype: "FP32", shape: [1, 2], data: [1, 1.5] },
      { name: "N", datatype: "INT32", shape: [1, 1], data: [4] },
    ]);
    expect(rs[1]!.json.outputs[1].data).toEqual([4]);
    expect(rs[3]!.json.outputs[0].data).toEqual([4, 4.5]);
    expect(rs[2]!.json.error).toBe("negative input");
    const after = await stats("ts_ident");
    expect(after.execution_count - before.execution_count).toBe(1);
    expect(after.inference_count - before.inference_count).toBe(4);
  });

  it("serves over gRPC", async () => {
    const { client, call } = inferenceClient(server.grpcTarget!);
    try {
      const r = await call("ModelInfer")({
        model_name: "ts_double",
        inputs: [{ name: "X", datatype: "INT32", shape: [1, 16], contents: { int_contents: A } }],
      });
      expect(r.outputs[0].name).toBe("Y");
      expect(r.outputs[0].shape.map(Number)).toEqual([1, 16]);
      expect(Array.from(new Int32Array(new Uint8Array(r.raw_output_contents[0]).slice().buffer))).toEqual(A.map((v) => v * 2));
    } finally {
      client.close();
    }
  });

  it("auto-detects model.js, passes BYTES as strings, the request id and parameters", async () => {
    const r = await inferJson(server, "ts_echo", {
      id: "req-7",
      parameters: { lang: "en", beams: 3, fast: true },
      inputs: [{ name: "IN", datatype: "BYTES", shape: [2], data: ["abc", "ünï"] }],
    });
    expect(r.status).toBe(200);
    expect(r.json.id).toBe("req-7");
    expect(r.json.outputs).toEqual([
      { name: "OUT", datatype: "BYTES", shape: [2], data: ["ABC", "ÜNÏ"] },
      { name: "META", datatype: "BYTES", shape: [2], data: ["req-7", JSON.stringify({ lang: "en", beams: 3, fast: true })] },
    ]);
    const cfg = (await (await fetch(`${server.url}/v2/models/ts_echo/config`)).json()) as any;
    expect(cfg.backend).toBe("typescript");
    const index = (await (await fetch(`${server.url}/v2/repository/index`, { method: "POST", body: "{}" })).json()) as any;
    expect(index.some((e: { name: string }) => e.name === "node_modules")).toBe(false);
  });

  it("BLS runs the ONNX model through the server (concurrent calls), and its statistics count them", async () => {
    const before = await stats("simple");
    const r = await blsCall(["simple"]);
    expect(r.status).toBe(200);
    expect(r.json.outputs).toEqual([
      { name: "SUM", datatype: "INT32", shape: [16], data: A.map((v) => 3 * v) },
      { name: "MSG", datatype: "BYTES", shape: [1], data: ["ok via simple v1"] },
    ]);
    const after = await stats("simple");
    expect(after.inference_stats.success.count - before.inference_stats.success.count).toBe(2);
  });

  it("BLS through another TypeScript model", async () => {
    const r = await blsCall(["ts_hop", "simple"]);
    expect(r.json.outputs[0].data).toEqual(A.map((v) => 3 * v));
    expect(r.json.outputs[1].data).toEqual(["ok via simple v1"]);
  });

  it("a BLS call to an unknown model rejects with NOT_FOUND, which the caller catches", async () => {
    const r = await blsCall(["no_such_model"]);
    expect(r.status).toBe(200);
    expect(r.json.outputs[0].data).toEqual(Array(16).fill(0));
    expect(r.json.outputs[1].data).toEqual(["NOT_FOUND: Request for unknown model: 'no_such_model' is not found"]);
  });

  it("an uncaught BLS error fails the request with its code", async () => {
    const r = await blsCall(["no_such_model"], { uncaught: true });
    expect(r.status).toBe(404);
    expect(r.json.error).toBe("Request for unknown model: 'no_such_model' is not found");
  });

  it("refuses recursion with the chain named: a -> a and a -> b -> a", async () => {
    const self = await blsCall(["ts_bls", "simple"]);
    expect(self.json.outputs[1].data).toEqual(["INVALID_ARG: BLS call refused: model 'ts_bls' is already in the call chain ts_bls -> ts_bls"]);
    // ts_hop catches the refusal and answers with it.
    const loop = await blsCall(["ts_hop", "ts_bls", "simple"]);
    expect(loop.json.outputs[1].data).toEqual(["INVALID_ARG: BLS call refused: model 'ts_bls' is already in the call chain ts_bls -> ts_hop -> ts_bls"]);
  });

  it("an import failure or a throwing initialize leaves that model UNAVAILABLE with the reason; others serve", async () => {
    const index = (await (await fetch(`${server.url}/v2/repository/index`, { method: "POST", body: "{}" })).json()) as any;
    const entry = (n: string) => index.find((e: { name: string }) => e.name === n);
    expect(entry("ts_import_fail").state).toBe("UNAVAILABLE");
    expect(entry("ts_import_fail").reason).toContain("boom at import");
    expect(entry("ts_import_fail").reason).toContain("model.ts");
    expect(entry("ts_init_fail").state).toBe("UNAVAILABLE");
    expect(entry("ts_init_fail").reason).toContain("initialize failed: Error: init exploded");
    // Clients see the message without its stack or the server's paths (#29); the log has them.
    expect(entry("ts_init_fail").reason).not.toMatch(/\n\s+at /);
    expect(entry("ts_import_fail").reason).not.toContain(repo.dir);
    expect(server.log()).toMatch(/initialize failed: Error: init exploded.*\\n\s+at /);
    expect(entry("ts_worker_init_fail").state).toBe("UNAVAILABLE");
    expect(entry("ts_worker_init_fail").reason).toContain("initialize failed (worker): Error: worker init exploded");
    expect(entry("ts_faulty").state).toBe("READY");
  });

  it("execute failures and bad responses fail the request with the model and tensor named; the model keeps serving", async () => {
    const call = (mode: number) => inferJson(server, "ts_faulty", { inputs: [{ name: "IN", datatype: "INT32", shape: [1], data: [mode] }] });
    const r0 = await call(0);
    expect([r0.status, r0.json.error]).toEqual([500, "model 'ts_faulty': kaput"]);
    const r1 = await call(1);
    expect([r1.status, r1.json.error]).toEqual([400, "bad input"]);
    const r2 = await call(2);
    expect([r2.status, r2.json.error]).toEqual([500, "model 'ts_faulty' execute() returned 0 responses for 1 request(s)"]);
    const r3 = await call(3);
    expect([r3.status, r3.json.error]).toEqual([500, "model 'ts_faulty' returned output 'OUT' as INT32; its config says FP32"]);
    const r4 = await call(4);
    expect([r4.status, r4.json.error]).toEqual([500, "model 'ts_faulty' returned output 'OUT' with shape [2]; its config expects [1]"]);
    const r5 = await call(5);
    expect([r5.status, r5.json.error]).toEqual([500, "model 'ts_faulty': refused politely"]);
    const ok = await call(6);
    expect([ok.status, ok.json.outputs[0].data]).toEqual([200, [6]]);
  });

  it("warmup runs the model before READY and the response cache answers repeats", async () => {
    const call = (x: number) => inferJson(server, "ts_counter", { inputs: [{ name: "IN", datatype: "FP32", shape: [1, 2], data: [x, x] }] });
    expect((await call(1)).json.outputs[0].data).toEqual([2]); // warmup was execute 1
    expect((await call(1)).json.outputs[0].data).toEqual([2]); // cached
    expect((await call(2)).json.outputs[0].data).toEqual([3]);
    const s = await stats("ts_counter");
    expect(s.inference_stats.cache_hit.count).toBe(1);
  });

  it("a static autoCompleteConfig completes a model with no config.pbtxt", async () => {
    const cfg = (await (await fetch(`${server.url}/v2/models/ts_auto/config`)).json()) as any;
    expect([cfg.backend, cfg.max_batch_size, cfg.input[0].name, cfg.output[0].dims]).toEqual(["typescript", 2, "X", [16]]);
    const r = await inferJson(server, "ts_auto", { inputs: [{ name: "X", datatype: "INT32", shape: [1, 16], data: A }] });
    expect(r.json.outputs[0].data).toEqual(A.map((v) => 2 * v));
  });

  it("under the sequence batcher: correlation id, flags, control and state inputs per request", async () => {
    const step = async (x: number, start: boolean, end: boolean) =>
      (
        await inferJson(server, "ts_seq", {
          parameters: { sequence_id: 42, sequence_start: start, sequence_end: end },
          inputs: [{ name: "X", datatype: "INT32", shape: [1, 1], data: [x] }],
        })
      ).json;
    const a = await step(5, true, false);
    const b = await step(7, false, false);
    const c = await step(1, false, true);
    expect([a.outputs[0].data, b.outputs[0].data, c.outputs[0].data]).toEqual([[5], [12], [13]]);
    expect([a.outputs[1].data, b.outputs[1].data, c.outputs[1].data]).toEqual([["42 1 true false"], ["42 0 false false"], ["42 0 false true"]]);
    expect(a.outputs.map((o: { name: string }) => o.name)).toEqual(["SUM", "INFO"]);
  });

  it("a worker-thread instance burning CPU leaves the server answering; its BLS call goes through the main thread", async () => {
    let burnDone = false;
    const burn = inferJson(server, "ts_burn", { inputs: [{ name: "A", datatype: "INT32", shape: [16], data: A }] }).then((r) => {
      burnDone = true;
      return r;
    });
    // Answers while ts_burn spins (it spins until the release file exists).
    for (let i = 0; i < 3; i++) {
      const r = await inferJson(server, "ts_double", { inputs: [{ name: "X", datatype: "INT32", shape: [1, 16], data: A }] });
      expect(r.json.outputs[0].data).toEqual(A.map((v) => 2 * v));
    }
    expect(burnDone).toBe(false);
    writeFileSync(join(markers, "release"), "");
    const r = await burn;
    expect(r.status).toBe(200);
    expect(r.json.outputs).toEqual([
      { name: "SUM", datatype: "INT32", shape: [16], data: A.map((v) => 2 * v) },
      { name: "SPINS", datatype: "INT32", shape: [1], data: [1] },
    ]);
    expect(server.log()).toContain("model 'ts_burn': burn ready in a worker");
  });

  it("runs as an ensemble step", async () => {
    const r = await inferJson(server, "ts_ens", { inputs: [{ name: "IN", datatype: "INT32", shape: [1, 16], data: A }] });
    expect(r.status).toBe(200);
    expect(r.json.outputs[0].data).toEqual(A.map((v) => 4 * v));
  });

  it("unload calls finalize exactly once per instance", async () => {
    const file = join(markers, "final.txt");
    const r = await inferJson(server, "ts_final", { inputs: [{ name: "IN", datatype: "INT32", shape: [1], data: [9] }] });
    expect(r.json.outputs[0].data).toEqual([9]);
    const res = await fetch(`${server.url}/v2/repository/models/ts_final/unload`, { method: "POST", body: "{}" });
    expect(res.status).toBe(200);
    // The unload does not wait for finalize (as documented), and the two instances' workers finalize in either order.
    const finalized = () => ["finalize ts_final_0_0", "finalize ts_final_0_1"].every((l) => readFileSync(file, "utf8").includes(l));
    for (let i = 0; i < 100 && !finalized(); i++) await new Promise((r) => setTimeout(r, 50));
    const lines = readFileSync(file, "utf8").trim().split("\n").sort();
    expect(lines).toEqual(["finalize ts_final_0_0", "finalize ts_final_0_1", "initialize ts_final_0_0 ts_final v1", "initialize ts_final_0_1 ts_final v1"]);
    expect(existsSync(file)).toBe(true);
  });
});

describe("typescript model that never answers", () => {
  it("a queued request still times out, and shutdown's drain gives up after --exit-timeout-secs", async () => {
    const hangRepo = makeRepository([]);
    hangRepo.add(
      "ts_hang/config.pbtxt",
      `backend: "typescript"
max_batch_size: 1
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
dynamic_batching { default_queue_policy { default_timeout_microseconds: 200000 } }
`,
    );
    hangRepo.add("ts_hang/1/model.ts", `export default class Hang { execute() { return new Promise(() => {}); } }\n`);
    const s = await startServerProcess([`--model-repository=${hangRepo.dir}`, "--exit-timeout-secs=1"]);
    try {
      const body = { inputs: [{ name: "IN", datatype: "INT32", shape: [1, 1], data: [1] }] };
      // One of the two runs forever; the other waits in the queue until its timeout.
      const first = await Promise.race([inferJson(s, "ts_hang", body), inferJson(s, "ts_hang", body)]);
      expect([first.status, first.json.error]).toEqual([503, "Request timeout expired"]);
      const code = await s.stop("SIGTERM");
      expect(code).toBe(1);
      expect(s.log()).toContain("Exit timeout expired. Exiting immediately.");
    } finally {
      await s.stop("SIGKILL");
      hangRepo.remove();
    }
  });
});
