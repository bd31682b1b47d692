/**
 * The gRPC port's HTTP/2 receive windows (src/frontends/grpc/server.ts): a client may send
 * 8 MiB on a stream and 32 MiB on the connection before it waits for WINDOW_UPDATE, where
 * the HTTP/2 default of 64 KiB stalled large requests. grpc-js has no option for them, so
 * this also catches a grpc-js whose internals moved. Against the binary (Bun's http2) and
 * in-process under Node.
 */
import { describe, it, expect, afterAll } from "vitest";
import { connect } from "node:http2";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { eventually } from "../../helpers/eventually.ts";
import { startServer, type RunningServer } from "../../../src/main.ts";
import { defaultOptions } from "../../../src/options.ts";
import { configureLog } from "../../../src/core/logger.ts";
import { CONNECTION_WINDOW, STREAM_WINDOW } from "../../../src/frontends/grpc/server.ts";

const HTTP2_DEFAULT_WINDOW = 65_535;

/** The windows the server grants a new HTTP/2 connection: its SETTINGS and its connection-level WINDOW_UPDATE. */
async function grantedWindows(port: number): Promise<{ stream: number; connection: number }> {
  const session = connect(`http://127.0.0.1:${port}`);
  session.on("error", () => {});
  try {
    const settings = await new Promise<{ initialWindowSize?: number }>((resolve) => session.once("remoteSettings", resolve));
    // The connection window starts at 65,535 and grows by the server's WINDOW_UPDATE on stream 0.
    await eventually(async () => expect(session.state.remoteWindowSize).toBe(CONNECTION_WINDOW), 5_000);
    return { stream: settings.initialWindowSize ?? HTTP2_DEFAULT_WINDOW, connection: session.state.remoteWindowSize! };
  } finally {
    session.close();
  }
}

describe("gRPC HTTP/2 windows", () => {
  const repo = makeRepository(["simple"]);
  let server: ServerProcess | undefined;
  let running: RunningServer | undefined;
  afterAll(async () => {
    await server?.stop();
    await running?.shutdown();
    repo.remove();
  });

  it("the binary grants 8 MiB per stream and 32 MiB per connection", async () => {
    server = await startServerProcess([`--model-repository=${repo.dir}`]);
    expect(await grantedWindows(Number(server.grpcTarget!.split(":")[1]))).toEqual({ stream: STREAM_WINDOW, connection: CONNECTION_WINDOW });
    expect(STREAM_WINDOW).toBe(8 << 20);
  }, 60_000);

  it("so does the server under Node", async () => {
    configureLog({ info: false, warning: false });
    running = await startServer({ ...defaultOptions(), modelRepositories: [repo.dir], httpPort: 0, httpAddress: "127.0.0.1", grpcPort: 0, grpcAddress: "127.0.0.1", allowMetrics: false });
    expect(await grantedWindows(running.grpc!.port)).toEqual({ stream: STREAM_WINDOW, connection: CONNECTION_WINDOW });
  }, 60_000);
});
