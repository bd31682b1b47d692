/**
 * Idle and excess gRPC connections cannot exhaust the server (issue #14): with
 * --grpc-max-connections=50, connections beyond 50 are closed at once, connections that do
 * not complete the HTTP/2 handshake or stay without calls are closed after their timeouts,
 * and HTTP keeps answering meanwhile. One scenario, run against the binary (Bun) and
 * in-process under Node. Loopback only; no assertion on timing beyond generous waits.
 */
import { describe, it, expect, afterAll } from "vitest";
import { connect, type Socket } from "node:net";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { inferenceClient } from "../../helpers/grpc-client.ts";
import { startServer, type RunningServer } from "../../../src/main.ts";
import { defaultOptions } from "../../../src/options.ts";
import { configureLog } from "../../../src/core/logger.ts";

const LIMIT = 50;
const TIMEOUT_SECS = 5; // handshake and idle timeouts alike
const FLAGS = [`--grpc-max-connections=${LIMIT}`, `--grpc-handshake-timeout-secs=${TIMEOUT_SECS}`, `--grpc-idle-timeout-secs=${TIMEOUT_SECS}`];

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
const EMPTY_SETTINGS = Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]);

interface Raw {
  socket: Socket;
  /** Bytes the server sent. */
  received: number;
  closed: Promise<void>;
}

/** A TCP connection that sends `bytes` (or nothing) and then stays silent. */
async function rawConnection(port: number, bytes?: Buffer): Promise<Raw> {
  const socket = connect(port, "127.0.0.1");
  const raw: Raw = { socket, received: 0, closed: new Promise((resolve) => socket.once("close", () => resolve())) };
  socket.on("data", (d: Buffer) => (raw.received += d.length));
  socket.on("error", () => {});
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", () => resolve());
    socket.once("error", reject);
  });
  if (bytes) socket.write(bytes);
  return raw;
}

const within = <T>(p: Promise<T>, ms: number, what: string) =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms))]);

async function simpleInfer(target: string, deadlineMs: number): Promise<number[]> {
  const { client, call } = inferenceClient(target);
  const a = new Uint8Array(Int32Array.from({ length: 16 }, (_, i) => i).buffer);
  try {
    const r = await Promise.race([
      call("ModelInfer")({ model_name: "simple", inputs: [{ name: "INPUT0", datatype: "INT32", shape: [1, 16] }, { name: "INPUT1", datatype: "INT32", shape: [1, 16] }], raw_input_contents: [a, a] }),
      new Promise<never>((_, reject) => setTimeout(() => reject(Object.assign(new Error("deadline"), { code: 4 })), deadlineMs)),
    ]);
    return [...new Int32Array(new Uint8Array(r.raw_output_contents[0]).buffer)];
  } finally {
    client.close();
  }
}

/** The scenario; `grpcPort` has the limits above, `httpUrl` is the same server's HTTP. */
async function exhaustAndRecover(grpcPort: number, httpUrl: string) {
  const held: Raw[] = [];
  try {
    for (let i = 0; i < LIMIT - 2; i++) held.push(await rawConnection(grpcPort));
    held.push(await rawConnection(grpcPort, PREFACE.subarray(0, 10))); // a handshake that never completes
    const handshaken = await rawConnection(grpcPort, Buffer.concat([PREFACE, EMPTY_SETTINGS])); // then no call
    held.push(handshaken);
    // The server answers the handshake with its own SETTINGS: that connection reached grpc-js.
    await within(new Promise<void>((resolve) => (handshaken.received > 0 ? resolve() : handshaken.socket.once("data", () => resolve()))), 3000, "server SETTINGS");

    // Connection 51: closed at once without a byte, though it sends a proper preface.
    const extra = await rawConnection(grpcPort, Buffer.concat([PREFACE, EMPTY_SETTINGS]));
    await within(extra.closed, 3000, "connection beyond the limit closed");
    expect(extra.received).toBe(0);
    // A real client is refused too, while HTTP keeps answering.
    const refused = await simpleInfer(`127.0.0.1:${grpcPort}`, 3000).then(() => undefined, (e: { code: number }) => e.code);
    expect([14, 4]).toContain(refused); // UNAVAILABLE, or our deadline
    expect((await fetch(`${httpUrl}/v2/health/ready`)).status).toBe(200);
    expect(held.filter((r) => r.socket.closed)).toHaveLength(0);

    // Every held connection is closed by the server after its timeout...
    await within(Promise.all(held.map((r) => r.closed)), 30_000, "held connections closed by the server");
    // ...and gRPC serves again.
    expect(await simpleInfer(`127.0.0.1:${grpcPort}`, 10_000)).toEqual(Array.from({ length: 16 }, (_, i) => 2 * i));
  } finally {
    for (const r of held) r.socket.destroy();
  }
}

describe("gRPC connection limits", () => {
  let server: ServerProcess | undefined;
  let running: RunningServer | undefined;
  let repo: ReturnType<typeof makeRepository> | undefined;
  afterAll(async () => {
    await server?.stop();
    await running?.shutdown();
    repo?.remove();
  });

  it("the binary closes connections beyond --grpc-max-connections at once and silent or idle ones after the timeouts", async () => {
    repo ??= makeRepository(["simple"]);
    server = await startServerProcess([`--model-repository=${repo.dir}`, ...FLAGS]);
    await exhaustAndRecover(Number(server.grpcTarget!.split(":")[1]), server.url);
    expect(server.log()).toContain(`gRPC connection limit reached (--grpc-max-connections=${LIMIT}); closing new connections`);
  }, 60_000);

  it("so does the server under Node", async () => {
    configureLog({ info: false, warning: false });
    repo ??= makeRepository(["simple"]);
    running = await startServer({
      ...defaultOptions(),
      modelRepositories: [repo.dir],
      httpPort: 0,
      httpAddress: "127.0.0.1",
      grpcPort: 0,
      grpcAddress: "127.0.0.1",
      allowMetrics: false,
      grpcMaxConnections: LIMIT,
      grpcHandshakeTimeoutSecs: TIMEOUT_SECS,
      grpcIdleTimeoutSecs: TIMEOUT_SECS,
    });
    await exhaustAndRecover(running.grpc!.port, `http://127.0.0.1:${running.http!.port}`);
  }, 60_000);
});
