/**
 * #30 item 5: the HTTP handler sends a POST to a plainly written /v2/models/<m>[/versions/<v>]/infer
 * straight to the infer handler (inferTarget) instead of reading the whole route table.
 * The same requests through the full route table (forced by an --http-restricted-api
 * entry for another category, which turns the shortcut off) must get the same answers,
 * byte for byte, and count the same in the statistics; inferTarget takes exactly the
 * paths the route table would send to the infer handler.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type RunningServer } from "../../../src/startup/start.ts";
import { parseArgs } from "../../../src/options.ts";
import { configureLog } from "../../../src/core/logger.ts";
import { createHttpHandler } from "../../../src/frontends/http/routes.ts";
import { inferTarget } from "../../../src/frontends/http/infer-path.ts";
import { fetchHandler } from "../../../src/frontends/http/fetch.ts";
import { restrictionMap } from "../../../src/frontends/restricted.ts";
import { makeRepository } from "../../helpers/repo.ts";

let repo: ReturnType<typeof makeRepository>;
let running: RunningServer;
let fast: (request: Request) => Promise<Response>;
let general: (request: Request) => Promise<Response>;

const LIMIT = 1 << 16;

beforeAll(async () => {
  repo = makeRepository(["simple", "simple_identity"]);
  configureLog({ info: false, warning: false, error: false, verbose: 0, format: "default" });
  const parsed = parseArgs([`--model-repository=${repo.dir}`, "--allow-http=false", "--allow-grpc=false", "--allow-metrics=false"]);
  if (parsed.kind !== "run") throw new Error("run expected");
  running = await startServer(parsed.options);
  fast = fetchHandler(createHttpHandler(running.server, { maxInputSize: LIMIT }));
  // A restriction on another category: inference stays open, and every request takes the route table.
  const restricted = restrictionMap([{ apis: ["model-repository"], key: "x-admin", value: "1" }]);
  general = fetchHandler(createHttpHandler(running.server, { maxInputSize: LIMIT, restricted }));
});

afterAll(async () => {
  await running?.shutdown();
  repo?.remove();
});

const A = Array.from({ length: 16 }, (_, i) => i);
const input = (name: string, extra: object = {}) => ({ name, shape: [1, 16], datatype: "INT32", data: A, ...extra });
const good = { inputs: [input("INPUT0"), input("INPUT1")] };

interface Case {
  what: string;
  method?: string;
  path: string;
  body?: string | Uint8Array;
  headers?: Record<string, string>;
}

const binaryBody = (() => {
  const json = JSON.stringify({
    inputs: [
      { name: "INPUT0", shape: [1, 16], datatype: "INT32", parameters: { binary_data_size: 64 } },
      { name: "INPUT1", shape: [1, 16], datatype: "INT32", parameters: { binary_data_size: 64 } },
    ],
    outputs: [{ name: "OUTPUT0", parameters: { binary_data: true } }, { name: "OUTPUT1" }],
  });
  const head = new TextEncoder().encode(json);
  const data = new Uint8Array(Int32Array.from(A).buffer);
  const body = new Uint8Array(head.byteLength + 128);
  body.set(head, 0);
  body.set(data, head.byteLength);
  body.set(data, head.byteLength + 64);
  return { body, headerLength: String(head.byteLength) };
})();

const CASES: Case[] = [
  { what: "the common request", path: "/v2/models/simple/infer", body: JSON.stringify(good) },
  { what: "with an id and outputs", path: "/v2/models/simple/infer", body: JSON.stringify({ id: "r1", ...good, outputs: [{ name: "OUTPUT1" }] }) },
  { what: "binary_data_output", path: "/v2/models/simple/infer", body: JSON.stringify({ ...good, parameters: { binary_data_output: true } }) },
  {
    what: "binary inputs and outputs",
    path: "/v2/models/simple/infer",
    body: binaryBody.body,
    headers: { "inference-header-content-length": binaryBody.headerLength },
  },
  { what: "a version", path: "/v2/models/simple/versions/1/infer", body: JSON.stringify(good) },
  { what: "a version not there", path: "/v2/models/simple/versions/7/infer", body: JSON.stringify(good) },
  { what: "a version that is not a number", path: "/v2/models/simple/versions/x/infer", body: JSON.stringify(good) },
  { what: "an empty version", path: "/v2/models/simple/versions//infer", body: JSON.stringify(good) },
  { what: "an unknown model", path: "/v2/models/nope/infer", body: JSON.stringify(good) },
  { what: "a model named versions", path: "/v2/models/versions/infer", body: JSON.stringify(good) },
  { what: "an escaped model name", path: "/v2/models/sim%70le/infer", body: JSON.stringify(good) },
  { what: "a bad escape", path: "/v2/models/sim%zzle/infer", body: JSON.stringify(good) },
  { what: "an empty segment", path: "/v2//models/simple/infer", body: JSON.stringify(good) },
  { what: "a doubled slash before infer", path: "/v2/models/simple//infer", body: JSON.stringify(good) },
  { what: "no model", path: "/v2/models//infer", body: JSON.stringify(good) },
  { what: "a query string", path: "/v2/models/simple/infer?x=1", body: JSON.stringify(good) },
  { what: "GET", method: "GET", path: "/v2/models/simple/infer" },
  { what: "broken JSON", path: "/v2/models/simple/infer", body: '{"inputs": [' },
  { what: "a wrong shape", path: "/v2/models/simple/infer", body: JSON.stringify({ inputs: [input("INPUT0", { shape: [1, 15] }), input("INPUT1")] }) },
  { what: "a missing input", path: "/v2/models/simple/infer", body: JSON.stringify({ inputs: [input("INPUT0")] }) },
  { what: "an unknown output", path: "/v2/models/simple/infer", body: JSON.stringify({ ...good, outputs: [{ name: "NOPE" }] }) },
  { what: "a body over the limit", path: "/v2/models/simple/infer", body: JSON.stringify({ ...good, pad: "x".repeat(LIMIT) }) },
  { what: "an unsupported Content-Encoding", path: "/v2/models/simple/infer", body: JSON.stringify(good), headers: { "content-encoding": "br" } },
  { what: "gzip accepted", path: "/v2/models/simple/infer", body: JSON.stringify(good), headers: { "accept-encoding": "gzip" } },
  { what: "a raw binary request", path: "/v2/models/simple_identity/infer", body: new Uint8Array(16), headers: { "inference-header-content-length": "0" } },
  { what: "generate", path: "/v2/models/simple/generate", body: JSON.stringify({ INPUT0: A, INPUT1: A }) },
];

async function answer(handler: (r: Request) => Promise<Response>, c: Case) {
  const res = await handler(new Request(`http://localhost${c.path}`, { method: c.method ?? "POST", body: c.body, headers: c.headers }));
  return { status: res.status, headers: [...res.headers], body: new Uint8Array(await res.arrayBuffer()) };
}

const inferenceCounts = () =>
  running.server.modelStatistics().model_stats.map((m) => ({
    name: m.name,
    version: m.version,
    inference_count: m.inference_count,
    execution_count: m.execution_count,
    success: m.inference_stats.success.count,
    fail: m.inference_stats.fail.count,
  }));

describe("inference on a plain path, straight to the infer handler", () => {
  it.each(CASES)("answers $what exactly as the route table does, and counts the same", async (c) => {
    const before = inferenceCounts();
    const viaRoutes = await answer(general, c);
    const afterRoutes = inferenceCounts();
    const direct = await answer(fast, c);
    const afterDirect = inferenceCounts();
    expect(direct.status).toBe(viaRoutes.status);
    expect(direct.headers).toEqual(viaRoutes.headers);
    expect(Buffer.from(direct.body).toString("latin1")).toBe(Buffer.from(viaRoutes.body).toString("latin1"));
    const delta = (a: ReturnType<typeof inferenceCounts>, b: ReturnType<typeof inferenceCounts>) =>
      b.map((m, i) => ({
        ...m,
        inference_count: m.inference_count - a[i]!.inference_count,
        execution_count: m.execution_count - a[i]!.execution_count,
        success: m.success - a[i]!.success,
        fail: m.fail - a[i]!.fail,
      }));
    expect(delta(afterRoutes, afterDirect)).toEqual(delta(before, afterRoutes));
  });

  it("the common request succeeds (the comparison above is not between two failures)", async () => {
    const r = await answer(fast, CASES[0]!);
    expect(r.status).toBe(200);
    expect(JSON.parse(new TextDecoder().decode(r.body)).outputs[0].data).toEqual(A.map((x) => 2 * x));
  });

  it("inferTarget takes only plainly written infer paths", () => {
    expect(inferTarget("/v2/models/simple/infer")).toEqual({ model: "simple", version: undefined });
    expect(inferTarget("/v2/models/simple/versions/12/infer")).toEqual({ model: "simple", version: "12" });
    expect(inferTarget("/v2/models/versions/infer")).toEqual({ model: "versions", version: undefined });
    for (const path of [
      "/v2/models//infer",
      "/v2/models/infer",
      "/v2/models/simple//infer",
      "/v2/models/simple/versions//infer",
      "/v2/models/simple/versions/x/infer",
      "/v2/models/simple/versions/1a/infer",
      "/v2/models/simple/versions/1/2/infer",
      "/v2/models/simple/extra/infer",
      "/v2/models/sim%70le/infer",
      "/v2//models/simple/infer",
      "/v2/models/simple/generate",
      "/v2/models/simple/inference",
    ]) {
      expect(inferTarget(path), path).toBeUndefined();
    }
  });
});
