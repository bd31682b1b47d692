/**
 * nereid perf's HTTP/1.1 client (src/perf/http1.ts) against a raw TCP server that answers
 * in the shapes servers use: either spelling of Content-Length, chunked bodies, no body,
 * a response split over several writes, and two responses' worth of keep-alive traffic.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createServer, type Server, type Socket } from "node:net";
import { Http1Pool } from "../../../src/perf/http1.ts";

let server: Server | undefined;
afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

/** A server that answers each request (read up to its blank line and body) with `reply(n)`, written in the pieces given. */
async function serve(reply: (n: number) => string[]): Promise<number> {
  let n = 0;
  server = createServer((socket: Socket) => {
    let buf = "";
    socket.on("data", (d) => {
      buf += d.toString("latin1");
      for (;;) {
        const end = buf.indexOf("\r\n\r\n");
        if (end < 0) return;
        const len = Number(/content-length: (\d+)/i.exec(buf.slice(0, end))?.[1] ?? 0);
        if (buf.length < end + 4 + len) return;
        buf = buf.slice(end + 4 + len);
        const pieces = reply(n++);
        pieces.forEach((p, i) => setTimeout(() => socket.write(p), i * 5));
      }
    });
  });
  await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
  return (server!.address() as { port: number }).port;
}

const request = (port: number) =>
  Http1Pool.encode(`127.0.0.1:${port}`, "/v2/models/m/infer", { "Content-Type": "application/octet-stream" }, new Uint8Array([1, 2, 3]));

describe("nereid perf's HTTP/1.1 client", () => {
  it("reads Content-Length in Bun's and node's spelling, and the status of each response", async () => {
    const port = await serve((n) => [
      n % 2 === 0 ? "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello" : "HTTP/1.1 400 Bad Request\r\ncontent-length: 3\r\n\r\nbad",
    ]);
    const pool = new Http1Pool("127.0.0.1", port);
    const bytes = request(port);
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await pool.send(bytes));
    pool.close();
    expect(answers.map((a) => a.status)).toEqual([200, 400, 200, 400]);
    // The body comes back only with an error status: the error to show.
    expect(answers.map((a) => (a.body ? Buffer.from(a.body).toString() : undefined))).toEqual([undefined, "bad", undefined, "bad"]);
  });

  it("waits for a response split over several writes, chunked or not, and for one with no body", async () => {
    const shapes = [
      ["HTTP/1.1 200 OK\r\nCont", "ent-Length: 10\r\n\r\n01234", "56789"],
      ["HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n", "2\r\nde\r\n0\r\n\r\n"],
      ["HTTP/1.1 204 No Content\r\n\r\n"],
      ["HTTP/1.1 500 Internal Server Error\r\nCONTENT-LENGTH: 2\r\n\r\n", "{}"],
    ];
    const port = await serve((n) => shapes[n]!);
    const pool = new Http1Pool("127.0.0.1", port);
    const bytes = request(port);
    const statuses = [];
    // One connection in turn: each response must end exactly where it does for the next to parse.
    for (let i = 0; i < shapes.length; i++) statuses.push((await pool.send(bytes)).status);
    pool.close();
    expect(statuses).toEqual([200, 201, 204, 500]);
  });

  it("sends a body larger than a socket takes in one write, whole", async () => {
    const body = new Uint8Array(8 << 20).map((_, i) => i % 251);
    let sum = 0;
    const port = await serve(() => [`HTTP/1.1 200 OK\r\nContent-Length: ${String(sum).length}\r\n\r\n${sum}`]);
    // serve() reads the body as latin1 text; count its bytes on the side.
    server!.prependListener("connection", (socket: Socket) => socket.prependListener("data", (d: Buffer) => (sum += d.byteLength)));
    const pool = new Http1Pool("127.0.0.1", port);
    const bytes = Http1Pool.encode(`127.0.0.1:${port}`, "/x", {}, body);
    expect((await pool.send(bytes)).status).toBe(200);
    pool.close();
    expect(sum).toBe(bytes.byteLength);
  });

  it("rejects a request whose connection the server closes", async () => {
    server = createServer((socket) => socket.on("data", () => socket.destroy()));
    await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
    const port = (server.address() as { port: number }).port;
    const pool = new Http1Pool("127.0.0.1", port);
    await expect(pool.send(request(port))).rejects.toThrow();
    pool.close();
  });
});
