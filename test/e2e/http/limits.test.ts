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
async function withConcurrentGood(bad: () => Promise<Response>): Promise<{ status: number; error: string; ms: number }> {
  const t = performance.now();
  const badDone = bad().then(async (res) => ({ status: res.status, error: await errorOf(res), ms: performance.now() - t }));
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
    expect(r.ms).toBeLessThan(5000); // sanity only: it was 35 s
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
    expect(r.ms).toBeLessThan(5000); // sanity only: it was 60 s and 13.5 GB
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
