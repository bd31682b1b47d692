/**
 * --reuse-http-port and --reuse-grpc-port through the server binary (#17): two servers
 * with the flags listen on the same HTTP and gRPC ports and both start; without the
 * flags a second server on a taken port fails to start.
 */
import { afterAll, describe, expect, it } from "vitest";
import { createServer } from "node:net";
import { spawnSync } from "node:child_process";
import { startServerProcess, serverCommand, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { inferenceClient } from "../../helpers/grpc-client.ts";

const repo = makeRepository(["simple"]);
const servers: ServerProcess[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  repo.remove();
});

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

describe("SO_REUSEPORT", () => {
  it("two servers with --reuse-http-port and --reuse-grpc-port share both ports and both serve", async () => {
    const [http, grpc] = [await freePort(), await freePort()];
    const args = [
      `--model-repository=${repo.dir}`,
      `--http-port=${http}`,
      `--grpc-port=${grpc}`,
      "--reuse-http-port=true",
      "--reuse-grpc-port=true",
      "--allow-metrics=false",
    ];
    // The helper's own --http-port=0 and --grpc-port=0 come first; ours, later, win.
    servers.push(await startServerProcess(args), await startServerProcess(args));
    expect(servers.map((s) => s.port)).toEqual([http, http]);
    expect(servers.map((s) => s.grpcTarget)).toEqual([`127.0.0.1:${grpc}`, `127.0.0.1:${grpc}`]);
    for (let i = 0; i < 8; i++) expect((await fetch(`http://127.0.0.1:${http}/v2/health/ready`)).status).toBe(200);
    const { client, call } = inferenceClient(`127.0.0.1:${grpc}`);
    expect((await call("ServerReady")({})).ready).toBe(true);
    client.close();
  });

  // Both servers on their default frontend threads: under Bun worker threads, which share
  // their own port (SO_REUSEPORT) and, before #30's check, joined the first server's.
  it.each(["http", "grpc"])("without the flags, a second server on a taken %s port does not start", async (protocol) => {
    const port = await freePort();
    const first = await startServerProcess([`--model-repository=${repo.dir}`, `--${protocol}-port=${port}`, "--allow-metrics=false"]);
    servers.push(first);
    const { cmd, args } = serverCommand();
    const r = spawnSync(
      cmd,
      [
        ...args,
        `--model-repository=${repo.dir}`,
        "--http-port=0",
        "--grpc-port=0",
        `--${protocol}-port=${port}`,
        `--${protocol}-address=127.0.0.1`,
        "--allow-metrics=false",
      ],
      { encoding: "utf8", timeout: 60_000 },
    );
    expect(r.status).not.toBe(0);
    expect(r.stdout + r.stderr).toMatch(
      new RegExp(`Failed to start server\\. Is port ${port} in use\\?|EADDRINUSE: address already in use 127\\.0\\.0\\.1:${port}`),
    );
  });
});
