/**
 * The HTTP frontend with no socket (test/helpers/http-handler.ts: Nereid.fetch, the
 * handler the HTTP listener serves): the route table, exact answers and Triton's errors,
 * fast enough to run per change. P-01..P-08, P-11, P-12, P-17, P-21, P-26, P-32. The
 * listener's own behaviour (body limits as Bun.serve and node:http enforce them, keep-alive)
 * stays in infer.test.ts and the shared frontend suite.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { startHandler, statusAndJson, type HttpCall } from "../../helpers/http-handler.ts";
import { SIMPLE_METADATA } from "../../helpers/repo.ts";
import { SHM_DISABLED } from "../../../src/server/shared-memory.ts";
import type { InProcessServer } from "../../helpers/inprocess.ts";

const A = Array.from({ length: 16 }, (_, i) => i);
const B = Array.from({ length: 16 }, (_, i) => 2 * i + 1);
const SUM = A.map((a, i) => a + B[i]!);
const DIFF = A.map((a, i) => a - B[i]!);
const int32Bytes = (values: number[]) => new Uint8Array(Int32Array.from(values).buffer);
const ints = (u: Uint8Array) => [...new Int32Array(u.slice().buffer)];

const simpleJson = (extra: Record<string, unknown> = {}) => ({
  inputs: [
    { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: A },
    { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: B },
  ],
  ...extra,
});

/** `inference` and `model-repository` need header `x-nereid-key: s3cret` (--http-restricted-api). */
const RESTRICTED = [{ apis: ["inference" as const, "model-repository" as const], key: "x-nereid-key", value: "s3cret" }];
const KEY = { "x-nereid-key": "s3cret" };

let s: InProcessServer & { call: HttpCall };
let call: HttpCall;

beforeAll(async () => {
  s = await startHandler(["simple", "simple_identity"], { server: { httpRestrictedApi: RESTRICTED } });
  call = s.call;
});

afterAll(async () => {
  if (s) expect(await s.stop()).toBe(0);
});

const infer = (body: unknown, headers: Record<string, string> = {}, path = "/v2/models/simple/infer") =>
  call("POST", path, body as object, { ...KEY, ...headers });

async function expectError(res: Response, status: number, message: string | RegExp) {
  const { status: got, json } = await statusAndJson(res);
  expect(got).toBe(status);
  expect(Object.keys(json)).toEqual(["error"]);
  if (typeof message === "string") expect(json.error).toBe(message);
  else expect(json.error).toMatch(message);
}

describe("health, metadata and the route table with no socket", () => {
  it("live and ready answer 200 with an empty body; model ready the same", async () => {
    for (const path of ["/v2/health/live", "/v2/health/ready", "/v2/models/simple/ready", "/v2/models/simple/versions/1/ready"]) {
      const res = await call("GET", path);
      expect([path, res.status, await res.text()]).toEqual([path, 200, ""]);
    }
  });

  it("server and model metadata and config are the same JSON the listener sends", async () => {
    const server = await statusAndJson(await call("GET", "/v2"));
    expect(server).toEqual({
      status: 200,
      json: { name: "triton", version: expect.any(String), extensions: expect.arrayContaining(["system_shared_memory", "parameters"]) },
    });
    expect(server.json.extensions).toHaveLength(13);
    expect(await statusAndJson(await call("GET", "/v2/models/simple"))).toEqual({ status: 200, json: SIMPLE_METADATA });
    expect(await statusAndJson(await call("GET", "/v2/models/simple/versions/1"))).toEqual({ status: 200, json: SIMPLE_METADATA });
    const config = await call("GET", "/v2/models/simple/config");
    expect(config.headers.get("content-type")).toBe("application/json");
    expect(await config.json()).toMatchObject({
      name: "simple",
      max_batch_size: 8,
      input: [{ name: "INPUT0", data_type: "TYPE_INT32", dims: [16] }, { name: "INPUT1" }],
    });
  });

  // Moved from infer.test.ts (binary): the route table does not need a socket.
  it("unknown model, version and paths", async () => {
    await expectError(await call("GET", "/v2/models/nope"), 404, "Request for unknown model: 'nope' is not found");
    await expectError(await call("GET", "/v2/models/simple/versions/7"), 404, "Request for unknown model: 'simple' version 7 is not found");
    await expectError(await call("GET", "/v2/models/nope/ready"), 404, "Request for unknown model: 'nope' is not found");
    await expectError(await call("GET", "/v2/nothing"), 404, "Not Found");
    await expectError(await call("POST", "/v2/health/live"), 405, "Method Not Allowed");
    await expectError(await call("GET", "/v2/models/simple/infer", undefined, KEY), 405, "Method Not Allowed");
    await expectError(await call("GET", "/v2/models/simple/versions/x/ready"), 404, "Not Found");
    await expectError(
      await call("GET", "/v2/models/bad%zz"),
      400,
      "malformed percent-encoding in URL path segment 'bad%zz': '%' must be followed by two hex digits and encode UTF-8",
    );
  });

  it("takes a web Request as well as a path, and ignores the query string", async () => {
    const res = await s.nereid.fetch(new Request("http://nereid.invalid/v2/models/simple?verbose=1"));
    expect(await statusAndJson(res)).toEqual({ status: 200, json: SIMPLE_METADATA });
    // As a Bun.serve or Deno.serve handler: what they pass after the Request is not read.
    const served = await s.nereid.fetch(new Request("http://nereid.invalid/v2/health/ready"), { port: 8000, hostname: "0.0.0.0" } as RequestInit);
    expect(served.status).toBe(200);
  });
});

describe("inference with no socket", () => {
  it("JSON in and out: exact sums and differences, id first", async () => {
    const res = await infer(simpleJson({ id: "req-1" }));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    const text = await res.text();
    expect(Object.keys(JSON.parse(text))).toEqual(["id", "model_name", "model_version", "outputs"]);
    expect(JSON.parse(text)).toEqual({
      id: "req-1",
      model_name: "simple",
      model_version: "1",
      outputs: [
        { name: "OUTPUT0", datatype: "INT32", shape: [1, 16], data: SUM },
        { name: "OUTPUT1", datatype: "INT32", shape: [1, 16], data: DIFF },
      ],
    });
  });

  it("binary tensors both ways, and binary_data_output for every output", async () => {
    const header = new TextEncoder().encode(
      JSON.stringify({
        inputs: [
          { name: "INPUT0", shape: [1, 16], datatype: "INT32", parameters: { binary_data_size: 64 } },
          { name: "INPUT1", shape: [1, 16], datatype: "INT32", parameters: { binary_data_size: 64 } },
        ],
        parameters: { binary_data_output: true },
      }),
    );
    const body = new Uint8Array([...header, ...int32Bytes(A), ...int32Bytes(B)]);
    const res = await infer(body, { "inference-header-content-length": String(header.byteLength) });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/octet-stream");
    const length = Number(res.headers.get("inference-header-content-length"));
    const bytes = new Uint8Array(await res.arrayBuffer());
    expect(JSON.parse(new TextDecoder().decode(bytes.subarray(0, length)))).toEqual({
      model_name: "simple",
      model_version: "1",
      outputs: [
        { name: "OUTPUT0", datatype: "INT32", shape: [1, 16], parameters: { binary_data_size: 64 } },
        { name: "OUTPUT1", datatype: "INT32", shape: [1, 16], parameters: { binary_data_size: 64 } },
      ],
    });
    expect(bytes.byteLength).toBe(length + 128);
    expect(ints(bytes.subarray(length, length + 64))).toEqual(SUM);
    expect(ints(bytes.subarray(length + 64))).toEqual(DIFF);
  });

  it("BYTES identity", async () => {
    const res = await infer(
      { inputs: [{ name: "INPUT0", shape: [1, 3], datatype: "BYTES", data: ["a", "hello", ""] }] },
      {},
      "/v2/models/simple_identity/infer",
    );
    expect(((await res.json()) as any).outputs).toEqual([{ name: "OUTPUT0", datatype: "BYTES", shape: [1, 3], data: ["a", "hello", ""] }]);
  });
});

// Moved from infer.test.ts (binary); the oversized body stays there, since the listener enforces it too.
describe("bad requests get Triton's errors and the handler keeps serving (S-01, P-08)", () => {
  const cases: [string, () => Promise<Response>, number, string | RegExp][] = [
    ["malformed JSON", () => infer("{ not json"), 400, /failed to parse the request JSON buffer/],
    [
      "wrong datatype",
      () =>
        infer({
          inputs: [
            { name: "INPUT0", shape: [1, 16], datatype: "FP32", data: A },
            { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: B },
          ],
        }),
      400,
      "inference input 'INPUT0' data-type is 'FP32', but model 'simple' expects 'INT32'",
    ],
    [
      "wrong shape",
      () =>
        infer({
          inputs: [
            { name: "INPUT0", shape: [1, 8], datatype: "INT32", data: A.slice(0, 8) },
            { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: B },
          ],
        }),
      400,
      /^unexpected shape for input 'INPUT0' for model 'simple'\. Expected \[-1,16\], got \[1,8\]/,
    ],
    [
      "element count not matching the shape",
      () =>
        infer({
          inputs: [
            { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: A.slice(0, 15) },
            { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: B },
          ],
        }),
      400,
      /INPUT0/,
    ],
    ["unknown model", () => infer(simpleJson(), {}, "/v2/models/nope/infer"), 404, "Request for unknown model: 'nope' is not found"],
    ["unknown version", () => infer(simpleJson(), {}, "/v2/models/simple/versions/3/infer"), 404, "Request for unknown model: 'simple' version 3 is not found"],
    [
      "unknown input",
      () => infer({ inputs: [...simpleJson().inputs, { name: "EXTRA", shape: [1], datatype: "INT32", data: [1] }] }),
      400,
      "unexpected inference input 'EXTRA' for model 'simple'",
    ],
    ["unknown output", () => infer(simpleJson({ outputs: [{ name: "NOPE" }] })), 400, "unexpected inference output 'NOPE' for model 'simple'"],
    ["missing input", () => infer({ inputs: [simpleJson().inputs[0]] }), 400, /^expected 2 inputs but got 1 inputs for model 'simple'/],
    [
      "batch above max_batch_size",
      () =>
        infer({
          inputs: [
            { name: "INPUT0", shape: [9, 16], datatype: "INT32", data: Array(144).fill(1) },
            { name: "INPUT1", shape: [9, 16], datatype: "INT32", data: Array(144).fill(1) },
          ],
        }),
      400,
      "inference request batch-size must be <= 8 for 'simple'",
    ],
    [
      "Inference-Header-Content-Length larger than the body",
      () => infer(JSON.stringify(simpleJson()), { "inference-header-content-length": "100000" }),
      400,
      /inference header size should be in range/,
    ],
    [
      "binary byte size mismatch",
      () => {
        const header = new TextEncoder().encode(
          JSON.stringify({
            inputs: [
              { name: "INPUT0", shape: [1, 16], datatype: "INT32", parameters: { binary_data_size: 60 } },
              { name: "INPUT1", shape: [1, 16], datatype: "INT32", parameters: { binary_data_size: 64 } },
            ],
          }),
        );
        const body = new Uint8Array([...header, ...int32Bytes(A).subarray(0, 60), ...int32Bytes(B)]);
        return infer(body, { "inference-header-content-length": String(header.byteLength) });
      },
      400,
      "input byte size mismatch for input 'INPUT0' for model 'simple'. Expected 64, got 60",
    ],
  ];

  for (const [name, send, status, message] of cases) {
    it(`${name} → ${status}, then a good request succeeds`, async () => {
      await expectError(await send(), status, message);
      const ok = await infer(simpleJson());
      expect(ok.status).toBe(200);
      expect(((await ok.json()) as any).outputs[0].data).toEqual(SUM);
    });
  }
});

describe("the server's options apply with no socket", () => {
  it("--http-restricted-api: a restricted group without its header is 403 with Triton's text; others pass", async () => {
    await expectError(await call("POST", "/v2/models/simple/infer", simpleJson()), 403, "This API is restricted, expecting header 'x-nereid-key'");
    await expectError(await call("POST", "/v2/repository/index"), 403, "This API is restricted, expecting header 'x-nereid-key'");
    expect((await call("GET", "/v2/models/simple/stats")).status).toBe(200);
  });

  it("--allow-client-shm off: every shared-memory route is 503 with Triton's text", async () => {
    await expectError(await call("GET", "/v2/systemsharedmemory/status"), 503, SHM_DISABLED);
    await expectError(await call("POST", "/v2/systemsharedmemory/region/r/register", { key: "/k", offset: 0, byte_size: 64 }), 503, SHM_DISABLED);
    await expectError(await call("POST", "/v2/cudasharedmemory/unregister"), 503, SHM_DISABLED);
  });
});

describe("repository and statistics with no socket", () => {
  it("lists the index, unloads and loads a model, and counts exactly", async () => {
    const index = await statusAndJson(await call("POST", "/v2/repository/index", { ready: true }, KEY));
    expect(index).toEqual({
      status: 200,
      json: [
        { name: "simple", version: "1", state: "READY" },
        { name: "simple_identity", version: "1", state: "READY" },
      ],
    });
    expect((await call("POST", "/v2/repository/models/simple_identity/unload", {}, KEY)).status).toBe(200);
    await expectError(await call("GET", "/v2/models/simple_identity/ready"), 503, /^Request for unknown model: 'simple_identity' has no available versions/);
    expect((await call("POST", "/v2/repository/models/simple_identity/load", undefined, KEY)).status).toBe(200);
    expect((await call("GET", "/v2/models/simple_identity/ready")).status).toBe(200);

    const stats = async () => ((await (await call("GET", "/v2/models/simple/stats")).json()) as any).model_stats[0];
    const before = await stats();
    for (let k = 0; k < 3; k++) expect((await infer(simpleJson())).status).toBe(200);
    expect((await infer({ inputs: [] })).status).toBe(400);
    const after = await stats();
    expect(after).toMatchObject({ name: "simple", version: "1" });
    expect(after.inference_stats.success.count - before.inference_stats.success.count).toBe(3);
    expect(after.inference_stats.fail.count - before.inference_stats.fail.count).toBe(1);
    expect(after.inference_count - before.inference_count).toBe(3);
    expect(after.execution_count - before.execution_count).toBe(3);
  });
});
