/**
 * End to end over HTTP against a server process (the compiled binary when built): what
 * the listener alone does (gzip, the body limit) and the models the shared suites do not
 * serve (P-10, P-15 on `simple_classifier`, the real `ocr_det`). The route table, exact
 * answers and Triton's errors are the shared HTTP suite's (test/suites/http.ts), which
 * runs against this binary through the shared frontend suite (frontend-binary.test.ts)
 * and against the handler with no socket (handler.test.ts).
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { gzipSync } from "node:zlib";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { expectError, splitBinary, urlCaller, type Body } from "../../helpers/http-handler.ts";

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;

const A = Array.from({ length: 16 }, (_, i) => i);
const B = Array.from({ length: 16 }, (_, i) => 2 * i + 1);
const SUM = A.map((a, i) => a + B[i]!);

function simpleJson(extra: Record<string, unknown> = {}) {
  return {
    inputs: [
      { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: A },
      { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: B },
    ],
    ...extra,
  };
}

const post = (path: string, body: Body, headers: Record<string, string> = {}) => urlCaller(server.url)("POST", path, body, headers);

beforeAll(async () => {
  repo = makeRepository(["simple", "simple_classifier", "ocr_det"]);
  server = await startServerProcess([`--model-repository=${repo.dir}`, "--http-max-input-size=1048576"]);
});

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

describe("the listener and the models only this server serves (P-10, P-15)", () => {
  it("gzip request bodies are accepted and gzip responses sent when asked", async () => {
    const res = await post("/v2/models/simple/infer", gzipSync(JSON.stringify(simpleJson())), { "Content-Encoding": "gzip" });
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).outputs[0].data).toEqual(SUM);
    const bad = await post("/v2/models/simple/infer", "x", { "Content-Encoding": "br" });
    expect(bad.status).toBe(501);
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
  // The other bad requests are the shared HTTP suite's; the body limit is the listener's too.
  it("oversized body → 400, then a good request succeeds", async () => {
    await expectError(await post("/v2/models/simple/infer", "x".repeat(1048577)), 400, /exceeds the maximum allowed value of 1048576/);
    const ok = await post("/v2/models/simple/infer", simpleJson());
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as any).outputs[0].data).toEqual(SUM);
  });
});
