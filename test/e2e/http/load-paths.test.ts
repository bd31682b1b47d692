/**
 * P-18 / #14: a repository load never lets a client name a path the server writes or reads.
 * Model names are one folder name; file overrides stay inside their temporary model folder,
 * which goes away with the model; file names in a config override stay inside the model
 * folder; and no error tells the client whether some path exists.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository, simpleConfigJson } from "../../helpers/repo.ts";
import { inferenceClient } from "../../helpers/grpc-client.ts";

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;
/** The server's TMPDIR: where its override folders go, and nothing else. */
const serverTmp = mkdtempSync(join(tmpdir(), "nereid-load-tmp-"));
/** Where an escaping write would land (two levels above an override model folder). */
const target = join(serverTmp, "..", `nereid-escape-${process.pid}`);

/** The server's temporary override folders (its TMPDIR also holds what Bun extracts). */
const overrideFolders = () => readdirSync(serverTmp).filter((f) => f.startsWith("nereid-override-"));
const post = (path: string, body?: object) => fetch(`${server.url}${path}`, { method: "POST", body: body ? JSON.stringify(body) : undefined });
const error = async (r: Response) => ((await r.json()) as { error: string }).error;

let model: string;

beforeAll(async () => {
  repo = makeRepository(["simple"]);
  model = readFileSync(join(repo.dir, "simple", "1", "model.onnx")).toString("base64");
  server = await startServerProcess([`--model-repository=${repo.dir}`, "--model-control-mode=explicit", "--load-model=simple"], { env: { TMPDIR: serverTmp } });
});

afterAll(async () => {
  await server?.stop();
  repo?.remove();
  rmSync(serverTmp, { recursive: true, force: true });
  rmSync(target, { recursive: true, force: true });
});

describe("repository load paths (#14)", () => {
  it("refuses a model name that is not one folder name, over HTTP and gRPC, and writes nothing", async () => {
    const message = (name: string) => `invalid model name ${JSON.stringify(name)}: a model name is a single folder name (no '/', '\\', NUL, '.' or '..')`;
    // ('.' and '..' as a path segment are resolved by URL parsing before any server sees them.)
    for (const name of [`../../nereid-escape-${process.pid}`, "a/b", "a\\b"]) {
      const r = await post(`/v2/repository/models/${encodeURIComponent(name)}/load`, {
        parameters: { config: simpleConfigJson({ name }), "file:1/model.onnx": model },
      });
      expect(r.status).toBe(400);
      expect(await error(r)).toBe(message(name));
    }
    const { client, call } = inferenceClient(server.grpcTarget!);
    try {
      for (const name of [`../../nereid-escape-${process.pid}`, "..", ".", "a\0b"]) {
        await expect(
          call("RepositoryModelLoad")({
            model_name: name,
            parameters: { config: { string_param: simpleConfigJson() }, "file:1/model.onnx": { bytes_param: Buffer.from(model, "base64") } },
          }),
        ).rejects.toMatchObject({ code: 3, details: message(name) });
      }
    } finally {
      client.close();
    }
    expect(existsSync(target)).toBe(false);
    expect(overrideFolders()).toEqual([]);
  });

  it("refuses config file names that leave the model folder, with the same answer whether the file exists or not", async () => {
    const existing = join(repo.dir, "simple", "1", "model.onnx");
    const answers: string[] = [];
    for (const file of [`../../../../../../../..${existing}`, "../../../../../../../../no/such/file.onnx", existing]) {
      const r = await post("/v2/repository/models/simple/load", { parameters: { config: simpleConfigJson({ name: "simple", default_model_filename: file }) } });
      expect(r.status).toBe(400);
      answers.push(await error(r));
    }
    expect(new Set(answers)).toEqual(
      new Set([
        "failed to load 'simple': model 'simple' field 'default_model_filename': must be a relative path inside the model's folder (the loaded versions keep serving)",
      ]),
    );
    const label = await post("/v2/repository/models/simple/load", {
      parameters: {
        config: simpleConfigJson({ name: "simple", output: [{ name: "OUTPUT0", data_type: "TYPE_INT32", dims: [16], label_filename: "../../../etc/passwd" }] }),
      },
    });
    expect(await error(label)).toContain("model 'simple' field 'output[0].label_filename': must be a relative path inside the model's folder");
    // The repository's own simple still serves.
    expect((await fetch(`${server.url}/v2/models/simple/ready`)).status).toBe(200);
  });

  it("answers conflicting override paths without the server's paths and leaves no folder behind", async () => {
    const r = await post("/v2/repository/models/clash/load", {
      parameters: { config: simpleConfigJson({ name: "clash" }), "file:1/model.onnx": model, "file:1/model.onnx/inner": model },
    });
    expect(r.status).toBe(400);
    const message = await error(r);
    expect(message).toMatch(/^cannot write file override '1\/model.onnx(\/inner)?' of model 'clash' \(E[A-Z]+\): the override paths conflict$/);
    expect(message).not.toContain(serverTmp);
    expect(overrideFolders()).toEqual([]);
  });

  it("removes an override model's temporary folder when it is reloaded, and at shutdown", async () => {
    const load = () =>
      post("/v2/repository/models/from_files/load", { parameters: { config: simpleConfigJson({ name: "from_files" }), "file:1/model.onnx": model } });
    expect((await load()).status).toBe(200);
    const first = overrideFolders();
    expect(first).toHaveLength(1);
    expect((await load()).status).toBe(200);
    // The replaced folder goes once its version has drained.
    await expect.poll(() => overrideFolders().length).toBe(1);
    expect(overrideFolders()).not.toEqual(first);
    expect((await post("/v2/repository/models/from_files/unload")).status).toBe(200);
    expect(await server.stop("SIGTERM")).toBe(0);
    expect(overrideFolders()).toEqual([]);
  });
});
