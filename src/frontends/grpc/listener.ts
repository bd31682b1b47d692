/**
 * @module The gRPC port's TCP listener in front of grpc-js: it bounds the open connections
 * (--grpc-max-connections), closes those that have not sent the HTTP/2 client preface in
 * time (--grpc-handshake-timeout-secs), and hands the others to grpc-js through a
 * connection injector. Idle and aged connections are left to grpc-js (server.ts).
 */
import { createServer, type Socket } from "node:net";
import type { ConnectionInjector } from "@grpc/grpc-js";
import { getLogger } from "../../core/logger.ts";

const log = getLogger("src/frontends/grpc/listener.ts");

/** Length of the HTTP/2 client connection preface, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n". */
const PREFACE_BYTES = 24;
const WARNING_INTERVAL_MS = 10_000;

export interface ConnectionLimits {
  /** Open connections at most, pre-handshake ones included; 0: no limit. */
  maxConnections: number;
  /** Time a connection has to send the client preface; 0: no limit. */
  handshakeTimeoutMs: number;
}

export interface TcpListener {
  readonly port: number;
  /** Stops accepting and drops connections still in their handshake; grpc-js closes the rest. */
  close(): void;
}

export function listenTcp(address: string, port: number, limits: ConnectionLimits, injector: ConnectionInjector, reusePort = false): Promise<TcpListener> {
  const open = new Set<Socket>();
  const handshaking = new Set<Socket>();
  let lastWarning = 0;

  const server = createServer((socket) => {
    socket.on("error", () => {}); // a peer's reset is not the server's error
    if (limits.maxConnections > 0 && open.size >= limits.maxConnections) {
      const now = Date.now();
      if (now - lastWarning >= WARNING_INTERVAL_MS) {
        lastWarning = now;
        log.warn(`gRPC connection limit reached (--grpc-max-connections=${limits.maxConnections}); closing new connections`);
      }
      socket.destroy();
      return;
    }
    open.add(socket);
    socket.once("close", () => open.delete(socket));
    socket.setNoDelay(true); // as gRPC core sets TCP_NODELAY
    if (limits.handshakeTimeoutMs === 0) {
      injector.injectConnection(socket);
      return;
    }
    // Wait for the whole preface with the bytes left in the socket's buffer, where the
    // HTTP/2 session reads them first (Node and Bun alike).
    handshaking.add(socket);
    const timer = setTimeout(() => socket.destroy(), limits.handshakeTimeoutMs);
    const done = () => {
      clearTimeout(timer);
      handshaking.delete(socket);
      socket.off("readable", onReadable);
      socket.off("end", onEnd);
      socket.off("close", done);
    };
    const onReadable = () => {
      if (socket.readableLength < PREFACE_BYTES) return;
      done();
      injector.injectConnection(socket);
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
          for (const socket of handshaking) socket.destroy();
        },
      });
    });
  });
}
