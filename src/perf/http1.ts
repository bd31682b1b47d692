/**
 * @module A minimal HTTP/1.1 client for `nereid perf`'s inference requests, as wrk does
 * it: keep-alive sockets from a pool, each request's bytes built once and written as
 * they are, responses read by Content-Length (or chunked). The global fetch costs
 * several times more CPU per request, which on a small machine is taken from the server
 * being measured.
 */
import { connect, type Socket } from "node:net";

export interface Http1Result { status: number; sendNs: number; waitNs: number; recvNs: number }

// Milliseconds as a double: no BigInt to allocate per timestamp, four of them per request.
const now = () => performance.now();
const MS_TO_NS = 1e6;
const HEADER_END = Buffer.from("\r\n\r\n");
const CONTENT_LENGTH = Buffer.from("\r\ncontent-length:");

/** The Content-Length in `head` (bytes up to the blank line), read without a string; -1 when absent. */
function contentLength(buf: Buffer, end: number): number {
  let at = buf.indexOf(CONTENT_LENGTH);
  if (at < 0 || at > end) return -1;
  at += CONTENT_LENGTH.length;
  while (buf[at] === 0x20) at++;
  let n = 0;
  for (let c = buf[at]!; c >= 0x30 && c <= 0x39; c = buf[++at]!) n = n * 10 + (c - 0x30);
  return n;
}

class Connection {
  readonly #socket: Socket;
  #buf: Buffer = Buffer.alloc(0);
  #pending: { resolve: (r: Http1Result) => void; reject: (e: Error) => void; start: number; sent: number; first?: number } | undefined;
  broken = false;

  constructor(host: string, port: number) {
    this.#socket = connect({ host, port, noDelay: true });
    this.#socket.on("data", (chunk: Buffer) => this.#onData(chunk));
    const fail = (err: Error) => {
      this.broken = true;
      const p = this.#pending;
      this.#pending = undefined;
      p?.reject(err);
    };
    this.#socket.on("error", fail);
    this.#socket.on("close", () => fail(new Error("the server closed the connection")));
  }

  request(bytes: Buffer): Promise<Http1Result> {
    return new Promise((resolve, reject) => {
      const start = now();
      this.#pending = { resolve, reject, start, sent: start };
      this.#socket.write(bytes);
      this.#pending.sent = now();
    });
  }

  #onData(chunk: Buffer): void {
    const p = this.#pending;
    if (!p) return;
    p.first ??= now();
    this.#buf = this.#buf.length ? Buffer.concat([this.#buf, chunk]) : chunk;
    const end = this.#buf.indexOf(HEADER_END);
    if (end < 0) return;
    const b = this.#buf;
    // "HTTP/1.x NNN": the status is bytes 9 to 11.
    const status = (b[9]! - 0x30) * 100 + (b[10]! - 0x30) * 10 + (b[11]! - 0x30);
    // Bun and node:http write header names in lower case; another server's mixed case is read the slow way.
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
    this.#buf = this.#buf.subarray(total);
    this.#pending = undefined;
    const done = now();
    p.resolve({ status, sendNs: (p.sent - p.start) * MS_TO_NS, waitNs: (p.first - p.sent) * MS_TO_NS, recvNs: (done - p.first) * MS_TO_NS });
  }

  close(): void {
    this.#socket.destroy();
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
    const lines = [`POST ${path} HTTP/1.1`, `Host: ${host}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), `Content-Length: ${body.byteLength}`, "", ""];
    return Buffer.concat([Buffer.from(lines.join("\r\n"), "latin1"), body]);
  }

  async send(bytes: Buffer): Promise<Http1Result> {
    let conn = this.#idle.pop();
    while (conn?.broken) conn = this.#idle.pop();
    if (!conn) {
      conn = new Connection(this.#host, this.#port);
      this.#all.add(conn);
    }
    try {
      const r = await conn.request(bytes);
      this.#idle.push(conn);
      return r;
    } catch (err) {
      conn.close();
      this.#all.delete(conn);
      throw err;
    }
  }

  close(): void {
    for (const c of this.#all) c.close();
    this.#all.clear();
    this.#idle.length = 0;
  }
}
