/** The logging extension (GET/POST /v2/logging) through the server binary. */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;

beforeAll(async () => {
  repo = makeRepository(["simple"]);
  server = await startServerProcess([`--model-repository=${repo.dir}`]);
});

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

const post = (body: unknown) => fetch(`${server.url}/v2/logging`, { method: "POST", body: JSON.stringify(body) });

describe("logging extension", () => {
  it("reports the settings under Triton's names and changes them at run time", async () => {
    expect(await (await fetch(`${server.url}/v2/logging`)).json()).toEqual({
      log_file: "", log_info: true, log_warning: true, log_error: true, log_verbose_level: 0, log_format: "default",
    });
    const r = await post({ log_verbose_level: 2, log_format: "ISO8601" });
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ log_file: "", log_info: true, log_warning: true, log_error: true, log_verbose_level: 2, log_format: "ISO8601" });
    await new Promise((res) => setTimeout(res, 50));
    expect(server.log()).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ I \d+ src\/core\/log-settings\.ts\] log settings updated: /m);
  });

  it("refuses a log file change (501), wrong types and unknown keys (400), changing nothing", async () => {
    const file = await post({ log_file: "/tmp/x.log" });
    expect(file.status).toBe(501);
    expect(await file.json()).toEqual({ error: "log file location can not be updated through network protocol" });
    const bad = await post({ log_info: "yes" });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: "expect boolean for 'log_info' parameter" });
    expect((await post({ log_colour: true })).status).toBe(400);
    expect((await post({ log_error: false, log_verbose_level: -1 })).status).toBe(400);
    expect(((await (await fetch(`${server.url}/v2/logging`)).json()) as { log_error: boolean }).log_error).toBe(true);
  });
});
