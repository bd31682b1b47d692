/**
 * Idle and excess gRPC connections cannot exhaust the server (issues #14 and #29), with
 * --grpc-max-connections=50:
 * - connections that do not complete the HTTP/2 handshake or stay without calls are closed
 *   after their timeouts, and HTTP keeps answering meanwhile;
 * - at the limit a new client wins against connections that have not sent the preface, TLS
 *   handshakes that stall, and HTTP/2 connections without a call (closed with a GOAWAY),
 *   oldest or idle longest first, so a real client gets its answer while 100 such
 *   connections are open, long before their timeouts (120 s here);
 * - a connection with a call in flight is never closed to make room; when every connection
 *   has one, the new client is refused.
 * Run against the binary with the gRPC frontend on the main thread (--grpc-infer-thread-count=1:
 * one listener, so which connection is closed is known exactly), the binary with it on two
 * worker threads (each enforcing its share of the limit, the kernel spreading connections
 * between them), and in-process under Node. Loopback only.
 */
import { describe, it, expect, afterEach, beforeAll, afterAll } from "vitest";
import { connect, type Socket } from "node:net";
import { connect as http2Connect, type ClientHttp2Session } from "node:http2";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credentials, makeGenericClientConstructor, type ChannelCredentials, type Client, type ClientDuplexStream } from "@grpc/grpc-js";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { inferSimple, simpleOutput, SIMPLE_REQUEST } from "../../helpers/grpc-client.ts";
import { certificateMaker } from "../../helpers/tls-certs.ts";
import { serviceDefinition } from "../../../src/frontends/grpc/protos.ts";
import { startServer, type RunningServer } from "../../../src/startup/start.ts";
import { defaultOptions } from "../../../src/options.ts";
import { configureLog } from "../../../src/core/logger.ts";

const LIMIT = 50;
/** Connections a test holds beyond the limit. */
const EXTRA = 50;
const SHORT_TIMEOUT_SECS = 5; // handshake and idle timeouts where the test waits for them
const LONG_TIMEOUT_SECS = 120; // where a client must get in long before them
const SHORT = [`--grpc-max-connections=${LIMIT}`, `--grpc-handshake-timeout-secs=${SHORT_TIMEOUT_SECS}`, `--grpc-idle-timeout-secs=${SHORT_TIMEOUT_SECS}`];
const LONG = [`--grpc-max-connections=${LIMIT}`, `--grpc-handshake-timeout-secs=${LONG_TIMEOUT_SECS}`, `--grpc-idle-timeout-secs=${LONG_TIMEOUT_SECS}`];
/** The deadline of the client that must get in: far below the timeouts of LONG. */
const CLIENT_DEADLINE_MS = 20_000;
const OUTPUT = Array.from({ length: 16 }, (_, i) => i + 5);

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
const EMPTY_SETTINGS = Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]);
/** The start of a TLS ClientHello whose record says 512 bytes follow; they never do. */
const STALLED_CLIENT_HELLO = Buffer.concat([Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]), Buffer.alloc(32)]);

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

interface Idle {
  session: ClientHttp2Session;
  goaway: boolean;
}

/** An HTTP/2 connection that completes its handshake (preface and SETTINGS both ways) and then sends nothing. */
async function idleSession(port: number): Promise<Idle> {
  const session = http2Connect(`http://127.0.0.1:${port}`);
  const idle: Idle = { session, goaway: false };
  session.on("error", () => {});
  session.on("goaway", () => (idle.goaway = true));
  await new Promise<void>((resolve, reject) => {
    session.once("remoteSettings", () => resolve());
    session.once("close", () => reject(new Error("idle session closed before the server's SETTINGS")));
  });
  return idle;
}

const within = <T>(p: Promise<T>, ms: number, what: string) =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms))]);

/** Resolves once `count()` reaches `n` (checked every 20 ms). */
const reaches = (count: () => number, n: number, what: string) =>
  within(
    new Promise<void>((resolve) => {
      const check = () => (count() >= n ? resolve() : setTimeout(check, 20));
      check();
    }),
    15_000,
    what,
  );

/** A ModelStreamInfer stream on a connection of its own: a call in flight for as long as it is open. */
async function openStream(target: string, creds: ChannelCredentials) {
  const Ctor = makeGenericClientConstructor(serviceDefinition("inference.GRPCInferenceService"), "GRPCInferenceService");
  const client = new Ctor(target, creds, { "grpc.use_local_subchannel_pool": 1 }) as unknown as Client & {
    ModelStreamInfer(): ClientDuplexStream<object, any>;
  };
  const call = client.ModelStreamInfer();
  const answers: Array<(r: any) => void> = [];
  let failure: Error | undefined;
  call.on("data", (r) => answers.shift()?.(r));
  call.on("error", (e: Error) => (failure = e));
  const ended = new Promise<void>((resolve) => call.on("status", () => resolve()));
  const stream = {
    /** Sends a request for `simple` and resolves with the answer's OUTPUT0. */
    infer: () =>
      within(
        new Promise<number[]>((resolve, reject) => {
          if (failure) return reject(failure);
          answers.push((r) => (r.error_message ? reject(new Error(r.error_message)) : resolve(simpleOutput(r.infer_response))));
          call.write(SIMPLE_REQUEST);
        }),
        10_000,
        "answer on the open stream",
      ),
    failed: () => failure,
    /** Half-closes the stream and waits for its status: the call is over. */
    end: async () => {
      call.end();
      await within(ended, 10_000, "stream status");
    },
    close: () => {
      call.cancel();
      client.close();
    },
  };
  expect(await stream.infer()).toEqual(OUTPUT); // the call is open on the server
  return stream;
}

type Stream = Awaited<ReturnType<typeof openStream>>;

/** Servers and connections a test opened, closed after it. */
const opened: Array<{ close(): unknown }> = [];
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close();
});
function hold<T extends Raw | Idle | Stream>(x: T): T {
  opened.push({ close: () => ("socket" in x ? x.socket.destroy() : "session" in x ? x.session.destroy() : x.close()) });
  return x;
}

interface Target {
  /** host:port of gRPC, and the port alone. */
  grpc: string;
  port: number;
  creds: ChannelCredentials;
  /**
   * Whether which connection the server closes is known exactly: with one listener, and
   * without TLS (where a silent connection's stage depends on when its bytes are read).
   */
  exact: boolean;
}

/**
 * LIMIT + EXTRA connections that send `bytes` (nothing, or a stalled TLS handshake) after a
 * stream with a call in flight: the server closes the oldest silent ones to stay at the
 * limit, a real client gets its answer, and the stream is untouched.
 */
async function silentConnections(t: Target, bytes?: Buffer) {
  const stream = hold(await openStream(t.grpc, t.creds));
  const held: Raw[] = [];
  for (let i = 0; i < LIMIT + EXTRA; i++) held.push(hold(await rawConnection(t.port, bytes)));
  const closed = () => held.filter((r) => r.socket.closed).length;
  // 1 + LIMIT + EXTRA connections, LIMIT kept: the rest are closed, silent ones all.
  await reaches(closed, EXTRA + 1, "silent connections closed to stay at the limit");
  if (t.exact) expect(held.map((r) => r.socket.closed)).toEqual(held.map((_, i) => i <= EXTRA)); // the oldest first
  expect(held.every((r) => r.received === 0)).toBe(true);

  expect(await inferSimple(t.grpc, t.creds, CLIENT_DEADLINE_MS)).toEqual(OUTPUT);
  if (t.exact) {
    await within(held[EXTRA + 1]!.closed, 5000, "the next oldest silent connection closed for the client");
    expect(closed()).toBe(EXTRA + 2);
  }
  expect(await stream.infer()).toEqual(OUTPUT);
  expect(stream.failed()).toBeUndefined();
}

/**
 * LIMIT + EXTRA HTTP/2 connections without a call after a stream with one: the server
 * closes those idle longest with a GOAWAY to stay at the limit, a real client gets its
 * answer, and the stream is untouched.
 */
async function idleConnections(t: Target) {
  const stream = hold(await openStream(t.grpc, t.creds));
  const idle: Idle[] = [];
  for (let i = 0; i < LIMIT + EXTRA; i++) idle.push(hold(await idleSession(t.port)));
  const gone = () => idle.filter((s) => s.goaway).length;
  await reaches(gone, EXTRA + 1, "idle connections sent a GOAWAY to stay at the limit");
  if (t.exact) expect(idle.map((s) => s.goaway)).toEqual(idle.map((_, i) => i <= EXTRA)); // idle longest first
  // They are closed, not left open.
  await within(
    Promise.all(idle.filter((s) => s.goaway).map((s) => (s.session.closed ? undefined : new Promise((r) => s.session.once("close", r))))),
    10_000,
    "closed after the GOAWAY",
  );

  expect(await inferSimple(t.grpc, t.creds, CLIENT_DEADLINE_MS)).toEqual(OUTPUT);
  if (t.exact) {
    await reaches(gone, EXTRA + 2, "the next idle connection sent a GOAWAY for the client");
    expect(idle[EXTRA + 1]!.goaway).toBe(true);
  }
  expect(await stream.infer()).toEqual(OUTPUT);
  expect(stream.failed()).toBeUndefined();
}

/** LIMIT connections each with a call in flight: a new client is refused, none is closed; once one call ends, the client gets in. */
async function everyConnectionBusy(t: Target) {
  const streams: Stream[] = [];
  for (let i = 0; i < LIMIT; i++) streams.push(hold(await openStream(t.grpc, t.creds)));
  const refused = await inferSimple(t.grpc, t.creds, 3000).then(
    () => undefined,
    (e: { code: number }) => e.code,
  );
  expect([14, 4]).toContain(refused); // UNAVAILABLE, or the deadline
  for (const s of streams) expect(await s.infer()).toEqual(OUTPUT);

  await streams[0]!.end();
  expect(await inferSimple(t.grpc, t.creds, CLIENT_DEADLINE_MS)).toEqual(OUTPUT);
  for (const s of streams.slice(1)) expect(await s.infer()).toEqual(OUTPUT);
  expect(streams.map((s) => s.failed())).toEqual(streams.map(() => undefined));
}

/** Fewer connections than the limit, never completing the handshake or never calling, are closed after the timeouts (SHORT). */
async function timeoutsClose(grpcPort: number, httpUrl: string) {
  const held: Raw[] = [];
  for (let i = 0; i < LIMIT - 3; i++) held.push(hold(await rawConnection(grpcPort)));
  held.push(hold(await rawConnection(grpcPort, PREFACE.subarray(0, 10)))); // a handshake that never completes
  const handshaken = hold(await rawConnection(grpcPort, Buffer.concat([PREFACE, EMPTY_SETTINGS]))); // then no call
  held.push(handshaken);
  // The server answers the handshake with its own SETTINGS: that connection reached grpc-js.
  await within(
    new Promise<void>((resolve) => (handshaken.received > 0 ? resolve() : handshaken.socket.once("data", () => resolve()))),
    3000,
    "server SETTINGS",
  );
  expect((await fetch(`${httpUrl}/v2/health/ready`)).status).toBe(200);
  expect(held.filter((r) => r.socket.closed)).toHaveLength(0);
  await within(Promise.all(held.map((r) => r.closed)), 30_000, "held connections closed by the server");
  expect(await inferSimple(`127.0.0.1:${grpcPort}`)).toEqual(OUTPUT);
}

let repo: ReturnType<typeof makeRepository>;
const certs = mkdtempSync(join(tmpdir(), "nereid-conn-tls-"));
const cert = (name: string) => join(certs, name);
beforeAll(() => {
  repo = makeRepository(["simple"]);
  const { makeCa, makeCert } = certificateMaker(certs, "The gRPC connection test with TLS");
  makeCa("ca");
  makeCert("server", "ca", "DNS:localhost,IP:127.0.0.1");
});
afterAll(() => {
  repo?.remove();
  rmSync(certs, { recursive: true, force: true });
});

const TLS_FLAGS = () => ["--grpc-use-ssl=true", `--grpc-server-cert=${cert("server.crt")}`, `--grpc-server-key=${cert("server.key")}`];
const tlsCreds = () => credentials.createSsl(readFileSync(cert("ca.crt")));

/**
 * The gRPC frontend on the main thread. The default is a worker thread per core, where the
 * kernel spreads connections between the workers and each holds its share of the limit, so
 * the tests of exact counts and of which connection goes first name the single thread.
 */
const MAIN_THREAD = "--grpc-infer-thread-count=1";
const TWO_THREADS = "--grpc-infer-thread-count=2";

/** The binary with `flags`, which name the gRPC frontend's threads (MAIN_THREAD or TWO_THREADS). */
async function binary(flags: string[], creds = credentials.createInsecure()): Promise<Target & { server: ServerProcess }> {
  const threads = flags.includes(TWO_THREADS);
  expect(threads || flags.includes(MAIN_THREAD)).toBe(true);
  const server = await startServerProcess([`--model-repository=${repo.dir}`, "--allow-metrics=false", ...flags]);
  opened.push({ close: () => server.stop() });
  expect(/gRPC frontend on \d+ worker threads/.exec(server.log())?.[0]).toBe(threads ? "gRPC frontend on 2 worker threads" : undefined);
  return { server, grpc: server.grpcTarget!, port: Number(server.grpcTarget!.split(":")[1]), creds, exact: !threads && !flags.includes("--grpc-use-ssl=true") };
}

describe.each([
  ["the binary, gRPC on the main thread", [MAIN_THREAD]],
  ["the binary with the gRPC frontend on two worker threads, each with its share of the limit", [TWO_THREADS]],
])("gRPC connection limit: %s", (_, threads) => {
  it("a client gets in while 100 connections that never send the preface are open; a call in flight stays", async () => {
    const t = await binary([...LONG, ...threads]);
    await silentConnections(t);
    const share = threads.includes(TWO_THREADS) ? `, ${LIMIT / 2} on this thread` : "";
    expect(t.server.log()).toContain(
      `gRPC connection limit reached (--grpc-max-connections=${LIMIT}${share}); closing connections without a handshake or a call to make room for new ones`,
    );
  }, 90_000);

  it("a client gets in while 100 HTTP/2 connections without a call are open (closed with a GOAWAY); a call in flight stays", async () => {
    await idleConnections(await binary([...LONG, ...threads]));
  }, 90_000);

  it("with TLS, a client gets in while 100 stalled TLS handshakes are open; a call in flight stays", async () => {
    await silentConnections(await binary([...LONG, ...threads, ...TLS_FLAGS()], tlsCreds()), STALLED_CLIENT_HELLO);
  }, 90_000);
});

describe("gRPC connection limit: the binary, gRPC on the main thread", () => {
  // With the limit shared out among worker threads, the kernel may bring a worker more
  // busy connections than its share before the total reaches the limit.
  it("never closes a connection with a call in flight: with one on each, a new client is refused until one ends", async () => {
    const t = await binary([...LONG, MAIN_THREAD]);
    await everyConnectionBusy(t);
    expect(t.server.log()).toContain(
      `gRPC connection limit reached (--grpc-max-connections=${LIMIT}) with a call in flight on every connection; closing new connections`,
    );
  }, 90_000);

  it("closes connections that never complete the handshake or never call after the timeouts, HTTP answering meanwhile", async () => {
    const t = await binary([...SHORT, MAIN_THREAD]);
    await timeoutsClose(t.port, t.server.url);
  }, 60_000);

  it("with TLS, closes a TLS handshake that stalls after its first bytes after --grpc-handshake-timeout-secs", async () => {
    const t = await binary([...SHORT, ...TLS_FLAGS(), MAIN_THREAD], tlsCreds());
    const stalled = hold(await rawConnection(t.port, STALLED_CLIENT_HELLO));
    await within(stalled.closed, 30_000, "stalled TLS handshake closed by the server");
    expect(stalled.received).toBe(0);
    expect(await inferSimple(t.grpc, t.creds)).toEqual(OUTPUT);
  }, 60_000);
});

describe("gRPC connection limit: the binary with the gRPC frontend on two worker threads", () => {
  it("closes connections that never complete the handshake or never call after the timeouts, HTTP answering meanwhile", async () => {
    // Twice the limit: each worker's share is LIMIT, more than all LIMIT - 1 connections, however the kernel spreads them.
    const t = await binary([...SHORT, `--grpc-max-connections=${2 * LIMIT}`, TWO_THREADS]);
    await timeoutsClose(t.port, t.server.url);
  }, 60_000);
});

describe("gRPC connection limit: in-process under Node", () => {
  async function node(timeoutSecs: number): Promise<Target & { running: RunningServer }> {
    configureLog({ info: false, warning: false });
    const running = await startServer({
      ...defaultOptions(),
      modelRepositories: [repo.dir],
      httpPort: 0,
      httpAddress: "127.0.0.1",
      grpcPort: 0,
      grpcAddress: "127.0.0.1",
      allowMetrics: false,
      grpcMaxConnections: LIMIT,
      grpcHandshakeTimeoutSecs: timeoutSecs,
      grpcIdleTimeoutSecs: timeoutSecs,
    });
    opened.push({ close: () => running.shutdown() });
    const port = running.listeners.grpc!.port;
    return { running, grpc: `127.0.0.1:${port}`, port, creds: credentials.createInsecure(), exact: true };
  }

  it("a client gets in while 100 silent or 100 idle HTTP/2 connections are open", async () => {
    await silentConnections(await node(LONG_TIMEOUT_SECS));
    for (const o of opened.splice(0).reverse()) await o.close();
    await idleConnections(await node(LONG_TIMEOUT_SECS));
  }, 90_000);

  it("never closes a connection with a call in flight", async () => {
    await everyConnectionBusy(await node(LONG_TIMEOUT_SECS));
  }, 90_000);

  it("closes silent and idle connections after the timeouts", async () => {
    const t = await node(SHORT_TIMEOUT_SECS);
    await timeoutsClose(t.port, `http://127.0.0.1:${t.running.listeners.http!.port}`);
  }, 60_000);
});
