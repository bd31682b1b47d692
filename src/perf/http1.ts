/**
 * @module A minimal HTTP/1.1 client for `nereid perf`'s inference requests, as wrk does
 * it: keep-alive sockets from a pool, each request's bytes built once and written as
 * they are, responses read by Content-Length (or chunked). The global fetch costs
 * several times more CPU per request, which on a small machine is taken from the server
 * being measured. Under Bun the sockets are Bun's own (`Bun.connect`), which cost less
 * per read and write than node:net's emulation; elsewhere node:net's.
 */
import { connect } from "node:net";

/** A response's status and timings; its body only when the status is not 200 (the error to show). */
export interface Http1Result {
  status: number;
  sendNs: number;
  waitNs: number;
  recvNs: number;
  body?: Uint8Array;
}

// Milliseconds as a double: no BigInt to allocate per timestamp, four of them per request.
const now = () => performance.now();
const MS_TO_NS = 1e6;
const HEADER_END = Buffer.from("\r\n\r\n");
// Bun.serve writes "Content-Length", node:http "content-length".
const CONTENT_LENGTHS = [Buffer.from("\r\nContent-Length:"), Buffer.from("\r\ncontent-length:")];
const EMPTY = Buffer.alloc(0);

/** The Content-Length in `head` (bytes up to the blank line), read without a string; -1 when absent. */
function contentLength(buf: Buffer, end: number): number {
  let at = -1;
  for (const name of CONTENT_LENGTHS) {
    at = buf.indexOf(name);
    if (at >= 0 && at < end) {
      at += name.length;
      break;
    }
    at = -1;
  }
  if (at < 0) return -1;
  while (buf[at] === 0x20) at++;
  let n = 0;
  for (let c = buf[at]!; c >= 0x30 && c <= 0x39; c = buf[++at]!) n = n * 10 + (c - 0x30);
  return n;
}

/** One socket's way to send bytes and to close, whichever runtime API carries it. */
interface Transport {
  write(bytes: Buffer): void;
  close(): void;
}

interface Pending {
  resolve: (r: Http1Result) => void;
  reject: (e: Error) => void;
  start: number;
  sent: number;
  first: number;
}

/** One keep-alive connection: one request at a time, its response read from the chunks the transport delivers. */
class Connection {
  #transport: Transport | undefined;
  #buf: Buffer = EMPTY;
  #pending: Pending | undefined;
  broken = false;

  attach(t: Transport): void {
    this.#transport = t;
  }

  request(bytes: Buffer): Promise<Http1Result> {
    return new Promise((resolve, reject) => {
      const start = now();
      const p: Pending = { resolve, reject, start, sent: start, first: -1 };
      this.#pending = p;
      this.#transport!.write(bytes);
      p.sent = now();
    });
  }

  fail(err: Error): void {
    this.broken = true;
    const p = this.#pending;
    this.#pending = undefined;
    p?.reject(err);
  }

  onData(chunk: Buffer): void {
    const p = this.#pending;
    if (!p) return;
    if (p.first < 0) p.first = now();
    this.#buf = this.#buf.length ? Buffer.concat([this.#buf, chunk]) : chunk;
    const end = this.#buf.indexOf(HEADER_END);
    if (end < 0) return;
    const b = this.#buf;
    // "HTTP/1.x NNN": the status is bytes 9 to 11.
    const status = (b[9]! - 0x30) * 100 + (b[10]! - 0x30) * 10 + (b[11]! - 0x30);
    // Another server's own spelling of Content-Length is read the slow way.
    let length = contentLength(b, end);
    const head = length < 0 ? b.subarray(0, end).toString("latin1") : "";
    if (length < 0) length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? -1);
    let total: number | undefined;
    if (length >= 0) {
      total = end + 4 + length;
    } else if (/\r\ntransfer-encoding:\s*chunked/i.test(head)) {
      total = chunkedEnd(this.#buf, end + 4);
    } else {
      total = end + 4; // no body
    }
    if (total === undefined || this.#buf.length < total) return;
    const body = status === 200 ? undefined : Buffer.from(b.subarray(end + 4, total));
    // Usually the chunk held exactly one response: no view of the rest to make.
    this.#buf = this.#buf.length === total ? EMPTY : this.#buf.subarray(total);
    this.#pending = undefined;
    const done = now();
    p.resolve({ status, sendNs: (p.sent - p.start) * MS_TO_NS, waitNs: (p.first - p.sent) * MS_TO_NS, recvNs: (done - p.first) * MS_TO_NS, body });
  }

  close(): void {
    this.#transport?.close();
  }
}

/** Where a chunked body that starts at `from` ends, or undefined while it is incomplete. */
function chunkedEnd(buf: Buffer, from: number): number | undefined {
  let at = from;
  for (;;) {
    const eol = buf.indexOf("\r\n", at);
    if (eol < 0) return undefined;
    const size = parseInt(buf.subarray(at, eol).toString("latin1"), 16);
    if (!Number.isFinite(size)) throw new Error("malformed chunked response");
    at = eol + 2 + size + 2;
    if (size === 0) return at <= buf.length ? at : undefined;
    if (at > buf.length) return undefined;
  }
}

type BunSocket = { data: Connection; write(b: Uint8Array): number; setNoDelay(on: boolean): void; end(): void };
type BunConnect = (o: { hostname: string; port: number; data: Connection; socket: Record<string, (s: BunSocket, x?: never) => void> }) => Promise<BunSocket>;
const bunConnect = (globalThis as { Bun?: { connect: BunConnect } }).Bun?.connect;

/**
 * Bun's sockets: one set of handlers for every socket, the connection in `socket.data`.
 * A write that the kernel takes only in part leaves the rest for `drain`.
 */
async function openBun(host: string, port: number, conn: Connection): Promise<void> {
  const unsent = new Map<BunSocket, Buffer>();
  const flush = (s: BunSocket, bytes: Buffer) => {
    const n = s.write(bytes);
    if (n < bytes.byteLength) unsent.set(s, bytes.subarray(Math.max(0, n)));
    else unsent.delete(s);
  };
  const socket = await bunConnect!({
    hostname: host,
    port,
    data: conn,
    socket: {
      data: (s, chunk?: Buffer) => s.data.onData(chunk as unknown as Buffer),
      drain: (s) => {
        const rest = unsent.get(s);
        if (rest) flush(s, rest);
      },
      close: (s) => s.data.fail(new Error("the server closed the connection")),
      error: (s, err?: Error) => s.data.fail(err as unknown as Error),
    },
  });
  socket.setNoDelay(true);
  conn.attach({ write: (b) => flush(socket, b), close: () => socket.end() });
}

/** node:net's sockets, for Node and Deno. */
function openNode(host: string, port: number, conn: Connection): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port, noDelay: true }, () => resolve());
    socket.on("data", (chunk: Buffer) => conn.onData(chunk));
    socket.on("error", (err: Error) => {
      conn.fail(err);
      reject(err);
    });
    socket.on("close", () => conn.fail(new Error("the server closed the connection")));
    conn.attach({ write: (b) => socket.write(b), close: () => socket.destroy() });
  });
}

/** Keep-alive connections to one server, as many as requests in flight at once. */
export class Http1Pool {
  readonly #host: string;
  readonly #port: number;
  readonly #idle: Connection[] = [];
  readonly #all = new Set<Connection>();

  constructor(host: string, port: number) {
    this.#host = host;
    this.#port = port;
  }

  /** A request's bytes: request line, headers and body, built once and sent as often as wanted. */
  static encode(host: string, path: string, headers: Record<string, string>, body: Uint8Array): Buffer {
    const lines = [
      `POST ${path} HTTP/1.1`,
      `Host: ${host}`,
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
      `Content-Length: ${body.byteLength}`,
      "",
      "",
    ];
    return Buffer.concat([Buffer.from(lines.join("\r\n"), "latin1"), body]);
  }

  async send(bytes: Buffer): Promise<Http1Result> {
    let conn = this.#idle.pop();
    while (conn?.broken) conn = this.#idle.pop();
    try {
      if (!conn) {
        conn = new Connection();
        this.#all.add(conn);
        await (bunConnect ? openBun : openNode)(this.#host, this.#port, conn);
      }
      const r = await conn.request(bytes);
      this.#idle.push(conn);
      return r;
    } catch (err) {
      if (conn) {
        conn.close();
        this.#all.delete(conn);
      }
      throw err;
    }
  }

  close(): void {
    for (const c of this.#all) c.close();
    this.#all.clear();
    this.#idle.length = 0;
  }
}
