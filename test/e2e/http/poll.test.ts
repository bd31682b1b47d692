/**
 * Poll mode (--model-control-mode=poll) through the server binary: an added model, an
 * added version, a changed config and a removed model are picked up; load/unload
 * requests are refused as Triton refuses them.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { cpSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { eventually } from "../../helpers/eventually.ts";

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;

const index = async () =>
  (await (await fetch(`${server.url}/v2/repository/index`, { method: "POST" })).json()) as { name: string; version?: string; state?: string }[];

beforeAll(async () => {
  repo = makeRepository(["simple", "simple_identity"]);
  server = await startServerProcess([`--model-repository=${repo.dir}`, "--model-control-mode=poll", "--repository-poll-secs=1"]);
});

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

describe("poll mode", () => {
  it("refuses explicit load and unload", async () => {
    const r = await fetch(`${server.url}/v2/repository/models/simple/load`, { method: "POST" });
    expect(r.status).toBe(503);
    expect(await r.json()).toEqual({ error: "explicit model load / unload is not allowed if polling is enabled" });
  });

  it("picks up an added model, an added version, a changed config and a removed model", async () => {
    // Added model.
    cpSync(join(repo.dir, "simple"), join(repo.dir, "simple_copy"), { recursive: true });
    writeFileSync(
      join(repo.dir, "simple_copy", "config.pbtxt"),
      readFileSync(join(repo.dir, "simple", "config.pbtxt"), "utf8").replace('name: "simple"', 'name: "simple_copy"'),
    );
    await eventually(async () => expect((await index()).find((e) => e.name === "simple_copy")?.state).toBe("READY"));

    // Added version (the default policy serves the latest only): version 1 stays listed, unloaded, as in Triton.
    cpSync(join(repo.dir, "simple", "1"), join(repo.dir, "simple", "2"), { recursive: true });
    await eventually(async () =>
      expect((await index()).filter((e) => e.name === "simple")).toEqual([
        { name: "simple", version: "1", state: "UNAVAILABLE", reason: "unloaded" },
        { name: "simple", version: "2", state: "READY" },
      ]),
    );

    // Changed config.
    writeFileSync(
      join(repo.dir, "simple", "config.pbtxt"),
      readFileSync(join(repo.dir, "simple", "config.pbtxt"), "utf8").replace("max_batch_size: 8", "max_batch_size: 2"),
    );
    await eventually(async () => {
      const cfg = (await (await fetch(`${server.url}/v2/models/simple/config`)).json()) as { max_batch_size: number };
      expect(cfg.max_batch_size).toBe(2);
    });

    // Removed model.
    rmSync(join(repo.dir, "simple_identity"), { recursive: true, force: true });
    await eventually(async () => expect((await index()).map((e) => e.name)).toEqual(["simple", "simple", "simple_copy"]));
    expect((await fetch(`${server.url}/v2/models/simple_identity/ready`)).status).toBe(404);
    expect((await fetch(`${server.url}/v2/health/ready`)).status).toBe(200);
  });
});
