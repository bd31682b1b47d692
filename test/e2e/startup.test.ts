/**
 * Start-up's order (#30), through the server binary, with the frontends on 2 worker threads
 * each (their threads now start while the models load): a model whose load is held open
 * (its initialize waits for a file the test writes) keeps the HTTP and gRPC ports unbound,
 * as Triton binds them only after the repository's models loaded, so an early request is
 * refused; once the load ends the server listens, is ready, and its workers serve the
 * models (the table of the models they run themselves included). A worker that cannot
 * listen stops the start with the listener's message, over HTTP and gRPC.
 */
import { afterAll, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runServerToExit, serverCommand, SIMPLE_TWOS_AND_THREES } from "../helpers/server-process.ts";
import { makeRepository } from "../helpers/repo.ts";
import { freePort } from "../helpers/ports.ts";
import { eventually } from "../helpers/eventually.ts";
import { inferenceClient } from "../helpers/grpc-client.ts";

const dir = mkdtempSync(join(tmpdir(), "nereid-startup-"));
const repo = makeRepository(["simple"]);
const heldRepo = makeRepository(["simple"]);
afterAll(() => {
  repo.remove();
  heldRepo.remove();
  rmSync(dir, { recursive: true, force: true });
});

/** initialize writes the `began` file, then waits until the `gate` file exists. */
const HELD = `
import { existsSync, writeFileSync } from "node:fs";
export default class Held {
  async initialize(args) {
    writeFileSync(args.parameters.began, "loading");
    while (!existsSync(args.parameters.gate)) await new Promise((r) => setTimeout(r, 20));
  }
  execute(requests) { return requests.map((r) => ({ outputs: [{ name: "Y", datatype: "INT32", shape: [1], data: r.input("X").data }] })); }
}
`;

/** Whether a TCP connection to 127.0.0.1:`port` is refused. */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      resolve(false);
    });
    s.once("error", (err: NodeJS.ErrnoException) => resolve(err.code === "ECONNREFUSED"));
  });
}

describe("start-up with the frontends on worker threads", () => {
  it("binds no port while a model loads; once it has loaded, listens, is ready and serves on every worker", { timeout: 60_000 }, async () => {
    const began = join(dir, "began");
    const gate = join(dir, "gate");
    heldRepo.add(
      "held/config.pbtxt",
      `name: "held"\nbackend: "typescript"\nmax_batch_size: 0\ninput [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] } ]\nparameters { key: "began" value: { string_value: "${began}" } }\nparameters { key: "gate" value: { string_value: "${gate}" } }\n`,
    );
    heldRepo.add("held/1/model.js", HELD);
    const [http, grpc] = [await freePort(), await freePort()];
    const { cmd, args } = serverCommand();
    const child = spawn(
      cmd,
      [
        ...args,
        `--model-repository=${heldRepo.dir}`,
        `--http-port=${http}`,
        "--http-address=127.0.0.1",
        `--grpc-port=${grpc}`,
        "--grpc-address=127.0.0.1",
        "--allow-metrics=false",
        "--http-thread-count=2",
        "--grpc-infer-thread-count=2",
        "--log-verbose=1",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let log = "";
    child.stdout.on("data", (c: Buffer) => (log += c.toString()));
    child.stderr.on("data", (c: Buffer) => (log += c.toString()));
    const exited = new Promise<number | null>((r) => child.once("exit", r));
    try {
      await eventually(async () => expect(existsSync(began)).toBe(true));
      // The load is held: neither port is bound, so a request is refused, as before the load ends in Triton.
      expect([await refused(http), await refused(grpc)]).toEqual([true, true]);
      await expect(fetch(`http://127.0.0.1:${http}/v2/health/ready`)).rejects.toThrow();
      expect(log).not.toMatch(/Started (HTTPService|GRPCInferenceService)/);
      writeFileSync(gate, "go");
      await eventually(async () => expect(log).toMatch(/Started HTTPService at 127\.0\.0\.1:\d+/));
      expect(log.indexOf("successfully loaded 'held' version 1")).toBeGreaterThan(-1);
      expect(log.indexOf("successfully loaded 'held' version 1")).toBeLessThan(log.indexOf("Started GRPCInferenceService"));
      expect(log).toMatch(/gRPC frontend on 2 worker threads/);
      expect(log).toMatch(/HTTP frontend on 2 worker threads/);
      // The workers started early took the table of the models they run themselves once the load ended.
      expect(/frontend worker threads run these model versions themselves: (.*)/.exec(log)?.[1]?.split(", ").sort()).toEqual(["held:1", "simple:1"]);
      expect((await fetch(`http://127.0.0.1:${http}/v2/health/ready`)).status).toBe(200);
      // Several connections, so that the kernel hands them to both workers.
      for (let i = 0; i < 8; i++) {
        const r = await fetch(`http://127.0.0.1:${http}/v2/models/simple/infer`, {
          method: "POST",
          body: JSON.stringify(SIMPLE_TWOS_AND_THREES),
          headers: { connection: "close" },
        });
        expect(r.status).toBe(200);
        const outputs = ((await r.json()) as { outputs: { name: string; data: number[] }[] }).outputs;
        expect(outputs.map((o) => [o.name, o.data])).toEqual([
          ["OUTPUT0", Array(16).fill(5)],
          ["OUTPUT1", Array(16).fill(-1)],
        ]);
        const held = await fetch(`http://127.0.0.1:${http}/v2/models/held/infer`, {
          method: "POST",
          body: JSON.stringify({ inputs: [{ name: "X", datatype: "INT32", shape: [1], data: [i] }] }),
          headers: { connection: "close" },
        });
        expect(((await held.json()) as { outputs: { data: number[] }[] }).outputs[0]!.data).toEqual([i]);
      }
      const { client, call } = inferenceClient(`127.0.0.1:${grpc}`);
      try {
        expect((await call("ServerReady")({})).ready).toBe(true);
      } finally {
        client.close();
      }
    } finally {
      writeFileSync(gate, "go");
      if (child.exitCode === null) child.kill("SIGTERM");
    }
    expect(await exited).toBe(0);
  });

  // An address no interface has: with the port shared (--reuse-*-port) the probe is skipped, and the workers' own listen fails.
  it.each([
    ["http", /E\d+ [^\n]*src\/main\.ts\] EADDRNOTAVAIL: address not available, listen/],
    ["grpc", /E\d+ [^\n]*src\/main\.ts\] listen EADDRNOTAVAIL: address not available 192\.0\.2\.1/],
  ])("a %s worker that cannot listen stops the start with its message, exit code 1", { timeout: 60_000 }, async (protocol, message) => {
    const { code, output } = await runServerToExit([
      `--model-repository=${repo.dir}`,
      "--http-port=0",
      "--grpc-port=0",
      "--allow-metrics=false",
      protocol === "http" ? "--http-thread-count=2" : "--grpc-infer-thread-count=2",
      `--${protocol}-address=192.0.2.1`,
      `--reuse-${protocol}-port=true`,
    ]);
    expect(code).toBe(1);
    expect(output).toMatch(message);
    expect(output).not.toMatch(/Started HTTPService/);
  });
});
