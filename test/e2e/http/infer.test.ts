/**
 * End to end over HTTP against a server process (the compiled binary when built):
 * P-01..P-09, P-11..P-15, S-01 on the `simple`, `simple_identity` and
 * `simple_classifier` example models.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { gzipSync } from "node:zlib";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository, SIMPLE_METADATA } from "../../helpers/repo.ts";

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;

const A = Array.from({ length: 16 }, (_, i) => i);
const B = Array.from({ length: 16 }, (_, i) => 2 * i + 1);
const SUM = A.map((a, i) => a + B[i]!);
const DIFF = A.map((a, i) => a - B[i]!);

function int32Bytes(values: number[]): Uint8Array {
  return new Uint8Array(Int32Array.from(values).buffer);
}

function simpleJson(extra: Record<string, unknown> = {}) {
  return {
    inputs: [
      { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: A },
      { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: B },
    ],
    ...extra,
  };
}

async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  const payload = typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body);
  return fetch(server.url + path, { method: "POST", body: payload, headers });
}

async function expectError(res: Response, status: number, message: string | RegExp) {
  expect(res.status).toBe(status);
  const body = (await res.json()) as { error: string };
  if (typeof message === "string") expect(body.error).toBe(message);
  else expect(body.error).toMatch(message);
}

/** Splits a binary-extension response into its JSON header and binary tail. */
async function splitBinary(res: Response) {
  const headerLength = Number(res.headers.get("inference-header-content-length"));
  const buf = new Uint8Array(await res.arrayBuffer());
  const header = JSON.parse(new TextDecoder().decode(buf.subarray(0, headerLength)));
  return { header, tail: buf.subarray(headerLength) };
}

beforeAll(async () => {
  repo = makeRepository(["simple", "simple_identity", "simple_classifier", "ocr_det"]);
  server = await startServerProcess([`--model-repository=${repo.dir}`, "--http-max-input-size=1048576"]);
});

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

describe("health and metadata (P-01..P-05, P-16)", () => {
  it("live and ready answer 200 with an empty body", async () => {
    for (const p of ["/v2/health/live", "/v2/health/ready"]) {
      const res = await fetch(server.url + p);
      expect(res.status).toBe(200);
      expect(await res.text()).toBe("");
    }
  });

  it("server metadata names only working extensions", async () => {
    const res = await fetch(server.url + "/v2");
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toEqual({
      name: "triton",
      version: expect.any(String),
      extensions: [
        "classification",
        "sequence",
        "model_repository",
        "model_repository(unload_dependents)",
        "schedule_policy",
        "model_configuration",
        "system_shared_memory",
        "cuda_shared_memory",
        "logging",
        "binary_tensor_data",
        "parameters",
        "statistics",
        "trace",
      ],
    });
  });

  it("model metadata has [-1]+dims for batching models", async () => {
    for (const path of ["/v2/models/simple", "/v2/models/simple/versions/1"]) {
      const res = await fetch(server.url + path);
      expect(await res.json()).toEqual(SIMPLE_METADATA);
    }
  });

  it("model ready is 200 and the config is the normalized JSON", async () => {
    expect((await fetch(server.url + "/v2/models/simple/ready")).status).toBe(200);
    const cfg = (await (await fetch(server.url + "/v2/models/simple/config")).json()) as Record<string, any>;
    expect(cfg.name).toBe("simple");
    expect(cfg.max_batch_size).toBe(8);
    expect(cfg.input[0]).toMatchObject({ name: "INPUT0", data_type: "TYPE_INT32", dims: [16] });
    expect(cfg.version_policy).toEqual({ latest: { num_versions: 1 } });
    expect(cfg.instance_group[0]).toMatchObject({ kind: "KIND_CPU", count: 1 });
  });
});

describe("inference (P-06..P-09, P-11..P-15)", () => {
  it("JSON in and out: exact sums and differences, id echoed first", async () => {
    const res = await post("/v2/models/simple/infer", simpleJson({ id: "req-1" }));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    const text = await res.text();
    expect(Object.keys(JSON.parse(text))).toEqual(["id", "model_name", "model_version", "outputs"]);
    expect(JSON.parse(text)).toEqual({
      id: "req-1",
      model_name: "simple",
      model_version: "1",
      outputs: [
        { name: "OUTPUT0", datatype: "INT32", shape: [1, 16], data: SUM },
        { name: "OUTPUT1", datatype: "INT32", shape: [1, 16], data: DIFF },
      ],
    });
  });

  it("nested data, a batch of 2 and one requested output", async () => {
    const res = await post("/v2/models/simple/versions/1/infer", {
      inputs: [
        { name: "INPUT0", shape: [2, 16], datatype: "INT32", data: [A, B] },
        { name: "INPUT1", shape: [2, 16], datatype: "INT32", data: [B, A] },
      ],
      outputs: [{ name: "OUTPUT1" }],
    });
    const body = (await res.json()) as any;
    expect(body.outputs).toEqual([{ name: "OUTPUT1", datatype: "INT32", shape: [2, 16], data: [...DIFF, ...DIFF.map((d) => -d)] }]);
  });

  it("outputs asked for in reverse order come back in that order, each with its own values", async () => {
    const res = await post("/v2/models/simple/infer", {
      inputs: [
        { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: A },
        { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: B },
      ],
      outputs: [{ name: "OUTPUT1" }, { name: "OUTPUT0" }],
    });
    const body = (await res.json()) as any;
    expect(body.outputs).toEqual([
      { name: "OUTPUT1", datatype: "INT32", shape: [1, 16], data: DIFF },
      { name: "OUTPUT0", datatype: "INT32", shape: [1, 16], data: SUM },
    ]);
  });

  it("binary tensor extension both ways", async () => {
    const header = new TextEncoder().encode(
      JSON.stringify({
        inputs: [
          { name: "INPUT0", shape: [1, 16], datatype: "INT32", parameters: { binary_data_size: 64 } },
          { name: "INPUT1", shape: [1, 16], datatype: "INT32", parameters: { binary_data_size: 64 } },
        ],
        outputs: [
          { name: "OUTPUT0", parameters: { binary_data: true } },
          { name: "OUTPUT1", parameters: { binary_data: false } },
        ],
      }),
    );
    const body = new Uint8Array([...header, ...int32Bytes(A), ...int32Bytes(B)]);
    const res = await post("/v2/models/simple/infer", body, {
      "Inference-Header-Content-Length": String(header.byteLength),
      "Content-Type": "application/octet-stream",
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/octet-stream");
    const { header: h, tail } = await splitBinary(res);
    expect(h.outputs[0]).toEqual({ name: "OUTPUT0", datatype: "INT32", shape: [1, 16], parameters: { binary_data_size: 64 } });
    expect(h.outputs[1]).toEqual({ name: "OUTPUT1", datatype: "INT32", shape: [1, 16], data: DIFF });
    expect([...new Int32Array(tail.slice().buffer)]).toEqual(SUM);
  });

  it("binary_data_output returns every output binary", async () => {
    const res = await post("/v2/models/simple/infer", simpleJson({ parameters: { binary_data_output: true } }));
    const { header, tail } = await splitBinary(res);
    expect(header.outputs.map((o: any) => o.parameters)).toEqual([{ binary_data_size: 64 }, { binary_data_size: 64 }]);
    expect([...new Int32Array(tail.slice().buffer)]).toEqual([...SUM, ...DIFF]);
  });

  it("gzip request bodies are accepted and gzip responses sent when asked", async () => {
    const res = await post("/v2/models/simple/infer", gzipSync(JSON.stringify(simpleJson())), { "Content-Encoding": "gzip" });
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).outputs[0].data).toEqual(SUM);
    const bad = await post("/v2/models/simple/infer", "x", { "Content-Encoding": "br" });
    expect(bad.status).toBe(501);
  });

  it("BYTES identity in JSON and binary", async () => {
    const res = await post("/v2/models/simple_identity/infer", {
      inputs: [{ name: "INPUT0", shape: [1, 3], datatype: "BYTES", data: ["a", "hello", ""] }],
    });
    expect(((await res.json()) as any).outputs[0]).toEqual({ name: "OUTPUT0", datatype: "BYTES", shape: [1, 3], data: ["a", "hello", ""] });
  });

  it("classification returns top-k value:index:label strings", async () => {
    const values = [0.1, 0.9, 0.3, 0.0, 0.5, 0.2, 0.7, 0.05, 0.6, 0.4];
    const res = await post("/v2/models/simple_classifier/infer", {
      inputs: [{ name: "INPUT0", shape: [1, 10], datatype: "FP32", data: values }],
      outputs: [{ name: "OUTPUT0", parameters: { classification: 3 } }],
    });
    const out = ((await res.json()) as any).outputs[0];
    expect(out.datatype).toBe("BYTES");
    expect(out.shape).toEqual([1, 3]);
    expect(out.data.map((s: string) => s.split(":").slice(1).join(":"))).toEqual(["1:label_1", "6:label_6", "8:label_8"]);
    expect(out.data[0]).toMatch(/^0\.9000\d\d:1:/);
  });

  it("raw binary request on a single-input model", async () => {
    const values = Float32Array.from({ length: 10 }, (_, i) => i / 2);
    const res = await post("/v2/models/simple_classifier/infer", new Uint8Array(values.buffer), { "Inference-Header-Content-Length": "0" });
    expect(res.status).toBe(200);
    const { header, tail } = await splitBinary(res);
    expect(header.outputs[0]).toMatchObject({ name: "OUTPUT0", datatype: "FP32", shape: [1, 10] });
    expect([...new Float32Array(tail.slice().buffer)]).toEqual([...values]);
  });
});

describe("PP-OCRv4 text detection (real model, dynamic image size; sides must be multiples of 32)", () => {
  for (const [h, w] of [
    [32, 64],
    [96, 128],
  ] as const) {
    it(`maps a 1×3×${h}×${w} image to a 1×1×${h}×${w} probability map`, async () => {
      const pixels = Float32Array.from({ length: 3 * h * w }, (_, i) => ((i * 7) % 255) / 255 - 0.5);
      const header = new TextEncoder().encode(
        JSON.stringify({
          inputs: [{ name: "x", shape: [1, 3, h, w], datatype: "FP32", parameters: { binary_data_size: pixels.byteLength } }],
          parameters: { binary_data_output: true },
        }),
      );
      const body = new Uint8Array(header.byteLength + pixels.byteLength);
      body.set(header);
      body.set(new Uint8Array(pixels.buffer), header.byteLength);
      const res = await post("/v2/models/ocr_det/infer", body, { "Inference-Header-Content-Length": String(header.byteLength) });
      expect(res.status).toBe(200);
      const { header: out, tail } = await splitBinary(res);
      expect(out.outputs[0]).toEqual({ name: "sigmoid_0.tmp_0", datatype: "FP32", shape: [1, 1, h, w], parameters: { binary_data_size: h * w * 4 } });
      const probs = new Float32Array(tail.slice().buffer);
      expect(probs.length).toBe(h * w);
      expect(probs.every((p) => p >= 0 && p <= 1)).toBe(true);
    });
  }
});

describe("bad requests get Triton's errors and the server keeps serving (S-01, P-08, P-10)", () => {
  // The other bad requests run with no socket in handler.test.ts; the body limit is the listener's too.
  it("oversized body → 400, then a good request succeeds", async () => {
    await expectError(await post("/v2/models/simple/infer", "x".repeat(1048577)), 400, /exceeds the maximum allowed value of 1048576/);
    const ok = await post("/v2/models/simple/infer", simpleJson());
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as any).outputs[0].data).toEqual(SUM);
  });
});
