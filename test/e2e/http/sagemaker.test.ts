/**
 * The SageMaker frontend through the server binary (#17), started as Triton's SageMaker
 * image starts tritonserver (--allow-sagemaker=true --allow-http=false): GET /ping, POST
 * /invocations on SAGEMAKER_TRITON_DEFAULT_MODEL_NAME with a JSON body and with the binary
 * content type Triton's SageMaker server takes, errors in Triton's shape, identity
 * compression only, no header forwarding, SAGEMAKER_TRITON_PING_MODE, the model Triton
 * names when the variable is unset, the multi-model routes refused, unknown paths 400,
 * and a bad SAGEMAKER_TRITON_INFERENCE_TYPE refused at start.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { gzipSync } from "node:zlib";
import { startServerProcess, serverCommand, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";

const STARTED = /Started Sagemaker HTTPService at 0\.0\.0\.0:(\d+)/;
const A = Array.from({ length: 16 }, (_, i) => i);
const B = Array(16).fill(3);
const SIMPLE_BODY = JSON.stringify({
  inputs: [
    { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: A },
    { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: B },
  ],
});
/** `simple`'s answer to SIMPLE_BODY, byte for byte. */
const SIMPLE_ANSWER = {
  model_name: "simple",
  model_version: "1",
  outputs: [
    { name: "OUTPUT0", datatype: "INT32", shape: [1, 16], data: A.map((a) => a + 3) },
    { name: "OUTPUT1", datatype: "INT32", shape: [1, 16], data: A.map((a) => a - 3) },
  ],
};

/** A model that answers its request parameters, to see which headers were forwarded; X = -1 makes it fail. */
const PARAMS_MODEL = `
export default class Params {
  execute(requests) {
    if (requests.some((r) => r.input("X").data[0] === -1)) throw new Error("the model failed on X = -1");
    return requests.map((r) => ({ outputs: [{ name: "PARAMS", datatype: "BYTES", shape: [1], data: [JSON.stringify(r.parameters)] }] }));
  }
}
`;
const PARAMS_CONFIG = `name: "params"
backend: "typescript"
max_batch_size: 0
input [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "PARAMS" data_type: TYPE_STRING dims: [ 1 ] } ]
`;
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

  it("POST /invocations infers on SAGEMAKER_TRITON_DEFAULT_MODEL_NAME with Triton's JSON", async () => {
    const res = await fetch(`${sagemaker}/invocations`, { method: "POST", headers: { "content-type": "application/json" }, body: SIMPLE_BODY });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(await res.json()).toEqual(SIMPLE_ANSWER);
  });

  it("takes and gives binary data under the SageMaker content type", async () => {
    const header = JSON.stringify({
      inputs: [
        { name: "INPUT0", shape: [1, 16], datatype: "INT32", parameters: { binary_data_size: 64 } },
        { name: "INPUT1", shape: [1, 16], datatype: "INT32", parameters: { binary_data_size: 64 } },
      ],
      outputs: [{ name: "OUTPUT0", parameters: { binary_data: true } }],
    });
    const body = Buffer.concat([Buffer.from(header), Buffer.from(new Int32Array(A).buffer), Buffer.from(new Int32Array(B).buffer)]);
    const res = await fetch(`${sagemaker}/invocations`, {
      method: "POST",
      headers: { "content-type": `application/vnd.sagemaker-triton.binary+json;json-header-size=${Buffer.byteLength(header)}` },
      body,
    });
    expect(res.status).toBe(200);
    const type = res.headers.get("content-type")!;
    const m = /^application\/vnd\.sagemaker-triton\.binary\+json;json-header-size=(\d+)$/.exec(type);
    expect(m).not.toBeNull();
    expect(res.headers.get("inference-header-content-length")).toBeNull();
    const bytes = Buffer.from(await res.arrayBuffer());
    const n = Number(m![1]);
    expect(JSON.parse(bytes.subarray(0, n).toString())).toEqual({
      model_name: "simple",
      model_version: "1",
      outputs: [{ name: "OUTPUT0", datatype: "INT32", shape: [1, 16], parameters: { binary_data_size: 64 } }],
    });
    expect(bytes.byteLength).toBe(n + 64);
    expect([...new Int32Array(bytes.buffer.slice(bytes.byteOffset + n, bytes.byteOffset + n + 64))]).toEqual(A.map((a) => a + 3));
  });

  it("refuses a malformed binary content type with Triton's messages", async () => {
    const post = async (type: string, body = "{}") => {
      const res = await fetch(`${sagemaker}/invocations`, { method: "POST", headers: { "content-type": type }, body });
      return { status: res.status, json: await res.json() };
    };
    const prefix = "application/vnd.sagemaker-triton.binary+json;json-header-size=";
    expect(await post(`text/x;${prefix}4`)).toEqual({
      status: 400,
      json: { error: `expect MIME type for binary data starts with '${prefix}', got: text/x;${prefix}4` },
    });
    expect(await post(`${prefix}abc`)).toEqual({ status: 400, json: { error: "Unable to parse inference header size, got: abc" } });
    expect(await post(`${prefix}3`, "{}")).toEqual({ status: 400, json: { error: "inference header size should be in range (0, 2), got: 3" } });
  });

  it("answers a request the model refuses with Triton's error shape and status", async () => {
    const body = JSON.stringify({
      inputs: [
        { name: "INPUT0", shape: [1, 15], datatype: "INT32", data: A.slice(1) },
        { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: B },
      ],
    });
    const res = await fetch(`${sagemaker}/invocations`, { method: "POST", body });
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(await res.json()).toEqual({
      error:
        "unexpected shape for input 'INPUT0' for model 'simple'. Expected [-1,16], got [1,15]. NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to be prepended to each input shape. If you want to specify the full shape including the batch dim in your input dims config, try setting max_batch_size to zero. See the model configuration docs for more info on max_batch_size.",
    });
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

  const params = async (url: string) => {
    const res = await fetch(url, {
      method: "POST",
      headers: { "x-fwd-user": "alice" },
      body: JSON.stringify({ inputs: [{ name: "X", shape: [1], datatype: "INT32", data: [1] }] }),
    });
    expect(res.status).toBe(200);
    return JSON.parse(((await res.json()) as { outputs: { data: string[] }[] }).outputs[0]!.data[0]!);
  };

  it("forwards no headers, as Triton's SageMaker server has no forward pattern (--http-header-forward-pattern is HTTP's)", async () => {
    expect(await params(`${http}/v2/models/params/infer`)).toEqual({ "x-fwd-user": "alice" });
    expect(await params(`${both.url}/invocations`)).toEqual({});
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
