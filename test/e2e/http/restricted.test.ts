/** P-32: restricted API groups over HTTP (403) and gRPC (UNAVAILABLE), through the binary. */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { Metadata } from "@grpc/grpc-js";
import { startServerProcess, runServerToExit, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { inferenceClient, healthClient } from "../../helpers/grpc-client.ts";

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;

beforeAll(async () => {
  repo = makeRepository(["simple"]);
  server = await startServerProcess([
    `--model-repository=${repo.dir}`,
    "--http-restricted-api=inference,model-repository:infer-key=s3cret",
    "--http-restricted-api=logging:admin-key=adm",
    "--grpc-restricted-protocol=inference:infer-key=s3cret",
    "--grpc-restricted-protocol=health:hk=1",
  ]);
});

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

const body = JSON.stringify({ inputs: ["INPUT0", "INPUT1"].map((name) => ({ name, shape: [1, 16], datatype: "INT32", data: Array(16).fill(1) })) });

describe("--http-restricted-api", () => {
  it("answers 403 without the group's header and serves with it; other APIs stay open", async () => {
    const denied = await fetch(`${server.url}/v2/models/simple/infer`, { method: "POST", body });
    expect(denied.status).toBe(403);
    expect(await denied.json()).toEqual({ error: "This API is restricted, expecting header 'infer-key'" });
    const wrong = await fetch(`${server.url}/v2/models/simple/infer`, { method: "POST", body, headers: { "infer-key": "nope" } });
    expect(wrong.status).toBe(403);
    expect((await fetch(`${server.url}/v2/models/simple/infer`, { method: "POST", body, headers: { "infer-key": "s3cret" } })).status).toBe(200);
    expect((await fetch(`${server.url}/v2/repository/index`, { method: "POST" })).status).toBe(403);
    expect((await fetch(`${server.url}/v2/logging`)).status).toBe(403);
    expect((await fetch(`${server.url}/v2/logging`, { headers: { "admin-key": "adm" } })).status).toBe(200);
    expect((await fetch(`${server.url}/v2/health/ready`)).status).toBe(200);
    expect((await fetch(`${server.url}/v2/models/simple`)).status).toBe(200);
  });

  it("restricts generate and generate_stream as inference (#16, P-31)", async () => {
    const gen = JSON.stringify({ INPUT0: Array(16).fill(1), INPUT1: Array(16).fill(1) });
    for (const path of ["generate", "generate_stream"]) {
      const denied = await fetch(`${server.url}/v2/models/simple/${path}`, { method: "POST", body: gen });
      expect(denied.status).toBe(403);
      expect(await denied.json()).toEqual({ error: "This API is restricted, expecting header 'infer-key'" });
      const ok = await fetch(`${server.url}/v2/models/simple/${path}`, { method: "POST", body: gen, headers: { "infer-key": "s3cret" } });
      expect(ok.status).toBe(200);
      await ok.text();
    }
  });
});

describe("--grpc-restricted-protocol", () => {
  it("answers UNAVAILABLE without the triton-grpc-protocol-<key> metadata and serves with it", async () => {
    const { client, call } = inferenceClient(server.grpcTarget!);
    const infer = (md?: Metadata) =>
      new Promise((resolve, reject) =>
        (client as any).ModelInfer(
          {
            model_name: "simple",
            inputs: [
              { name: "INPUT0", datatype: "INT32", shape: [1, 16] },
              { name: "INPUT1", datatype: "INT32", shape: [1, 16] },
            ],
            raw_input_contents: [Buffer.alloc(64), Buffer.alloc(64)],
          },
          md ?? new Metadata(),
          (err: unknown, res: unknown) => (err ? reject(err) : resolve(res)),
        ),
      );
    await expect(infer()).rejects.toMatchObject({ code: 14, details: "This protocol is restricted, expecting header 'infer-key'" });
    const md = new Metadata();
    md.set("triton-grpc-protocol-infer-key", "s3cret");
    await expect(infer(md)).resolves.toBeDefined();
    expect((await call("ServerMetadata")({})).name).toBe("triton");
    await expect(call("ServerLive")({})).rejects.toMatchObject({ code: 14 });
    await expect(healthClient(server.grpcTarget!)({})).rejects.toMatchObject({ code: 14 });
    const streamError = await new Promise<any>((resolve) => {
      const stream = (client as any).ModelStreamInfer(new Metadata());
      stream.on("error", resolve);
      stream.on("data", () => resolve(undefined));
      stream.write({ model_name: "simple" });
    });
    expect(streamError).toMatchObject({ code: 14, details: "This protocol is restricted, expecting header 'infer-key'" });
    client.close();
  });

  it("refuses an unknown API or an API in two groups at start", async () => {
    const bad = await runServerToExit([`--model-repository=${repo.dir}`, "--http-restricted-api=inferences:k=v"]);
    expect(bad.code).toBe(1);
    expect(bad.output).toContain("--http-restricted-api: unknown API 'inferences'");
    const twice = await runServerToExit([
      `--model-repository=${repo.dir}`,
      "--grpc-restricted-protocol=health:a=1",
      "--grpc-restricted-protocol=health,trace:b=2",
    ]);
    expect(twice.output).toContain("--grpc-restricted-protocol: API 'health' is already in another restricted group");
  });
});
