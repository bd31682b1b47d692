/**
 * S-20 on the direct path (#30), through the compiled binary: a TypeScript model's
 * worker-thread instance reached from a frontend worker thread makes a BLS call with its
 * request's signal, and the client goes away (an HTTP client disconnects, a gRPC call is
 * cancelled): the cancel reaches the instance's worker over the frontend worker's port, the
 * model's signal aborts, and the BLS request is cancelled on the main thread, as on one
 * thread. The request is shown to run on the direct path: its execute starts while the
 * main thread's event loop is held by another model.
 */
import { describe, expect, it } from "vitest";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { Agent } from "node:http";
import { join } from "node:path";
import type { Client, ServiceError } from "@grpc/grpc-js";
import { onOneAndTwoThreads, startOnThreads } from "../../helpers/thread-servers.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { inferenceClient } from "../../helpers/grpc-client.ts";
import { eventually } from "../../helpers/eventually.ts";
import { addHoldModel, whileMainHeld } from "../../helpers/hold-model.ts";
import { answerText, postText } from "../../helpers/http-text.ts";
import type { ServerProcess } from "../../helpers/server-process.ts";

/** inner (main thread): Y = A; A = 1 first waits for its cancel (10 s at most), then answers CANCELLED. */
const inner = (log: string) => `
import { appendFileSync } from "node:fs";
export default class Inner {
  async execute(requests) {
    return Promise.all(requests.map(async (r) => {
      const a = r.input("A").data[0];
      if (a === 1) {
        appendFileSync(${JSON.stringify(log)}, "inner held\\n");
        await new Promise((res) => {
          const t = setTimeout(res, 10000);
          r.signal.addEventListener("abort", () => { clearTimeout(t); res(); }, { once: true });
        });
        appendFileSync(${JSON.stringify(log)}, r.isCancelled() ? "inner cancelled\\n" : "inner not cancelled\\n");
        if (r.isCancelled()) return { error: { message: "stopped: the client cancelled", code: "CANCELLED" } };
      }
      return { outputs: [{ name: "Y", datatype: "INT32", shape: [1], data: [a] }] };
    }));
  }
}
`;

/** outer (a worker-thread instance, reached directly on two threads): Y = inner(A), called with its request's signal. */
const outer = (log: string) => `
import { appendFileSync } from "node:fs";
export default class Outer {
  async execute(requests) {
    return Promise.all(requests.map(async (r) => {
      if (r.input("A").data[0] === 1) appendFileSync(${JSON.stringify(log)}, "outer started\\n");
      try {
        const res = await r.infer({ model: "inner", inputs: [r.input("A")], signal: r.signal });
        return { outputs: [{ name: "Y", datatype: "INT32", shape: [1], data: res.output("Y").data }] };
      } catch (e) {
        appendFileSync(${JSON.stringify(log)}, "outer: " + e.code + " " + e.message + "\\n");
        return { error: { message: e.message, code: e.code } };
      }
    }));
  }
}
`;

async function start(threads: number, name: string) {
  const repo = makeRepository([]);
  const log = join(repo.dir, "log.txt");
  const io = `max_batch_size: 0\ninput [ { name: "A" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] } ]\n`;
  const main = `parameters { key: "execution_thread" value: { string_value: "main" } }\n`;
  repo.add("inner/config.pbtxt", `name: "inner"\nbackend: "typescript"\n${io}${main}`);
  repo.add("inner/1/model.js", inner(log));
  repo.add("outer/config.pbtxt", `name: "outer"\nbackend: "typescript"\n${io}`);
  repo.add("outer/1/model.js", outer(log));
  const hold = addHoldModel(repo);
  return { repo, server: await startOnThreads(repo.dir, threads), name, log, hold, threads };
}

type Started = Awaited<ReturnType<typeof start>>;

const lines = (s: Started) => (existsSync(s.log) ? readFileSync(s.log, "utf8").trim().split("\n") : []);

async function metric(server: ServerProcess, model: string, reason: string): Promise<number> {
  const text = await (await fetch(`${server.metricsUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`nv_inference_request_failure{model="${model}",version="1",reason="${reason}"}`));
  return Number(line?.slice(line.lastIndexOf(" ") + 1));
}

/** A client of one protocol on a connection of its own: `send` starts a request for A, `cancel` makes the client go away. */
function client(s: Started, protocol: "http" | "grpc") {
  const body = (a: number) => JSON.stringify({ inputs: [{ name: "A", datatype: "INT32", shape: [1], data: [a] }] });
  if (protocol === "http") {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    return {
      send(a: number) {
        const { result, cancel } = postText(`${s.server.url}/v2/models/outer/infer`, body(a), agent);
        return { result: result.then(answerText), cancel };
      },
      close: () => agent.destroy(),
    };
  }
  const { client: c } = inferenceClient(s.server.grpcTarget!);
  const grpc = c as Client & Record<string, (...a: unknown[]) => { cancel(): void }>;
  return {
    send(a: number) {
      let call!: { cancel(): void };
      const result = new Promise<string>((resolve) => {
        const request = {
          model_name: "outer",
          inputs: [{ name: "A", datatype: "INT32", shape: [1] }],
          raw_input_contents: [Buffer.from(Int32Array.of(a).buffer)],
        };
        call = grpc.ModelInfer!.call(grpc, request, {}, (err: ServiceError | null) => resolve(err ? `${err.code} ${err.details}` : "OK"));
      });
      return { result, cancel: () => call.cancel() };
    },
    close: () => c.close(),
  };
}

/** A BLS call made by a request the client then abandons, on `protocol`; what the models logged, what the client got, and the CANCELED counts. */
async function abandon(s: Started, protocol: "http" | "grpc") {
  const c = client(s, protocol);
  rmSync(s.log, { force: true });
  try {
    // Warm: this connection's frontend worker then holds a port to the instance.
    for (let i = 0; i < 6; i++) expect(await c.send(5).result).toMatch(/^(200 .*"data":\[5\]|OK)/);
    const before = [await metric(s.server, "inner", "CANCELED"), await metric(s.server, "outer", "CANCELED")];
    let running!: ReturnType<typeof c.send>;
    if (s.threads > 1) {
      // Its execute starts while the main thread is held: the frontend worker sent it to the instance itself.
      await whileMainHeld(s.server.url, s.hold, async () => {
        running = c.send(1);
        await eventually(async () => expect(lines(s)).toEqual(["outer started"]));
      });
    } else running = c.send(1);
    await eventually(async () => expect(lines(s)).toContain("inner held"));
    running.cancel();
    const answer = await running.result;
    await eventually(async () => expect(lines(s).length).toBe(4));
    await eventually(async () => expect(await metric(s.server, "outer", "CANCELED")).toBe(before[1]! + 1));
    const after = [await metric(s.server, "inner", "CANCELED"), await metric(s.server, "outer", "CANCELED")];
    return { log: lines(s), answer, canceled: after.map((n, i) => n - before[i]!) };
  } finally {
    c.close();
  }
}

describe("a BLS call of a request on a directly reached TypeScript instance, when its client goes away (S-20)", () => {
  let one: Started;
  let two: Started;
  onOneAndTwoThreads(start, (a, b) => {
    [one, two] = [a, b];
  });

  for (const protocol of ["http", "grpc"] as const) {
    it(`is cancelled with the request, as on one thread (${protocol === "http" ? "an HTTP client disconnects" : "a gRPC call is cancelled"})`, async () => {
      const [a, b] = [await abandon(one, protocol), await abandon(two, protocol)];
      expect(a).toEqual({
        log: ["outer started", "inner held", "inner cancelled", "outer: CANCELLED stopped: the client cancelled"],
        answer: protocol === "http" ? "client: ECONNRESET" : "1 Cancelled on client",
        canceled: [1, 1],
      });
      expect(b).toEqual(a);
    });
  }
});
