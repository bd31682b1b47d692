/** The logging extension (GET/POST /v2/logging) through the server binary. */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serverCommand, startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
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
      log_file: "",
      log_info: true,
      log_warning: true,
      log_error: true,
      log_verbose_level: 0,
      log_format: "default",
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

describe("--log-file (#17)", () => {
  it("appends every log line to the file instead of standard error, and the logging extension reports it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "nereid-log-"));
    const file = join(dir, "server.log");
    writeFileSync(file, "an earlier line\n");
    const { cmd, args } = serverCommand();
    const child = spawn(
      cmd,
      [
        ...args,
        `--model-repository=${repo.dir}`,
        `--log-file=${file}`,
        "--http-port=0",
        "--http-address=127.0.0.1",
        "--allow-grpc=false",
        "--allow-metrics=false",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let console = "";
    child.stdout!.on("data", (c: Buffer) => (console += c));
    child.stderr!.on("data", (c: Buffer) => (console += c));
    try {
      let port: string | undefined;
      for (let i = 0; i < 300 && !port; i++) {
        await new Promise((r) => setTimeout(r, 100));
        port = /Started HTTPService at [^\s:]+:(\d+)/.exec(readFileSync(file, "utf8"))?.[1];
      }
      expect(port).toBeDefined();
      const settings = (await (await fetch(`http://127.0.0.1:${port}/v2/logging`)).json()) as { log_file: string };
      expect(settings.log_file).toBe(file);
      const text = readFileSync(file, "utf8");
      expect(text.startsWith("an earlier line\n")).toBe(true);
      expect(text).toMatch(/^I\d{4} [\d:.]+ \d+ src\/repository\/[a-z-]+\.ts\] successfully loaded 'simple' version 1/m);
      expect(console).toBe("");
    } finally {
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a file that cannot be opened stops the start with exit 1 and the reason", async () => {
    const { cmd, args } = serverCommand();
    const child = spawn(
      cmd,
      [...args, `--model-repository=${repo.dir}`, "--log-file=/nonexistent-dir/server.log", "--http-port=0", "--allow-grpc=false", "--allow-metrics=false"],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let err = "";
    child.stderr!.on("data", (c: Buffer) => (err += c));
    const code = await new Promise((r) => child.once("exit", r));
    expect(code).toBe(1);
    expect(err).toContain("failed to open log file '/nonexistent-dir/server.log'");
  });
});
