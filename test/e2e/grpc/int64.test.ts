/**
 * 64-bit integers over gRPC through the server binary (issue #14): sequence ids, typed
 * int64 contents and shape dims arrive exactly, and the reserved request parameters are
 * checked as Triton's gRPC frontend checks them (P-27, P-28, G-02), with HTTP refusing
 * what is not an exact uint64 as Triton's HTTP frontend does.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { status, type Client } from "@grpc/grpc-js";
import { startServerProcess, inferJson, SIMPLE_TWOS_AND_THREES, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { inferenceClient, type Call } from "../../helpers/grpc-client.ts";
import { ElemType, valueInfo, node, encodeModel } from "../../../scripts/lib/onnx-builder.ts";

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;
let call: (name: string) => Call;
let client: Client;

const i32 = (...v: number[]) => new Uint8Array(Int32Array.from(v).buffer);
const ints = (u: Uint8Array) => [...new Int32Array(new Uint8Array(u).buffer)];
const int64s = (u: Uint8Array) => [...new BigInt64Array(new Uint8Array(u).buffer)];

async function expectStatus(p: Promise<unknown>, code: status, details: string) {
  const err = await p.then(
    () => undefined,
    (e: { code: number; details: string }) => e,
  );
  expect(err).toBeDefined();
  expect({ code: err!.code, details: err!.details }).toEqual({ code, details });
}

/** One simple_sequence step over gRPC: the running sum of the sequence after adding `value`. */
async function grpcStep(id: object, value: number, start = false, end = false): Promise<number> {
  const r = await call("ModelInfer")({
    model_name: "simple_sequence",
    parameters: { sequence_id: id, sequence_start: { bool_param: start }, sequence_end: { bool_param: end } },
    inputs: [{ name: "INPUT", datatype: "INT32", shape: [1, 1] }],
    raw_input_contents: [i32(value)],
  });
  return ints(r.raw_output_contents[0])[0]!;
}

/** The same step over HTTP, the id written into the JSON text as is (no JS number rounding). */
async function httpStep(id: string, value: number, start = false): Promise<{ status: number; json: any }> {
  const body = `{"parameters":{"sequence_id":${id},"sequence_start":${start}},"inputs":[{"name":"INPUT","shape":[1,1],"datatype":"INT32","data":[${value}]}]}`;
  const res = await fetch(`${server.url}/v2/models/simple_sequence/infer`, { method: "POST", body });
  return { status: res.status, json: await res.json() };
}

beforeAll(async () => {
  repo = makeRepository(["simple", "simple_sequence"]);
  repo.add(
    "int64_identity/config.pbtxt",
    'name: "int64_identity"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 0\ninput [ { name: "X" data_type: TYPE_INT64 dims: [ -1 ] } ]\noutput [ { name: "Y" data_type: TYPE_INT64 dims: [ -1 ] } ]\ninstance_group [ { count: 1 kind: KIND_CPU } ]\n',
  );
  repo.add(
    "int64_identity/1/model.onnx",
    encodeModel({
      name: "id",
      inputs: [valueInfo("X", ElemType.INT64, ["n"])],
      outputs: [valueInfo("Y", ElemType.INT64, ["n"])],
      nodes: [node("Identity", ["X"], ["Y"])],
    }),
  );
  // `simple` with two priority levels, for priorities above the levels (S-06).
  const simpleConfig = readFileSync(join(repo.dir, "simple", "config.pbtxt"), "utf8").replace('name: "simple"', 'name: "simple_priority"');
  repo.add("simple_priority/config.pbtxt", `${simpleConfig}\ndynamic_batching { priority_levels: 2 default_priority_level: 2 }\n`);
  repo.add("simple_priority/1/model.onnx", readFileSync(join(repo.dir, "simple", "1", "model.onnx")));
  server = await startServerProcess([`--model-repository=${repo.dir}`]);
  ({ call, client } = inferenceClient(server.grpcTarget!));
});

afterAll(async () => {
  client?.close();
  await server?.stop();
  repo?.remove();
});

describe("sequence ids beyond 2^53 (P-27)", () => {
  it("keeps 1234567890123456789 and 1234567890123456790 apart, each with its own exact running sums", async () => {
    const a = { int64_param: 1234567890123456789n };
    const b = { int64_param: 1234567890123456790n };
    expect(await grpcStep(a, 1, true)).toBe(1);
    expect(await grpcStep(b, 100, true)).toBe(100);
    expect(await grpcStep(a, 2)).toBe(3);
    expect(await grpcStep(b, 200)).toBe(300);
    expect(await grpcStep(a, 3, false, true)).toBe(6);
    expect(await grpcStep(b, 300, false, true)).toBe(600);
  });

  it("reads a negative int64_param as the uint64 Triton makes of it, the same sequence as that id over HTTP", async () => {
    expect(await grpcStep({ int64_param: -1n }, 5, true)).toBe(5);
    const http = await httpStep("18446744073709551615", 7);
    expect(http.status).toBe(200);
    expect(http.json.outputs[0].data).toEqual([12]);
    expect(await grpcStep({ uint64_param: 18446744073709551615n }, 1, false, true)).toBe(13);
    // a string id is its own sequence
    expect(await grpcStep({ string_param: "18446744073709551615" }, 40, true, true)).toBe(40);
  });

  it("refuses a sequence_id of another type, and sequence flags that are not bool_param, with Triton's gRPC messages", async () => {
    const req = (parameters: object) =>
      call("ModelInfer")({
        model_name: "simple_sequence",
        parameters,
        inputs: [{ name: "INPUT", datatype: "INT32", shape: [1, 1] }],
        raw_input_contents: [i32(1)],
      });
    await expectStatus(
      req({ sequence_id: { bool_param: true } }),
      status.INVALID_ARGUMENT,
      "invalid value type for 'sequence_id' parameter, expected int64_param or string_param.",
    );
    await expectStatus(
      req({ sequence_id: { double_param: 5 } }),
      status.INVALID_ARGUMENT,
      "invalid value type for 'sequence_id' parameter, expected int64_param or string_param.",
    );
    await expectStatus(
      req({ sequence_id: { int64_param: 9n }, sequence_start: { int64_param: 1n } }),
      status.INVALID_ARGUMENT,
      "invalid value type for 'sequence_start' parameter, expected bool_param.",
    );
  });

  it("HTTP refuses a sequence_id, priority or timeout that is not an exact uint64, as Triton's HTTP frontend does", async () => {
    const big = await httpStep("18446744073709551616", 1, true);
    expect(big).toEqual({ status: 400, json: { error: "Unable to parse 'sequence_id': attempt to access JSON non-string as string" } });
    for (const key of ["priority", "timeout"]) {
      const body = `{"parameters":{"${key}":18446744073709551616},"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[${Array(16).fill(1)}]},{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[${Array(16).fill(1)}]}]}`;
      const res = await fetch(`${server.url}/v2/models/simple/infer`, { method: "POST", body });
      expect({ status: res.status, json: await res.json() }).toEqual({
        status: 400,
        json: { error: `Unable to parse '${key}': attempt to access JSON non-unsigned-integer as unsigned-integer` },
      });
    }
  });
});

describe("typed 64-bit contents and shapes (G-02, G-03)", () => {
  it("round-trips int64_contents beyond 2^53 exactly", async () => {
    const values = [9007199254740993n, -9223372036854775808n, 9223372036854775807n, -9007199254740993n];
    const r = await call("ModelInfer")({
      model_name: "int64_identity",
      inputs: [{ name: "X", datatype: "INT64", shape: [values.length], contents: { int64_contents: values } }],
    });
    expect(r.outputs[0]).toMatchObject({ name: "Y", datatype: "INT64", shape: [values.length] });
    expect(int64s(r.raw_output_contents[0])).toEqual(values);
  });

  it("refuses dims beyond 2^53 with the exact numbers, and dims whose byte size overflows int64, as Triton does", async () => {
    const x = (shape: bigint[]) =>
      call("ModelInfer")({ model_name: "int64_identity", inputs: [{ name: "X", datatype: "INT64", shape }], raw_input_contents: [new Uint8Array(8)] });
    await expectStatus(
      x([9007199254740993n]),
      status.INVALID_ARGUMENT,
      "input byte size mismatch for input 'X' for model 'int64_identity'. Expected 72057594037927944, got 8",
    );
    await expectStatus(x([2n ** 62n]), status.INVALID_ARGUMENT, "byte size for tensor 'X' exceeds maximum size of 9223372036854775807");
    await expectStatus(x([-(2n ** 60n)]), status.INVALID_ARGUMENT, "tensor 'X' contains an invalid dimension [-1152921504606846976]");
  });
});

describe("priority and timeout (P-28, S-06)", () => {
  const simple = (parameters: object, model = "simple") => ({
    model_name: model,
    parameters,
    inputs: [
      { name: "INPUT0", datatype: "INT32", shape: [1, 16] },
      { name: "INPUT1", datatype: "INT32", shape: [1, 16] },
    ],
    raw_input_contents: [i32(...Array(16).fill(2)), i32(...Array(16).fill(3))],
  });

  it("refuses a negative priority or timeout, and either of the wrong type, whatever the model's scheduler", async () => {
    await expectStatus(
      call("ModelInfer")(simple({ priority: { int64_param: -5n } })),
      status.INVALID_ARGUMENT,
      "invalid value for 'priority', expected value >= 0.",
    );
    await expectStatus(
      call("ModelInfer")(simple({ priority: { string_param: "1" } })),
      status.INVALID_ARGUMENT,
      "invalid value type for 'priority' parameter, expected int64_param or uint64_param.",
    );
    await expectStatus(
      call("ModelInfer")(simple({ timeout: { int64_param: -1n } })),
      status.INVALID_ARGUMENT,
      "invalid value for 'timeout', expected value >= 0.",
    );
    await expectStatus(
      call("ModelInfer")(simple({ timeout: { uint64_param: 1n } })),
      status.INVALID_ARGUMENT,
      "invalid value type for 'timeout' parameter, expected int64_param.",
    );
    await expectStatus(
      call("ModelInfer")(simple({ priority: { int64_param: -5n } }, "simple_priority")),
      status.INVALID_ARGUMENT,
      "invalid value for 'priority', expected value >= 0.",
    );
    // HTTP refuses the same values (in its own words, as Triton's HTTP frontend does)
    const http = await inferJson(server, "simple", { ...SIMPLE_TWOS_AND_THREES, parameters: { priority: -5 } });
    expect(http).toEqual({ status: 400, json: { error: "Unable to parse 'priority': attempt to access JSON non-unsigned-integer as unsigned-integer" } });
  });

  it("takes a uint64 priority above the model's levels as the default level, over gRPC and HTTP alike", async () => {
    const r = await call("ModelInfer")(
      simple({ priority: { uint64_param: 18446744073709551615n }, timeout: { int64_param: 9223372036854775807n } }, "simple_priority"),
    );
    expect(ints(r.raw_output_contents[0])).toEqual(Array(16).fill(5));
    const res = await fetch(`${server.url}/v2/models/simple_priority/infer`, {
      method: "POST",
      body: `{"parameters":{"priority":18446744073709551615},"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[${Array(16).fill(2)}]},{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[${Array(16).fill(3)}]}]}`,
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).outputs[0].data).toEqual(Array(16).fill(5));
  });

  it("refuses other reserved and custom parameters as Triton's gRPC frontend does", async () => {
    await expectStatus(
      call("ModelInfer")(simple({ triton_x: { bool_param: true } })),
      status.INVALID_ARGUMENT,
      "parameter keys starting with 'triton_' are reserved for Triton usage. Only the following keys starting with 'triton_' are allowed: triton_enable_empty_final_response",
    );
    await expectStatus(
      call("ModelInfer")(simple({ custom: { uint64_param: 1n } })),
      status.INVALID_ARGUMENT,
      "invalid value type for 'custom' parameter, expected int64_param, bool_param, or string_param.",
    );
    const ok = await call("ModelInfer")(
      simple({ custom: { double_param: 0.5 }, other: { int64_param: 9223372036854775807n }, triton_enable_empty_final_response: { bool_param: true } }),
    );
    expect(ints(ok.raw_output_contents[0])).toEqual(Array(16).fill(5));
  });
});
