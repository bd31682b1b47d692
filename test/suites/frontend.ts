/**
 * The shared frontend suite: the HTTP and gRPC checks every way of running Nereid must
 * pass (the compiled binary, Node in-process, Deno). A test file starts its server in
 * beforeAll and calls frontendSuite() with a getter for where it listens.
 *
 * The server must serve a repository made with makeRepository(["simple", "simple_identity"])
 * under explicit model control with both loaded (`--model-control-mode=explicit
 * --load-model=*`, the in-process API's default), HTTP, gRPC and metrics on.
 * The suite's tests run in order and leave both models loaded.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import type { Client } from "@grpc/grpc-js";
import { inferenceClient, healthClient, type Call } from "../helpers/grpc-client.ts";
import { SIMPLE_METADATA } from "../helpers/repo.ts";

export interface FrontendTarget {
  /** Base URL of the HTTP listener. */
  url: string;
  /** host:port of the gRPC listener. */
  grpcTarget: string;
  /** Base URL of the metrics listener. */
  metricsUrl: string;
}

const A = Array.from({ length: 16 }, (_, i) => i * 3);
const B = Array.from({ length: 16 }, (_, i) => 7 - i);
const SUM = A.map((a, i) => a + B[i]!);
const DIFF = A.map((a, i) => a - B[i]!);
const i32 = (v: number[]) => new Uint8Array(Int32Array.from(v).buffer);
const ints = (u: Uint8Array) => [...new Int32Array(new Uint8Array(u).buffer)];

function metricSample(text: string, name: string, labels: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${name}{${labels}}`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

export function frontendSuite(label: string, target: () => FrontendTarget): void {
  describe(`frontend suite: ${label}`, () => {
    let url: string;
    let call: (name: string) => Call;
    let client: Client;
    const get = (path: string) => fetch(`${url}${path}`);
    const post = (path: string, body: unknown) => fetch(`${url}${path}`, { method: "POST", body: typeof body === "string" ? body : JSON.stringify(body) });
    const httpInfer = () =>
      post("/v2/models/simple/infer", {
        id: "h1",
        inputs: [
          { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: A },
          { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: B },
        ],
      });
    const grpcInfer = () =>
      call("ModelInfer")({
        model_name: "simple",
        id: "g1",
        inputs: [
          { name: "INPUT0", datatype: "INT32", shape: [1, 16] },
          { name: "INPUT1", datatype: "INT32", shape: [1, 16] },
        ],
        raw_input_contents: [i32(A), i32(B)],
      });
    const stats = async () => ((await (await get("/v2/models/simple/stats")).json()) as any).model_stats[0];

    beforeAll(() => {
      const t = target();
      url = t.url;
      ({ call, client } = inferenceClient(t.grpcTarget));
    });
    afterAll(() => client?.close());

    it("health: live and ready over HTTP and gRPC", async () => {
      expect((await get("/v2/health/live")).status).toBe(200);
      expect((await get("/v2/health/ready")).status).toBe(200);
      expect((await get("/v2/models/simple/ready")).status).toBe(200);
      expect(await call("ServerLive")({})).toEqual({ live: true });
      expect(await call("ServerReady")({})).toEqual({ ready: true });
      expect(await call("ModelReady")({ name: "simple" })).toEqual({ ready: true });
      expect(await healthClient(target().grpcTarget)({ service: "" })).toEqual({ status: "SERVING" });
    });

    it("server and model metadata, the same over HTTP and gRPC", async () => {
      const server = (await (await get("/v2")).json()) as any;
      expect(server).toEqual({ name: "triton", version: expect.any(String), extensions: expect.arrayContaining(["statistics", "model_repository", "binary_tensor_data"]) });
      expect(await call("ServerMetadata")({})).toEqual(server);
      expect(await (await get("/v2/models/simple")).json()).toEqual(SIMPLE_METADATA);
      expect(await call("ModelMetadata")({ name: "simple" })).toEqual(SIMPLE_METADATA);
      const config = (await (await get("/v2/models/simple/config")).json()) as any;
      expect(config).toMatchObject({ name: "simple", platform: "onnxruntime_onnx", max_batch_size: 8 });
      expect((await call("ModelConfig")({ name: "simple" })).config).toMatchObject({ name: "simple", max_batch_size: 8 });
    });

    it("infers exact sums over HTTP JSON, HTTP binary and gRPC", async () => {
      const res = await httpInfer();
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({
        id: "h1",
        model_name: "simple",
        model_version: "1",
        outputs: [
          { name: "OUTPUT0", datatype: "INT32", shape: [1, 16], data: SUM },
          { name: "OUTPUT1", datatype: "INT32", shape: [1, 16], data: DIFF },
        ],
      });

      const header = new TextEncoder().encode(
        JSON.stringify({
          inputs: [
            { name: "INPUT0", shape: [1, 16], datatype: "INT32", parameters: { binary_data_size: 64 } },
            { name: "INPUT1", shape: [1, 16], datatype: "INT32", parameters: { binary_data_size: 64 } },
          ],
          outputs: [{ name: "OUTPUT0", parameters: { binary_data: true } }],
        }),
      );
      const body = new Uint8Array(header.byteLength + 128);
      body.set(header);
      body.set(i32(A), header.byteLength);
      body.set(i32(B), header.byteLength + 64);
      const bin = await fetch(`${url}/v2/models/simple/infer`, { method: "POST", body, headers: { "inference-header-content-length": String(header.byteLength) } });
      expect(bin.status).toBe(200);
      const length = Number(bin.headers.get("inference-header-content-length"));
      const bytes = new Uint8Array(await bin.arrayBuffer());
      expect(JSON.parse(new TextDecoder().decode(bytes.subarray(0, length))).outputs[0]).toEqual({ name: "OUTPUT0", datatype: "INT32", shape: [1, 16], parameters: { binary_data_size: 64 } });
      expect(ints(bytes.slice(length))).toEqual(SUM);

      const r = await grpcInfer();
      expect(r.id).toBe("g1");
      expect(r.outputs).toEqual([
        { name: "OUTPUT0", datatype: "INT32", shape: [1, 16] },
        { name: "OUTPUT1", datatype: "INT32", shape: [1, 16] },
      ]);
      expect(ints(r.raw_output_contents[0])).toEqual(SUM);
      expect(ints(r.raw_output_contents[1])).toEqual(DIFF);
    });

    it("reports errors with Triton's status and shape", async () => {
      const res = await post("/v2/models/nope/infer", "{}");
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ error: "Request for unknown model: 'nope' is not found" });
      const err = await call("ModelInfer")({ model_name: "nope" }).then(
        () => undefined,
        (e: { code: number; details: string }) => e,
      );
      expect(err).toMatchObject({ code: 5, details: "Request for unknown model: 'nope' is not found" });
    });

    it("keeps answering after a request refused before its body was read", async () => {
      // 404 for an unknown model comes before the body is read, with most of its 1 MiB
      // unread. Under Deno the connection it came on used to hang the next request sent on it.
      const refused = await fetch(`${url}/v2/models/nope/infer`, { method: "POST", body: "x".repeat(1 << 20), signal: AbortSignal.timeout(20_000) });
      expect(refused.status).toBe(404);
      await refused.arrayBuffer();
      for (let i = 0; i < 3; i++) {
        const bad = await fetch(`${url}/v2/models/simple/infer`, { method: "POST", body: "{", signal: AbortSignal.timeout(10_000) });
        expect(bad.status).toBe(400);
        await bad.arrayBuffer();
      }
    });

    it("counts statistics exactly, over HTTP and gRPC and in metrics", async () => {
      const before = await stats();
      expect((await httpInfer()).status).toBe(200);
      await grpcInfer();
      expect((await post("/v2/models/simple/infer", { inputs: [] })).status).toBe(400);
      const after = await stats();
      expect(after).toMatchObject({ name: "simple", version: "1" });
      expect(after.inference_stats.success.count).toBe(before.inference_stats.success.count + 2);
      expect(after.inference_stats.fail.count).toBe(before.inference_stats.fail.count + 1);
      expect(after.inference_count).toBe(before.inference_count + 2);
      expect(after.execution_count).toBe(before.execution_count + 2);
      const g = (await call("ModelStatistics")({ name: "simple" })).model_stats[0];
      expect(Number(g.inference_stats.success.count)).toBe(after.inference_stats.success.count);
      expect(Number(g.inference_stats.fail.count)).toBe(after.inference_stats.fail.count);
      const text = await (await fetch(`${target().metricsUrl}/metrics`)).text();
      expect(metricSample(text, "nv_inference_request_success", 'model="simple",version="1"')).toBe(after.inference_stats.success.count);
    });

    it("lists the repository index and unloads and loads a model, over HTTP and gRPC", async () => {
      const ready = (await (await post("/v2/repository/index", { ready: true })).json()) as any[];
      expect(ready).toEqual([
        { name: "simple", version: "1", state: "READY" },
        { name: "simple_identity", version: "1", state: "READY" },
      ]);
      expect((await call("RepositoryIndex")({ ready: true })).models.map((m: any) => [m.name, m.version, m.state])).toEqual([
        ["simple", "1", "READY"],
        ["simple_identity", "1", "READY"],
      ]);
      expect((await post("/v2/repository/models/simple_identity/unload", {})).status).toBe(200);
      expect((await get("/v2/models/simple_identity/ready")).status).not.toBe(200);
      expect(((await (await post("/v2/repository/index", {})).json()) as any[]).find((m) => m.name === "simple_identity")).toMatchObject({ state: "UNAVAILABLE" });
      await call("RepositoryModelLoad")({ model_name: "simple_identity" });
      expect(await call("ModelReady")({ name: "simple_identity" })).toEqual({ ready: true });
      await call("RepositoryModelUnload")({ model_name: "simple_identity" });
      expect((await post("/v2/repository/models/simple_identity/load", {})).status).toBe(200);
      expect((await get("/v2/models/simple_identity/ready")).status).toBe(200);
    });
  });
}
