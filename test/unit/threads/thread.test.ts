/**
 * The worker-thread kit's two sides (core/threads/thread.ts, serve.ts, worker-thread.ts;
 * #30 item 6): what a Thread posts (each message at once as a batch of one, or one batch a
 * turn) and what it hands on (each message of a batch in order, a non-batch to `malformed`,
 * an error event handled, Bun's close event as `exit`); a typed round trip with a real
 * worker thread (node:worker_threads, the worker bundled by Bun) moving buffers by transfer
 * both ways; the serving worker's start/stop lifecycle; a worker started early (before
 * its Thread: the frontends' workers start while the models load, #30) keeps what it
 * reports until its Thread is attached.
 */
import { execFileSync } from "node:child_process";
import { join, resolve } from "node:path";
import { MessageChannel, Worker as NodeWorker } from "node:worker_threads";
import { afterAll, beforeAll, afterEach, describe, expect, it, vi } from "vitest";
import { startWorker, Thread, type Message, type WorkerLike } from "../../../src/core/threads/thread.ts";
import { serveThread, type ThreadScope } from "../../../src/core/threads/serve.ts";
import { WorkerThread } from "../../../src/core/threads/worker-thread.ts";
import { EarlyWorker } from "../../../src/core/threads/early-worker.ts";
import type { Logger } from "../../../src/core/logger.ts";
import type { Transfer } from "../../../src/core/threads/batcher.ts";
import type { FromEcho, ToEcho } from "./fixtures/echo-protocol.ts";

const ROOT = resolve(import.meta.dirname, "../../..");
const BUN = join(ROOT, "node_modules", ".bin", "bun");
const nextTurn = () => new Promise((r) => setImmediate(r));

type Ping = { t: "ping"; n: number } | { t: "bytes"; buffer: ArrayBuffer };

/** A stand-in Worker that records its posts and lets the test play the worker's part. */
class FakeWorker implements WorkerLike {
  static made: { url: string; options: unknown; worker: FakeWorker }[] = [];
  posts: { batch: unknown[]; transfer: Transfer[] }[] = [];
  onmessage: ((e: MessageEvent) => void) | null = null;
  onerror: ((e: ErrorEvent) => void) | null = null;
  closeListeners: ((e: Event) => void)[] = [];
  terminated = 0;
  unrefs = 0;
  constructor(url?: string, options?: unknown) {
    if (url !== undefined) FakeWorker.made.push({ url, options, worker: this });
  }
  postMessage(batch: unknown[], transfer: ArrayBuffer[]): void {
    this.posts.push({ batch, transfer });
  }
  addEventListener(_type: "close", listener: (e: Event) => void): void {
    this.closeListeners.push(listener);
  }
  terminate(): void {
    this.terminated++;
  }
  unref(): void {
    this.unrefs++;
  }
  /** The worker posts `data`. */
  deliver(data: unknown): void {
    this.onmessage!({ data } as MessageEvent);
  }
}

function recorder<From extends Message>() {
  const seen: { message: From[]; error: string[]; exit: (number | undefined)[]; malformed: unknown[] } = { message: [], error: [], exit: [], malformed: [] };
  return {
    seen,
    events: {
      message: (m: From) => seen.message.push(m),
      error: (m: string) => seen.error.push(m),
      exit: (c: number | undefined) => seen.exit.push(c),
      malformed: (d: unknown) => seen.malformed.push(d),
    },
  };
}

afterEach(() => {
  vi.unstubAllGlobals();
  FakeWorker.made = [];
});

describe("Thread (main side)", () => {
  it("posts each message at once as a batch of one when not batched, with its transfer list", () => {
    const w = new FakeWorker();
    const t = new Thread<Ping, Ping>(w, recorder<Ping>().events);
    const buffer = new ArrayBuffer(4);
    t.send({ t: "ping", n: 1 });
    t.send({ t: "bytes", buffer }, [buffer]);
    expect(w.posts).toHaveLength(2);
    expect(w.posts[0]).toEqual({ batch: [{ t: "ping", n: 1 }], transfer: [] });
    expect(w.posts[1]!.batch).toEqual([{ t: "bytes", buffer }]);
    expect(w.posts[1]!.transfer[0]).toBe(buffer);
  });

  it("posts one batch a turn when batched", async () => {
    const w = new FakeWorker();
    const t = new Thread<Ping, Ping>(w, recorder<Ping>().events, { batch: true });
    t.send({ t: "ping", n: 1 });
    t.send({ t: "ping", n: 2 });
    expect(w.posts).toEqual([]);
    await nextTurn();
    expect(w.posts).toEqual([
      {
        batch: [
          { t: "ping", n: 1 },
          { t: "ping", n: 2 },
        ],
        transfer: [],
      },
    ]);
  });

  it("sendNow posts the turn's batch at once, the message after those sent before it", async () => {
    const w = new FakeWorker();
    const t = new Thread<Ping, Ping>(w, recorder<Ping>().events, { batch: true });
    t.send({ t: "ping", n: 1 });
    t.sendNow({ t: "ping", n: 2 });
    expect(w.posts.map((p) => p.batch)).toEqual([
      [
        { t: "ping", n: 1 },
        { t: "ping", n: 2 },
      ],
    ]);
    await nextTurn();
    t.sendNow({ t: "ping", n: 3 });
    expect(w.posts.map((p) => p.batch)).toHaveLength(2);
    expect(w.posts[1]!.batch).toEqual([{ t: "ping", n: 3 }]);
  });

  it("hands on each message of a batch in order, and anything else as malformed", () => {
    const w = new FakeWorker();
    const r = recorder<Ping>();
    new Thread<Ping, Ping>(w, r.events);
    w.deliver([
      { t: "ping", n: 1 },
      { t: "ping", n: 2 },
    ]);
    w.deliver({ t: "ping", n: 3 });
    w.deliver("text");
    expect(r.seen.message).toEqual([
      { t: "ping", n: 1 },
      { t: "ping", n: 2 },
    ]);
    expect(r.seen.malformed).toEqual([{ t: "ping", n: 3 }, "text"]);
  });

  it("handles the worker's error event and reports it; reports its close event's exit code; terminates it", () => {
    const w = new FakeWorker();
    const r = recorder<Ping>();
    const t = new Thread<Ping, Ping>(w, r.events);
    const preventDefault = vi.fn();
    w.onerror!({ message: "boom", preventDefault } as unknown as ErrorEvent);
    expect(preventDefault).toHaveBeenCalledTimes(1);
    expect(r.seen.error).toEqual(["boom"]);
    for (const l of w.closeListeners) l(Object.assign(new Event("close"), { code: 7 }));
    for (const l of w.closeListeners) l(new Event("close"));
    expect(r.seen.exit).toEqual([7, undefined]);
    t.terminate();
    expect(w.terminated).toBe(1);
  });

  it("starts a Worker from a URL: a module worker when asked, unref'd when asked, named when asked", () => {
    vi.stubGlobal("Worker", FakeWorker);
    new Thread<Ping, Ping>("file:///a.ts", recorder<Ping>().events, { module: true });
    startWorker("file:///b.ts", { unref: true });
    startWorker("file:///c.ts");
    new Thread<Ping, Ping>("file:///d.ts", recorder<Ping>().events, { name: "batch scheduler", unref: true });
    expect(FakeWorker.made.map((m) => [m.url, m.options, m.worker.unrefs])).toEqual([
      ["file:///a.ts", { type: "module" }, 0],
      ["file:///b.ts", undefined, 1],
      ["file:///c.ts", undefined, 0],
      ["file:///d.ts", { name: "batch scheduler" }, 1],
    ]);
  });
});

describe("serveThread (worker side)", () => {
  it("hands on each message of a batch in order and posts each answer at once as a batch of one", () => {
    const posts: { batch: unknown[]; transfer: Transfer[] }[] = [];
    const scope: ThreadScope = { onmessage: null, postMessage: (batch, transfer) => posts.push({ batch, transfer }) };
    const got: Ping[] = [];
    const { post } = serveThread<Ping, Ping>(
      (m) => {
        got.push(m);
        if (m.t === "ping") post({ t: "ping", n: m.n * 10 });
      },
      { scope },
    );
    scope.onmessage!({
      data: [
        { t: "ping", n: 1 },
        { t: "ping", n: 2 },
      ],
    } as MessageEvent);
    expect(got).toEqual([
      { t: "ping", n: 1 },
      { t: "ping", n: 2 },
    ]);
    expect(posts).toEqual([
      { batch: [{ t: "ping", n: 10 }], transfer: [] },
      { batch: [{ t: "ping", n: 20 }], transfer: [] },
    ]);
  });

  it("posts one batch a turn when batched", async () => {
    const posts: unknown[][] = [];
    const scope: ThreadScope = { onmessage: null, postMessage: (batch) => posts.push(batch) };
    const { post } = serveThread<Ping, Ping>(() => {}, { scope, batch: true });
    post({ t: "ping", n: 1 });
    post({ t: "ping", n: 2 });
    await nextTurn();
    post({ t: "ping", n: 3 });
    await nextTurn();
    expect(posts).toEqual([
      [
        { t: "ping", n: 1 },
        { t: "ping", n: 2 },
      ],
      [{ t: "ping", n: 3 }],
    ]);
  });

  it("postNow posts the turn's batch at once, the answer after those posted before it (a listening the main thread waits on)", async () => {
    const posts: unknown[][] = [];
    const scope: ThreadScope = { onmessage: null, postMessage: (batch) => posts.push(batch) };
    const { post, postNow } = serveThread<Ping, Ping>(() => {}, { scope, batch: true });
    post({ t: "ping", n: 1 });
    postNow({ t: "ping", n: 2 });
    expect(posts).toEqual([
      [
        { t: "ping", n: 1 },
        { t: "ping", n: 2 },
      ],
    ]);
    await nextTurn();
    expect(posts).toHaveLength(1);
  });
});

describe("a typed round trip with a real worker thread", () => {
  let worker: NodeWorker;
  let thread: Thread<ToEcho, FromEcho>;
  let port: MessagePort;
  const waiting = new Map<string, (m: FromEcho) => void>();
  const next = (key: string) => new Promise<FromEcho>((r) => waiting.set(key, r));

  beforeAll(() => {
    // The worker's code, bundled: Node runs no TypeScript in a worker thread.
    const code = execFileSync(BUN, ["build", join(import.meta.dirname, "fixtures", "echo-worker.ts"), "--target=node", "--format=cjs"], { encoding: "utf8" });
    const channel = new MessageChannel();
    worker = new NodeWorker(code, { eval: true, workerData: { port: channel.port2 }, transferList: [channel.port2] });
    port = channel.port1 as unknown as MessagePort;
    thread = new Thread<ToEcho, FromEcho>(
      port as unknown as WorkerLike,
      {
        message: (m) => {
          const key = m.t === "batches" ? "batches" : `${m.t}:${m.id}`;
          waiting.get(key)?.(m);
          waiting.delete(key);
        },
      },
      { batch: true },
    );
  });

  afterAll(async () => {
    port?.close();
    await worker?.terminate();
  });

  it("answers each message, the messages of one turn arriving as one batch", async () => {
    const answers = [next("echoed:1"), next("echoed:2"), next("echoed:3")];
    thread.send({ t: "echo", id: 1, text: "a" });
    thread.send({ t: "echo", id: 2, text: "bc" });
    thread.send({ t: "echo", id: 3, text: "déf" });
    expect(await Promise.all(answers)).toEqual([
      { t: "echoed", id: 1, text: "A" },
      { t: "echoed", id: 2, text: "BC" },
      { t: "echoed", id: 3, text: "DÉF" },
    ]);
    const batches = next("batches");
    thread.send({ t: "batches" });
    expect(await batches).toEqual({ t: "batches", sizes: [3, 1] });
  });

  it("transfers a buffer to the worker: it arrives whole and leaves the main thread", async () => {
    const buffer = new ArrayBuffer(100_000);
    new Uint8Array(buffer).fill(3);
    const took = next("took:4");
    thread.send({ t: "take", id: 4, buffer }, [buffer]);
    // Still here until the turn's batch is posted.
    expect(buffer.byteLength).toBe(100_000);
    await nextTurn();
    expect(buffer.byteLength).toBe(0);
    expect(await took).toEqual({ t: "took", id: 4, byteLength: 100_000, sum: 300_000 });
  });

  it("transfers a buffer from the worker: it arrives whole and leaves the worker", async () => {
    const given = next("given:5");
    const left = next("left:5");
    thread.send({ t: "give", id: 5, size: 1000 });
    const m = (await given) as Extract<FromEcho, { t: "given" }>;
    expect(m.buffer.byteLength).toBe(1000);
    const bytes = new Uint8Array(m.buffer);
    expect([bytes[0], bytes[250], bytes[251], bytes[999]]).toEqual([0, 250, 0, 999 % 251]);
    expect(await left).toEqual({ t: "left", id: 5, byteLength: 0 });
  });
});

describe("WorkerThread (a serving worker's lifecycle)", () => {
  type Config = { port: number };
  type To = { t: "hello" };
  type From = { t: "listening"; port: number } | { t: "startFailed"; message: string } | { t: "stopped" } | { t: "note"; text: string };
  const logs: string[] = [];
  const log = { error: (m: string) => logs.push(m) } as unknown as Logger;

  function make() {
    vi.stubGlobal("Worker", FakeWorker);
    const got: unknown[] = [];
    const exits: string[] = [];
    const t = new WorkerThread<Config, To, From>(
      "file:///w.ts",
      "HTTP",
      log,
      (m) => got.push(m),
      () => exits.push("ended"),
    );
    return { t, w: FakeWorker.made.at(-1)!.worker, got, exits };
  }

  it("posts its start with its config at once, resolves with the port it listens on, and hands on the rest", async () => {
    const { t, w, got } = make();
    const started = t.start({ port: 0 });
    // At once, not at the turn's end: the worker's start is on the way to ready (#30).
    expect(w.posts.map((p) => p.batch)).toEqual([[{ t: "start", config: { port: 0 } }]]);
    t.send({ t: "hello" });
    await nextTurn();
    expect(w.posts.map((p) => p.batch)).toEqual([[{ t: "start", config: { port: 0 } }], [{ t: "hello" }]]);
    w.deliver([
      { t: "listening", port: 8123 },
      { t: "note", text: "x" },
    ]);
    expect(await started).toBe(8123);
    expect(got).toEqual([{ t: "note", text: "x" }]);
  });

  it("rejects the start with the worker's message, or its error event's (logged)", async () => {
    const a = make();
    const failed = a.t.start({ port: 1 });
    a.w.deliver([{ t: "startFailed", message: "address in use" }]);
    await expect(failed).rejects.toThrow("address in use");
    const b = make();
    const crashed = b.t.start({ port: 1 });
    b.w.onerror!({ message: "bad module", preventDefault: () => {} } as unknown as ErrorEvent);
    await expect(crashed).rejects.toThrow("bad module");
    expect(logs).toEqual(["HTTP worker thread: bad module"]);
  });

  it("over a worker started early that failed before start: the start rejects with its message (logged)", async () => {
    vi.stubGlobal("Worker", FakeWorker);
    logs.length = 0;
    const early = new EarlyWorker("file:///w.ts");
    const w = FakeWorker.made.at(-1)!.worker;
    w.onerror!({ message: "bad module", preventDefault: () => {} } as unknown as ErrorEvent);
    const t = new WorkerThread<Config, To, From>(early, "HTTP", log, () => {});
    expect(logs).toEqual(["HTTP worker thread: bad module"]);
    await expect(t.start({ port: 1 })).rejects.toThrow("bad module");
    // Nothing was asked of it.
    await nextTurn();
    expect(w.posts).toEqual([]);
  });

  it("over a worker started early that ended before its thread was made: the owner hears of the end while the thread is made", async () => {
    vi.stubGlobal("Worker", FakeWorker);
    const early = new EarlyWorker("file:///w.ts");
    const w = FakeWorker.made.at(-1)!.worker;
    for (const l of w.closeListeners) l({ code: 1 } as unknown as Event);
    const ends: string[] = [];
    const t = new WorkerThread<Config, To, From>(
      early,
      "gRPC",
      log,
      () => {},
      () => ends.push("ended"),
    );
    // Within the constructor: the frontends make what their onExit uses before the thread.
    expect(ends).toEqual(["ended"]);
    await expect(t.start({ port: 1 })).rejects.toThrow("the worker ended (exit code 1)");
  });

  it("a worker that ends without a word fails a start waiting on it and ends a stop at once", async () => {
    const a = make();
    const started = a.t.start({ port: 1 });
    for (const l of a.w.closeListeners) l({ code: 3 } as unknown as Event);
    await expect(started).rejects.toThrow("the worker ended (exit code 3)");
    const b = make();
    const stopped = b.t.stop();
    await nextTurn();
    for (const l of b.w.closeListeners) l({ code: 0 } as unknown as Event);
    await stopped;
    expect(b.w.terminated).toBe(1);
    // Its owner hears of each end, whether a stop or a start waited on it (a frontend's worker gives back its shared-memory holds then).
    expect([a.exits, b.exits]).toEqual([["ended"], ["ended"]]);
  });

  it("tells its owner when a started worker ends on its own (Bun ends a worker on an uncaught error), and not before", async () => {
    const { t, w, exits } = make();
    const started = t.start({ port: 0 });
    w.deliver([{ t: "listening", port: 4 }]);
    await expect(started).resolves.toBe(4);
    w.onerror!({ message: "boom", preventDefault: () => {} } as unknown as ErrorEvent);
    expect(exits).toEqual([]);
    for (const l of w.closeListeners) l({ code: 1 } as unknown as Event);
    expect(exits).toEqual(["ended"]);
  });

  it("stops: posts stop at once, and ends the worker once it has said stopped", async () => {
    const { t, w } = make();
    const stopped = t.stop();
    expect(w.posts.map((p) => p.batch)).toEqual([[{ t: "stop" }]]);
    expect(w.terminated).toBe(0);
    w.deliver([{ t: "stopped" }]);
    await stopped;
    expect(w.terminated).toBe(1);
  });
});

describe("EarlyWorker (a worker started before its Thread)", () => {
  it("starts the worker at once; keeps its messages, error events and end until a Thread is attached, then hands them on in order", () => {
    vi.stubGlobal("Worker", FakeWorker);
    const early = new EarlyWorker("file:///early.ts", { unref: true });
    expect(FakeWorker.made.map((m) => m.url)).toEqual(["file:///early.ts"]);
    const w = FakeWorker.made[0]!.worker;
    expect(w.unrefs).toBe(1);
    const preventDefault = vi.fn();
    w.deliver([{ t: "ping", n: 1 }]);
    w.onerror!({ message: "late failure", preventDefault } as unknown as ErrorEvent);
    // Handled at once, not when a Thread takes it.
    expect(preventDefault).toHaveBeenCalledTimes(1);
    w.deliver([{ t: "ping", n: 2 }]);
    for (const l of w.closeListeners) l(Object.assign(new Event("close"), { code: 3 }));
    const order: string[] = [];
    const t = new Thread<Ping, Ping>(early, {
      message: (m) => order.push(`message ${(m as { n: number }).n}`),
      error: (m) => order.push(`error ${m}`),
      exit: (c) => order.push(`exit ${c}`),
    });
    expect(order).toEqual(["message 1", "error late failure", "message 2", "exit 3"]);
    // From now on each as it comes; posts and terminate reach the worker.
    w.deliver([{ t: "ping", n: 4 }]);
    expect(order.at(-1)).toBe("message 4");
    t.send({ t: "ping", n: 5 });
    expect(w.posts).toEqual([{ batch: [{ t: "ping", n: 5 }], transfer: [] }]);
    t.terminate();
    expect(w.terminated).toBe(1);
  });

  it("terminated unused, it ends the worker and hands nothing on", () => {
    vi.stubGlobal("Worker", FakeWorker);
    const early = new EarlyWorker("file:///early.ts");
    const w = FakeWorker.made[0]!.worker;
    w.deliver([{ t: "ping", n: 1 }]);
    early.terminate();
    expect(w.terminated).toBe(1);
    const r = recorder<Ping>();
    new Thread<Ping, Ping>(early, r.events);
    expect(r.seen.message).toEqual([]);
  });
});
