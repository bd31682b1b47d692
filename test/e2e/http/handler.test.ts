/**
 * The HTTP frontend with no socket (test/helpers/http-handler.ts: Nereid.fetch, the
 * handler the HTTP listener serves): the shared HTTP suite (test/suites/http.ts: the route
 * table, exact answers and Triton's errors; P-01..P-08, P-11, P-12, P-16) and what only
 * the handler's own server shows: a web Request, the server's options, the repository and
 * statistics (P-17, P-21, P-26, P-32). The listeners run the same HTTP suite through the
 * shared frontend suite; the listener's own behaviour (body limits as Bun.serve and
 * node:http enforce them, gzip) stays in infer.test.ts.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { expectError, startHandler, statusAndJson, type HttpCall } from "../../helpers/http-handler.ts";
import { SIMPLE_METADATA } from "../../helpers/repo.ts";
import { SHM_DISABLED } from "../../../src/server/shared-memory.ts";
import { httpSuite } from "../../suites/http.ts";
import type { InProcessServer } from "../../helpers/inprocess.ts";

const A = Array.from({ length: 16 }, (_, i) => i);
const B = Array.from({ length: 16 }, (_, i) => 2 * i + 1);

const simpleJson = () => ({
  inputs: [
    { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: A },
    { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: B },
  ],
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

const infer = (body: unknown) => call("POST", "/v2/models/simple/infer", body as object, KEY);

httpSuite("the handler with no socket", () => ({ call: (method, path, body, headers) => call(method, path, body, { ...KEY, ...headers }) }));

describe("a web Request", () => {
  it("takes a web Request as well as a path, and ignores the query string", async () => {
    const res = await s.nereid.fetch(new Request("http://nereid.invalid/v2/models/simple?verbose=1"));
    expect(await statusAndJson(res)).toEqual({ status: 200, json: SIMPLE_METADATA });
    // As a Bun.serve or Deno.serve handler: what they pass after the Request is not read.
    const served = await s.nereid.fetch(new Request("http://nereid.invalid/v2/health/ready"), { port: 8000, hostname: "0.0.0.0" } as RequestInit);
    expect(served.status).toBe(200);
  });
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
