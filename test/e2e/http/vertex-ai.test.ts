/**
 * The Vertex AI frontend through the server binary (#17): AIP_HEALTH_ROUTE, AIP_PREDICT_ROUTE
 * on the default model, redirects to the read-only protocol endpoints (403 for those that
 * change state), and the start-up checks Triton makes (routes defined, default model).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { startServerProcess, serverCommand, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";

let repo: ReturnType<typeof makeRepository>;
let server: ServerProcess;
let vertex: string;

const A = Array.from({ length: 16 }, (_, i) => i);
const ENV = { AIP_PREDICT_ROUTE: "/v1/endpoints/e1/deployedModels/m1:predict", AIP_HEALTH_ROUTE: "/health" };
const PREDICT = "/v1/endpoints/e1/deployedModels/m1:predict";

beforeAll(async () => {
  repo = makeRepository(["simple", "simple_identity"]);
  server = await startServerProcess(
    [`--model-repository=${repo.dir}`, "--allow-vertex-ai=true", "--vertex-ai-port=0", "--vertex-ai-default-model=simple", "--allow-grpc=false", "--allow-metrics=false"],
    { env: ENV },
  );
  let port: string | undefined;
  for (let i = 0; i < 200 && !port; i++) {
    port = /Started Vertex AI HTTPService at 0\.0\.0\.0:(\d+)/.exec(server.log())?.[1];
    if (!port) await new Promise((r) => setTimeout(r, 50));
  }
  vertex = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

const simpleBody = JSON.stringify({ inputs: [{ name: "INPUT0", shape: [1, 16], datatype: "INT32", data: A }, { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: A }] });

describe("Vertex AI", () => {
  it("answers the health route 200 when ready, and other paths 400", async () => {
    expect((await fetch(`${vertex}/health`)).status).toBe(200);
    expect((await fetch(`${vertex}/v2/health/ready`)).status).toBe(400);
  });

  it("predicts with the default model", async () => {
    const res = await fetch(`${vertex}${PREDICT}`, { method: "POST", headers: { "content-type": "application/json" }, body: simpleBody });
    expect(res.status).toBe(200);
    const json = (await res.json()) as { model_name: string; outputs: { name: string; data: number[] }[] };
    expect(json.model_name).toBe("simple");
    expect(json.outputs.find((o) => o.name === "OUTPUT0")!.data).toEqual(A.map((a) => 2 * a));
  });

  it("redirects to read-only endpoints and to another model's infer", async () => {
    const post = (redirect: string, body?: string) => fetch(`${vertex}${PREDICT}`, { method: "POST", headers: { "x-vertex-ai-triton-redirect": redirect }, body });
    const config = (await (await post("v2/models/simple_identity/config")).json()) as { name: string };
    expect(config.name).toBe("simple_identity");
    expect((await post("v2/health/live")).status).toBe(200);
    expect(((await (await post("v2")).json()) as { name: string }).name).toBe("triton");
    const index = (await (await post("v2/repository/index", "{}")).json()) as { name: string }[];
    expect(index.map((m) => m.name)).toEqual(["simple", "simple_identity"]);
    const other = await post(
      "v2/models/simple_identity/infer",
      JSON.stringify({ inputs: [{ name: "INPUT0", shape: [1, 2], datatype: "BYTES", data: ["vertex", "ai"] }] }),
    );
    expect(other.status).toBe(200);
    expect(((await other.json()) as { outputs: { data: string[] }[] }).outputs[0]!.data).toEqual(["vertex", "ai"]);
  });

  it("refuses redirects that change state with 403, and a redirect that is not a POST with 405", async () => {
    const post = (redirect: string) => fetch(`${vertex}${PREDICT}`, { method: "POST", headers: { "x-vertex-ai-triton-redirect": redirect } });
    expect((await post("v2/repository/models/simple/unload")).status).toBe(403);
    expect((await post("v2/systemsharedmemory/region/r/register")).status).toBe(403);
    expect((await fetch(`${vertex}${PREDICT}`, { headers: { "x-vertex-ai-triton-redirect": "v2" } })).status).toBe(405);
    expect((await fetch(`${server.url}/v2/models/simple/ready`)).status).toBe(200);
  });
});

describe("Vertex AI start-up checks", () => {
  const start = (args: string[], env: Record<string, string>) => {
    const { cmd, args: pre } = serverCommand();
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("AIP_"))) as Record<string, string>;
    return spawnSync(cmd, [...pre, `--model-repository=${repo.dir}`, "--allow-vertex-ai=true", "--vertex-ai-port=0", "--http-port=0", "--allow-grpc=false", "--allow-metrics=false", ...args], {
      encoding: "utf8",
      timeout: 60_000,
      env: { ...clean, ...env },
    });
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
