/**
 * The error catalog end to end (issue #20; P-08, G-09): through the server binary, one
 * real request per code a client can provoke, over HTTP and over gRPC, each answered with
 * the status of test/helpers/error-catalog.ts and the same message on both protocols.
 * INTERNAL comes from the FFI: registering a shared-memory object that does not exist is
 * libc's shm_open failing (a NativeError), answered as Triton does. CANCELLED and UNKNOWN
 * cannot be provoked from outside (no path in the server answers them to a client: a
 * cancelled gRPC call is closed by the client's side, and nothing throws UNKNOWN); they
 * are checked through the handlers in test/unit/frontends/error-catalog.test.ts.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { startServerProcess, type ServerProcess } from "../helpers/server-process.ts";
import { makeRepository } from "../helpers/repo.ts";
import { inferenceClient } from "../helpers/grpc-client.ts";
import { createSharedMemory, unlinkSharedMemory } from "../../ffi/libc/shm.ts";
import { ERROR_CATALOG } from "../helpers/error-catalog.ts";
import type { ErrorCode } from "../../src/core/errors.ts";

const KEY = `/nereid-catalog-${process.pid}`;
const MISSING = `/nereid-catalog-${process.pid}-missing`;

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;
let grpc: ReturnType<typeof inferenceClient>;

beforeAll(async () => {
  repo = makeRepository(["simple"]);
  createSharedMemory(KEY, 64);
  // Model control mode none: load/unload are UNAVAILABLE. Client shared memory on, so that
  // registration reaches libc.
  server = await startServerProcess([`--model-repository=${repo.dir}`, "--allow-client-shm=true"]);
  grpc = inferenceClient(server.grpcTarget!);
});

afterAll(async () => {
  grpc?.client.close();
  await server?.stop();
  unlinkSharedMemory(KEY);
  repo?.remove();
});

interface Case {
  code: ErrorCode;
  what: string;
  http: { method: "GET" | "POST"; path: string; body?: object };
  grpc: { rpc: string; request: object };
  message: string | RegExp;
}

const wrongShape = { name: "INPUT0", datatype: "INT32", shape: [1, 15] };
const CASES: Case[] = [
  {
    code: "INVALID_ARG",
    what: "an input whose shape the model does not accept",
    http: {
      method: "POST",
      path: "/v2/models/simple/infer",
      body: {
        inputs: [
          { ...wrongShape, data: Array(15).fill(1) },
          { name: "INPUT1", datatype: "INT32", shape: [1, 16], data: Array(16).fill(1) },
        ],
      },
    },
    grpc: {
      rpc: "ModelInfer",
      request: {
        model_name: "simple",
        inputs: [
          { ...wrongShape, contents: { int_contents: Array(15).fill(1) } },
          { name: "INPUT1", datatype: "INT32", shape: [1, 16], contents: { int_contents: Array(16).fill(1) } },
        ],
      },
    },
    message: /^unexpected shape for input 'INPUT0' for model 'simple'/,
  },
  {
    code: "NOT_FOUND",
    what: "metadata of a model that does not exist",
    http: { method: "GET", path: "/v2/models/nope" },
    grpc: { rpc: "ModelMetadata", request: { name: "nope" } },
    message: /^Request for unknown model: 'nope'/,
  },
  {
    code: "UNAVAILABLE",
    what: "an explicit load while the model control mode is none",
    http: { method: "POST", path: "/v2/repository/models/simple/load" },
    grpc: { rpc: "RepositoryModelLoad", request: { model_name: "simple" } },
    message: "explicit model load / unload is not allowed if polling is enabled",
  },
  {
    code: "UNSUPPORTED",
    what: "a repository name in a repository request",
    http: { method: "POST", path: "/v2/repository/other/models/simple/load" },
    grpc: { rpc: "RepositoryModelLoad", request: { repository_name: "other", model_name: "simple" } },
    message: "'repository_name' specification is not supported",
  },
  {
    code: "ALREADY_EXISTS",
    what: "registering a shared-memory region name twice",
    http: { method: "POST", path: "/v2/systemsharedmemory/region/taken/register", body: { key: KEY, offset: 0, byte_size: 64 } },
    grpc: { rpc: "SystemSharedMemoryRegister", request: { name: "taken", key: KEY, offset: 0, byte_size: 64 } },
    message: "shared memory region 'taken' already in manager",
  },
  {
    code: "INTERNAL",
    what: "registering a shared-memory object that does not exist (libc shm_open fails)",
    http: { method: "POST", path: "/v2/systemsharedmemory/region/gone/register", body: { key: MISSING, offset: 0, byte_size: 64 } },
    grpc: { rpc: "SystemSharedMemoryRegister", request: { name: "gone", key: MISSING, offset: 0, byte_size: 64 } },
    message: `Unable to open shared memory region: '${MISSING}'`,
  },
];

const matches = (actual: string, expected: string | RegExp) =>
  typeof expected === "string" ? expect(actual).toBe(expected) : expect(actual).toMatch(expected);

describe("one request per code a client can provoke, over both protocols", () => {
  beforeAll(async () => {
    // The region ALREADY_EXISTS collides with.
    const r = await fetch(`${server.url}/v2/systemsharedmemory/region/taken/register`, {
      method: "POST",
      body: JSON.stringify({ key: KEY, offset: 0, byte_size: 64 }),
    });
    expect(r.status).toBe(200);
  });

  it("covers every code but CANCELLED and UNKNOWN", () => {
    expect(CASES.map((c) => c.code).sort()).toEqual(
      Object.keys(ERROR_CATALOG)
        .filter((c) => c !== "CANCELLED" && c !== "UNKNOWN")
        .sort(),
    );
  });

  it.each(CASES)("$code over HTTP: $what", async (c) => {
    const res = await fetch(server.url + c.http.path, { method: c.http.method, body: c.http.body === undefined ? undefined : JSON.stringify(c.http.body) });
    expect(res.status).toBe(ERROR_CATALOG[c.code].http);
    expect(res.headers.get("content-type")).toBe("application/json");
    const body = (await res.json()) as { error: string };
    expect(Object.keys(body)).toEqual(["error"]);
    matches(body.error, c.message);
  });

  it.each(CASES)("$code over gRPC: $what", async (c) => {
    const err = await grpc
      .call(c.grpc.rpc)(c.grpc.request)
      .then(
        () => undefined,
        (e: { code: number; details: string }) => e,
      );
    expect(err?.code).toBe(ERROR_CATALOG[c.code].grpc);
    matches(err!.details, c.message);
  });

  it("keeps serving after every error", async () => {
    const res = await fetch(`${server.url}/v2/health/ready`);
    expect(res.status).toBe(200);
  });
});
