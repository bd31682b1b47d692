/**
 * A TypeScript model's worker-thread instance whose worker ends while a frontend worker
 * thread reached it directly (#30), through the compiled binary, compared with one thread:
 * the request it ran fails with the same INTERNAL error naming the reason (the model's
 * process.exit, a timer's uncaught exception, an unhandled rejection, a message the
 * server cannot handle), HTTP 500 and gRPC INTERNAL alike; the worker is restarted and the
 * next request is answered; requests queued behind the one that ended run on the
 * restarted worker, each answered once; and a fault is answered while the main thread's
 * event loop is held (the instance's worker tells the frontend worker itself).
 */
import { describe, expect, it } from "vitest";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { Agent } from "node:http";
import { join } from "node:path";
import type { ServerProcess } from "../../helpers/server-process.ts";
import { startOnThreads, onOneAndTwoThreads } from "../../helpers/thread-servers.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { inferenceClient, streamInferOnMain } from "../../helpers/grpc-client.ts";
import { eventually } from "../../helpers/eventually.ts";
import { addHoldModel, whileMainHeld } from "../../helpers/hold-model.ts";
import { answerText, postText } from "../../helpers/http-text.ts";

/**
 * die: Y = A, one worker-thread instance; A = 1 exits, 2 throws from a timer, 3 leaves a
 * rejection unhandled, 4 posts a message the server cannot handle; 5 waits 300 ms first;
 * 6 exits after 300 ms (time for the requests sent with it to queue behind it); 14 writes
 * `holding` next to the module and holds its thread until a file `go` is there, then exits
 * (the requests sent meanwhile are still unread on its port); 12 writes `started` next to the module, then exits after 500 ms.
 */
const DIE = `
export default class Die {
  async execute(requests) {
    const a = requests[0].input("A").data[0];
    if (a === 1) process.exit(3);
    if (a === 2) setTimeout(() => { throw new Error("boom from a timer"); }, 0);
    if (a === 3) setTimeout(() => Promise.reject(new TypeError("nobody catches this")), 0);
    if (a === 4) postMessage("not a batch");
    if (a >= 2 && a <= 4) await new Promise(() => {});
    if (a === 5) await new Promise((r) => setTimeout(r, 300));
    if (a === 6) setTimeout(() => process.exit(6), 300);
    if (a === 6) await new Promise(() => {});
    if (a === 14) {
      const fs = await import("node:fs");
      fs.writeFileSync(new URL("holding", import.meta.url), "running");
      const end = Date.now() + 10000;
      while (Date.now() < end && !fs.existsSync(new URL("go", import.meta.url)));
      process.exit(14);
    }
    if (a === 12) {
      (await import("node:fs")).writeFileSync(new URL("started", import.meta.url), "running");
      setTimeout(() => process.exit(12), 500);
      await new Promise(() => {});
    }
    return requests.map((r) => ({ outputs: [{ name: "Y", datatype: "INT32", shape: [1], data: r.input("A").data }] }));
  }
}
`;

const FAULTS = [1, 2, 3, 4];

async function start(threads: number, name: string, extra: string[] = []) {
  const repo = makeRepository([]);
  const io = `max_batch_size: 0\ninput [ { name: "A" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] } ]\n`;
  repo.add("die/config.pbtxt", `name: "die"\nbackend: "typescript"\n${io}instance_group [ { count: 1 kind: KIND_CPU } ]\n`);
  repo.add("die/1/model.js", DIE);
  const hold = addHoldModel(repo);
  return { repo, server: await startOnThreads(repo.dir, threads, extra), name, hold };
}

type Started = Awaited<ReturnType<typeof start>>;

/** One client of each protocol on a connection of its own (so that its requests reach one frontend worker, which then holds a port to the instance). */
function clients(s: Started) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const grpc = inferenceClient(s.server.grpcTarget!);
  const http = (a: number): Promise<string> =>
    postText(`${s.server.url}/v2/models/die/infer`, JSON.stringify({ inputs: [{ name: "A", datatype: "INT32", shape: [1], data: [a] }] }), agent).result.then(
      answerText,
    );
  const request = (a: number) => ({
    model_name: "die",
    inputs: [{ name: "A", datatype: "INT32", shape: [1] }],
    raw_input_contents: [Buffer.from(Int32Array.of(a).buffer)],
  });
  const g = (a: number): Promise<string> =>
    grpc
      .call("ModelInfer")(request(a))
      .then(
        (r) => `OK ${new Int32Array(new Uint8Array(r.raw_output_contents[0]).slice().buffer)[0]}`,
        (e: { code: number; details: string }) => `${e.code} ${e.details}`,
      );
  /** One request on a ModelStreamInfer stream on the main thread's route (MAIN_THREAD_ROUTE). */
  const stream = async (a: number): Promise<string> => {
    const [r] = await streamInferOnMain(s.server.grpcTarget!, [request(a)]);
    return r!.error_message || `OK ${new Int32Array(new Uint8Array(r!.infer_response.raw_output_contents[0]).slice().buffer)[0]}`;
  };
  return {
    http,
    grpc: g,
    stream,
    /** Answered requests on both, until the frontend workers of both reach the instance (a few are answered by the main thread while they ask for a port). */
    async warm(): Promise<void> {
      for (let i = 0; i < 6; i++) {
        expect(await http(7)).toBe('200 {"model_name":"die","model_version":"1","outputs":[{"name":"Y","datatype":"INT32","shape":[1],"data":[7]}]}');
        expect(await g(7)).toBe("OK 7");
      }
    },
    close() {
      agent.destroy();
      grpc.client.close();
    },
  };
}

/** Runs `fn` with warmed-up clients of `s` (clients), closing them after. */
async function warmed<T>(s: Started, fn: (c: ReturnType<typeof clients>) => Promise<T>): Promise<T> {
  const c = clients(s);
  try {
    await c.warm();
    return await fn(c);
  } finally {
    c.close();
  }
}

/** `text` without what differs between the two servers (their repositories' folders). */
const same = (s: Started, text: string) => text.replaceAll(s.repo.dir, "<repo>");

/** Each fault on HTTP, then on gRPC, each after a warm-up, then a request answered by the restarted worker; every answer as text. */
async function faults(s: Started): Promise<string[]> {
  const c = clients(s);
  const out: string[] = [];
  try {
    for (const a of FAULTS) {
      await c.warm();
      out.push(same(s, await c.http(a)));
      await c.warm();
      out.push(same(s, await c.grpc(a)));
      out.push(await c.http(8), await c.grpc(9));
    }
  } finally {
    c.close();
  }
  return out;
}

async function counts(server: ServerProcess) {
  const s = ((await (await fetch(`${server.url}/v2/models/die/stats`)).json()) as any).model_stats[0];
  return { inference: s.inference_count, execution: s.execution_count, success: s.inference_stats.success.count, fail: s.inference_stats.fail.count };
}

describe("a TypeScript instance's worker that ends under a request a frontend worker sent it directly", () => {
  let one: Started;
  let two: Started;
  onOneAndTwoThreads(start, (a, b) => {
    [one, two] = [a, b];
  });

  it("fails the request with one thread's INTERNAL error and reason, on HTTP and gRPC; the restarted worker answers the next", async () => {
    const [a, b] = [await faults(one), await faults(two)];
    const who = "model 'die' instance die_0_0: the worker";
    const reasons = [
      "ended: the model called process.exit(3)",
      "ended: uncaught exception: Error: boom from a timer\\n    at <anonymous> (<repo>/die/1/model.js:6:47)",
      "ended: unhandled rejection: TypeError: nobody catches this\\n    at <anonymous> (<repo>/die/1/model.js:7:54)",
      "sent a message the server cannot handle (not a batch of messages)",
    ];
    const expected = reasons.flatMap((reason) => [
      `500 {"error":"${who} ${reason}"}`,
      `13 ${who} ${reason.replaceAll("\\n", "\n")}`,
      '200 {"model_name":"die","model_version":"1","outputs":[{"name":"Y","datatype":"INT32","shape":[1],"data":[8]}]}',
      "OK 9",
    ]);
    expect(a).toEqual(expected);
    expect(b).toEqual(expected);
    // 8 failed, 8 answered after them and 96 warm-ups, counted alike.
    const [ca, cb] = [await counts(one.server), await counts(two.server)];
    expect(cb).toEqual(ca);
    expect(ca).toEqual({ inference: 112, execution: 112, success: 104, fail: 8 });
  });

  it.each([
    [6, "waiting in the worker"],
    [14, "not yet read by the worker"],
  ])("requests queued behind the one whose worker ended (%i: %s) run on the restarted worker, each answered once", async (fault) => {
    const results: string[][] = [];
    for (const s of [one, two]) {
      await warmed(s, async (c) => {
        const before = await counts(s.server);
        // Three calls on one connection: one frontend worker sends them to the instance.
        const faulting = c.grpc(fault);
        if (fault === 14) {
          // 10 and 11 reach the instance's port while its thread is held.
          const dir = join(s.repo.dir, "die", "1");
          await eventually(async () => expect(existsSync(join(dir, "holding"))).toBe(true));
          const rest = [c.grpc(10), c.grpc(11)];
          await new Promise((r) => setTimeout(r, 300));
          writeFileSync(join(dir, "go"), "");
          results.push([await faulting, ...(await Promise.all(rest))]);
          for (const f of ["holding", "go"]) rmSync(join(dir, f));
        } else results.push(await Promise.all([faulting, c.grpc(10), c.grpc(11)]));
        const after = await counts(s.server);
        expect({ success: after.success - before.success, fail: after.fail - before.fail, execution: after.execution - before.execution }).toEqual({
          success: 2,
          fail: 1,
          execution: 3,
        });
      });
    }
    expect(results[0]).toEqual([`13 model 'die' instance die_0_0: the worker ended: the model called process.exit(${fault})`, "OK 10", "OK 11"]);
    expect(results[1]).toEqual(results[0]);
  });

  it.each([
    [12, "read by the worker"],
    [14, "not yet read by the worker"],
  ])("a main-thread request queued behind a faulting direct one (%i: %s) runs on the restarted worker, as on one thread", async (fault) => {
    const out: string[][] = [];
    for (const s of [one, two]) {
      await warmed(s, async (c) => {
        const dir = join(s.repo.dir, "die", "1");
        const marker = join(dir, fault === 12 ? "started" : "holding");
        // On two threads the warm connection's frontend worker sends this one straight to the instance.
        const faulting = c.grpc(fault);
        await eventually(async () => expect(existsSync(marker)).toBe(true));
        // A stream's request is the main thread's: it goes to the instance's worker while the fault's runs.
        const queued = c.stream(13);
        if (fault === 14) {
          await new Promise((r) => setTimeout(r, 300));
          writeFileSync(join(dir, "go"), "");
        }
        out.push([await faulting, await queued]);
        for (const f of [marker, join(dir, "go")]) rmSync(f, { force: true });
      });
    }
    expect(out[0]).toEqual([`13 model 'die' instance die_0_0: the worker ended: the model called process.exit(${fault})`, "OK 13"]);
    expect(out[1]).toEqual(out[0]);
  });

  it("a port given to a frontend worker while the instance's thread is held is not used before the worker serves it: requests sent meanwhile run on the restarted worker", async () => {
    const out: string[][] = [];
    for (const s of [one, two]) {
      await warmed(s, async (c) => {
        const dir = join(s.repo.dir, "die", "1");
        // A restart: no frontend worker holds a port to the fresh worker; HTTP's gets one again.
        expect(await c.http(1)).toMatch(/^500 /);
        for (let i = 0; i < 6; i++) await c.http(7);
        const faulting = c.http(14);
        await eventually(async () => expect(existsSync(join(dir, "holding"))).toBe(true));
        // gRPC's frontend worker asks for a port (10 is the main thread's meanwhile); the held worker cannot read it yet.
        const first = c.grpc(10);
        await new Promise((r) => setTimeout(r, 300));
        const second = c.grpc(11);
        await new Promise((r) => setTimeout(r, 300));
        writeFileSync(join(dir, "go"), "");
        out.push([same(s, await faulting), await first, await second]);
        for (const f of ["holding", "go"]) rmSync(join(dir, f));
      });
    }
    expect(out[0]).toEqual(['500 {"error":"model \'die\' instance die_0_0: the worker ended: the model called process.exit(14)"}', "OK 10", "OK 11"]);
    expect(out[1]).toEqual(out[0]);
  });

  it("answers the fault while the main thread's event loop is held", async () => {
    await warmed(two, async (c) => {
      // Answered before the main thread is released: the instance's worker told the frontend worker itself.
      let answer = "";
      await whileMainHeld(two.server.url, two.hold, async () => {
        answer = same(two, await c.http(2)).split("\\n")[0]!;
      });
      expect(answer).toBe('500 {"error":"model \'die\' instance die_0_0: the worker ended: uncaught exception: Error: boom from a timer');
    });
  });
});

/** spin: Y = A; A = 1 never returns (it writes `marker`, then spins in its worker). */
const spin = (marker: string) => `
import { writeFileSync } from "node:fs";
export default class Spin {
  execute(requests) {
    const a = requests[0].input("A").data[0];
    if (a === 1) {
      writeFileSync(${JSON.stringify(marker)}, "spinning");
      for (;;) {}
    }
    return requests.map((r) => ({ outputs: [{ name: "Y", datatype: "INT32", shape: [1], data: [a] }] }));
  }
}
`;

describe("an unload while a request a frontend worker sent directly never returns", () => {
  let one: Started;
  let two: Started;
  onOneAndTwoThreads(
    async (threads, name) => {
      const s = await start(threads, name, ["--exit-timeout-secs=1", "--model-control-mode=explicit", "--load-model=die"]);
      s.repo.add("die/1/model.js", spin(join(s.repo.dir, "spinning")));
      expect((await fetch(`${s.server.url}/v2/repository/models/die/load`, { method: "POST", body: "{}" })).status).toBe(200);
      return s;
    },
    (a, b) => {
      [one, two] = [a, b];
    },
  );

  it("waits --exit-timeout-secs for it, then ends the worker: the request fails with one thread's 503", async () => {
    const out: string[] = [];
    for (const s of [one, two]) {
      await warmed(s, async (c) => {
        const running = c.http(1);
        // The unload begins once the request runs (the warm connection's frontend worker sent it to the instance).
        await eventually(async () => expect(existsSync(join(s.repo.dir, "spinning"))).toBe(true));
        const unload = await fetch(`${s.server.url}/v2/repository/models/die/unload`, { method: "POST", body: "{}" });
        out.push(`${unload.status} ${await running}`);
        expect(s.server.log()).toContain("model 'die' version 1: executions still running 1 s after the unload began; aborting them");
      });
    }
    expect(out[0]).toBe('200 503 {"error":"model \'die\' version 1 was unloaded while this request ran (aborted after 1 s)"}');
    expect(out[1]).toBe(out[0]);
  });
});
