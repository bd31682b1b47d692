/**
 * HTTP/1.1 pipelining from a raw socket: `simple`'s requests written in one write, and the
 * answers parsed back from the bytes (Content-Length or chunked bodies).
 */
import { connect } from "node:net";
import { expect } from "vitest";

const INPUT0 = Array.from({ length: 16 }, (_, i) => i);
const INPUT1 = Array.from({ length: 16 }, () => 1);
export const BODY = JSON.stringify({
  inputs: [
    { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: INPUT0 },
    { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: INPUT1 },
  ],
});

export type Kind = "ready" | "infer" | "server" | "metadata";

const REQUEST: Record<Kind, string> = {
  ready: "GET /v2/models/simple/ready HTTP/1.1\r\nHost: x\r\n\r\n",
  infer: `POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(BODY)}\r\n\r\n${BODY}`,
  server: "GET /v2 HTTP/1.1\r\nHost: x\r\n\r\n",
  metadata: "GET /v2/models/simple HTTP/1.1\r\nHost: x\r\n\r\n",
};

/** Checks one answer against what `kind` must get. */
export function expectAnswer(kind: Kind, status: number, body: string): void {
  expect(status, `${kind}: ${body}`).toBe(200);
  if (kind === "ready") expect(body).toBe("");
  else if (kind === "server") expect(JSON.parse(body)).toMatchObject({ name: "triton" });
  else if (kind === "metadata") expect(JSON.parse(body)).toMatchObject({ name: "simple", versions: ["1"] });
  else {
    const outputs = (JSON.parse(body) as { outputs: { name: string; data: number[] }[] }).outputs;
    expect(Object.fromEntries(outputs.map((o) => [o.name, o.data]))).toEqual({
      OUTPUT0: INPUT0.map((x, i) => x + INPUT1[i]!),
      OUTPUT1: INPUT0.map((x, i) => x - INPUT1[i]!),
    });
  }
}

/** Whole answers at the start of `bytes` (Content-Length or chunked bodies), and whether bytes were left over. */
function parseAnswers(bytes: Buffer): { answers: { status: number; body: string }[]; rest: number } {
  const answers: { status: number; body: string }[] = [];
  let at = 0;
  for (;;) {
    const headEnd = bytes.indexOf("\r\n\r\n", at);
    if (headEnd < 0) break;
    const head = bytes.subarray(at, headEnd).toString("latin1").split("\r\n");
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head[0]!)?.[1]);
    const header = (name: string) =>
      head
        .find((l) => l.toLowerCase().startsWith(`${name}:`))
        ?.slice(name.length + 1)
        .trim();
    let bodyStart = headEnd + 4;
    let body: Buffer;
    if (header("transfer-encoding")?.toLowerCase() === "chunked") {
      const parts: Buffer[] = [];
      for (;;) {
        const lineEnd = bytes.indexOf("\r\n", bodyStart);
        if (lineEnd < 0) return { answers, rest: bytes.length - at };
        const size = Number.parseInt(bytes.subarray(bodyStart, lineEnd).toString("latin1"), 16);
        if (!Number.isFinite(size)) throw new Error(`not a chunk size: ${bytes.subarray(bodyStart, lineEnd).toString("latin1")}`);
        if (lineEnd + 2 + size + 2 > bytes.length) return { answers, rest: bytes.length - at };
        parts.push(bytes.subarray(lineEnd + 2, lineEnd + 2 + size));
        bodyStart = lineEnd + 2 + size + 2;
        if (size === 0) break;
      }
      body = Buffer.concat(parts);
    } else {
      const declared = header("content-length");
      // Every answer here has a length or chunks (a body to the close would be one the parser cannot delimit).
      if (declared === undefined && status !== 204 && status !== 304) throw new Error(`an answer without Content-Length or chunks: ${head.join(" | ")}`);
      const length = Number(declared ?? 0);
      if (bodyStart + length > bytes.length) break;
      body = bytes.subarray(bodyStart, bodyStart + length);
      bodyStart += length;
    }
    answers.push({ status, body: body.toString("utf8") });
    at = bodyStart;
  }
  return { answers, rest: bytes.length - at };
}

/** Writes `kinds`' requests in one write; resolves with the answers once all came or the connection closed. */
export function pipeline(port: number, kinds: readonly Kind[]): Promise<{ answers: { status: number; body: string }[]; rest: number; closed: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(kinds.map((k) => REQUEST[k]).join("")));
    let bytes = Buffer.alloc(0);
    const fail = (err: unknown) => {
      clearTimeout(timer);
      socket.destroy();
      reject(err);
    };
    const timer = setTimeout(() => fail(new Error(`no answer and no close within 10 s; got ${bytes.byteLength} bytes`)), 10_000);
    /** The answers so far, or undefined once the bytes could not be read (the promise is rejected then). */
    const parsed = () => {
      try {
        return parseAnswers(bytes);
      } catch (err) {
        fail(err);
        return undefined;
      }
    };
    socket.on("data", (d: Buffer) => {
      bytes = Buffer.concat([bytes, d]);
      const p = parsed();
      if (p && p.answers.length === kinds.length) {
        clearTimeout(timer);
        socket.destroy();
        resolve({ ...p, closed: false });
      }
    });
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(timer);
      const p = parsed();
      if (p) resolve({ ...p, closed: true });
    });
  });
}

/** Readiness, inference and metadata requests, mixed. */
export const MIXED: Kind[] = ["ready", "infer", "server", "metadata", "infer", "ready", "infer", "server", "infer"];
