/**
 * The SageMaker frontend through the server binary (#17): GET /ping, POST /invocations on
 * SAGEMAKER_TRITON_DEFAULT_MODEL_NAME with a JSON body and with the binary content type
 * Triton's SageMaker server takes, the multi-model routes refused, unknown paths 400,
 * and a bad SAGEMAKER_TRITON_INFERENCE_TYPE refused at start.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { startServerProcess, serverCommand, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";

let repo: ReturnType<typeof makeRepository>;
let server: ServerProcess;
let sagemaker: string;

const A = Array.from({ length: 16 }, (_, i) => i);
const B = Array(16).fill(3);

beforeAll(async () => {
  repo = makeRepository(["simple"]);
  server = await startServerProcess([`--model-repository=${repo.dir}`, "--allow-sagemaker=true", "--sagemaker-port=0", "--allow-grpc=false", "--allow-metrics=false"], {
    env: { SAGEMAKER_TRITON_DEFAULT_MODEL_NAME: "simple" },
  });
  let port: string | undefined;
  for (let i = 0; i < 200 && !port; i++) {
    port = /Started Sagemaker HTTPService at 0\.0\.0\.0:(\d+)/.exec(server.log())?.[1];
    if (!port) await new Promise((r) => setTimeout(r, 50));
  }
  sagemaker = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

describe("SageMaker", () => {
  it("GET /ping answers 200 with an empty body when the server is ready", async () => {
    const res = await fetch(`${sagemaker}/ping`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("");
  });

  it("POST /invocations infers on SAGEMAKER_TRITON_DEFAULT_MODEL_NAME with Triton's JSON", async () => {
    const body = { inputs: [{ name: "INPUT0", shape: [1, 16], datatype: "INT32", data: A }, { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: B }] };
    const res = await fetch(`${sagemaker}/invocations`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    expect(res.status).toBe(200);
    const json = (await res.json()) as { model_name: string; outputs: { name: string; data: number[] }[] };
    expect(json.model_name).toBe("simple");
    expect(json.outputs.find((o) => o.name === "OUTPUT0")!.data).toEqual(A.map((a) => a + 3));
    expect(json.outputs.find((o) => o.name === "OUTPUT1")!.data).toEqual(A.map((a) => a - 3));
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
    expect(JSON.parse(bytes.subarray(0, n).toString()).outputs[0]).toMatchObject({ name: "OUTPUT0", parameters: { binary_data_size: 64 } });
    expect([...new Int32Array(bytes.buffer.slice(bytes.byteOffset + n, bytes.byteOffset + n + 64))]).toEqual(A.map((a) => a + 3));
  });

  it("refuses a malformed binary content type with Triton's message", async () => {
    const res = await fetch(`${sagemaker}/invocations`, { method: "POST", headers: { "content-type": "text/x;application/vnd.sagemaker-triton.binary+json;json-header-size=4" }, body: "{}" });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: "expect MIME type for binary data starts with 'application/vnd.sagemaker-triton.binary+json;json-header-size=', got: text/x;application/vnd.sagemaker-triton.binary+json;json-header-size=4" });
  });

  it("refuses the multi-model routes (a load names a server path) with 501, and answers other paths 400", async () => {
    const load = await fetch(`${sagemaker}/models`, { method: "POST", body: JSON.stringify({ model_name: "m", url: "/etc" }) });
    expect(load.status).toBe(501);
    expect(((await load.json()) as { error: string }).error).toContain("not served by Nereid");
    expect((await fetch(`${sagemaker}/v2/health/ready`)).status).toBe(400);
  });
});

describe("SageMaker settings", () => {
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
