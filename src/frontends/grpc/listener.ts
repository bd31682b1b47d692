/**
 * @module The gRPC port's TCP listener in front of grpc-js: it bounds the open connections
 * (--grpc-max-connections), closes those that have not sent the HTTP/2 client preface (and,
 * with TLS, finished the TLS handshake) in time (--grpc-handshake-timeout-secs), and hands
 * the others to grpc-js through a connection injector. Idle and aged connections are left
 * to grpc-js (server.ts).
 *
 * At the limit a new connection does not simply lose to the ones already open (#29): the
 * listener makes room by closing, in this order, the oldest connection that has not sent
 * the preface, the oldest whose TLS handshake has not finished, or the connection that has
 * been without a call the longest (gracefully, with a GOAWAY). Only when every connection
 * has a call in flight is the new one closed. It learns of each connection's HTTP/2
 * session and calls from the HTTP/2 server grpc-js runs on the injected connections.
 */
import { createServer, type Socket } from "node:net";
import type { EventEmitter } from "node:events";
import type { ServerHttp2Session, ServerHttp2Stream } from "node:http2";
import type { ConnectionInjector } from "@grpc/grpc-js";
import { getLogger } from "../../core/logger.ts";

const log = getLogger("src/frontends/grpc/listener.ts");

/** Length of the HTTP/2 client connection preface, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n". */
const PREFACE_BYTES = 24;
const WARNING_INTERVAL_MS = 10_000;
/** How long a connection closed with a GOAWAY to make room has to close itself before it is destroyed. */
const GOAWAY_GRACE_MS = 1_000;

export interface ConnectionLimits {
  /** Open connections at most, pre-handshake ones included; 0: no limit. */
  maxConnections: number;
  /** --grpc-max-connections, where maxConnections is one worker thread's share of it. */
  maxConnectionsFlag?: number;
  /** Time a connection has to send the client preface (with TLS: to finish the TLS handshake too); 0: no limit. */
  handshakeTimeoutMs: number;
  /** Whether the HTTP/2 server does a TLS handshake on each connection before its session starts. */
  tls?: boolean;
}

export interface TcpListener {
  readonly port: number;
  /** Stops accepting and drops connections still in their handshake; grpc-js closes the rest. */
  close(): void;
}

/** Where a connection stands: waiting for the preface, in its TLS handshake, or an HTTP/2 session. */
type Stage = "preface" | "tls" | "session";

interface Connection {
  readonly socket: Socket;
  /** The peer's address and port, by which its HTTP/2 session is found. */
  readonly peer: string;
  stage: Stage;
  session?: ServerHttp2Session;
  /** Streams (calls) open on the session. */
  calls: number;
  /** When the connection last had no call: its start, or the end of its last call. */
  idleSince: number;
  /** Called when its HTTP/2 session starts. */
  onSession?: () => void;
}

const peerOf = (s: { remoteAddress?: string | undefined; remotePort?: number | undefined }) => `${s.remoteAddress}|${s.remotePort}`;

/**
 * The connections the listener has accepted, in the order they came, and the choice of the
 * one to close when the limit is reached.
 */
class Connections {
  /** Open connections, oldest first (a Map keeps insertion order). */
  readonly #open = new Map<Socket, Connection>();
  readonly #byPeer = new Map<string, Connection>();
  /** Connections closed with a GOAWAY, not counted any more, destroyed after a grace period. */
  readonly #closing = new Set<Socket>();
  readonly #max: number;

  constructor(maxConnections: number) {
    this.#max = maxConnections;
  }

  get size(): number {
    return this.#open.size;
  }

  add(socket: Socket, stage: Stage): Connection {
    const c: Connection = { socket, peer: peerOf(socket), stage, calls: 0, idleSince: Date.now() };
    this.#open.set(socket, c);
    this.#byPeer.set(c.peer, c);
    socket.once("close", () => this.#forget(c));
    return c;
  }

  /** The HTTP/2 session grpc-js started on one of our connections: its calls are counted from now on. */
  attach(session: ServerHttp2Session): void {
    const c = session.socket ? this.#byPeer.get(peerOf(session.socket)) : undefined;
    if (!c || !this.#open.has(c.socket)) return;
    c.stage = "session";
    c.session = session;
    c.idleSince = Date.now();
    c.onSession?.();
    session.on("stream", (stream: ServerHttp2Stream) => {
      c.calls++;
      stream.once("close", () => {
        if (--c.calls === 0) c.idleSince = Date.now();
      });
    });
    session.once("close", () => c.socket.destroy());
  }

  /**
   * Makes room for one more connection by closing the one a new client should win against:
   * the oldest without the preface, else the oldest in its TLS handshake, else the one
   * without a call for longest (with a GOAWAY). False when every connection has a call in flight.
   */
  evict(): boolean {
    let preface: Connection | undefined;
    let tls: Connection | undefined;
    let idle: Connection | undefined;
    for (const c of this.#open.values()) {
      if (c.stage === "preface") {
        preface = c;
        break; // the oldest such; nothing is evicted before it
      }
      if (c.stage === "tls") tls ??= c;
      else if (c.calls === 0 && (!idle || c.idleSince < idle.idleSince)) idle = c;
    }
    const victim = preface ?? tls ?? idle;
    if (!victim) return false;
    this.#forget(victim);
    if (victim.stage !== "session" || !victim.session) {
      victim.socket.destroy();
      return true;
    }
    this.#goAway(victim);
    return true;
  }

  /** Closes an idle session with a GOAWAY, destroying its socket if the peer keeps it open past the grace period. */
  #goAway(c: Connection): void {
    // Bounded: at most as many closing connections as the limit allows open ones.
    if (this.#closing.size >= this.#max) {
      const oldest = this.#closing.values().next().value;
      if (oldest) {
        this.#closing.delete(oldest);
        oldest.destroy();
      }
    }
    this.#closing.add(c.socket);
    c.socket.once("close", () => this.#closing.delete(c.socket));
    setTimeout(() => {
      if (this.#closing.delete(c.socket)) c.socket.destroy();
    }, GOAWAY_GRACE_MS).unref();
    c.session!.close();
  }

  #forget(c: Connection): void {
    this.#open.delete(c.socket);
    if (this.#byPeer.get(c.peer) === c) this.#byPeer.delete(c.peer);
  }

  /** Connections not yet handed over as HTTP/2 sessions. */
  *handshaking(): Iterable<Socket> {
    for (const c of this.#open.values()) if (c.stage !== "session") yield c.socket;
  }
}

/**
 * Listens on address:port and hands each connection past its handshake to `injector`;
 * `sessions` is the HTTP/2 server behind the injector, whose 'session' events tell the
 * listener which connections carry calls.
 */
export function listenTcp(
  address: string,
  port: number,
  limits: ConnectionLimits,
  injector: ConnectionInjector,
  sessions: EventEmitter,
  reusePort = false,
): Promise<TcpListener> {
  const connections = new Connections(limits.maxConnections);
  const warnings = new Map<string, number>();
  const warn = (message: string) => {
    const now = Date.now();
    if (now - (warnings.get(message) ?? 0) < WARNING_INTERVAL_MS) return;
    warnings.set(message, now);
    log.warn(message);
  };
  sessions.on("session", (session: ServerHttp2Session) => connections.attach(session));
  const flag = limits.maxConnectionsFlag;
  const limit = `--grpc-max-connections=${flag ?? limits.maxConnections}${flag !== undefined ? `, ${limits.maxConnections} on this thread` : ""}`;

  const server = createServer((socket) => {
    socket.on("error", () => {}); // a peer's reset is not the server's error
    if (limits.maxConnections > 0 && connections.size >= limits.maxConnections) {
      if (!connections.evict()) {
        warn(`gRPC connection limit reached (${limit}) with a call in flight on every connection; closing new connections`);
        socket.destroy();
        return;
      }
      warn(`gRPC connection limit reached (${limit}); closing connections without a handshake or a call to make room for new ones`);
    }
    socket.setNoDelay(true); // as gRPC core sets TCP_NODELAY
    const afterPreface: Stage = limits.tls ? "tls" : "session";
    if (limits.handshakeTimeoutMs === 0) {
      connections.add(socket, afterPreface);
      injector.injectConnection(socket);
      return;
    }
    // Wait for the whole preface with the bytes left in the socket's buffer, where the
    // HTTP/2 session reads them first (Node and Bun alike). With TLS these are the first
    // bytes of the TLS handshake, which must then finish in the same time.
    const c = connections.add(socket, "preface");
    const timer = setTimeout(() => socket.destroy(), limits.handshakeTimeoutMs);
    const done = () => {
      clearTimeout(timer);
      socket.off("readable", onReadable);
      socket.off("end", onEnd);
      socket.off("close", done);
    };
    const onReadable = () => {
      if (socket.readableLength < PREFACE_BYTES) return;
      socket.off("readable", onReadable);
      socket.off("end", onEnd);
      // Without TLS the session starts as the connection is injected; with TLS the timer
      // runs on until the TLS handshake ends and the session starts.
      c.stage = afterPreface;
      c.onSession = done;
      injector.injectConnection(socket);
      if (!limits.tls) done();
    };
    const onEnd = () => socket.destroy();
    socket.on("readable", onReadable);
    socket.once("end", onEnd);
    socket.once("close", done);
  });

  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen({ port, host: address.replace(/^\[(.*)\]$/, "$1"), ...(reusePort ? { reusePort: true } : {}) }, () => {
      server.off("error", reject);
      const addr = server.address();
      resolve({
        port: typeof addr === "object" && addr ? addr.port : port,
        close: () => {
          server.close();
          for (const socket of [...connections.handshaking()]) socket.destroy();
        },
      });
    });
  });
}
