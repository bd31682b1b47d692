/**
 * @module Listens for HTTP with Bun.serve under Bun (the handler in its fetch form,
 * fetch.ts) and node:http elsewhere; both feed the same handler (routes.ts).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { tooLarge } from "./body.ts";
import { lazyBuiltin } from "../../core/lazy-builtin.ts";
import { errorResponse, type HttpHandler } from "./routes.ts";
import { serveFetch, NO_BODY_LIMIT, toWebResponse, IDLE_TIMEOUT_SECS } from "./fetch.ts";
import type { HttpRequest } from "./types.ts";

export interface HttpListener {
  readonly port: number;
  close(): Promise<void>;
}

const EMPTY = new Uint8Array(0);
/** node:http, loaded where the listener uses it: not under Bun, where evaluating it only slowed the start (#30). */
const nodeHttp = lazyBuiltin<typeof import("node:http")>("node:http");

declare const Bun: typeof import("bun") | undefined;

/** `reusePort` (--reuse-http-port): SO_REUSEPORT, so that several servers can listen on one port. */
export async function listenHttp(handler: HttpHandler, address: string, port: number, reusePort = false): Promise<HttpListener> {
  if (typeof Bun !== "undefined") return listenBun(handler, address, port, reusePort);
  return listenNode(handler, address, port, reusePort);
}

/** Node has SO_REUSEPORT in listen() from 22.12 and 23.1; an older one would ignore the option silently. */
export function nodeHasReusePort(): boolean {
  const [major = 0, minor = 0] = (process.versions.node ?? "0.0").split(".").map(Number);
  return major > 23 || (major === 23 && minor >= 1) || (major === 22 && minor >= 12);
}

function listenBun(handler: HttpHandler, address: string, port: number, reusePort: boolean): HttpListener {
  const server = Bun!.serve({
    hostname: address,
    port,
    reusePort,
    // Bun would answer a body over its limit with an empty 413; the handler reads under --http-max-input-size itself.
    maxRequestBodySize: NO_BODY_LIMIT,
    idleTimeout: IDLE_TIMEOUT_SECS,
    fetch: serveFetch(handler),
    error(err: Error): Response {
      return toWebResponse(errorResponse(500, err.message));
    },
  });
  return {
    port: server.port ?? port,
    // Graceful: responses still being written go out; what is left after 2 s is cut.
    close: async () => {
      await Promise.race([server.stop(false), new Promise((r) => setTimeout(r, 2000).unref())]);
      await server.stop(true);
    },
  };
}

/** The body under `limit`: a declared length past it is refused before anything is read (the answer then closes the connection). */
function readNodeBody(msg: IncomingMessage, limit: number): Promise<Uint8Array> {
  const declared = msg.headers["content-length"];
  if (declared !== undefined && Number(declared) > limit) return Promise.reject(tooLarge(declared, limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    msg.on("data", (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > limit) {
        reject(tooLarge(`more than ${limit}`, limit));
        msg.destroy();
        return;
      }
      chunks.push(chunk);
    });
    msg.on("end", () => {
      if (chunks.length === 0) resolve(EMPTY);
      else if (chunks.length === 1) resolve(chunks[0]!);
      else resolve(Buffer.concat(chunks, size));
    });
    msg.on("error", reject);
  });
}

/** Writes a streamed body chunk by chunk, waiting for the socket to drain; stops when the client has gone. */
async function writeStream(res: ServerResponse, stream: AsyncIterable<string>, signal: AbortSignal): Promise<void> {
  const it = stream[Symbol.asyncIterator]();
  try {
    for (;;) {
      if (signal.aborted) return;
      const next = await it.next();
      if (next.done) break;
      if (!res.write(next.value)) {
        await new Promise<void>((resolve) => {
          res.once("drain", resolve);
          signal.addEventListener("abort", () => resolve(), { once: true });
        });
      }
    }
    res.end();
  } finally {
    await it.return?.(undefined);
  }
}

function listenNode(handler: HttpHandler, address: string, port: number, reusePort: boolean): Promise<HttpListener> {
  if (reusePort && !nodeHasReusePort()) throw new Error(`--reuse-http-port needs Bun or Node 22.12+ (this is Node ${process.versions.node})`);
  const server = nodeHttp().createServer((msg: IncomingMessage, res: ServerResponse) => {
    const url = msg.url ?? "/";
    const q = url.indexOf("?");
    // Aborted when the client goes away before the response has been written whole.
    const controller = new AbortController();
    res.on("close", () => {
      if (!res.writableFinished) controller.abort();
    });
    const req: HttpRequest = {
      method: msg.method ?? "GET",
      path: q < 0 ? url : url.slice(0, q),
      header: (name) => {
        const v = msg.headers[name];
        return Array.isArray(v) ? v.join(", ") : v;
      },
      headers: () => Object.entries(msg.headers).flatMap(([k, v]) => (v === undefined ? [] : [[k, Array.isArray(v) ? v.join(", ") : v] as const])),
      body: (limit) => readNodeBody(msg, limit),
      signal: controller.signal,
    };
    handler(req).then(
      (r) => {
        // A body left unread (refused by its Content-Length) closes the connection: Node
        // would discard the rest, but under Deno the next request on it would hang.
        const headers = msg.complete ? r.headers : { ...r.headers, connection: "close" };
        res.writeHead(r.status, headers);
        if (r.stream) void writeStream(res, r.stream, controller.signal);
        else res.end(r.body ?? undefined);
      },
      (err: Error) => {
        const r = errorResponse(500, err.message);
        res.writeHead(r.status, r.headers);
        res.end(r.body);
      },
    );
  });
  server.keepAliveTimeout = 65_000;
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen({ port, host: address, ...(reusePort ? { reusePort: true } : {}) }, () => {
      const addr = server.address();
      resolve({
        port: typeof addr === "object" && addr ? addr.port : port,
        close: () =>
          new Promise<void>((res) => {
            server.close(() => res());
            server.closeIdleConnections?.();
            setTimeout(() => server.closeAllConnections?.(), 2000).unref();
          }),
      });
    });
  });
}
