/**
 * Backpressure through the frontend worker threads (#29 finding 5), through the compiled
 * binary with --http-thread-count=2 and --grpc-infer-thread-count=2: a decoupled model
 * sends many large responses at once to a client that does not read them. The main
 * thread relays a stream's responses to its worker only as the worker hands them to the
 * socket, as the one-thread frontends pull them only as the socket drains, so the
 * server's memory stays flat; then the client reads on and gets every response, in order,
 * exactly.
 */
import { describe, expect, it, beforeAll, afterAll } from "vitest";
import { request, type IncomingMessage } from "node:http";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { connect } from "node:http2";
import { startServerProcess, type ServerProcess } from "../helpers/server-process.ts";
import { makeRepository } from "../helpers/repo.ts";
import { serviceDefinition } from "../../src/frontends/grpc/protos.ts";
import { grpcFrame, grpcMessages } from "../helpers/grpc-client.ts";

/**
 * A decoupled model: N responses, the i-th with IDX = i and OUT = 0..SIZE-1, one a timer
 * tick, then a flag-only final. Every OUT is the same buffer, so the core holds
 * references only and what grows is what the frontends buffer; one a tick, so that each
 * is posted to a worker on its own (a post copies a buffer once, however many messages
 * in it share it).
 */
const BURST = `export default class Burst {
  execute(requests) {
    for (const r of requests) {
      const s = r.getResponseSender();
      const n = r.input("N").data[0];
      const size = r.input("SIZE").data[0];
      const out = Int32Array.from({ length: size }, (_, k) => k);
      let i = 0;
      const tick = () => {
        if (i === n) return s.send(undefined, { final: true });
        s.send({ outputs: [{ name: "IDX", datatype: "INT32", shape: [1], data: [i++] }, { name: "OUT", datatype: "INT32", shape: [size], data: out }] });
        setTimeout(tick, 0);
      };
      setTimeout(tick, 0);
    }
  }
}`;

// On the main thread: a worker-thread instance would post (copy) the shared buffer with each response.
const CONFIG = `name: "burst"
backend: "typescript"
parameters { key: "execution_thread" value: { string_value: "main" } }
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [ { name: "N" data_type: TYPE_INT32 dims: [ 1 ] }, { name: "SIZE" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "IDX" data_type: TYPE_INT32 dims: [ 1 ] }, { name: "OUT" data_type: TYPE_INT32 dims: [ -1 ] } ]
`;

/** What the server's RSS may grow by while its client does not read (the unbounded relay grew by hundreds of MB). */
const BOUND_MIB = 64;

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;

beforeAll(async () => {
  repo = makeRepository([]);
  repo.add("burst/config.pbtxt", CONFIG);
  repo.add("burst/1/model.js", BURST);
  server = await startServerProcess([`--model-repository=${repo.dir}`, "--http-thread-count=2", "--grpc-infer-thread-count=2"]);
  expect(server.log()).toMatch(/HTTP frontend on 2 worker threads/);
  expect(server.log()).toMatch(/gRPC frontend on 2 worker threads/);
});

afterAll(async () => {
  if (server) expect(await server.stop()).toBe(0);
  repo?.remove();
});

const rssMiB = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.pid}/status`, "utf8"))![1]) / 1024;

async function successes(): Promise<number> {
  const text = await (await fetch(`${server.metricsUrl}/metrics`)).text();
  return Number(/^nv_inference_request_success\{model="burst",version="1"\} (\d+)/m.exec(text)?.[1] ?? 0);
}

/**
 * The most the server's RSS grew over `before` from now until 2 s after the model has
 * sent its responses (the `count`-th request counted a success), while the main thread
 * would relay them; it stops early once the growth reaches the bound.
 */
async function growthWhileUnread(before: number, count: number): Promise<number> {
  let peak = 0;
  const sample = () => (peak = Math.max(peak, rssMiB() - before));
  const pause = () => new Promise((r) => setTimeout(r, 100));
  for (let i = 0; i < 200 && sample() < BOUND_MIB && (await successes()) < count; i++) await pause();
  if (peak >= BOUND_MIB) return peak;
  expect(await successes()).toBe(count);
  for (let i = 0; i < 20 && sample() < BOUND_MIB; i++) await pause();
  return peak;
}

describe("a client that does not read a decoupled model's stream through a worker thread", () => {
  it("generate_stream (SSE): RSS stays flat, then every event arrives in order, exactly", async () => {
    const n = 150;
    const size = 65536;
    const done = (await successes()) + 1;
    const before = rssMiB();
    const req = request({ host: "127.0.0.1", port: server.port, path: "/v2/models/burst/generate_stream", method: "POST", agent: false });
    req.end(JSON.stringify({ N: n, SIZE: size }));
    const [res] = (await once(req, "response")) as [IncomingMessage];
    res.pause();
    expect([res.statusCode, res.headers["content-type"]]).toEqual([200, "text/event-stream; charset=utf-8"]);
    expect(await growthWhileUnread(before, done)).toBeLessThan(BOUND_MIB);
    // The client held only what its socket read before it stopped: the rest had to wait in the server.
    expect(res.readableLength).toBeLessThan(1024 * 1024);

    const chunks: Buffer[] = [];
    res.on("data", (c: Buffer) => chunks.push(c));
    res.resume();
    await once(res, "end");
    const text = Buffer.concat(chunks).toString("latin1");
    expect([...text.matchAll(/"IDX":(\d+)/g)].map((m) => Number(m[1]))).toEqual(Array.from({ length: n }, (_, i) => i));
    const out = Array.from({ length: size }, (_, k) => k).join(",");
    const expected = Array.from({ length: n }, (_, i) => `data: {"model_name":"burst","model_version":"1","IDX":${i},"OUT":[${out}]}\n\n`).join("");
    expect(text.length).toBe(expected.length);
    expect(text === expected).toBe(true);
  }, 30_000);

  it("ModelStreamInfer: RSS stays flat, then every response arrives in order, exactly", async () => {
    const n = 200;
    const size = 262_144;
    const int32 = (v: number) => new Uint8Array(Int32Array.of(v).buffer);
    const done = (await successes()) + 1;
    const before = rssMiB();
    const method = serviceDefinition("inference.GRPCInferenceService").ModelStreamInfer!;
    const session = connect(`http://${server.grpcTarget}`);
    try {
      const stream = session.request({ ":method": "POST", ":path": method.path, "content-type": "application/grpc", te: "trailers" });
      const trailers = once(stream, "trailers").then(([t]) => t as Record<string, string>);
      const message = method.requestSerialize({
        model_name: "burst",
        inputs: [
          { name: "N", datatype: "INT32", shape: [1] },
          { name: "SIZE", datatype: "INT32", shape: [1] },
        ],
        raw_input_contents: [int32(n), int32(size)],
      });
      stream.end(grpcFrame(message));
      // Nothing reads the stream yet: HTTP/2 flow control stops the server's writes.
      stream.pause();
      expect(await growthWhileUnread(before, done)).toBeLessThan(BOUND_MIB);
      expect(stream.readableLength).toBeLessThan(1024 * 1024);

      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.resume();
      await once(stream, "end");
      expect((await trailers)["grpc-status"]).toBe("0");
      const msgs: any[] = grpcMessages(Buffer.concat(chunks), (b) => method.responseDeserialize(b));
      expect(msgs.map((m) => m.error_message ?? "")).toEqual(Array(n).fill(""));
      const out = Buffer.from(Int32Array.from({ length: size }, (_, k) => k).buffer);
      expect(msgs.map((m) => Buffer.from(m.infer_response.raw_output_contents[0]).readInt32LE(0))).toEqual(Array.from({ length: n }, (_, i) => i));
      expect(msgs.map((m) => m.infer_response.outputs.map((o: { name: string }) => o.name))).toEqual(Array(n).fill(["IDX", "OUT"]));
      expect(msgs.filter((m) => Buffer.compare(Buffer.from(m.infer_response.raw_output_contents[1]), out) !== 0).length).toBe(0);
    } finally {
      session.close();
    }
  }, 30_000);
});
