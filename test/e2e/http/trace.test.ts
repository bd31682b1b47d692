/** P-22, L-09: the trace extension (Triton-mode trace files) through the server binary. */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { inferenceClient } from "../../helpers/grpc-client.ts";

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;
const dir = mkdtempSync(join(tmpdir(), "nereid-trace-"));
const file = join(dir, "trace.json");

const infer = (id?: string) =>
  fetch(`${server.url}/v2/models/simple/infer`, {
    method: "POST",
    body: JSON.stringify({
      ...(id ? { id } : {}),
      inputs: ["INPUT0", "INPUT1"].map((name) => ({ name, shape: [1, 16], datatype: "INT32", data: Array(16).fill(1) })),
    }),
  });
const post = (path: string, body: object) => fetch(`${server.url}${path}`, { method: "POST", body: JSON.stringify(body) });

beforeAll(async () => {
  repo = makeRepository(["simple", "simple_identity"]);
  server = await startServerProcess([
    `--model-repository=${repo.dir}`,
    `--trace-config=triton,file=${file}`,
    "--trace-config=rate=2",
    "--trace-config=level=TIMESTAMPS",
  ]);
});

afterAll(async () => {
  await server?.stop();
  repo?.remove();
  rmSync(dir, { recursive: true, force: true });
});

describe("trace extension", () => {
  it("reports the global settings from --trace-config, and per-model overrides", async () => {
    expect(await (await fetch(`${server.url}/v2/trace/setting`)).json()).toEqual({
      trace_file: file,
      trace_level: ["TIMESTAMPS"],
      trace_rate: "2",
      trace_count: "-1",
      log_frequency: "0",
      trace_mode: "triton",
    });
    const m = await post("/v2/models/simple_identity/trace/setting", { trace_level: ["OFF"] });
    expect(((await m.json()) as { trace_level: string[] }).trace_level).toEqual(["OFF"]);
    const cleared = await post("/v2/models/simple_identity/trace/setting", { trace_level: null });
    expect(((await cleared.json()) as { trace_level: string[] }).trace_level).toEqual(["TIMESTAMPS"]);
    expect((await post("/v2/trace/setting", { trace_rate: "zero" })).status).toBe(400);
    expect((await post("/v2/trace/setting", { trace_level: ["TENSORS"] })).status).toBe(501);
    expect((await fetch(`${server.url}/v2/models/simple/versions/1/trace/setting`)).status).toBe(404);
  });

  it("refuses to change the trace file over HTTP and gRPC, as Triton does (#14)", async () => {
    const outside = join(dir, "written-by-a-client.json");
    for (const path of ["/v2/trace/setting", "/v2/models/simple/trace/setting"]) {
      const r = await post(path, { trace_file: outside, trace_level: ["TIMESTAMPS"], trace_rate: "1" });
      expect(r.status).toBe(501); // UNSUPPORTED, as for log_file
      expect(await r.json()).toEqual({ error: "trace file location can not be updated through network protocol" });
    }
    const { client, call } = inferenceClient(server.grpcTarget!);
    try {
      await expect(call("TraceSetting")({ settings: { trace_file: { value: [outside] } } })).rejects.toMatchObject({
        code: 12,
        details: "trace file location can not be updated through network protocol",
      });
      await expect(call("TraceSetting")({ model_name: "simple", settings: { trace_file: { value: [outside] } } })).rejects.toMatchObject({ code: 12 });
    } finally {
      client.close();
    }
    // Nothing changed: the rate is still 2 and the file still the operator's.
    expect(await (await fetch(`${server.url}/v2/trace/setting`)).json()).toMatchObject({ trace_file: file, trace_rate: "2" });
    expect(await (await fetch(`${server.url}/v2/models/simple/trace/setting`)).json()).toMatchObject({ trace_file: file, trace_rate: "2" });
  });

  it("traces every trace_rate-th request (Triton's: the 2nd, 4th, ...) and writes Triton's trace file at shutdown", async () => {
    for (let i = 0; i < 6; i++) expect((await infer(`r${i}`)).status).toBe(200);
    expect(await server.stop("SIGTERM")).toBe(0);
    const entries = JSON.parse(readFileSync(file, "utf8")) as {
      id: number;
      model_name?: string;
      request_id?: string;
      timestamps?: { name: string; ns: number }[];
    }[];
    expect(entries.filter((e) => e.model_name).map((e) => e.request_id)).toEqual(["r1", "r3", "r5"]);
    const first = entries.find((e) => e.timestamps)!;
    expect(first.timestamps!.map((t) => t.name)).toEqual([
      "REQUEST_START",
      "QUEUE_START",
      "COMPUTE_START",
      "COMPUTE_INPUT_END",
      "COMPUTE_OUTPUT_START",
      "COMPUTE_END",
      "REQUEST_END",
    ]);
    const ns = first.timestamps!.map((t) => t.ns);
    expect([...ns].sort((a, b) => a - b)).toEqual(ns);
    expect(readdirSync(dir)).toEqual(["trace.json"]);
  });
});

describe("trace file that cannot be written (#14)", () => {
  it("costs the traces and one logged error, never a request", async () => {
    const repo2 = makeRepository(["simple"]);
    const missing = join(dir, "no-such-dir", "trace.json");
    const s = await startServerProcess([
      `--model-repository=${repo2.dir}`,
      `--trace-config=triton,file=${missing}`,
      "--trace-config=rate=1",
      "--trace-config=level=TIMESTAMPS",
      "--trace-config=log-frequency=1",
    ]);
    try {
      for (let i = 0; i < 3; i++) {
        const r = await fetch(`${s.url}/v2/models/simple/infer`, {
          method: "POST",
          body: JSON.stringify({ inputs: ["INPUT0", "INPUT1"].map((name) => ({ name, shape: [1, 16], datatype: "INT32", data: Array(16).fill(2) })) }),
        });
        expect(r.status).toBe(200);
        expect(((await r.json()) as { outputs: { data: number[] }[] }).outputs[0]!.data).toEqual(Array(16).fill(4));
      }
      expect(await s.stop("SIGTERM")).toBe(0);
      expect(s.log().match(/cannot write trace file/g)).toHaveLength(1);
    } finally {
      await s.stop();
      repo2.remove();
    }
  });
});
