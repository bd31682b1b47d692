/**
 * The shared HTTP suite: the HTTP/REST API's route table, exact answers and Triton's
 * errors, the same wherever the HTTP frontend runs. It runs against the handler with no
 * socket (e2e/http/handler.test.ts) and, through the shared frontend suite, against every
 * listener: the compiled binary, Node in-process, the frontend threads and Deno.
 *
 * The server must serve the example models `simple` and `simple_identity` (both READY);
 * the target's `call` adds whatever headers the server needs (a restricted API's key).
 * The suite's tests leave the server as they found it.
 */
import { describe, it, expect } from "vitest";
import { SIMPLE_METADATA } from "../helpers/repo.ts";
import { expectError, splitBinary, statusAndJson, type HttpCall } from "../helpers/http-handler.ts";

export interface HttpTarget {
  /** One request to the HTTP frontend under test. */
  call: HttpCall;
}

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

/** The extensions a server with the HTTP frontend names (only working ones). */
const EXTENSIONS = (
  "classification sequence model_repository model_repository(unload_dependents) schedule_policy model_configuration " +
  "system_shared_memory cuda_shared_memory logging binary_tensor_data parameters statistics trace"
).split(" ");

export function httpSuite(label: string, target: () => HttpTarget): void {
  describe(`HTTP suite: ${label}`, () => {
    const call: HttpCall = (...args) => target().call(...args);
    const infer = (body: unknown, headers: Record<string, string> = {}, path = "/v2/models/simple/infer") => call("POST", path, body as object, headers);

    describe("health, metadata and the route table (P-01..P-05, P-16)", () => {
      it("live and ready answer 200 with an empty body; model ready the same", async () => {
        for (const path of ["/v2/health/live", "/v2/health/ready", "/v2/models/simple/ready", "/v2/models/simple/versions/1/ready"]) {
          const res = await call("GET", path);
          expect([path, res.status, await res.text()]).toEqual([path, 200, ""]);
        }
      });

      it("server metadata names only working extensions; model metadata has [-1]+dims for batching models", async () => {
        expect(await statusAndJson(await call("GET", "/v2"))).toEqual({
          status: 200,
          json: { name: "triton", version: expect.any(String), extensions: EXTENSIONS },
        });
        expect(await statusAndJson(await call("GET", "/v2/models/simple"))).toEqual({ status: 200, json: SIMPLE_METADATA });
        expect(await statusAndJson(await call("GET", "/v2/models/simple/versions/1"))).toEqual({ status: 200, json: SIMPLE_METADATA });
      });

      it("the config is the normalized JSON", async () => {
        const config = await call("GET", "/v2/models/simple/config");
        expect(config.headers.get("content-type")).toBe("application/json");
        const cfg = (await config.json()) as Record<string, any>;
        expect(cfg).toMatchObject({ name: "simple", max_batch_size: 8, input: [{ name: "INPUT0", data_type: "TYPE_INT32", dims: [16] }, { name: "INPUT1" }] });
        expect(cfg.version_policy).toEqual({ latest: { num_versions: 1 } });
        expect(cfg.instance_group[0]).toMatchObject({ kind: "KIND_CPU", count: 1 });
      });

      it("unknown model, version and paths", async () => {
        await expectError(await call("GET", "/v2/models/nope"), 404, "Request for unknown model: 'nope' is not found");
        await expectError(await call("GET", "/v2/models/simple/versions/7"), 404, "Request for unknown model: 'simple' version 7 is not found");
        await expectError(await call("GET", "/v2/models/nope/ready"), 404, "Request for unknown model: 'nope' is not found");
        await expectError(await call("GET", "/v2/nothing"), 404, "Not Found");
        await expectError(await call("POST", "/v2/health/live"), 405, "Method Not Allowed");
        await expectError(await call("GET", "/v2/models/simple/infer"), 405, "Method Not Allowed");
        await expectError(await call("GET", "/v2/models/simple/versions/x/ready"), 404, "Not Found");
        await expectError(
          await call("GET", "/v2/models/bad%zz"),
          400,
          "malformed percent-encoding in URL path segment 'bad%zz': '%' must be followed by two hex digits and encode UTF-8",
        );
      });
    });

    describe("inference (P-06..P-09, P-11..P-14)", () => {
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

      it("nested data, a batch of 2 and one requested output", async () => {
        const res = await infer(
          {
            inputs: [
              { name: "INPUT0", shape: [2, 16], datatype: "INT32", data: [A, B] },
              { name: "INPUT1", shape: [2, 16], datatype: "INT32", data: [B, A] },
            ],
            outputs: [{ name: "OUTPUT1" }],
          },
          {},
          "/v2/models/simple/versions/1/infer",
        );
        expect(((await res.json()) as any).outputs).toEqual([{ name: "OUTPUT1", datatype: "INT32", shape: [2, 16], data: [...DIFF, ...DIFF.map((d) => -d)] }]);
      });

      it("outputs asked for in reverse order come back in that order, each with its own values", async () => {
        const res = await infer(simpleJson({ outputs: [{ name: "OUTPUT1" }, { name: "OUTPUT0" }] }));
        expect(((await res.json()) as any).outputs).toEqual([
          { name: "OUTPUT1", datatype: "INT32", shape: [1, 16], data: DIFF },
          { name: "OUTPUT0", datatype: "INT32", shape: [1, 16], data: SUM },
        ]);
      });

      it("binary tensors both ways: per output, and binary_data_output for every output", async () => {
        const header = new TextEncoder().encode(
          JSON.stringify({
            inputs: [
              { name: "INPUT0", shape: [1, 16], datatype: "INT32", parameters: { binary_data_size: 64 } },
              { name: "INPUT1", shape: [1, 16], datatype: "INT32", parameters: { binary_data_size: 64 } },
            ],
            outputs: [
              { name: "OUTPUT0", parameters: { binary_data: true } },
              { name: "OUTPUT1", parameters: { binary_data: false } },
            ],
          }),
        );
        const res = await infer(new Uint8Array([...header, ...int32Bytes(A), ...int32Bytes(B)]), {
          "inference-header-content-length": String(header.byteLength),
          "content-type": "application/octet-stream",
        });
        expect(res.status).toBe(200);
        expect(res.headers.get("content-type")).toBe("application/octet-stream");
        const mixed = await splitBinary(res);
        expect(mixed.header.outputs).toEqual([
          { name: "OUTPUT0", datatype: "INT32", shape: [1, 16], parameters: { binary_data_size: 64 } },
          { name: "OUTPUT1", datatype: "INT32", shape: [1, 16], data: DIFF },
        ]);
        expect(ints(mixed.tail)).toEqual(SUM);

        const all = await splitBinary(await infer(simpleJson({ parameters: { binary_data_output: true } })));
        expect(all.header).toEqual({
          model_name: "simple",
          model_version: "1",
          outputs: [
            { name: "OUTPUT0", datatype: "INT32", shape: [1, 16], parameters: { binary_data_size: 64 } },
            { name: "OUTPUT1", datatype: "INT32", shape: [1, 16], parameters: { binary_data_size: 64 } },
          ],
        });
        expect(all.tail.byteLength).toBe(128);
        expect([ints(all.tail.subarray(0, 64)), ints(all.tail.subarray(64))]).toEqual([SUM, DIFF]);
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

    describe("bad requests get Triton's errors and the server keeps serving (S-01, P-08)", () => {
      /** `simple`'s request with INPUT0 as given. */
      const withInput0 = (input0: object) => infer({ inputs: [{ name: "INPUT0", ...input0 }, simpleJson().inputs[1]] });
      const cases: [string, () => Promise<Response>, number, string | RegExp][] = [
        ["malformed JSON", () => infer("{ not json"), 400, /failed to parse the request JSON buffer/],
        [
          "wrong datatype",
          () => withInput0({ shape: [1, 16], datatype: "FP32", data: A }),
          400,
          "inference input 'INPUT0' data-type is 'FP32', but model 'simple' expects 'INT32'",
        ],
        [
          "wrong shape",
          () => withInput0({ shape: [1, 8], datatype: "INT32", data: A.slice(0, 8) }),
          400,
          /^unexpected shape for input 'INPUT0' for model 'simple'\. Expected \[-1,16\], got \[1,8\]/,
        ],
        ["element count not matching the shape", () => withInput0({ shape: [1, 16], datatype: "INT32", data: A.slice(0, 15) }), 400, /INPUT0/],
        ["unknown model", () => infer(simpleJson(), {}, "/v2/models/nope/infer"), 404, "Request for unknown model: 'nope' is not found"],
        [
          "unknown version",
          () => infer(simpleJson(), {}, "/v2/models/simple/versions/3/infer"),
          404,
          "Request for unknown model: 'simple' version 3 is not found",
        ],
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
  });
}
