/**
 * P-10, P-14, issue #14: one HTTP request must not take the compiled server down. Deep
 * JSON (plain, and as a gzip bomb), huge element counts, malformed path escapes, shape
 * dims written as doubles and 20k-dim shapes each get a prompt 400 with a clear message,
 * while a good request on another connection is still answered.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { gzipSync } from "node:zlib";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;

beforeAll(async () => {
  repo = makeRepository(["simple", "simple_identity"]);
  server = await startServerProcess([`--model-repository=${repo.dir}`, "--model-control-mode=explicit", "--load-model=*"]);
});

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

const A = Array.from({ length: 16 }, (_, i) => i);
const GOOD = JSON.stringify({
  inputs: [
    { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: A },
    { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: A },
  ],
});

const infer = (model: string, body: string | Uint8Array, headers: Record<string, string> = {}) =>
  fetch(`${server.url}/v2/models/${model}/infer`, { method: "POST", body, headers });

async function errorOf(res: Response): Promise<string> {
  const body = (await res.json()) as { error: string };
  return body.error;
}

/**
 * Sends `bad`, and once it is on its way a good request on another connection; both must
 * be answered, the good one with the right sums.
 */
async function withConcurrentGood(bad: () => Promise<Response>): Promise<{ status: number; error: string }> {
  const badDone = bad().then(async (res) => ({ status: res.status, error: await errorOf(res) }));
  await new Promise((r) => setTimeout(r, 20));
  const good = await infer("simple", GOOD);
  expect(good.status).toBe(200);
  expect(((await good.json()) as { outputs: { data: number[] }[] }).outputs[0]!.data).toEqual(A.map((a) => 2 * a));
  return badDone;
}

const DEPTH = "JSON nesting depth exceeds maximum allowed limit (10000)";

describe("deep JSON is refused before it is parsed", () => {
  it("16 MiB of '[' → 400 with the depth message, a good request beside it is answered", async () => {
    const r = await withConcurrentGood(() => infer("simple", "[".repeat(16 * 1024 * 1024)));
    expect(r.status).toBe(400);
    expect(r.error).toBe(`failed to parse the request JSON buffer: ${DEPTH} at 10000`);
  });

  it("16 MiB of balanced '[…]' (which JSON.parse accepts) → the same 400", async () => {
    const half = 8 * 1024 * 1024;
    const res = await infer("simple", "[".repeat(half) + "]".repeat(half));
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toContain(DEPTH);
  });

  it("a 65 KB gzip body inflating to 64 MiB of '[' → 400 with the depth message, a good request beside it is answered", async () => {
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024 - 16, 0x5b), { level: 9 });
    expect(bomb.byteLength).toBeLessThan(70_000);
    const r = await withConcurrentGood(() => infer("simple", bomb, { "content-encoding": "gzip" }));
    expect(r.status).toBe(400);
    expect(r.error).toContain(DEPTH);
  });

  it("a gzip body inflating past --http-max-input-size → 400 with Triton's size message", async () => {
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024 + 1, 0x20), { level: 9 });
    const res = await infer("simple", bomb, { "content-encoding": "gzip" });
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toBe(
      `Request JSON size of more than ${64 * 1024 * 1024} exceeds the maximum allowed value of ${64 * 1024 * 1024}. Use --http-max-input-size to increase the limit.`,
    );
  });

  it("deep nesting in the other JSON bodies (logging, repository) → 400, not seconds of parsing", async () => {
    const deep = "[".repeat(4 * 1024 * 1024);
    for (const path of ["/v2/logging", "/v2/repository/index", "/v2/repository/models/simple/load"]) {
      const res = await fetch(`${server.url}${path}`, { method: "POST", body: deep });
      expect(res.status, path).toBe(400);
      expect(await errorOf(res), path).toContain(DEPTH);
    }
  });
});

describe("malformed % escapes in the path → 400", () => {
  it.each([
    ["GET", "/v2/models/sim%zzple"],
    ["POST", "/v2/models/simple%/infer"],
    ["GET", "/v2/systemsharedmemory/region/r%E0%A4%A/status"],
    ["POST", "/v2/cudasharedmemory/region/%ff/unregister"],
    ["POST", "/v2/repository/models/simple%2/load"],
    ["GET", "/v2/health/re%zzady"],
  ])("%s %s", async (method, path) => {
    const res = await fetch(`${server.url}${path}`, { method });
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toMatch(/^malformed percent-encoding in URL path segment '[^']+': '%' must be followed by two hex digits and encode UTF-8$/);
  });

  it("a well-formed escape still names the model", async () => {
    const res = await fetch(`${server.url}/v2/models/%73imple`);
    expect(res.status).toBe(200);
  });
});

describe("element counts are bounded before data is decoded", () => {
  const strings = (n: number) => JSON.stringify({ inputs: [{ name: "INPUT0", datatype: "BYTES", shape: [1, n], data: Array(n).fill("a") }] });

  it("8M one-byte BYTES elements in JSON → 400 naming the limit, a good request beside it is answered", async () => {
    const r = await withConcurrentGood(() => infer("simple_identity", strings(8_000_000)));
    expect(r.status).toBe(400);
    expect(r.error).toBe("input 'INPUT0' has 8000000 BYTES elements (shape [1,8000000]), more than the 1048576 one BYTES input may have");
  });

  it("8M BYTES elements as binary data → the same 400", async () => {
    const n = 8_000_000;
    const data = Buffer.alloc(n * 4); // 8M empty strings
    const header = JSON.stringify({ inputs: [{ name: "INPUT0", datatype: "BYTES", shape: [1, n], parameters: { binary_data_size: data.byteLength } }] });
    const res = await infer("simple_identity", Buffer.concat([Buffer.from(header), data]), {
      "inference-header-content-length": String(Buffer.byteLength(header)),
    });
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toContain("8000000 BYTES elements");
  });

  it("2^20 BYTES elements are served, and a good request beside them is answered", async () => {
    const n = 2 ** 20;
    const big = infer("simple_identity", strings(n)).then(async (res) => ({
      status: res.status,
      body: (await res.json()) as { outputs: { shape: number[]; data: string[] }[] },
    }));
    await new Promise((r) => setTimeout(r, 20));
    const good = await infer("simple", GOOD);
    expect(good.status).toBe(200);
    const r = await big;
    expect(r.status).toBe(200);
    expect(r.body.outputs[0]!.shape).toEqual([1, n]);
    expect(r.body.outputs[0]!.data.length).toBe(n);
    expect(r.body.outputs[0]!.data.every((s) => s === "a")).toBe(true);
  });

  it("a JSON input whose shape needs more than --http-max-input-size → Triton's 400", async () => {
    const res = await infer("simple", JSON.stringify({ inputs: [{ name: "INPUT0", datatype: "INT32", shape: [1, 2 ** 24 + 1], data: [1] }] }));
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toBe(
      `JSON input 'INPUT0' has a byte_size (${4 * (2 ** 24 + 1)} bytes) that exceeds the maximum allowed value of ${64 * 1024 * 1024} bytes. Use --http-max-input-size to increase the limit.`,
    );
  });
});

describe("shape dims written as doubles → Triton's 400 (rapidjson IsUint64)", () => {
  it.each(["1.0", "1e0", "1E0", "16.00", "1.6e1"])("dim %s", async (dim) => {
    const body = GOOD.replace('"shape":[1,16]', `"shape":[1,${dim}]`);
    expect(body).not.toBe(GOOD);
    const res = await infer("simple", body);
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toBe("Unable to parse 'shape': attempt to access JSON non-unsigned-integer as unsigned-integer");
  });

  it("'.' and 'e' elsewhere in the body do not disturb integer dims", async () => {
    const res = await infer("simple", GOOD.replace('"inputs"', '"parameters":{"x":1.5e0,"shape":"1.0"},"inputs"'));
    expect(res.status).toBe(200);
  });
});

describe("error messages quote long shapes cut short", () => {
  it("a 20,000-dim shape in a shape error → a message of bounded length", async () => {
    const dims = Array(20_000).fill(1);
    const body = JSON.stringify({
      inputs: [
        { name: "INPUT0", shape: dims, datatype: "INT32", data: [1] },
        { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: A },
      ],
    });
    const res = await infer("simple", body);
    expect(res.status).toBe(400);
    const error = await errorOf(res);
    expect(error).toMatch(
      /^unexpected shape for input 'INPUT0' for model 'simple'\. Expected \[-1,16\], got \[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,\.\.\.\] \(20000 dims\)/,
    );
    expect(error.length).toBeLessThan(1000);
  });

  it("a 20,000-dim shape in an element-count error → a message of bounded length", async () => {
    const res = await infer("simple", JSON.stringify({ inputs: [{ name: "INPUT0", shape: Array(20_000).fill(2), datatype: "INT32", data: [1] }] }));
    expect(res.status).toBe(400);
    const error = await errorOf(res);
    expect(error.length).toBeLessThan(1000);
    expect(error).toContain("[2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,...] (20000 dims)");
  });
});
