/**
 * #29 item 1, through the compiled binary: a repository load's overrides cannot bring code
 * that the server runs (TypeScript/JavaScript files, the typescript backend over uploaded
 * files, accelerator parameters naming host libraries), over HTTP and gRPC, unless
 * --allow-model-code-overrides=true; and state-changing HTTP requests that a browser marks
 * as cross-origin are refused with 403, while clients that send no Origin keep working.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServerProcess, SIMPLE_TWOS_AND_THREES, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { inferenceClient } from "../../helpers/grpc-client.ts";

const serverTmp = mkdtempSync(join(tmpdir(), "nereid-load-code-"));
/** Written by the uploaded model's code when it runs. */
const marker = join(serverTmp, "pwned");
let repo: ReturnType<typeof makeRepository>;
let server: ServerProcess;

const CODE = `
import { writeFileSync } from "node:fs";
writeFileSync(${JSON.stringify(marker)}, "ran");
export default class Pwn {
  initialize() { writeFileSync(${JSON.stringify(marker)}, "ran"); }
  execute(requests) { return requests.map(() => ({ outputs: [{ name: "OUT", datatype: "INT32", shape: [1], data: [42] }] })); }
}
`;
const code64 = Buffer.from(CODE).toString("base64");
const tsConfig = (name: string, patch: object = {}) =>
  JSON.stringify({
    name,
    backend: "typescript",
    input: [{ name: "IN", data_type: "TYPE_INT32", dims: [1] }],
    output: [{ name: "OUT", data_type: "TYPE_INT32", dims: [1] }],
    ...patch,
  });
const FLAG = "refused unless the server runs with --allow-model-code-overrides=true";
const codeFile = (name: string, rel: string) => `file override '${rel}' of model '${name}' is executable model code, ${FLAG}`;
const codeBackend = (name: string) =>
  `failed to load '${name}': model '${name}': backend 'typescript' runs the model's files as code, and the file overrides are the client's; ${FLAG}`;

const overrideFolders = () => readdirSync(serverTmp).filter((f) => f.startsWith("nereid-override-"));
const post = (s: ServerProcess, path: string, body?: object, headers: Record<string, string> = {}) =>
  fetch(`${s.url}${path}`, { method: "POST", headers, body: body ? JSON.stringify(body) : undefined });
const error = async (r: Response) => ((await r.json()) as { error: string }).error;

beforeAll(async () => {
  repo = makeRepository(["simple"]);
  // The operator's own TypeScript model: a config-only override may point the backend at it.
  repo.add(
    "op_ts/1/model.js",
    `export default class Op { execute(requests) { return requests.map(() => ({ outputs: [{ name: "OUT", datatype: "INT32", shape: [1], data: [7] }] })); } }\n`,
  );
  repo.add(
    "op_ts/config.pbtxt",
    `backend: "typescript"\ninput [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]\n`,
  );
  server = await startServerProcess([`--model-repository=${repo.dir}`, "--model-control-mode=explicit", "--load-model=simple"], { env: { TMPDIR: serverTmp } });
});

afterAll(async () => {
  await server?.stop();
  repo?.remove();
  rmSync(serverTmp, { recursive: true, force: true });
});

describe("model code in load overrides (#29)", () => {
  it("refuses code files over HTTP, whatever their case or path, and runs nothing", async () => {
    for (const rel of ["1/model.ts", "1/model.TS", "1/sub/../model.ts", "1/model.js", "1/model.mjs", "1/model.py", "1/libplugin.so"]) {
      const r = await post(server, "/v2/repository/models/pwn/load", { parameters: { config: tsConfig("pwn"), [`file:${rel}`]: code64 } });
      expect(r.status).toBe(400);
      expect(await error(r)).toBe(codeFile("pwn", rel));
    }
    expect(existsSync(marker)).toBe(false);
    expect(overrideFolders()).toEqual([]);
  });

  it("refuses the typescript backend over uploaded files whatever the file is called", async () => {
    const r = await post(server, "/v2/repository/models/pwn/load", {
      parameters: { config: tsConfig("pwn", { default_model_filename: "x.onnx" }), "file:1/x.onnx": code64 },
    });
    expect(r.status).toBe(400);
    expect(await error(r)).toBe(codeBackend("pwn"));
    expect(existsSync(marker)).toBe(false);
    expect(overrideFolders()).toEqual([]);
    expect((await fetch(`${server.url}/v2/models/pwn/ready`)).status).not.toBe(200);
  });

  it("refuses the same over gRPC (RepositoryModelLoad: INVALID_ARGUMENT)", async () => {
    const { client, call } = inferenceClient(server.grpcTarget!);
    try {
      await expect(
        call("RepositoryModelLoad")({
          model_name: "pwn",
          parameters: { config: { string_param: tsConfig("pwn") }, "file:1/model.ts": { bytes_param: Buffer.from(CODE) } },
        }),
      ).rejects.toMatchObject({ code: 3, details: codeFile("pwn", "1/model.ts") });
      await expect(
        call("RepositoryModelLoad")({
          model_name: "pwn",
          parameters: { config: { string_param: tsConfig("pwn", { default_model_filename: "x.onnx" }) }, "file:1/x.onnx": { bytes_param: Buffer.from(CODE) } },
        }),
      ).rejects.toMatchObject({ code: 3, details: codeBackend("pwn") });
    } finally {
      client.close();
    }
    expect(existsSync(marker)).toBe(false);
  });

  it("refuses accelerator parameters that name host libraries in a config override", async () => {
    const config = JSON.parse(tsConfig("simple")) as Record<string, unknown>;
    const r = await post(server, "/v2/repository/models/simple/load", {
      parameters: {
        config: JSON.stringify({
          ...config,
          backend: "onnxruntime",
          optimization: {
            execution_accelerators: { gpu_execution_accelerator: [{ name: "tensorrt", parameters: { trt_extra_plugin_lib_paths: "/tmp/evil.so" } }] },
          },
        }),
      },
    });
    expect(r.status).toBe(400);
    expect(await error(r)).toBe(
      `config override of model 'simple': 'tensorrt' accelerator parameter 'trt_extra_plugin_lib_paths' names host files or memory, ${FLAG}`,
    );
  });

  it("lets a config-only override point the typescript backend at the operator's model folder", async () => {
    const r = await post(server, "/v2/repository/models/op_ts/load", { parameters: { config: tsConfig("op_ts") } });
    expect(r.status).toBe(200);
    const infer = await post(server, "/v2/models/op_ts/infer", { inputs: [{ name: "IN", datatype: "INT32", shape: [1], data: [1] }] });
    expect(((await infer.json()) as { outputs: { data: number[] }[] }).outputs[0]!.data).toEqual([7]);
  });

  it("loads the uploaded code with --allow-model-code-overrides=true", async () => {
    const trusting = await startServerProcess([`--model-repository=${repo.dir}`, "--model-control-mode=explicit", "--allow-model-code-overrides=true"], {
      env: { TMPDIR: serverTmp },
    });
    try {
      const r = await post(trusting, "/v2/repository/models/pwn/load", { parameters: { config: tsConfig("pwn"), "file:1/model.ts": code64 } });
      expect(r.status).toBe(200);
      const infer = await post(trusting, "/v2/models/pwn/infer", { inputs: [{ name: "IN", datatype: "INT32", shape: [1], data: [1] }] });
      expect(((await infer.json()) as { outputs: { data: number[] }[] }).outputs[0]!.data).toEqual([42]);
    } finally {
      await trusting.stop();
      rmSync(marker, { force: true });
    }
  });
});

describe("cross-origin requests that change state (#29)", () => {
  const host = () => `127.0.0.1:${server.port}`;
  const refused = (why: string) =>
    `cross-origin request refused (${why}): this request changes the server's state and may come only from a client that is not a browser, or a page of the server's own origin`;

  it("refuses a page's text/plain POST to logging, unload, load, trace and shared memory with 403 and changes nothing", async () => {
    const page = { origin: "http://evil.example", "content-type": "text/plain;charset=UTF-8" };
    const before = await (await fetch(`${server.url}/v2/logging`)).json();
    const cases: [string, object | undefined][] = [
      ["/v2/logging", { log_verbose_level: 3 }],
      ["/v2/repository/models/simple/unload", undefined],
      ["/v2/repository/models/simple/load", undefined],
      ["/v2/trace/setting", { trace_rate: "1" }],
      ["/v2/systemsharedmemory/region/r/register", { key: "/x", offset: 0, byte_size: 8 }],
      ["/v2/systemsharedmemory/unregister", undefined],
      ["/v2/repository/index", undefined],
    ];
    for (const [path, body] of cases) {
      const r = await post(server, path, body, page);
      expect(r.status, path).toBe(403);
      expect(r.headers.get("content-type")).toBe("application/json");
      expect(await error(r)).toBe(refused("Origin does not match Host"));
    }
    const site = await post(server, "/v2/repository/models/simple/unload", undefined, { "sec-fetch-site": "cross-site" });
    expect(await error(site)).toBe(refused("Sec-Fetch-Site: cross-site"));
    const sameSite = await post(server, "/v2/logging", { log_verbose_level: 3 }, { "sec-fetch-site": "same-site", origin: `http://${host()}` });
    expect(sameSite.status).toBe(403);
    const nullOrigin = await post(server, "/v2/logging", { log_verbose_level: 3 }, { origin: "null" });
    expect(nullOrigin.status).toBe(403);
    expect(await (await fetch(`${server.url}/v2/logging`)).json()).toEqual(before);
    expect((await fetch(`${server.url}/v2/models/simple/ready`)).status).toBe(200);
  });

  it("answers clients without Origin, the server's own origin, reads, and inference", async () => {
    expect((await post(server, "/v2/logging", { log_verbose_level: 0 })).status).toBe(200);
    expect((await post(server, "/v2/logging", { log_verbose_level: 0 }, { origin: `http://${host()}`, "sec-fetch-site": "same-origin" })).status).toBe(200);
    expect((await fetch(`${server.url}/v2/models/simple/config`, { headers: { origin: "http://evil.example", "sec-fetch-site": "cross-site" } })).status).toBe(
      200,
    );
    const infer = await post(server, "/v2/models/simple/infer", SIMPLE_TWOS_AND_THREES, { origin: "http://evil.example" });
    expect(infer.status).toBe(200);
  });
});
