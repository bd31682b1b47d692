/**
 * One policy, one answer (issue #20): each check that moved from the frontends into the
 * server, provoked with the same bad request over HTTP and over gRPC against the server
 * binary, gets the same code and message on both protocols.
 * test/e2e/error-catalog.test.ts already covers the control-mode refusal and the
 * `repository_name` refusal of load/unload the same way.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServerProcess, type ServerProcess } from "../helpers/server-process.ts";
import { makeRepository } from "../helpers/repo.ts";
import { inferenceClient } from "../helpers/grpc-client.ts";
import { ERROR_CATALOG } from "../helpers/error-catalog.ts";
import type { ErrorCode } from "../../src/core/errors.ts";

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;
let grpc: ReturnType<typeof inferenceClient>;

beforeAll(async () => {
  repo = makeRepository(["simple"]);
  server = await startServerProcess([`--model-repository=${repo.dir}`, "--allow-client-shm=true"]);
  grpc = inferenceClient(server.grpcTarget!);
});

afterAll(async () => {
  grpc?.client.close();
  await server?.stop();
  repo?.remove();
});

interface Case {
  what: string;
  code: ErrorCode;
  http: { method: "GET" | "POST"; path: string; body?: string };
  grpc: { rpc: string; request: object };
  message: string | RegExp;
}

const CASES: Case[] = [
  {
    what: "trace settings of a model that does not exist",
    code: "NOT_FOUND",
    http: { method: "GET", path: "/v2/models/nope/trace/setting" },
    grpc: { rpc: "TraceSetting", request: { model_name: "nope" } },
    message: /^Request for unknown model: 'nope'/,
  },
  {
    what: "a system shared-memory region of byte_size 0",
    code: "INVALID_ARG",
    http: { method: "POST", path: "/v2/systemsharedmemory/region/r0/register", body: JSON.stringify({ key: "/nereid-parity", offset: 0, byte_size: 0 }) },
    grpc: { rpc: "SystemSharedMemoryRegister", request: { name: "r0", key: "/nereid-parity", offset: 0, byte_size: 0 } },
    message: "invalid offset 0 or byte_size 0 for shared memory region 'r0'",
  },
  {
    what: "a CUDA shared-memory region on device -1 (gRPC used to pass Number(-1) on to the driver)",
    code: "INVALID_ARG",
    http: { method: "POST", path: "/v2/cudasharedmemory/region/c0/register", body: JSON.stringify({ raw_handle: { b64: "" }, device_id: -1, byte_size: 64 }) },
    grpc: { rpc: "CudaSharedMemoryRegister", request: { name: "c0", raw_handle: Buffer.alloc(0), device_id: -1, byte_size: 64 } },
    message: "'device_id' must be a non-negative 32-bit integer",
  },
  {
    what: "a CUDA shared-memory region on a device beyond 32 bits",
    code: "INVALID_ARG",
    http: {
      method: "POST",
      path: "/v2/cudasharedmemory/region/c1/register",
      body: JSON.stringify({ raw_handle: { b64: "" }, device_id: 2 ** 40, byte_size: 64 }),
    },
    grpc: { rpc: "CudaSharedMemoryRegister", request: { name: "c1", raw_handle: Buffer.alloc(0), device_id: 2 ** 40, byte_size: 64 } },
    message: "'device_id' must be a non-negative 32-bit integer",
  },
  {
    what: "a repository index naming a repository",
    code: "UNSUPPORTED",
    http: { method: "POST", path: "/v2/repository/other/index" },
    grpc: { rpc: "RepositoryIndex", request: { repository_name: "other" } },
    message: "'repository_name' specification is not supported",
  },
  {
    what: "an undecodable inference request to a model that does not exist: the model is reported first",
    code: "NOT_FOUND",
    http: { method: "POST", path: "/v2/models/nope/infer", body: "{" },
    grpc: { rpc: "ModelInfer", request: { model_name: "nope", inputs: [{ name: "X", datatype: "NOT_A_TYPE", shape: [1] }] } },
    message: /^Request for unknown model: 'nope'/,
  },
];

const matches = (actual: string, expected: string | RegExp) =>
  typeof expected === "string" ? expect(actual).toBe(expected) : expect(actual).toMatch(expected);

describe("the same bad request gets the same answer over HTTP and gRPC", () => {
  it.each(CASES)("$code: $what", async (c) => {
    const res = await fetch(server.url + c.http.path, { method: c.http.method, body: c.http.body });
    const body = (await res.json()) as { error: string };
    expect({ status: res.status, error: body.error }).toMatchObject({ status: ERROR_CATALOG[c.code].http });
    matches(body.error, c.message);
    const err = await grpc
      .call(c.grpc.rpc)(c.grpc.request)
      .then(
        () => undefined,
        (e: { code: number; details: string }) => e,
      );
    expect(err?.code).toBe(ERROR_CATALOG[c.code].grpc);
    matches(err!.details, c.message);
  });
});
