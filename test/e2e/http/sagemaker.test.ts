/**
 * The SageMaker frontend through the server binary (#17), started as Triton's SageMaker
 * image starts tritonserver (--allow-sagemaker=true --allow-http=false): GET /ping, POST
 * /invocations on SAGEMAKER_TRITON_DEFAULT_MODEL_NAME (the shared endpoint suite,
 * test/suites/cloud-endpoint.ts: JSON, SageMaker's binary content type, errors in
 * Triton's shape; Vertex AI runs it too), identity compression only, no header forwarding, SAGEMAKER_TRITON_PING_MODE, the model Triton
 * names when the variable is unset, the multi-model routes refused, unknown paths 400,
 * and a bad SAGEMAKER_TRITON_INFERENCE_TYPE refused at start.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { gzipSync } from "node:zlib";
import { startServerProcess, serverCommand, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { endpointSuite, forwardedParams, PARAMS_CONFIG, PARAMS_MODEL, SIMPLE_ANSWER, SIMPLE_BODY } from "../../suites/cloud-endpoint.ts";

const STARTED = /Started Sagemaker HTTPService at 0\.0\.0\.0:(\d+)/;
/** A model whose load fails: with --exit-on-error=false the server is live but not ready. */
const BROKEN_CONFIG = 'name: "broken"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 8\ninput [ { name: "X" data_type: TYPE_NOPE dims: [ 1 ] } ]\n';

let repo: ReturnType<typeof makeRepository>;
let server: ServerProcess;
let sagemaker: string;

beforeAll(async () => {
  repo = makeRepository(["simple"]);
  repo.add("params/config.pbtxt", PARAMS_CONFIG);
  repo.add("params/1/model.js", PARAMS_MODEL);
  // As Triton's SageMaker image (docker/sagemaker/serve) runs it: no HTTP, gRPC or metrics.
  server = await startServerProcess(
    [`--model-repository=${repo.dir}`, "--allow-sagemaker=true", "--sagemaker-port=0", "--allow-http=false", "--allow-grpc=false", "--allow-metrics=false"],
    {
      env: { SAGEMAKER_TRITON_DEFAULT_MODEL_NAME: "simple" },
      started: STARTED,
    },
  );
  sagemaker = server.url;
});

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

endpointSuite("SageMaker's /invocations on SAGEMAKER_TRITON_DEFAULT_MODEL_NAME", () => ({
  invoke: (body, headers) => fetch(`${sagemaker}/invocations`, { method: "POST", headers, body }),
  binaryMime: "application/vnd.sagemaker-triton.binary+json;json-header-size=",
}));

describe("SageMaker with --allow-http=false", () => {
  it("starts no HTTP service, only SageMaker's", () => {
    expect(server.log()).not.toMatch(/Started HTTPService/);
    expect(server.log()).toMatch(STARTED);
  });

  it("GET /ping answers 200 with an empty body when the server is ready", async () => {
    const res = await fetch(`${sagemaker}/ping`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("");
  });

  it("answers GET /invocations 405 with Triton's error shape", async () => {
    const get = await fetch(`${sagemaker}/invocations`);
    expect(get.status).toBe(405);
    expect(await get.json()).toEqual({ error: "Method Not Allowed" });
  });

  it("reads no Content-Encoding and compresses no answer (Triton's SageMaker server is identity only)", async () => {
    const gzipped = await fetch(`${sagemaker}/invocations`, { method: "POST", headers: { "content-encoding": "gzip" }, body: gzipSync(SIMPLE_BODY) });
    expect(gzipped.status).toBe(400);
    expect(((await gzipped.json()) as { error: string }).error).toMatch(/^failed to parse the request JSON buffer/);
    const res = await fetch(`${sagemaker}/invocations`, { method: "POST", headers: { "accept-encoding": "gzip, deflate" }, body: SIMPLE_BODY });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-encoding")).toBeNull();
    expect(await res.json()).toEqual(SIMPLE_ANSWER);
  });

  it("refuses the multi-model routes (a load names a server path) with 501, and answers other paths 400", async () => {
    for (const [method, path, body] of [
      ["POST", "/models", JSON.stringify({ model_name: "m", url: "/etc" })],
      ["GET", "/models", undefined],
      ["GET", "/models/m", undefined],
      ["POST", "/models/m/invoke", SIMPLE_BODY],
      ["DELETE", "/models/m", undefined],
    ] as const) {
      const res = await fetch(`${sagemaker}${path}`, { method, body });
      expect(res.status, `${method} ${path}`).toBe(501);
      expect(await res.json()).toEqual({ error: "SageMaker multi-model endpoints (/models) are not served by Nereid: loading names a path on the server" });
    }
    for (const path of ["/v2/health/ready", "/v2/models/simple/infer", "/pingx", "/invocations/x"]) {
      const res = await fetch(`${sagemaker}${path}`);
      expect(res.status, path).toBe(400);
      expect(await res.text()).toBe("");
    }
  });
});

describe("SageMaker beside HTTP", () => {
  let both: ServerProcess;
  let extra: ReturnType<typeof makeRepository>;
  let http: string;
  beforeAll(async () => {
    extra = makeRepository([]);
    extra.add("params/config.pbtxt", PARAMS_CONFIG);
    extra.add("params/1/model.js", PARAMS_MODEL);
    extra.add("broken/config.pbtxt", BROKEN_CONFIG);
    both = await startServerProcess(
      [
        `--model-repository=${extra.dir}`,
        "--allow-sagemaker=true",
        "--sagemaker-port=0",
        "--http-header-forward-pattern=^x-fwd-",
        "--exit-on-error=false",
        "--allow-grpc=false",
        "--allow-metrics=false",
      ],
      { env: { SAGEMAKER_TRITON_DEFAULT_MODEL_NAME: "params", SAGEMAKER_TRITON_PING_MODE: "live" }, started: STARTED },
    );
    http = `http://127.0.0.1:${/Started HTTPService at [^\s:]+:(\d+)/.exec(both.log())![1]}`;
  });
  afterAll(async () => {
    await both?.stop();
    extra?.remove();
  });

  it("forwards no headers, as Triton's SageMaker server has no forward pattern (--http-header-forward-pattern is HTTP's)", async () => {
    expect(await forwardedParams(`${http}/v2/models/params/infer`)).toEqual({ "x-fwd-user": "alice" });
    expect(await forwardedParams(`${both.url}/invocations`)).toEqual({});
  });

  it("answers 400 to an error that comes after queueing, whatever its code, as Triton's SageMaker server does", async () => {
    const body = JSON.stringify({ inputs: [{ name: "X", shape: [1], datatype: "INT32", data: [-1] }] });
    const viaHttp = await fetch(`${http}/v2/models/params/infer`, { method: "POST", body });
    const viaSagemaker = await fetch(`${both.url}/invocations`, { method: "POST", body });
    expect([viaHttp.status, viaSagemaker.status]).toEqual([500, 400]);
    const expected = { error: "model 'params': the model failed on X = -1" };
    expect([await viaHttp.json(), await viaSagemaker.json()]).toEqual([expected, expected]);
  });

  it("SAGEMAKER_TRITON_PING_MODE=live: /ping answers 200 while the server is live but not ready", async () => {
    expect((await fetch(`${http}/v2/health/ready`)).status).toBe(400);
    const ping = await fetch(`${both.url}/ping`);
    expect(ping.status).toBe(200);
    expect(await ping.text()).toBe("");
  });
});

describe("SageMaker settings", () => {
  it("without SAGEMAKER_TRITON_DEFAULT_MODEL_NAME, /invocations names Triton's placeholder model and answers its 404", async () => {
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SAGEMAKER_"))) as Record<string, string>;
    const unset = await startServerProcess(
      [`--model-repository=${repo.dir}`, "--allow-sagemaker=true", "--sagemaker-port=0", "--allow-http=false", "--allow-grpc=false", "--allow-metrics=false"],
      {
        env,
        cleanEnv: true,
        started: STARTED,
      },
    );
    try {
      expect((await fetch(`${unset.url}/ping`)).status).toBe(200);
      const res = await fetch(`${unset.url}/invocations`, { method: "POST", body: SIMPLE_BODY });
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ error: "Request for unknown model: 'unspecified_SAGEMAKER_TRITON_DEFAULT_MODEL_NAME' is not found" });
    } finally {
      await unset.stop();
    }
  });

  it("a bad SAGEMAKER_TRITON_INFERENCE_TYPE stops the start with exit 1", () => {
    const { cmd, args } = serverCommand();
    const r = spawnSync(cmd, [...args, `--model-repository=${repo.dir}`, "--allow-sagemaker=true", "--sagemaker-port=0", "--http-port=0"], {
      encoding: "utf8",
      timeout: 60_000,
      env: { ...process.env, SAGEMAKER_TRITON_INFERENCE_TYPE: "classify" },
    });
    expect(r.status).toBe(1);
    expect(r.stderr + r.stdout).toContain("Invalid SAGEMAKER_TRITON_INFERENCE_TYPE 'classify'. Must be one of: infer, generate, generate_stream.");
  });
});
