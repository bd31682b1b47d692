/**
 * The SageMaker and Vertex AI routing tables (#17), against a stub HTTP handler that
 * records what it is asked: which /v2 route each request becomes, with which method, and
 * which headers the HTTP frontend gets to read (sagemaker_server.cc, vertex_ai_server.cc).
 */
import { describe, expect, it } from "vitest";
import { createSagemakerHandler } from "../../../src/frontends/sagemaker.ts";
import { createVertexAiHandler } from "../../../src/frontends/vertex-ai.ts";
import type { HttpHandler } from "../../../src/frontends/http/routes.ts";
import type { HttpRequest, HttpResponse } from "../../../src/frontends/http/types.ts";

interface Seen {
  method: string;
  path: string;
  headers: Record<string, string | undefined>;
}

/** A stub HTTP frontend: records each call; answers a binary infer when asked for binary output. */
function stub(answer: HttpResponse = { status: 200, headers: {} }) {
  const seen: Seen[] = [];
  const http = (async (req: HttpRequest) => {
    const headers = Object.fromEntries(
      ["content-encoding", "accept-encoding", "inference-header-content-length", "x-vertex-ai-triton-redirect"].map((h) => [h, req.header(h)]),
    );
    seen.push({ method: req.method, path: req.path, headers });
    return answer;
  }) as HttpHandler;
  return { http, seen };
}

function request(method: string, path: string, headers: Record<string, string> = {}): HttpRequest {
  const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  return { method, path, header: (name) => lower[name.toLowerCase()], body: async () => new Uint8Array() };
}

describe("SageMaker routes", () => {
  const options = { model: "my model", pingMode: "ready" as const, inferenceType: "infer" as const };

  it("/ping is the ping mode's health route; /invocations the default model's infer (or generate), its name escaped", async () => {
    const { http, seen } = stub();
    await createSagemakerHandler(http, options)(request("GET", "/ping"));
    await createSagemakerHandler(http, { ...options, pingMode: "live" })(request("GET", "/ping"));
    await createSagemakerHandler(http, options)(request("POST", "/invocations"));
    await createSagemakerHandler(http, { ...options, inferenceType: "generate_stream" })(request("POST", "/invocations"));
    expect(seen.map((s) => `${s.method} ${s.path}`)).toEqual([
      "GET /v2/health/ready",
      "GET /v2/health/live",
      "POST /v2/models/my%20model/infer",
      "POST /v2/models/my%20model/generate_stream",
    ]);
  });

  it("hides Content-Encoding and Accept-Encoding from the HTTP frontend, and turns the binary content type into the header length", async () => {
    const { http, seen } = stub();
    const h = {
      "content-encoding": "gzip",
      "accept-encoding": "gzip",
      "content-type": "application/vnd.sagemaker-triton.binary+json;json-header-size=7",
      "content-length": "20",
    };
    await createSagemakerHandler(http, options)(request("POST", "/invocations", h));
    expect(seen[0]!.headers).toEqual({
      "content-encoding": undefined,
      "accept-encoding": undefined,
      "inference-header-content-length": "7",
      "x-vertex-ai-triton-redirect": undefined,
    });
  });

  it("gives a binary answer the SageMaker content type in place of Inference-Header-Content-Length", async () => {
    const { http } = stub({ status: 200, headers: { "content-type": "application/octet-stream", "inference-header-content-length": "42" }, body: "x" });
    const res = await createSagemakerHandler(http, options)(request("POST", "/invocations"));
    expect(res.headers).toEqual({ "content-type": "application/vnd.sagemaker-triton.binary+json;json-header-size=42" });
  });

  it("answers the multi-model routes 501 and anything else 400, without calling the HTTP frontend", async () => {
    const { http, seen } = stub();
    const handle = createSagemakerHandler(http, options);
    for (const [method, path] of [
      ["GET", "/models"],
      ["POST", "/models"],
      ["GET", "/models/m"],
      ["POST", "/models/m/invoke"],
      ["DELETE", "/models/m"],
    ]) {
      expect((await handle(request(method!, path!))).status).toBe(501);
    }
    for (const path of ["/", "/v2/health/ready", "/ping/", "/invocations/x", "/models/m/other"]) {
      expect(await handle(request("GET", path))).toEqual({ status: 400, headers: {} });
    }
    expect(seen).toEqual([]);
  });
});

describe("Vertex AI routes", () => {
  const metricsSeen: string[] = [];
  const metrics = (async (req: HttpRequest) => {
    metricsSeen.push(`${req.method} ${req.path}`);
    return { status: 200, headers: {}, body: "nv_inference_count 0\n" };
  }) as HttpHandler;
  const options = { predictRoute: "/v1/endpoints/[^/]+:predict", healthRoute: "/health", model: "simple" };
  const redirect = (to: string, method = "POST") => request(method, "/v1/endpoints/e1:predict", { "x-vertex-ai-triton-redirect": to });

  it("the routes are regular expressions matched against the whole path", async () => {
    const { http, seen } = stub();
    const handle = createVertexAiHandler(http, options);
    await handle(request("GET", "/health"));
    await handle(request("POST", "/v1/endpoints/e2:predict"));
    expect((await handle(request("GET", "/healthz"))).status).toBe(400);
    expect((await handle(request("POST", "/x/v1/endpoints/e2:predict"))).status).toBe(400);
    expect(seen.map((s) => `${s.method} ${s.path}`)).toEqual(["GET /v2/health/ready", "POST /v2/models/simple/infer"]);
  });

  it("a redirect reaches the read-only endpoints as GET, infer and the repository index as POST", async () => {
    const { http, seen } = stub();
    const handle = createVertexAiHandler(http, { ...options, metrics });
    const allowed = [
      "v2",
      "v2/health/live",
      "v2/models/stats",
      "v2/models/m",
      "v2/models/m/versions/2/ready",
      "v2/models/m/config",
      "v2/models/m/stats",
      "v2/systemsharedmemory/status",
      "v2/cudasharedmemory/region/r/status",
      "v2/models/m/versions/3/infer",
      "v2/repository/index",
      "v2/repository/r/index",
    ];
    for (const to of allowed) expect((await handle(redirect(to))).status, to).toBe(200);
    expect(seen.map((s) => `${s.method} ${s.path}`)).toEqual([
      "GET /v2",
      "GET /v2/health/live",
      "GET /v2/models/stats",
      "GET /v2/models/m",
      "GET /v2/models/m/versions/2/ready",
      "GET /v2/models/m/config",
      "GET /v2/models/m/stats",
      "GET /v2/systemsharedmemory/status",
      "GET /v2/cudasharedmemory/region/r/status",
      "POST /v2/models/m/versions/3/infer",
      "POST /v2/repository/index",
      "POST /v2/repository/r/index",
    ]);
    expect((await handle(redirect("metrics"))).body).toBe("nv_inference_count 0\n");
    expect(metricsSeen).toEqual(["GET /metrics"]);
  });

  it("refuses redirects that change state (403), that are not a POST (405), and any other endpoint (400)", async () => {
    const { http, seen } = stub();
    const handle = createVertexAiHandler(http, options);
    for (const to of [
      "v2/systemsharedmemory/region/r/register",
      "v2/cudasharedmemory/unregister",
      "v2/repository/models/m/load",
      "v2/repository/r/models/m/unload",
    ]) {
      expect(await handle(redirect(to)), to).toEqual({ status: 403, headers: {} });
    }
    expect(await handle(redirect("v2", "GET"))).toEqual({ status: 405, headers: {} });
    for (const to of ["metrics", "v2/models/m/versions/x/config", "v2/models/m/generate", "v2/logging", "v2/trace/setting", "v2/health", "/v2"]) {
      expect(await handle(redirect(to)), to).toEqual({ status: 400, headers: {} });
    }
    expect(seen).toEqual([]);
  });

  it("reads the header length from the Vertex AI content type on predict and on a redirected infer", async () => {
    const { http, seen } = stub();
    const handle = createVertexAiHandler(http, options);
    const type = { "content-type": "application/vnd.vertex-ai-triton.binary+json;json-header-size=5", "content-length": "9" };
    await handle(request("POST", "/v1/endpoints/e1:predict", type));
    await handle(request("POST", "/v1/endpoints/e1:predict", { ...type, "x-vertex-ai-triton-redirect": "v2/models/m/infer" }));
    expect(seen.map((s) => s.headers["inference-header-content-length"])).toEqual(["5", "5"]);
  });
});
