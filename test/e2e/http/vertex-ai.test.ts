/**
 * The Vertex AI frontend through the server binary (#17): AIP_HEALTH_ROUTE, AIP_PREDICT_ROUTE
 * on the default model (the shared endpoint suite, test/suites/cloud-endpoint.ts: JSON,
 * Vertex AI's binary content type, errors in Triton's shape; SageMaker runs it too),
 * redirects to the read-only protocol endpoints (403 for those that change state), no
 * header forwarding, AIP_MODE=PREDICTION serving Vertex AI alone from AIP_STORAGE_URI,
 * and the start-up checks Triton makes (routes defined, default model).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { startServerProcess, serverCommand, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { endpointSuite, forwardedParams, PARAMS_CONFIG, PARAMS_MODEL, SIMPLE_ANSWER, SIMPLE_BODY } from "../../suites/cloud-endpoint.ts";

let repo: ReturnType<typeof makeRepository>;
let server: ServerProcess;
let vertex: string;

const ENV = { AIP_PREDICT_ROUTE: "/v1/endpoints/e1/deployedModels/m1:predict", AIP_HEALTH_ROUTE: "/health" };
const PREDICT = "/v1/endpoints/e1/deployedModels/m1:predict";

const STARTED = /Started Vertex AI HTTPService at 0\.0\.0\.0:(\d+)/;

beforeAll(async () => {
  repo = makeRepository(["simple", "simple_identity"]);
  repo.add("params/config.pbtxt", PARAMS_CONFIG);
  repo.add("params/1/model.js", PARAMS_MODEL);
  server = await startServerProcess(
    [
      `--model-repository=${repo.dir}`,
      "--allow-vertex-ai=true",
      "--vertex-ai-port=0",
      "--vertex-ai-default-model=simple",
      "--http-header-forward-pattern=^x-fwd-",
      "--allow-grpc=false",
      "--allow-metrics=false",
    ],
    { env: ENV },
  );
  let port: string | undefined;
  for (let i = 0; i < 200 && !port; i++) {
    port = STARTED.exec(server.log())?.[1];
    if (!port) await new Promise((r) => setTimeout(r, 50));
  }
  vertex = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

endpointSuite("Vertex AI's AIP_PREDICT_ROUTE on --vertex-ai-default-model", () => ({
  invoke: (body, headers) => fetch(`${vertex}${PREDICT}`, { method: "POST", headers, body }),
  binaryMime: "application/vnd.vertex-ai-triton.binary+json;json-header-size=",
}));

describe("Vertex AI", () => {
  it("answers the health route 200 when ready, and other paths 400", async () => {
    expect((await fetch(`${vertex}/health`)).status).toBe(200);
    expect((await fetch(`${vertex}/v2/health/ready`)).status).toBe(400);
  });

  it("redirects to read-only endpoints and to another model's infer", async () => {
    const post = (redirect: string, body?: string) =>
      fetch(`${vertex}${PREDICT}`, { method: "POST", headers: { "x-vertex-ai-triton-redirect": redirect }, body });
    const config = (await (await post("v2/models/simple_identity/config")).json()) as { name: string };
    expect(config.name).toBe("simple_identity");
    expect((await post("v2/health/live")).status).toBe(200);
    expect(((await (await post("v2")).json()) as { name: string }).name).toBe("triton");
    const index = (await (await post("v2/repository/index", "{}")).json()) as { name: string }[];
    expect(index.map((m) => m.name)).toEqual(["params", "simple", "simple_identity"]);
    const other = await post(
      "v2/models/simple_identity/infer",
      JSON.stringify({ inputs: [{ name: "INPUT0", shape: [1, 2], datatype: "BYTES", data: ["vertex", "ai"] }] }),
    );
    expect(other.status).toBe(200);
    expect(((await other.json()) as { outputs: { data: string[] }[] }).outputs[0]!.data).toEqual(["vertex", "ai"]);
  });

  it("answers an unknown redirected model with Triton's error shape and status", async () => {
    const unknown = await fetch(`${vertex}${PREDICT}`, { method: "POST", headers: { "x-vertex-ai-triton-redirect": "v2/models/nope/config" } });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: "Request for unknown model: 'nope' is not found" });
  });

  it("answers 400 with no body for a redirect to an endpoint Triton does not let through", async () => {
    const post = (redirect: string) => fetch(`${vertex}${PREDICT}`, { method: "POST", headers: { "x-vertex-ai-triton-redirect": redirect } });
    for (const redirect of ["v2/models/simple/versions/one/config", "v2/models/simple/generate", "v2/logging", "v2/trace/setting", "metrics", "nothing"]) {
      const res = await post(redirect);
      expect(res.status, redirect).toBe(400);
      expect(await res.text(), redirect).toBe("");
    }
  });

  it("forwards no headers, as Triton's Vertex AI server has no forward pattern (--http-header-forward-pattern is HTTP's)", async () => {
    expect(await forwardedParams(`${server.url}/v2/models/params/infer`)).toEqual({ "x-fwd-user": "alice" });
    expect(await forwardedParams(`${vertex}${PREDICT}`, { "x-vertex-ai-triton-redirect": "v2/models/params/infer" })).toEqual({});
  });

  it("refuses redirects that change state with 403, and a redirect that is not a POST with 405", async () => {
    const post = (redirect: string) => fetch(`${vertex}${PREDICT}`, { method: "POST", headers: { "x-vertex-ai-triton-redirect": redirect } });
    expect((await post("v2/repository/models/simple/unload")).status).toBe(403);
    expect((await post("v2/systemsharedmemory/region/r/register")).status).toBe(403);
    expect((await fetch(`${vertex}${PREDICT}`, { headers: { "x-vertex-ai-triton-redirect": "v2" } })).status).toBe(405);
    expect((await fetch(`${server.url}/v2/models/simple/ready`)).status).toBe(200);
  });
});

describe("AIP_MODE=PREDICTION", () => {
  it("serves Vertex AI alone on AIP_HTTP_PORT, from AIP_STORAGE_URI, with its only model as the default", async () => {
    const single = makeRepository(["simple"]);
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("AIP_"))) as Record<string, string>;
    const { cmd, args } = serverCommand();
    // No --model-repository and no --allow-* flags: the environment alone, as Vertex AI starts a container.
    const aip = await startServerProcess(["--allow-metrics=false"], {
      command: [cmd, ...args],
      env: { ...clean, ...ENV, AIP_MODE: "PREDICTION", AIP_HTTP_PORT: "0", AIP_STORAGE_URI: single.dir },
      cleanEnv: true,
      started: STARTED,
    });
    try {
      expect(aip.log()).not.toMatch(/Started HTTPService|Started GRPCInferenceService/);
      expect((await fetch(`${aip.url}/health`)).status).toBe(200);
      const res = await fetch(`${aip.url}${PREDICT}`, { method: "POST", body: SIMPLE_BODY });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual(SIMPLE_ANSWER);
    } finally {
      await aip.stop();
      single.remove();
    }
  });
});

describe("Vertex AI start-up checks", () => {
  const start = (args: string[], env: Record<string, string>) => {
    const { cmd, args: pre } = serverCommand();
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("AIP_"))) as Record<string, string>;
    return spawnSync(
      cmd,
      [
        ...pre,
        `--model-repository=${repo.dir}`,
        "--allow-vertex-ai=true",
        "--vertex-ai-port=0",
        "--http-port=0",
        "--allow-grpc=false",
        "--allow-metrics=false",
        ...args,
      ],
      {
        encoding: "utf8",
        timeout: 60_000,
        env: { ...clean, ...env },
      },
    );
  };

  it("without AIP_PREDICT_ROUTE: exit 1 with Triton's message", () => {
    const r = start([], { AIP_HEALTH_ROUTE: "/health" });
    expect(r.status).toBe(1);
    expect(r.stderr + r.stdout).toContain("API_PREDICT_ROUTE is not defined for Vertex AI endpoint");
  });

  it("two models and no default model: exit 1 with Triton's message", () => {
    const r = start([], ENV);
    expect(r.status).toBe(1);
    expect(r.stderr + r.stdout).toContain("Expect the model repository contains only a single model if default model is not specified");
  });
});
