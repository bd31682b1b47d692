/**
 * The shared frontend suite: the HTTP and gRPC checks every way of running Nereid must
 * pass (the compiled binary, Node in-process, the frontend threads, Deno), the shared
 * HTTP suite (./http.ts) among them. A test file starts its server in beforeAll and calls
 * frontendSuite() with a getter for where it listens.
 *
 * The server must serve a repository made with makeRepository(["simple", "simple_identity"])
 * under explicit model control with both loaded (`--model-control-mode=explicit
 * --load-model=*`, the in-process API's default), with client shared memory allowed
 * (`--allow-client-shm=true`), HTTP, gRPC and metrics on, on this host: the shared-memory
 * test makes its regions as files under /dev/shm, which the server opens by key
 * (shm_open) whatever runs it. The suite's tests run in order and leave both models
 * loaded and no region registered.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { randomUUID } from "node:crypto";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import type { Client } from "@grpc/grpc-js";
import { inferenceClient, healthClient, type Call } from "../helpers/grpc-client.ts";
import { SIMPLE_METADATA } from "../helpers/repo.ts";
import { urlCaller } from "../helpers/http-handler.ts";
import { httpSuite } from "./http.ts";

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

/** The elements of a serialized BYTES tensor (4-byte little-endian length, then the bytes), as text. */
function byteStrings(u: Uint8Array): string[] {
  const out: string[] = [];
  const view = new DataView(u.buffer, u.byteOffset, u.byteLength);
  for (let off = 0; off < u.byteLength; ) {
    const n = view.getUint32(off, true);
    out.push(new TextDecoder().decode(u.subarray(off + 4, off + 4 + n)));
    off += 4 + n;
  }
  return out;
}

/** A rejected gRPC call's code and details (a fulfilled one fails the test). */
async function grpcError(p: Promise<unknown>): Promise<{ code: number; details: string }> {
  try {
    await p;
  } catch (err) {
    const { code, details } = err as { code: number; details: string };
    return { code, details };
  }
  throw new Error("expected the gRPC call to fail");
}

/** gRPC status codes the suite expects. */
const GRPC = { INVALID_ARGUMENT: 3, NOT_FOUND: 5, ALREADY_EXISTS: 6 } as const;

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
    const httpInfer = (extra: object = { id: "h1" }) =>
      post("/v2/models/simple/infer", {
        ...extra,
        inputs: [
          { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: A },
          { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: B },
        ],
      });
    const grpcInfer = (extra: object = { id: "g1" }) =>
      call("ModelInfer")({
        model_name: "simple",
        ...extra,
        inputs: [
          { name: "INPUT0", datatype: "INT32", shape: [1, 16] },
          { name: "INPUT1", datatype: "INT32", shape: [1, 16] },
        ],
        raw_input_contents: [i32(A), i32(B)],
      });
    /** Status and JSON body of an HTTP response (undefined for an empty body). */
    const answer = async (res: Response) => {
      const text = await res.text();
      return { status: res.status, json: text === "" ? undefined : JSON.parse(text) };
    };
    const stats = async () => ((await (await get("/v2/models/simple/stats")).json()) as any).model_stats[0];

    beforeAll(() => {
      const t = target();
      url = t.url;
      ({ call, client } = inferenceClient(t.grpcTarget));
    });
    afterAll(() => client?.close());

    httpSuite(label, () => ({ call: urlCaller(target().url) }));

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
      expect(server).toEqual({
        name: "triton",
        version: expect.any(String),
        extensions: expect.arrayContaining(["statistics", "model_repository", "binary_tensor_data"]),
      });
      expect(await call("ServerMetadata")({})).toEqual(server);
      expect(await (await get("/v2/models/simple")).json()).toEqual(SIMPLE_METADATA);
      expect(await call("ModelMetadata")({ name: "simple" })).toEqual(SIMPLE_METADATA);
      const config = (await (await get("/v2/models/simple/config")).json()) as any;
      expect(config).toMatchObject({ name: "simple", platform: "onnxruntime_onnx", max_batch_size: 8 });
      expect((await call("ModelConfig")({ name: "simple" })).config).toMatchObject({ name: "simple", max_batch_size: 8 });
    });

    it("infers exact sums over gRPC (HTTP's are the HTTP suite's)", async () => {
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

    it("request parameters (P-29): custom ones are taken and not echoed, over HTTP and gRPC", async () => {
      const res = await httpInfer({ parameters: { custom: "x", n: 5, flag: true } });
      expect(await answer(res)).toEqual({
        status: 200,
        json: {
          model_name: "simple",
          model_version: "1",
          outputs: [
            { name: "OUTPUT0", datatype: "INT32", shape: [1, 16], data: SUM },
            { name: "OUTPUT1", datatype: "INT32", shape: [1, 16], data: DIFF },
          ],
        },
      });
      const r = await grpcInfer({ parameters: { custom: { string_param: "x" }, n: { int64_param: 5 }, flag: { bool_param: true } } });
      // No id and no parameters: proto3 leaves the empty string and the empty map off the wire.
      expect(Object.keys(r).sort()).toEqual(["model_name", "model_version", "outputs", "raw_output_contents"]);
      expect(r.raw_output_contents.map(ints)).toEqual([SUM, DIFF]);
      // Keys starting with triton_ are refused on both, each protocol in its own Triton words.
      expect(await answer(await httpInfer({ parameters: { triton_x: true } }))).toEqual({
        status: 400,
        json: { error: "parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified." },
      });
      expect(await grpcError(grpcInfer({ parameters: { triton_x: { bool_param: true } } }))).toEqual({
        code: GRPC.INVALID_ARGUMENT,
        details:
          "parameter keys starting with 'triton_' are reserved for Triton usage. Only the following keys starting with 'triton_' are allowed: triton_enable_empty_final_response",
      });
    });

    it("binary_data_output (P-11): HTTP refuses a non-boolean (every output binary is the HTTP suite's); gRPC, always raw (G-04), takes it as any parameter", async () => {
      expect(await answer(await httpInfer({ parameters: { binary_data_output: 1 } }))).toEqual({
        status: 400,
        json: { error: "Unable to parse 'binary_data_output': attempt to access JSON non-boolean as boolean" },
      });
      const r = await grpcInfer({ parameters: { binary_data_output: { bool_param: true } } });
      expect(r.raw_output_contents.map(ints)).toEqual([SUM, DIFF]);
    });

    it("classification (P-15): the top k as 'value:index' BYTES, the same over HTTP and gRPC", async () => {
      // SUM[i] = 2i + 7: the largest are at 15, 14, 13.
      const top3 = ["37:15", "35:14", "33:13"];
      const res = await httpInfer({ outputs: [{ name: "OUTPUT0", parameters: { classification: 3 } }, { name: "OUTPUT1" }] });
      expect(await answer(res)).toEqual({
        status: 200,
        json: {
          model_name: "simple",
          model_version: "1",
          outputs: [
            { name: "OUTPUT0", datatype: "BYTES", shape: [1, 3], data: top3 },
            { name: "OUTPUT1", datatype: "INT32", shape: [1, 16], data: DIFF },
          ],
        },
      });
      const r = await grpcInfer({ outputs: [{ name: "OUTPUT0", parameters: { classification: { int64_param: 3 } } }, { name: "OUTPUT1" }] });
      expect(r.outputs).toEqual([
        { name: "OUTPUT0", datatype: "BYTES", shape: [1, 3] },
        { name: "OUTPUT1", datatype: "INT32", shape: [1, 16] },
      ]);
      expect(byteStrings(r.raw_output_contents[0])).toEqual(top3);
      expect(ints(r.raw_output_contents[1])).toEqual(DIFF);
    });

    it("priority and timeout (P-28): taken when valid; a negative one is INVALID_ARG on both, each protocol in Triton's words", async () => {
      const ok = await httpInfer({ parameters: { priority: 1, timeout: 5_000_000 } });
      expect(ok.status).toBe(200);
      expect(((await ok.json()) as any).outputs[0].data).toEqual(SUM);
      const r = await grpcInfer({ parameters: { priority: { uint64_param: 1 }, timeout: { int64_param: 5_000_000 } } });
      expect(ints(r.raw_output_contents[0])).toEqual(SUM);
      for (const key of ["priority", "timeout"]) {
        expect(await answer(await httpInfer({ parameters: { [key]: -1 } }))).toEqual({
          status: 400,
          json: { error: `Unable to parse '${key}': attempt to access JSON non-unsigned-integer as unsigned-integer` },
        });
        expect(await grpcError(grpcInfer({ parameters: { [key]: { int64_param: -1 } } }))).toEqual({
          code: GRPC.INVALID_ARGUMENT,
          details: `invalid value for '${key}', expected value >= 0.`,
        });
      }
    });

    describe("system shared memory (P-24)", () => {
      // Regions are files under /dev/shm, made with node:fs: key "/x" is /dev/shm/x to shm_open.
      const tag = randomUUID().slice(0, 8);
      const IN = `/nereid-suite-${tag}-in`;
      const OUT = `/nereid-suite-${tag}-out`;
      const region = (r: string, size: number, offset = 0) => ({
        shared_memory_region: r,
        shared_memory_byte_size: size,
        ...(offset ? { shared_memory_offset: offset } : {}),
      });
      const grpcRegion = (r: string, size: number, offset = 0) => ({
        shared_memory_region: { string_param: r },
        shared_memory_byte_size: { int64_param: size },
        ...(offset ? { shared_memory_offset: { int64_param: offset } } : {}),
      });
      const outBytes = () => readFileSync(`/dev/shm${OUT}`);

      afterAll(() => {
        rmSync(`/dev/shm${IN}`, { force: true });
        rmSync(`/dev/shm${OUT}`, { force: true });
      });

      it("registers over HTTP and gRPC and reports the same regions on both", async () => {
        writeFileSync(`/dev/shm${IN}`, new Uint8Array([...i32(A), ...i32(B)]));
        writeFileSync(`/dev/shm${OUT}`, new Uint8Array(128));
        expect(await answer(await post("/v2/systemsharedmemory/region/suite_in/register", { key: IN, offset: 0, byte_size: 128 }))).toEqual({
          status: 200,
          json: undefined,
        });
        expect(await call("SystemSharedMemoryRegister")({ name: "suite_out", key: OUT, offset: 0, byte_size: 128 })).toEqual({});
        expect(await answer(await get("/v2/systemsharedmemory/status"))).toEqual({
          status: 200,
          json: [
            { name: "suite_in", key: IN, offset: 0, byte_size: 128 },
            { name: "suite_out", key: OUT, offset: 0, byte_size: 128 },
          ],
        });
        expect(await answer(await get("/v2/systemsharedmemory/region/suite_out/status"))).toEqual({
          status: 200,
          json: [{ name: "suite_out", key: OUT, offset: 0, byte_size: 128 }],
        });
        // offset 0 is proto3's default, so gRPC leaves it off the wire.
        expect(await call("SystemSharedMemoryStatus")({})).toEqual({
          regions: { suite_in: { name: "suite_in", key: IN, byte_size: 128 }, suite_out: { name: "suite_out", key: OUT, byte_size: 128 } },
        });
        expect(await call("SystemSharedMemoryStatus")({ name: "suite_in" })).toEqual({ regions: { suite_in: { name: "suite_in", key: IN, byte_size: 128 } } });
        const taken = "shared memory region 'suite_in' already in manager";
        expect(await answer(await post("/v2/systemsharedmemory/region/suite_in/register", { key: IN, offset: 0, byte_size: 128 }))).toEqual({
          status: 400,
          json: { error: taken },
        });
        expect(await grpcError(call("SystemSharedMemoryRegister")({ name: "suite_in", key: IN, offset: 0, byte_size: 128 }))).toEqual({
          code: GRPC.ALREADY_EXISTS,
          details: taken,
        });
      });

      it("infers with inputs read from a region and an output written into one, over HTTP and gRPC", async () => {
        const res = await post("/v2/models/simple/infer", {
          inputs: [
            { name: "INPUT0", shape: [1, 16], datatype: "INT32", parameters: region("suite_in", 64) },
            { name: "INPUT1", shape: [1, 16], datatype: "INT32", parameters: region("suite_in", 64, 64) },
          ],
          outputs: [{ name: "OUTPUT0", parameters: region("suite_out", 64) }, { name: "OUTPUT1" }],
        });
        expect(await answer(res)).toEqual({
          status: 200,
          json: {
            model_name: "simple",
            model_version: "1",
            outputs: [
              // No data and no parameters, as Triton's HTTP frontend writes an output in shared memory.
              { name: "OUTPUT0", datatype: "INT32", shape: [1, 16] },
              { name: "OUTPUT1", datatype: "INT32", shape: [1, 16], data: DIFF },
            ],
          },
        });
        expect(ints(outBytes().subarray(0, 64))).toEqual(SUM);

        const r = await call("ModelInfer")({
          model_name: "simple",
          inputs: [
            { name: "INPUT0", datatype: "INT32", shape: [1, 16], parameters: grpcRegion("suite_in", 64) },
            { name: "INPUT1", datatype: "INT32", shape: [1, 16], parameters: grpcRegion("suite_in", 64, 64) },
          ],
          outputs: [{ name: "OUTPUT0" }, { name: "OUTPUT1", parameters: grpcRegion("suite_out", 64, 64) }],
        });
        expect(r.outputs).toEqual([
          { name: "OUTPUT0", datatype: "INT32", shape: [1, 16] },
          {
            name: "OUTPUT1",
            datatype: "INT32",
            shape: [1, 16],
            parameters: {
              shared_memory_region: { string_param: "suite_out", parameter_choice: "string_param" },
              shared_memory_byte_size: { int64_param: 64, parameter_choice: "int64_param" },
              shared_memory_offset: { int64_param: 64, parameter_choice: "int64_param" },
            },
          },
        ]);
        // One raw_output_contents entry per output, as Triton: the one in shared memory is
        // empty, so entry i stays output i (#17 wire bug 2).
        expect(r.raw_output_contents.map(ints)).toEqual([SUM, []]);
        const out = outBytes();
        expect([ints(out.subarray(0, 64)), ints(out.subarray(64, 128))]).toEqual([SUM, DIFF]);

        const unknown = "Unable to find shared memory region: 'suite_nope'";
        const bad = await post("/v2/models/simple/infer", {
          inputs: [
            { name: "INPUT0", shape: [1, 16], datatype: "INT32", parameters: region("suite_nope", 64) },
            { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: B },
          ],
        });
        expect(await answer(bad)).toEqual({ status: 400, json: { error: unknown } });
        const badGrpc = call("ModelInfer")({
          model_name: "simple",
          inputs: [
            { name: "INPUT0", datatype: "INT32", shape: [1, 16], parameters: grpcRegion("suite_nope", 64) },
            { name: "INPUT1", datatype: "INT32", shape: [1, 16] },
          ],
          raw_input_contents: [i32(B)],
        });
        expect(await grpcError(badGrpc)).toEqual({ code: GRPC.INVALID_ARGUMENT, details: unknown });
      });

      it("unregisters over HTTP and gRPC; the regions are gone from both", async () => {
        expect(await answer(await post("/v2/systemsharedmemory/region/suite_in/unregister", ""))).toEqual({ status: 200, json: undefined });
        expect(await call("SystemSharedMemoryUnregister")({ name: "suite_out" })).toEqual({});
        expect(await answer(await get("/v2/systemsharedmemory/status"))).toEqual({ status: 200, json: [] });
        expect(await call("SystemSharedMemoryStatus")({})).toEqual({});
        const gone = "Unable to find system shared memory region: 'suite_in'";
        expect(await answer(await get("/v2/systemsharedmemory/region/suite_in/status"))).toEqual({ status: 404, json: { error: gone } });
        expect(await grpcError(call("SystemSharedMemoryStatus")({ name: "suite_in" }))).toEqual({ code: GRPC.NOT_FOUND, details: gone });
        // Unregistering a name not registered is not an error (Triton).
        expect((await post("/v2/systemsharedmemory/unregister", "")).status).toBe(200);
        expect(await call("SystemSharedMemoryUnregister")({})).toEqual({});
      });
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

    it("writes every duration as whole nanoseconds, as Triton's uint64 fields (#17 wire bug 1)", async () => {
      expect((await httpInfer()).status).toBe(200);
      const body = await (await get("/v2/models/stats")).text();
      // The raw text: JSON.parse would hide nothing, but a strict uint64 client reads this.
      const ns = [...body.matchAll(/"ns":([^,}]+)/g)].map((m) => m[1]!);
      expect(ns.length).toBeGreaterThan(10);
      expect(ns.filter((v) => !/^\d+$/.test(v))).toEqual([]);
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
      expect(((await (await post("/v2/repository/index", {})).json()) as any[]).find((m) => m.name === "simple_identity")).toMatchObject({
        state: "UNAVAILABLE",
      });
      await call("RepositoryModelLoad")({ model_name: "simple_identity" });
      expect(await call("ModelReady")({ name: "simple_identity" })).toEqual({ ready: true });
      await call("RepositoryModelUnload")({ model_name: "simple_identity" });
      expect((await post("/v2/repository/models/simple_identity/load", {})).status).toBe(200);
      expect((await get("/v2/models/simple_identity/ready")).status).toBe(200);
    });
  });
}
