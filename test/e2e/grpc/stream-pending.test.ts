/**
 * A ModelStreamInfer client that sends without reading its answers (MAX_STREAM_PENDING in
 * src/frontends/grpc/stream.ts), through the compiled binary on one thread and on two
 * gRPC workers, on the stream a worker serves itself and on one the main thread's handler
 * serves (after a request for an unknown model): the server stops taking the stream's
 * requests once a bounded number are pending, instead of running every one and holding its
 * answer; once the client reads, every request is answered, in order, exactly.
 */
import { describe, expect, it, beforeAll, afterAll } from "vitest";
import { connect } from "node:http2";
import { once } from "node:events";
import { serviceDefinition } from "../../../src/frontends/grpc/protos.ts";
import { startOnThreads } from "../../helpers/thread-servers.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { MAIN_THREAD_ROUTE, grpcFrame, grpcMessages } from "../../helpers/grpc-client.ts";
import type { ServerProcess } from "../../helpers/server-process.ts";

const N = 3000;
const request = (i: number) => ({
  model_name: "simple",
  id: String(i),
  inputs: [
    { name: "INPUT0", datatype: "INT32", shape: [1, 16] },
    { name: "INPUT1", datatype: "INT32", shape: [1, 16] },
  ],
  raw_input_contents: [Buffer.from(Int32Array.from({ length: 16 }, () => i).buffer), Buffer.from(new Int32Array(16).buffer)],
});

async function successes(server: ServerProcess): Promise<number> {
  const s = ((await (await fetch(`${server.url}/v2/models/simple/stats`)).json()) as any).model_stats[0];
  return s.inference_stats.success.count;
}

/**
 * Writes N requests (after one for an unknown model, when `viaMain`) on a raw HTTP/2 stream
 * that reads nothing (so HTTP/2 flow control stops the server's writes); returns how many
 * ran meanwhile, then every answer once it reads.
 */
async function unread(server: ServerProcess, viaMain: boolean): Promise<{ ranUnread: number; ids: string[]; exact: boolean; status: string }> {
  const method = serviceDefinition("inference.GRPCInferenceService").ModelStreamInfer!;
  const frame = (m: object) => grpcFrame(method.requestSerialize(m));
  const before = await successes(server);
  const session = connect(`http://${server.grpcTarget}`);
  try {
    const stream = session.request({ ":method": "POST", ":path": method.path, "content-type": "application/grpc", te: "trailers" });
    stream.pause();
    const trailers = once(stream, "trailers").then(([t]) => t as Record<string, string>);
    const frames = [...(viaMain ? [frame({ model_name: MAIN_THREAD_ROUTE })] : []), ...Array.from({ length: N }, (_, i) => frame(request(i)))];
    // Written as the server takes them: the client's writes wait too once the server stops reading.
    void (async () => {
      for (const f of frames) if (!stream.write(f)) await once(stream, "drain");
      stream.end();
    })();
    // What the server runs while nothing is read: it settles, well short of N.
    let ran = -1;
    for (let i = 0; i < 40; i++) {
      await new Promise((r) => setTimeout(r, 100));
      const now = (await successes(server)) - before;
      if (now === ran && i > 10) break;
      ran = now;
    }
    const chunks: Buffer[] = [];
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.resume();
    await once(stream, "end");
    const msgs: any[] = grpcMessages(Buffer.concat(chunks), (b) => method.responseDeserialize(b));
    const answers = viaMain ? msgs.slice(1) : msgs;
    const exact = answers.every(
      (m, i) => !m.error_message && Buffer.from(m.infer_response.raw_output_contents[0]).equals(Buffer.from(Int32Array.from({ length: 16 }, () => i).buffer)),
    );
    return { ranUnread: ran, ids: answers.map((m) => m.infer_response.id), exact, status: (await trailers)["grpc-status"] ?? "" };
  } finally {
    session.close();
  }
}

describe("a ModelStreamInfer client that sends without reading", () => {
  const servers: Record<string, ServerProcess> = {};
  const repos: { remove(): void }[] = [];
  beforeAll(async () => {
    for (const threads of [1, 2]) {
      const repo = makeRepository(["simple"]);
      repos.push(repo);
      servers[threads] = await startOnThreads(repo.dir, threads);
    }
  }, 120_000);
  afterAll(async () => {
    for (const s of Object.values(servers)) expect(await s.stop()).toBe(0);
    for (const r of repos) r.remove();
  });

  for (const threads of [1, 2])
    for (const viaMain of threads === 1 ? [false] : [false, true])
      it(`${threads === 1 ? "one thread" : viaMain ? "two workers, the stream handed to the main thread" : "two workers, the stream served in a worker"}: a bounded number run unread, then all ${N} in order, exactly`, async () => {
        const r = await unread(servers[threads]!, viaMain);
        // The pending bound (256), plus what the transport and the client's window hold.
        expect(r.ranUnread).toBeGreaterThan(0);
        expect(r.ranUnread).toBeLessThan(N / 2);
        expect(r.ids).toEqual(Array.from({ length: N }, (_, i) => String(i)));
        expect(r.exact).toBe(true);
        expect(r.status).toBe("0");
      }, 60_000);
});
