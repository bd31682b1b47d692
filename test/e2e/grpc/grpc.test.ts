/**
 * gRPC end to end against the server process (the compiled binary when built):
 * G-01..G-05, G-08, G-09 and the wire contract with Triton's field numbers.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { Client, credentials, status } from "@grpc/grpc-js";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository, SIMPLE_METADATA } from "../../helpers/repo.ts";
import { inferenceClient, healthClient, type Call } from "../../helpers/grpc-client.ts";
import { serviceDefinition } from "../../../src/frontends/grpc/protos.ts";
import { ElemType, valueInfo, node, encodeModel } from "../../../scripts/lib/onnx-builder.ts";

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;
let call: (name: string) => Call;
let client: Client;

const i32 = (...v: number[]) => new Uint8Array(Int32Array.from(v).buffer);
const A = Array.from({ length: 16 }, (_, i) => i);
const B = Array.from({ length: 16 }, (_, i) => 100 - i);

function simpleRequest(a = A, b = B, extra: object = {}) {
  return {
    model_name: "simple",
    inputs: [
      { name: "INPUT0", datatype: "INT32", shape: [1, 16] },
      { name: "INPUT1", datatype: "INT32", shape: [1, 16] },
    ],
    raw_input_contents: [i32(...a), i32(...b)],
    ...extra,
  };
}
const ints = (u: Uint8Array) => [...new Int32Array(new Uint8Array(u).buffer)];

async function expectStatus(p: Promise<unknown>, code: status, details: string | RegExp) {
  const err = await p.then(
    () => undefined,
    (e: { code: number; details: string }) => e,
  );
  expect(err).toBeDefined();
  expect(err!.code).toBe(code);
  if (typeof details === "string") expect(err!.details).toBe(details);
  else expect(err!.details).toMatch(details);
}

beforeAll(async () => {
  repo = makeRepository(["simple", "simple_identity"]);
  repo.add(
    "fp32_identity/config.pbtxt",
    'name: "fp32_identity"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 0\ninput [ { name: "X" data_type: TYPE_FP32 dims: [ -1 ] } ]\noutput [ { name: "Y" data_type: TYPE_FP32 dims: [ -1 ] } ]\ninstance_group [ { count: 1 kind: KIND_CPU } ]\n',
  );
  repo.add(
    "fp32_identity/1/model.onnx",
    encodeModel({
      name: "id",
      inputs: [valueInfo("X", ElemType.FLOAT, ["n"])],
      outputs: [valueInfo("Y", ElemType.FLOAT, ["n"])],
      nodes: [node("Identity", ["X"], ["Y"])],
    }),
  );
  server = await startServerProcess([`--model-repository=${repo.dir}`]);
  expect(server.grpcTarget).toBeDefined();
  const c = inferenceClient(server.grpcTarget!);
  call = c.call;
  client = c.client;
});

afterAll(async () => {
  client?.close();
  await server?.stop();
  repo?.remove();
});

describe("every RPC (G-01, G-08)", () => {
  it("health, liveness, readiness and metadata", async () => {
    expect(await healthClient(server.grpcTarget!)({ service: "" })).toEqual({ status: "SERVING" });
    expect(await call("ServerLive")({})).toEqual({ live: true });
    expect(await call("ServerReady")({})).toEqual({ ready: true });
    expect(await call("ModelReady")({ name: "simple" })).toEqual({ ready: true });
    expect(await call("ServerMetadata")({})).toEqual({
      name: "triton",
      version: expect.any(String),
      extensions: expect.arrayContaining(["binary_tensor_data"]),
    });
    expect(await call("ModelMetadata")({ name: "simple", version: "1" })).toEqual(SIMPLE_METADATA);
  });

  it("ModelInfer with raw contents answers raw, with the id", async () => {
    const r = await call("ModelInfer")(simpleRequest(A, B, { id: "g1" }));
    expect(r.model_name).toBe("simple");
    expect(r.model_version).toBe("1");
    expect(r.id).toBe("g1");
    expect(r.outputs).toEqual([
      { name: "OUTPUT0", datatype: "INT32", shape: [1, 16] },
      { name: "OUTPUT1", datatype: "INT32", shape: [1, 16] },
    ]);
    expect(ints(r.raw_output_contents[0])).toEqual(A.map((a, i) => a + B[i]!));
    expect(ints(r.raw_output_contents[1])).toEqual(A.map((a, i) => a - B[i]!));
  });

  it("ModelInfer with typed contents and BYTES; outputs still raw (G-03, G-04)", async () => {
    const r = await call("ModelInfer")({
      model_name: "simple",
      inputs: [
        { name: "INPUT0", datatype: "INT32", shape: [1, 16], contents: { int_contents: A } },
        { name: "INPUT1", datatype: "INT32", shape: [1, 16], contents: { int_contents: B } },
      ],
      outputs: [{ name: "OUTPUT1" }],
    });
    expect(r.outputs.map((o: { name: string }) => o.name)).toEqual(["OUTPUT1"]);
    expect(ints(r.raw_output_contents[0])).toEqual(A.map((a, i) => a - B[i]!));
    const s = await call("ModelInfer")({
      model_name: "simple_identity",
      inputs: [{ name: "INPUT0", datatype: "BYTES", shape: [1, 2], contents: { bytes_contents: [Buffer.from("ab"), Buffer.from("")] } }],
    });
    expect([...s.raw_output_contents[0]]).toEqual([2, 0, 0, 0, 97, 98, 0, 0, 0, 0]);
  });

  it("ModelConfig, ModelStatistics and RepositoryIndex", async () => {
    const cfg = await call("ModelConfig")({ name: "simple" });
    expect(cfg.config).toMatchObject({
      name: "simple",
      platform: "onnxruntime_onnx",
      max_batch_size: 8,
      input: [{ name: "INPUT0", data_type: "TYPE_INT32", dims: [16] }, { name: "INPUT1" }],
    });
    const stats = await call("ModelStatistics")({ name: "simple" });
    expect(stats.model_stats[0].name).toBe("simple");
    expect(stats.model_stats[0].inference_stats.success.count).toBeGreaterThan(0);
    const index = await call("RepositoryIndex")({ ready: true });
    expect(index.models.map((m: { name: string; state: string }) => [m.name, m.state])).toEqual([
      ["fp32_identity", "READY"],
      ["simple", "READY"],
      ["simple_identity", "READY"],
    ]);
  });

  it("maps every error to Triton's status (G-09)", async () => {
    await expectStatus(call("ModelInfer")({ model_name: "nope" }), status.NOT_FOUND, "Request for unknown model: 'nope' is not found");
    await expectStatus(call("ModelMetadata")({ name: "simple", version: "9" }), status.NOT_FOUND, "Request for unknown model: 'simple' version 9 is not found");
    await expectStatus(
      call("ModelInfer")(
        simpleRequest(A, B, {
          inputs: [
            { name: "INPUT0", datatype: "FP32", shape: [1, 16] },
            { name: "INPUT1", datatype: "INT32", shape: [1, 16] },
          ],
        }),
      ),
      status.INVALID_ARGUMENT,
      "inference input 'INPUT0' data-type is 'FP32', but model 'simple' expects 'INT32'",
    );
    await expectStatus(
      call("ModelInfer")({
        ...simpleRequest(),
        inputs: [
          { name: "INPUT0", datatype: "INT32", shape: [1, 16], contents: { int_contents: A } },
          { name: "INPUT1", datatype: "INT32", shape: [1, 16] },
        ],
      }),
      status.INVALID_ARGUMENT,
      "contents field must not be specified when using raw_input_contents for 'INPUT0' for model 'simple'",
    );
    await expectStatus(
      call("ModelInfer")({ ...simpleRequest(), raw_input_contents: [i32(...A)] }),
      status.INVALID_ARGUMENT,
      "expected 2 raw_input_contents (one per input) but got 1 for model 'simple'",
    );
    await expectStatus(
      call("RepositoryModelLoad")({ model_name: "simple" }),
      status.UNAVAILABLE,
      "explicit model load / unload is not allowed if polling is enabled",
    );
    await expectStatus(call("RepositoryIndex")({ repository_name: "x" }), status.UNIMPLEMENTED, "'repository_name' specification is not supported");
    await expectStatus(
      call("SystemSharedMemoryStatus")({}),
      status.UNAVAILABLE,
      "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable.",
    );
    await expectStatus(
      call("CudaSharedMemoryRegister")({ name: "r" }),
      status.UNAVAILABLE,
      "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable.",
    );
    await expectStatus(
      call("TraceSetting")({ settings: { trace_level: { value: ["TENSORS"] } } }),
      status.UNIMPLEMENTED,
      "trace level TENSORS is not supported by this server (OFF and TIMESTAMPS are)",
    );
    const trace = await call("TraceSetting")({});
    expect(trace.settings.trace_rate).toEqual({ value: ["1000"] });
    await expectStatus(
      call("LogSettings")({ settings: { log_format: { string_param: "json" } } }),
      status.INVALID_ARGUMENT,
      "invalid argument for log_format, got 'json'. Choose from 'default' or 'ISO8601'",
    );
    const logs = await call("LogSettings")({ settings: { log_verbose_level: { uint32_param: 0 } } });
    expect(logs.settings.log_format).toEqual({ string_param: "default", parameter_choice: "string_param" });
    // and the server keeps serving
    expect(ints((await call("ModelInfer")(simpleRequest())).raw_output_contents[0])[0]).toBe(100);
  });
});

describe("load and size (G-02)", () => {
  it("answers 64 concurrent ModelInfer calls exactly", async () => {
    const results = await Promise.all(
      Array.from({ length: 64 }, (_, k) =>
        call("ModelInfer")(
          simpleRequest(
            A.map((a) => a + k),
            B,
          ),
        ),
      ),
    );
    results.forEach((r, k) => expect(ints(r.raw_output_contents[0])).toEqual(A.map((a, i) => a + k + B[i]!)));
  });

  it("round-trips a 16 MB FP32 tensor exactly", async () => {
    const n = (16 * 1024 * 1024) / 4;
    const x = new Float32Array(n).map((_, i) => Math.sin(i) * 1e3);
    const r = await call("ModelInfer")({
      model_name: "fp32_identity",
      inputs: [{ name: "X", datatype: "FP32", shape: [n] }],
      raw_input_contents: [new Uint8Array(x.buffer)],
    });
    expect(r.outputs[0].shape).toEqual([n]);
    expect(Buffer.compare(Buffer.from(r.raw_output_contents[0]), Buffer.from(x.buffer))).toBe(0);
  });

  it("serves 10,000 unary calls, sequential and concurrent, without an error", async () => {
    for (let i = 0; i < 2000; i++) expect(ints((await call("ModelInfer")(simpleRequest())).raw_output_contents[0])[1]).toBe(100);
    for (let batch = 0; batch < 16; batch++) {
      const rs = await Promise.all(Array.from({ length: 500 }, () => call("ModelInfer")(simpleRequest())));
      for (const r of rs) expect(ints(r.raw_output_contents[1])[0]).toBe(-100);
    }
  }, 120_000);
});

describe("compression", () => {
  it("accepts gzip-compressed requests and answers them", async () => {
    const Ctor = (await import("@grpc/grpc-js")).makeGenericClientConstructor(serviceDefinition("inference.GRPCInferenceService"), "Z");
    const c = new Ctor(server.grpcTarget!, credentials.createInsecure(), { "grpc.default_compression_algorithm": 2 /* gzip */ }) as unknown as Client &
      Record<string, (req: object, cb: (err: unknown, res: any) => void) => void>;
    const r = await new Promise<any>((resolve, reject) => c.ModelInfer!(simpleRequest(), (err, res) => (err ? reject(err) : resolve(res))));
    expect(ints(r.raw_output_contents[0])).toEqual(Array(16).fill(100));
    c.close();
  });
});

describe("ModelStreamInfer (G-05)", () => {
  it("answers 100 requests in order, one bad request in-band, the stream staying open", async () => {
    const Ctor = (await import("@grpc/grpc-js")).makeGenericClientConstructor(serviceDefinition("inference.GRPCInferenceService"), "S");
    const c = new Ctor(server.grpcTarget!, credentials.createInsecure()) as unknown as Client & {
      ModelStreamInfer: () => import("@grpc/grpc-js").ClientDuplexStream<object, any>;
    };
    const stream = c.ModelStreamInfer();
    const responses: any[] = [];
    const done = new Promise<void>((resolve, reject) => {
      stream.on("data", (r) => responses.push(r));
      stream.on("end", () => resolve());
      stream.on("error", reject);
    });
    for (let k = 0; k < 100; k++) {
      stream.write(
        k === 50
          ? { ...simpleRequest(), id: "bad", model_name: "missing_model" }
          : simpleRequest(
              A.map(() => k),
              B,
              { id: `r${k}` },
            ),
      );
    }
    stream.end();
    await done;
    c.close();
    expect(responses).toHaveLength(100);
    responses.forEach((r, k) => {
      if (k === 50) {
        expect(r.error_message).toBe("Request for unknown model: 'missing_model' is not found");
        expect(r.infer_response.id).toBe("bad");
      } else {
        expect(r.error_message ?? "").toBe("");
        expect(r.infer_response.id).toBe(`r${k}`);
        expect(r.infer_response.parameters.triton_final_response).toMatchObject({ bool_param: true });
        expect(ints(r.infer_response.raw_output_contents[0])).toEqual(B.map((b) => b + k));
      }
    });
  });
});

/** Minimal protobuf writer: the fixture is encoded from field numbers, not by our own codec. */
function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 127) {
    out.push((n & 127) | 128);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}
const field = (num: number, wire: number) => varint((num << 3) | wire);
const lenDelim = (num: number, bytes: number[]) => [...field(num, 2), ...varint(bytes.length), ...bytes];
const str = (num: number, s: string) => lenDelim(num, [...Buffer.from(s)]);
const packedInt64 = (num: number, values: number[]) => lenDelim(num, values.flatMap(varint));

describe("wire fixture from Triton's field numbers", () => {
  it("decodes a hand-encoded ModelInferRequest and answers it", async () => {
    const input = (name: string) => [...str(1, name), ...str(2, "INT32"), ...packedInt64(3, [1, 16])];
    const request = Buffer.from([
      ...str(1, "simple"), // model_name = 1
      ...str(3, "wire-1"), // id = 3
      ...lenDelim(5, input("INPUT0")), // inputs = 5
      ...lenDelim(5, input("INPUT1")),
      ...lenDelim(6, str(1, "OUTPUT0")), // outputs = 6 { name = 1 }
      ...lenDelim(7, [...i32(...A)]), // raw_input_contents = 7
      ...lenDelim(7, [...i32(...B)]),
    ]);
    const raw = new Client(server.grpcTarget!, credentials.createInsecure());
    const reply = await new Promise<Buffer>((resolve, reject) =>
      raw.makeUnaryRequest(
        "/inference.GRPCInferenceService/ModelInfer",
        (b: Buffer) => b,
        (b: Buffer) => b,
        request,
        (err, res) => (err ? reject(err) : resolve(res!)),
      ),
    );
    raw.close();
    const expectedOut = [...i32(...A.map((a, i) => a + B[i]!))];
    // model_name = 1, model_version = 2, id = 3 come first, then outputs = 5 and raw_output_contents = 6
    expect([...reply.subarray(0, 8)]).toEqual(str(1, "simple"));
    expect(reply.includes(Buffer.from(str(3, "wire-1")))).toBe(true);
    expect(reply.includes(Buffer.from(lenDelim(6, expectedOut)))).toBe(true);
  });
});

describe("long client strings in status messages (#14)", () => {
  it("an unknown model named with 40,000 characters gets NOT_FOUND with a message cut to fit its trailer", async () => {
    const name = "m".repeat(40_000);
    const err = await call("ModelInfer")({ model_name: name, inputs: [] }).catch((e: { code: number; details: string }) => e);
    expect(err.code).toBe(5);
    expect(err.details.startsWith("Request for unknown model: 'mmm")).toBe(true);
    expect(err.details.endsWith(`... (${"Request for unknown model: '' is not found".length + 40_000} characters)`)).toBe(true);
    expect(Buffer.byteLength(err.details) * 3).toBeLessThanOrEqual(4096);
    // The connection survived: the next call on it is answered.
    expect((await call("ServerLive")({})).live).toBe(true);
  });
});
