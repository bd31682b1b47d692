/**
 * @module The gRPC server (@grpc/grpc-js): GRPCInferenceService and the health service
 * on --grpc-address:--grpc-port, with Triton's message limits, keepalive and connection
 * age settings, an idle timeout, the connection limits of listener.ts, and TLS or mutual
 * TLS from the certificate flags.
 */
import { EventEmitter } from "node:events";
import { Server, ServerCredentials, type ServerOptions, type UntypedServiceImplementation } from "@grpc/grpc-js";
import { serviceDefinition } from "./protos.ts";
import { listenTcp } from "./listener.ts";
import { nodeHasReusePort } from "../http/server.ts";
import { inferenceService, healthService, restrict, type GrpcServiceOptions } from "./service.ts";
import type { InferenceServer } from "../../server/server.ts";

export interface GrpcListenOptions extends GrpcServiceOptions {
  address: string;
  port: number;
  keepaliveTimeMs: number;
  keepaliveTimeoutMs: number;
  keepalivePermitWithoutCalls: boolean;
  http2MaxPingsWithoutData: number;
  http2MinRecvPingIntervalWithoutDataMs: number;
  http2MaxPingStrikes: number;
  /** 0: unlimited. */
  maxConnectionAgeMs: number;
  maxConnectionAgeGraceMs: number;
  /** 0: no limit. */
  maxConnections: number;
  /** --grpc-max-connections where maxConnections is a worker thread's share of it (workers.ts). */
  maxConnectionsFlag?: number;
  handshakeTimeoutMs: number;
  /** Close connections with no call for this long; 0: never. */
  idleTimeoutMs: number;
  /** TLS (--grpc-use-ssl): PEM server certificate and key, the root certificate clients are checked against, and whether a client certificate is required (--grpc-use-ssl-mutual). */
  tls?: { cert: Buffer; key: Buffer; root: Buffer | null; mutual: boolean };
  /** --reuse-grpc-port: SO_REUSEPORT on the listening socket. */
  reusePort?: boolean;
}

export interface GrpcListener {
  readonly port: number;
  close(): Promise<void>;
}

const INT32_MAX = 2 ** 31 - 1;

/** The handlers the gRPC server serves: GRPCInferenceService's and grpc.health.v1.Health's. */
export interface GrpcServices {
  inference: UntypedServiceImplementation;
  health: UntypedServiceImplementation;
}

/**
 * The HTTP/2 server grpc-js made for our connection injector (the only one: the server
 * never binds a port itself), whose 'session' events the listener follows to tell
 * connections with calls from idle ones. grpc-js does not expose it, so this reads its
 * `http2Servers` map and fails loudly at start-up should a grpc-js update change that.
 */
function injectorHttp2Server(server: Server): EventEmitter {
  const servers = (server as unknown as { http2Servers?: unknown }).http2Servers;
  const found = servers instanceof Map ? [...servers.keys()] : [];
  const h2 = found.length === 1 ? found[0] : undefined;
  if (!(h2 instanceof EventEmitter))
    throw new Error("@grpc/grpc-js no longer keeps its HTTP/2 servers in 'http2Servers'; src/frontends/grpc/server.ts needs updating");
  return h2;
}

/**
 * Streams a client may reset at once, and then per second, before its connection is closed
 * with ENHANCE_YOUR_CALM (the HTTP/2 Rapid Reset guard, CVE-2023-44487; it counts streams
 * reset while the server still serves them). The runtimes' defaults are nghttp2's, 1,000
 * and 33/s: a client that cancelled 1,200 calls in a row (deadlines expiring under load
 * do the same) lost its connection and every call on it (#29). A larger burst lets such a
 * run of cancels through; the rate stays low, so that a flood, which one connection can
 * push at the rate the server takes streams in (about 1,400 a second on a 2-core VM), is
 * still cut off after about 10,000 streams.
 */
const STREAM_RESET_BURST = 10_000;
const STREAM_RESET_RATE = 100;

/**
 * Sets the reset guard's bucket on the HTTP/2 server grpc-js made, which passes no such
 * option itself. Bun reads it for each new session from the server's options (its
 * `::bunnetserveroptions::` symbol); under Node the defaults stay.
 */
function widenResetGuard(h2: EventEmitter): void {
  const options = (h2 as unknown as Record<symbol, unknown>)[Symbol.for("::bunnetserveroptions::")];
  if (typeof Bun !== "undefined" && (typeof options !== "object" || options === null))
    throw new Error("Bun's HTTP/2 server no longer keeps its options under '::bunnetserveroptions::'; src/frontends/grpc/server.ts needs updating");
  if (typeof options === "object" && options !== null) Object.assign(options, { streamResetBurst: STREAM_RESET_BURST, streamResetRate: STREAM_RESET_RATE });
}

/** GRPCInferenceService and Health over `core`, on the calling thread. */
export function listenGrpc(core: InferenceServer, opts: GrpcListenOptions): Promise<GrpcListener> {
  return listenGrpcServices({ inference: inferenceService(core, opts), health: healthService(core) }, opts);
}

/** A grpc-js server for `services` (on the main thread or a worker thread: workers.ts) on opts' address and port. */
export async function listenGrpcServices(services: GrpcServices, opts: GrpcListenOptions): Promise<GrpcListener> {
  const options: ServerOptions = {
    "grpc.max_receive_message_length": INT32_MAX,
    "grpc.max_send_message_length": INT32_MAX,
    "grpc.keepalive_time_ms": opts.keepaliveTimeMs,
    "grpc.keepalive_timeout_ms": opts.keepaliveTimeoutMs,
    "grpc.keepalive_permit_without_calls": opts.keepalivePermitWithoutCalls ? 1 : 0,
    "grpc.http2.max_pings_without_data": opts.http2MaxPingsWithoutData,
    "grpc.http2.min_ping_interval_without_data_ms": opts.http2MinRecvPingIntervalWithoutDataMs,
    "grpc.http2.max_ping_strikes": opts.http2MaxPingStrikes,
  };
  if (opts.maxConnectionAgeMs > 0) options["grpc.max_connection_age_ms"] = opts.maxConnectionAgeMs;
  if (opts.maxConnectionAgeGraceMs > 0) options["grpc.max_connection_age_grace_ms"] = opts.maxConnectionAgeGraceMs;
  if (opts.idleTimeoutMs > 0) options["grpc.max_connection_idle_ms"] = opts.idleTimeoutMs;
  const server = new Server(options);
  server.addService(serviceDefinition("inference.GRPCInferenceService"), restrict(services.inference, opts.restricted));
  server.addService(serviceDefinition("grpc.health.v1.Health"), restrict(services.health, opts.restricted));
  // We own the TCP listener (listener.ts) and hand grpc-js each connection past its handshake.
  // With TLS, grpc-js's secure HTTP/2 server does the TLS handshake on each injected socket.
  const credentials = opts.tls
    ? ServerCredentials.createSsl(opts.tls.root, [{ private_key: opts.tls.key, cert_chain: opts.tls.cert }], opts.tls.mutual)
    : ServerCredentials.createInsecure();
  const injector = server.createConnectionInjector(credentials);
  const sessions = injectorHttp2Server(server);
  widenResetGuard(sessions);
  if (opts.reusePort && typeof Bun === "undefined" && !nodeHasReusePort())
    throw new Error(`--reuse-grpc-port needs Bun or Node 22.12+ (this is Node ${process.versions.node})`);
  const tcp = await listenTcp(
    opts.address,
    opts.port,
    { maxConnections: opts.maxConnections, maxConnectionsFlag: opts.maxConnectionsFlag, handshakeTimeoutMs: opts.handshakeTimeoutMs, tls: !!opts.tls },
    injector,
    sessions,
    opts.reusePort,
  );
  return {
    port: tcp.port,
    close: () =>
      new Promise<void>((resolve) => {
        tcp.close();
        server.tryShutdown(() => resolve());
        setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 2000).unref();
      }),
  };
}
