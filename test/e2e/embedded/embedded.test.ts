/**
 * The in-process API (src/index.ts) under Node: typed inference with exact answers, the
 * same as over HTTP, statistics counts, load/unload, listeners started later, stop; and
 * the same calls under Bun (check.ts through node_modules/.bin/bun).
 */
import { checkAnswers } from "./expected.ts";
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { join } from "node:path";
import { createServer, ServerError, type Nereid } from "../../../src/index.ts";
import { startInProcess, type InProcessServer } from "../../helpers/inprocess.ts";
import { makeRepository, SIMPLE_METADATA, simpleConfigJson } from "../../helpers/repo.ts";
import { ROOT } from "../../helpers/server-process.ts";

const A = Int32Array.from({ length: 16 }, (_, i) => i * 10);
const B = Int32Array.from({ length: 16 }, (_, i) => i);

const simple = (a = A, b = B) => ({
  model: "simple",
  inputs: [
    { name: "INPUT0", datatype: "INT32" as const, shape: [1, 16], data: a },
    { name: "INPUT1", datatype: "INT32" as const, shape: [1, 16], data: b },
  ],
});

async function errorOf(p: Promise<unknown> | (() => unknown)): Promise<ServerError> {
  try {
    await (typeof p === "function" ? p() : p);
  } catch (err) {
    expect(err).toBeInstanceOf(ServerError);
    return err as ServerError;
  }
  throw new Error("expected a ServerError");
}

let s: InProcessServer;
let nereid: Nereid;

beforeAll(async () => {
  s = await startInProcess(["simple", "simple_identity"], { listen: false });
  nereid = s.nereid;
});

afterAll(async () => {
  if (s) expect(await s.stop()).toBe(0);
});

describe("in-process API under Node", () => {
  it("starts with no listener, live and ready, with the repository loaded", () => {
    expect(nereid.endpoints).toEqual({});
    expect(nereid.live).toBe(true);
    expect(nereid.ready).toBe(true);
    expect(nereid.metadata()).toEqual({ name: "triton", version: expect.any(String), extensions: expect.arrayContaining(["statistics"]) });
    expect(nereid.modelMetadata("simple")).toEqual(SIMPLE_METADATA);
    expect(nereid.modelConfig("simple")).toMatchObject({ name: "simple", max_batch_size: 8 });
    expect(nereid.modelReady("simple")).toBe(true);
    expect(nereid.modelReady("nope")).toBe(false);
    expect(nereid.index()).toEqual([
      { name: "simple", version: "1", state: "READY" },
      { name: "simple_identity", version: "1", state: "READY" },
    ]);
  });

  it("infers with typed tensors and exact answers", async () => {
    const r = await nereid.infer({ ...simple(), id: "x1" });
    expect(r).toMatchObject({ model: "simple", version: "1", id: "x1" });
    expect(r.outputs.map((o) => [o.name, o.datatype, o.shape])).toEqual([
      ["OUTPUT0", "INT32", [1, 16]],
      ["OUTPUT1", "INT32", [1, 16]],
    ]);
    const out0 = r.output("OUTPUT0", "INT32");
    expect(out0.data).toBeInstanceOf(Int32Array);
    expect([...out0.data]).toEqual(Array.from({ length: 16 }, (_, i) => i * 11));
    expect([...r.output("OUTPUT1", "INT32").data]).toEqual(Array.from({ length: 16 }, (_, i) => i * 9));
    expect(out0.bytes.byteLength).toBe(64);
    // Only the outputs asked for, and raw bytes accepted as input.
    const only = await nereid.infer({ ...simple(), outputs: ["OUTPUT1"], inputs: simple().inputs.map((t) => ({ ...t, data: new Uint8Array(t.data.buffer) })) });
    expect(only.outputs.map((o) => o.name)).toEqual(["OUTPUT1"]);
    expect([...only.output("OUTPUT1", "INT32").data]).toEqual(Array.from({ length: 16 }, (_, i) => i * 9));
    // BYTES in as strings, out as one Uint8Array per element.
    const s2 = await nereid.infer({
      model: "simple_identity",
      inputs: [{ name: "INPUT0", datatype: "BYTES", shape: [1, 3], data: ["a", new Uint8Array([0, 255]), ""] }],
    });
    expect(s2.output("OUTPUT0", "BYTES").data.map((e) => [...e])).toEqual([[97], [0, 255], []]);
  });

  it("answers 64 concurrent requests exactly", async () => {
    const results = await Promise.all(
      Array.from({ length: 64 }, (_, k) =>
        nereid.infer(simple(new Int32Array(16).fill(k), new Int32Array(16).fill(1))).then((r) => r.output("OUTPUT0", "INT32").data[0]),
      ),
    );
    expect(results).toEqual(Array.from({ length: 64 }, (_, k) => k + 1));
  });

  it("throws ServerError with Triton's codes and messages", async () => {
    expect((await errorOf(nereid.infer({ ...simple(), model: "nope" }))).code).toBe("NOT_FOUND");
    const wrongType = await errorOf(
      nereid.infer({ model: "simple", inputs: [{ name: "INPUT0", datatype: "INT32", shape: [1, 16], data: new Float32Array(16) as never }] }),
    );
    expect(wrongType.code).toBe("INVALID_ARG");
    expect(wrongType.message).toBe("input 'INPUT0': INT32 data must be a Int32Array (or raw bytes in a Uint8Array), got Float32Array");
    const wrongShape = await errorOf(
      nereid.infer({ ...simple(), inputs: [{ ...simple().inputs[0]!, datatype: "FP32", data: new Float32Array(16) }, simple().inputs[1]!] }),
    );
    expect(wrongShape).toMatchObject({ code: "INVALID_ARG", message: "inference input 'INPUT0' data-type is 'FP32', but model 'simple' expects 'INT32'" });
    expect(() => nereid.statistics("nope")).toThrow(ServerError);
  });

  it("counts statistics exactly", async () => {
    const before = nereid.statistics("simple")[0]!;
    await nereid.infer(simple());
    await nereid.infer(simple());
    await errorOf(nereid.infer({ model: "simple", inputs: [] }));
    const after = nereid.statistics("simple")[0]!;
    expect(after).toMatchObject({ name: "simple", version: "1" });
    expect(after.inference_stats.success.count).toBe(before.inference_stats.success.count + 2);
    expect(after.inference_stats.fail.count).toBe(before.inference_stats.fail.count + 1);
    expect(after.inference_count).toBe(before.inference_count + 2);
    expect(after.execution_count).toBe(before.execution_count + 2);
    expect(
      nereid
        .statistics()
        .map((m) => m.name)
        .sort(),
    ).toEqual(["simple", "simple_identity"]);
  });

  it("unloads and loads models, with a config override", async () => {
    await nereid.unload("simple_identity");
    expect(nereid.modelReady("simple_identity")).toBe(false);
    expect(nereid.index().find((m) => m.name === "simple_identity")).toMatchObject({ state: "UNAVAILABLE" });
    expect((await errorOf(nereid.infer({ model: "simple_identity", inputs: [] }))).code).toBe("UNAVAILABLE");
    await nereid.load("simple_identity");
    expect(nereid.modelReady("simple_identity")).toBe(true);
    await nereid.load("simple", { config: JSON.parse(simpleConfigJson({ max_batch_size: 4 })) });
    expect(nereid.modelConfig("simple")).toMatchObject({ max_batch_size: 4 });
    expect((await errorOf(nereid.infer(simple(new Int32Array(16 * 5), new Int32Array(16 * 5))))).code).toBe("INVALID_ARG");
    await nereid.load("simple", { config: simpleConfigJson() });
    expect(nereid.modelConfig("simple")).toMatchObject({ max_batch_size: 8 });
  });

  it("answers over HTTP and gRPC, started later, exactly as infer() does", async () => {
    const endpoints = await nereid.listen({ http: { port: 0, address: "127.0.0.1" }, grpc: { port: 0, address: "127.0.0.1" } });
    expect(endpoints.http).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(endpoints.grpc).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(await nereid.listen({ http: true })).toEqual(endpoints); // already running: unchanged
    const { metrics } = await nereid.listen({ metrics: { port: 0, address: "127.0.0.2" } });
    expect(metrics).toMatch(/^http:\/\/127\.0\.0\.2:\d+$/);
    expect(await (await fetch(`${metrics}/metrics`)).text()).toContain('nv_inference_request_success{model="simple",version="1"}');
    const res = await fetch(`${endpoints.http}/v2/models/simple/infer`, {
      method: "POST",
      body: JSON.stringify({ inputs: simple().inputs.map((t) => ({ ...t, data: [...t.data] })) }),
    });
    const body = (await res.json()) as { outputs: { data: number[] }[] };
    const direct = await nereid.infer(simple());
    expect(body.outputs.map((o) => o.data)).toEqual(direct.outputs.map((o) => [...(o.data as Int32Array)]));
  });

  it("refuses load and unload unless model control is explicit", async () => {
    const repo = makeRepository(["simple"]);
    const other = await createServer({ modelRepository: repo.dir, modelControlMode: "none", logInfo: false, logWarning: false });
    try {
      expect(other.index()).toEqual([{ name: "simple", version: "1", state: "READY" }]);
      expect(await errorOf(other.load("simple"))).toMatchObject({
        code: "UNAVAILABLE",
        message: "explicit model load / unload is not allowed if polling is enabled",
      });
      expect(await errorOf(other.unload("simple"))).toMatchObject({ code: "UNAVAILABLE" });
    } finally {
      expect(await other.stop()).toBe(0);
      repo.remove();
    }
  });

  it("stops: not live, inference and listen refused, stop again answers the same", async () => {
    const t = await startInProcess(["simple"], { listen: false });
    expect((await t.nereid.infer(simple())).outputs).toHaveLength(2);
    expect(await t.stop()).toBe(0);
    expect(t.nereid.live).toBe(false);
    expect(t.nereid.ready).toBe(false);
    expect(await errorOf(t.nereid.infer(simple()))).toMatchObject({ code: "UNAVAILABLE", message: "Server is stopping" });
    expect(await errorOf(t.nereid.listen({ http: true }))).toMatchObject({ code: "UNAVAILABLE", message: "Server is stopping" });
    expect(await t.nereid.stop()).toBe(0);
  });
});

describe("in-process API under Bun", () => {
  it("runs check.ts with the same answers", async () => {
    const repo = makeRepository(["simple", "simple_identity"]);
    try {
      const { stdout } = await promisify(execFile)(join(ROOT, "node_modules", ".bin", "bun"), [join(ROOT, "test/e2e/embedded/check.ts"), repo.dir], {
        cwd: ROOT,
        timeout: 60_000,
      });
      expect(JSON.parse(stdout.trim().split("\n").at(-1)!)).toEqual(checkAnswers("bun"));
    } finally {
      repo.remove();
    }
  });
});
