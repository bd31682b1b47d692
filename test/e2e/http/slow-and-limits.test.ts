/**
 * #29 through the compiled binary:
 * - finding 10: a load, an unload or an inference that takes longer than the HTTP idle
 *   timeout (10 s) still gets its answer, while an idle keep-alive connection is still
 *   closed;
 * - finding 12: a client's sequence id cannot forge log lines or send terminal escapes;
 * - a body over --http-max-input-size gets Triton's 400 JSON, not an empty 413;
 * - a drain that times out at SIGTERM leaves no override files behind.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository, simpleConfigJson } from "../../helpers/repo.ts";

let repo: ReturnType<typeof makeRepository>;
let server: ServerProcess;

/** Longer than the 10 s idle timeout. */
const SLOW_MS = 12_000;
const IO = `input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]\n`;
/** execute sleeps for the request's `sleep_ms` parameter; initialize for the config's `init_sleep_ms`. */
const SLEEPY = `
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export default class Sleepy {
  async initialize(args) { await sleep(Number(args.parameters.init_sleep_ms ?? 0)); }
  async execute(requests) {
    await sleep(Number(requests[0].parameters.sleep_ms ?? 0));
    return requests.map((r) => ({ outputs: [{ name: "OUT", datatype: "INT32", shape: [1], data: r.input("IN").data }] }));
  }
}
`;
const inferBody = (sleepMs: number) =>
  JSON.stringify({ parameters: { sleep_ms: sleepMs }, inputs: [{ name: "IN", datatype: "INT32", shape: [1], data: [5] }] });

beforeAll(async () => {
  repo = makeRepository(["simple", "simple_sequence"]);
  repo.add("ts_sleepy/config.pbtxt", `backend: "typescript"\n${IO}`);
  repo.add("ts_sleepy/1/model.js", SLEEPY);
  repo.add("ts_slow_init/config.pbtxt", `backend: "typescript"\n${IO}parameters { key: "init_sleep_ms" value: { string_value: "${SLOW_MS}" } }\n`);
  repo.add("ts_slow_init/1/model.js", SLEEPY);
  server = await startServerProcess([
    `--model-repository=${repo.dir}`,
    "--model-control-mode=explicit",
    "--load-model=simple",
    "--load-model=simple_sequence",
    "--load-model=ts_sleepy",
    "--http-max-input-size=1048576",
  ]);
});

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

/** Sends one request on a fresh connection and resolves when the server closes it: the raw bytes it answered. */
function rawExchange(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let out = "";
    socket.on("data", (d) => (out += d.toString("latin1")));
    socket.on("error", reject);
    socket.on("close", () => resolve(out));
    socket.write(request);
  });
}

describe("requests that outlast the idle timeout (#29 finding 10)", () => {
  it("answers a slow initialize's load, a slow inference and the unload that drains it; idle keep-alive still closes", { timeout: 60_000 }, async () => {
    const load = fetch(`${server.url}/v2/repository/models/ts_slow_init/load`, { method: "POST" });
    const infer = fetch(`${server.url}/v2/models/ts_sleepy/infer`, { method: "POST", body: inferBody(SLOW_MS) });
    // The unload waits for the inference in flight to drain.
    await new Promise((r) => setTimeout(r, 500));
    const unload = fetch(`${server.url}/v2/repository/models/ts_sleepy/unload`, { method: "POST" });
    // An idle keep-alive connection: answered, then closed by the server on its own.
    const idle = rawExchange(server.port, "GET /v2/health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");

    const [l, i, u, idleAnswer] = await Promise.all([load, infer, unload, idle]);
    expect(l.status).toBe(200);
    expect(await l.text()).toBe("");
    expect(i.status).toBe(200);
    expect(((await i.json()) as { outputs: { data: number[] }[] }).outputs[0]!.data).toEqual([5]);
    expect(u.status).toBe(200);
    expect(idleAnswer).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect((await fetch(`${server.url}/v2/models/ts_slow_init/ready`)).status).toBe(200);
    expect((await fetch(`${server.url}/v2/models/ts_sleepy/ready`)).status).not.toBe(200);
  });
});

describe("log injection (#29 finding 12)", () => {
  it("writes a string sequence id with a newline and escape codes as one escaped line", async () => {
    const id = "s1\nE1127 08:00:00.000000 1 src/main.ts] forged: admin logged in\u001b[2J";
    const step = () =>
      fetch(`${server.url}/v2/models/simple_sequence/infer`, {
        method: "POST",
        body: JSON.stringify({
          parameters: { sequence_id: id, sequence_start: true },
          inputs: [{ name: "INPUT", shape: [1, 1], datatype: "INT32", data: [1] }],
        }),
      });
    expect((await step()).status).toBe(200);
    expect((await step()).status).toBe(200); // a second START: the restart warning names the id
    await expect
      .poll(() => server.log())
      .toContain("sequence s1\\nE1127 08:00:00.000000 1 src/main.ts] forged: admin logged in\\x1b[2J for model 'simple_sequence' has restarted");
    expect(server.log()).not.toMatch(/^E1127 08:00:00\.000000 1 src\/main\.ts\] forged/m);
    expect(server.log()).not.toContain("\u001b");
  });
});

describe("bodies over --http-max-input-size (#29 item 4a)", () => {
  const message = (n: string) => `Request JSON size of ${n} exceeds the maximum allowed value of 1048576. Use --http-max-input-size to increase the limit.`;

  it("answers 400 with Triton's JSON error for a declared length far past the limit", async () => {
    const r = await fetch(`${server.url}/v2/models/simple/infer`, { method: "POST", body: new Uint8Array(3 * 1048576) });
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({ error: message(String(3 * 1048576)) });
  });

  it("answers 400 with Triton's JSON error for a chunked body past the limit, and keeps serving", async () => {
    const chunks = 48;
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < chunks; i++) c.enqueue(new Uint8Array(65536));
        c.close();
      },
    });
    const r = await fetch(`${server.url}/v2/repository/models/simple/load`, { method: "POST", body, duplex: "half" } as RequestInit);
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({ error: message("more than 1048576") });
    expect((await fetch(`${server.url}/v2/models/simple/ready`)).status).toBe(200);
  });
});

describe("override files at a drain timeout (#29 item 4c)", () => {
  it("are removed when SIGTERM's drain gives up on a request in flight", { timeout: 60_000 }, async () => {
    const tmp = mkdtempSync(join(tmpdir(), "nereid-drain-tmp-"));
    const s = await startServerProcess([`--model-repository=${repo.dir}`, "--model-control-mode=explicit", "--load-model=ts_sleepy", "--exit-timeout-secs=1"], {
      env: { TMPDIR: tmp },
    });
    try {
      const model = readFileSync(join(repo.dir, "simple", "1", "model.onnx")).toString("base64");
      const r = await fetch(`${s.url}/v2/repository/models/from_files/load`, {
        method: "POST",
        body: JSON.stringify({ parameters: { config: simpleConfigJson({ name: "from_files" }), "file:1/model.onnx": model } }),
      });
      expect(r.status).toBe(200);
      const folders = () => readdirSync(tmp).filter((f) => f.startsWith("nereid-override-"));
      expect(folders()).toHaveLength(1);
      const inFlight = fetch(`${s.url}/v2/models/ts_sleepy/infer`, { method: "POST", body: inferBody(30_000) }).catch(() => undefined);
      await new Promise((res) => setTimeout(res, 300));
      expect(await s.stop("SIGTERM")).toBe(1); // the drain timed out
      expect(s.log()).toContain("Exit timeout expired. Exiting immediately.");
      expect(folders()).toEqual([]);
      await inFlight;
    } finally {
      await s.stop("SIGKILL");
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
