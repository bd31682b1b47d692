/**
 * Repository agents (`model_repository_agents`) through the server binary: Nereid runs
 * none, so each agent a config names is logged as a warning with its name (escaped, as
 * every log line is), and the model's files load unchanged.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startServerProcess, SIMPLE_TWOS_AND_THREES, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";

let repo: ReturnType<typeof makeRepository>;
let server: ServerProcess;

beforeAll(async () => {
  repo = makeRepository(["simple"]);
  const config = readFileSync(join(repo.dir, "simple", "config.pbtxt"), "utf8");
  repo.add(
    "simple/config.pbtxt",
    config + 'model_repository_agents { agents [ { name: "checksum" parameters { key: "MD5:1/model.onnx" value: "0" } }, { name: "odd\\nagent" } ] }\n',
  );
  server = await startServerProcess([`--model-repository=${repo.dir}`, "--allow-grpc=false", "--allow-metrics=false"]);
});

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

describe("model_repository_agents", () => {
  it("logs a warning naming each agent, and loads the model as it is", async () => {
    const lines = server
      .log()
      .split("\n")
      .filter((l) => l.includes("repository agent"));
    expect(lines.map((l) => l.replace(/^.*\] /, ""))).toEqual([
      "model 'simple': repository agent 'checksum' is not supported and is ignored; the model's files load unchanged",
      "model 'simple': repository agent 'odd\\nagent' is not supported and is ignored; the model's files load unchanged",
    ]);
    expect(lines.every((l) => l.startsWith("W"))).toBe(true);
    const res = await fetch(`${server.url}/v2/models/simple/infer`, { method: "POST", body: JSON.stringify(SIMPLE_TWOS_AND_THREES) });
    expect(res.status).toBe(200);
  });
});
