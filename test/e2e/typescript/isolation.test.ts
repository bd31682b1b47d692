/**
 * Issue #29 (findings 2, 3, 4 and the unload that never ended), through the binary: a
 * TypeScript model's faults stay its own. Worker-thread instances (the default) that
 * leave an unhandled rejection, throw from a timer or call process.exit fail only the
 * requests they held, with the model and instance named, are logged and restarted; an
 * instance whose restart fails leaves its model UNAVAILABLE with the reason. Main-thread
 * models' stray errors are logged against the model and the server keeps serving. A model
 * that replaces JSON.stringify and Array.prototype.map changes nothing outside its worker.
 * An execute that never returns is aborted --exit-timeout-secs after an unload began.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServerProcess, inferJson, SIMPLE_TWOS_AND_THREES, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;
const markers = mkdtempSync(join(tmpdir(), "nereid-ts-isolation-"));

const IO = `input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]\n`;
const MAIN = `parameters { key: "execution_thread" value: { string_value: "main" } }\n`;
/** OUT = IN * 10; `fault` runs after the answer is ready, when IN is 1. */
const model = (fault: string, extra = "") => `
${extra}
export default class M {
  execute(requests) {
    const v = requests[0].input("IN").data[0];
    if (v === 1) { ${fault} }
    return requests.map((r) => ({ outputs: [{ name: "OUT", datatype: "INT32", shape: [1], data: [r.input("IN").data[0] * 10] }] }));
  }
}
`;
const REJECT = `Promise.reject(new Error("stray rejection"));`;
const TIMER = `setTimeout(() => { throw new Error("thrown from a timer"); }, 0);`;
/** Replaces the globals the server's encoders use, at import and in execute. */
const HIJACK = `JSON.stringify = () => '{"hijacked":true}'; Array.prototype.map = function () { return ["hijacked"]; };`;

beforeAll(async () => {
  repo = makeRepository(["simple"]);
  const add = (name: string, code: string, config = "") => {
    repo.add(`${name}/config.pbtxt`, `backend: "typescript"\n${IO}${config}`);
    repo.add(`${name}/1/model.js`, code);
  };
  add("ts_reject", model(REJECT));
  add("ts_timer", model(TIMER));
  add("ts_exit", model(`process.exit(3);`));
  // Post to the main thread themselves, past the worker's protocol (#30 item 6): not a batch, and a batch of an unknown message.
  add("ts_post_junk", model(`postMessage("junk");`));
  add("ts_post_unknown", model(`postMessage([{ t: "nonsense" }]);`));
  add("ts_main_reject", model(REJECT), MAIN);
  add("ts_main_timer", model(TIMER), MAIN);
  // The module's top level and its execute replace globals (execute does it before answering, with its own map already taken).
  // Replaces them at import and again in each execute; answers with a plain loop.
  add(
    "ts_hijack",
    `${HIJACK}
export default class M {
  execute(requests) {
    ${HIJACK}
    const out = [];
    for (let i = 0; i < requests.length; i++) out.push({ outputs: [{ name: "OUT", datatype: "INT32", shape: [1], data: [requests[i].input("IN").data[0] * 10] }] });
    return out;
  }
}
`,
  );
  // Its first initialize leaves a marker; a second (the restart) refuses.
  add(
    "ts_no_restart",
    `import { existsSync, writeFileSync } from "node:fs";
export default class M {
  initialize() {
    const marker = ${JSON.stringify(join(markers, "initialized"))};
    if (existsSync(marker)) throw new Error("second initialize refused");
    writeFileSync(marker, "");
  }
  execute() { process.exit(5); }
}
`,
  );
  add("ts_always_exit", `export default class M { execute() { process.exit(1); } }\n`);
  add("ts_spin", `export default class M { initialize(a) { this.log = a.logger; } execute() { this.log.info("executing"); for (;;) {} } }\n`);
  add(
    "ts_main_hang",
    `export default class M { initialize(a) { this.log = a.logger; } execute() { this.log.info("executing"); return new Promise(() => {}); } }\n`,
    MAIN,
  );
  // Decoupled, in workers: ts_drip answers every 2 ms until it sees the cancel (and logs it);
  // ts_stream_exit answers once, then calls process.exit.
  const decoupled = `model_transaction_policy { decoupled: true }\n`;
  add(
    "ts_drip",
    `export default class M {
  initialize(a) { this.log = a.logger; }
  execute(requests) {
    for (const r of requests) {
      const sender = r.getResponseSender();
      let i = 0;
      const tick = () => {
        if (r.isCancelled()) { this.log.info("cancel seen after " + i + " response(s)"); return sender.send(undefined, { final: true }); }
        sender.send({ outputs: [{ name: "OUT", datatype: "INT32", shape: [1], data: [i++] }] });
        setTimeout(tick, 2);
      };
      tick();
    }
  }
}
`,
    decoupled,
  );
  add(
    "ts_stream_exit",
    `export default class M {
  execute(requests) {
    const sender = requests[0].getResponseSender();
    sender.send({ outputs: [{ name: "OUT", datatype: "INT32", shape: [1], data: [1] }] });
    setTimeout(() => process.exit(2), 10);
  }
}
`,
    decoupled,
  );
  server = await startServerProcess([
    `--model-repository=${repo.dir}`,
    "--model-control-mode=explicit",
    "--load-model=*",
    "--exit-timeout-secs=1",
    "--allow-grpc=false",
  ]);
});

afterAll(async () => {
  await server?.stop();
  repo?.remove();
  rmSync(markers, { recursive: true, force: true });
});

const call = (m: string, v: number) => inferJson(server, m, { inputs: [{ name: "IN", datatype: "INT32", shape: [1], data: [v] }] });
const answer = (model: string, v: number) => ({
  model_name: model,
  model_version: "1",
  outputs: [{ name: "OUT", datatype: "INT32", shape: [1], data: [v * 10] }],
});
const index = async (): Promise<{ name: string; state: string; reason?: string }[]> =>
  (await (await fetch(`${server.url}/v2/repository/index`, { method: "POST", body: "{}" })).json()) as any;

/** Waits (bounded) until the server log contains `text`. */
async function logged(text: string): Promise<string> {
  for (let i = 0; i < 200 && !server.log().includes(text); i++) await new Promise((r) => setTimeout(r, 25));
  return server.log();
}

/** `simple` still answers exactly, in JSON the server's own encoder wrote. */
async function simpleAnswers(): Promise<void> {
  const r = await inferJson(server, "simple", SIMPLE_TWOS_AND_THREES);
  expect(r.status).toBe(200);
  expect(r.json.model_name).toBe("simple");
  expect(r.json.outputs.map((o: { name: string; data: number[] }) => [o.name, o.data])).toEqual([
    ["OUTPUT0", Array(16).fill(5)],
    ["OUTPUT1", Array(16).fill(-1)],
  ]);
}

describe("worker-thread instances (the default): a fault ends the worker, which is restarted", () => {
  it.each([
    ["ts_reject", "unhandled rejection: Error: stray rejection"],
    ["ts_timer", "uncaught exception: Error: thrown from a timer"],
  ])("%s: the answer given stands, the fault is logged with model and instance, and the restarted worker answers", async (name, fault) => {
    const first = await call(name, 1);
    expect([first.status, first.json]).toEqual([200, answer(name, 1)]);
    const log = await logged(`model '${name}' instance ${name}_0: worker restarted`);
    expect(log).toContain(`model '${name}' instance ${name}_0: the worker ended: ${fault}`);
    expect(log).toContain("; 0 execution(s) failed; restarting it");
    const next = await call(name, 2);
    expect([next.status, next.json]).toEqual([200, answer(name, 2)]);
    await simpleAnswers();
  });

  it("process.exit in execute fails that request with INTERNAL naming model and instance; the next is answered", async () => {
    const dead = await call("ts_exit", 1);
    expect([dead.status, dead.json]).toEqual([500, { error: "model 'ts_exit' instance ts_exit_0: the worker ended: the model called process.exit(3)" }]);
    // Every later request is answered (before #29 one in two hung, then all).
    const rs = await Promise.all([2, 3, 4, 5].map((v) => call("ts_exit", v)));
    expect(rs.map((r) => [r.status, r.json])).toEqual([2, 3, 4, 5].map((v) => [200, answer("ts_exit", v)]));
    expect(await logged("model 'ts_exit' instance ts_exit_0: worker restarted")).toContain(
      "model 'ts_exit' instance ts_exit_0: the worker ended: the model called process.exit(3); 1 execution(s) failed; restarting it",
    );
    expect((await index()).find((e) => e.name === "ts_exit")!.state).toBe("READY");
  });

  it.each([
    ["ts_post_junk", "not a batch of messages"],
    ["ts_post_unknown", "message type 'nonsense'"],
  ])("%s: a message the model posts past the protocol ends its worker: the request it held fails with INTERNAL, the next is answered", async (name, why) => {
    const who = `model '${name}' instance ${name}_0`;
    const dead = await call(name, 1);
    expect([dead.status, dead.json]).toEqual([500, { error: `${who}: the worker sent a message the server cannot handle (${why})` }]);
    expect(await logged(`${who}: worker restarted`)).toContain(
      `${who}: the worker sent a message the server cannot handle (${why}); 1 execution(s) failed; restarting it`,
    );
    const next = await call(name, 2);
    expect([next.status, next.json]).toEqual([200, answer(name, 2)]);
    await simpleAnswers();
  });

  it("a restart whose initialize fails leaves the model UNAVAILABLE with the reason", async () => {
    const dead = await call("ts_no_restart", 1);
    expect([dead.status, dead.json]).toEqual([
      500,
      { error: "model 'ts_no_restart' instance ts_no_restart_0: the worker ended: the model called process.exit(5)" },
    ]);
    let entry: { state: string; reason?: string } | undefined;
    for (let i = 0; i < 200 && entry?.state !== "UNAVAILABLE"; i++) {
      await new Promise((r) => setTimeout(r, 25));
      entry = (await index()).find((e) => e.name === "ts_no_restart");
    }
    expect(entry!.state).toBe("UNAVAILABLE");
    expect(entry!.reason).toMatch(
      /^model 'ts_no_restart' instance ts_no_restart_0: the worker ended: the model called process\.exit\(5\), and its restart failed: Error: second initialize refused\n\s+at /,
    );
    const after = await call("ts_no_restart", 2);
    expect(after.status).toBe(503);
    expect(after.json.error).toBe(`Request for unknown model: 'ts_no_restart' has no available versions: ${entry!.reason}`);
    await simpleAnswers();
  });

  it("a worker that ends on every execute is restarted three times, then the model is UNAVAILABLE", async () => {
    const who = "model 'ts_always_exit' instance ts_always_exit_0";
    for (let i = 1; i <= 4; i++) {
      const r = await call("ts_always_exit", i);
      expect([r.status, r.json]).toEqual([500, { error: `${who}: the worker ended: the model called process.exit(1)` }]);
    }
    const reason = `${who}: the worker ended 4 times in a row without completing an execute (last: ended: the model called process.exit(1))`;
    expect(await logged(`model 'ts_always_exit' version 1 is UNAVAILABLE: ${reason}`)).toContain(
      `${who}: the worker ended: the model called process.exit(1); 1 execution(s) failed; restarting it`,
    );
    const entry = (await index()).find((e) => e.name === "ts_always_exit")!;
    expect([entry.state, entry.reason]).toEqual(["UNAVAILABLE", reason]);
    const after = await call("ts_always_exit", 5);
    expect([after.status, after.json]).toEqual([503, { error: `Request for unknown model: 'ts_always_exit' has no available versions: ${reason}` }]);
  });

  it("a model replacing JSON.stringify and Array.prototype.map changes only its own worker", async () => {
    for (const v of [1, 2]) {
      const own = await call("ts_hijack", v);
      expect([own.status, own.json]).toEqual([200, answer("ts_hijack", v)]);
    }
    await simpleAnswers();
    const other = await call("ts_reject", 3);
    expect([other.status, other.json]).toEqual([200, answer("ts_reject", 3)]);
  });
});

describe("main-thread models (execution_thread main): stray errors are logged, the server keeps serving", () => {
  it.each([
    ["ts_main_reject", "unhandled rejection", "Error: stray rejection"],
    ["ts_main_timer", "uncaught exception", "Error: thrown from a timer"],
  ])("%s", async (name, kind, fault) => {
    const first = await call(name, 1);
    expect([first.status, first.json]).toEqual([200, answer(name, 1)]);
    expect(await logged(`model '${name}': ${kind} (the server keeps serving): ${fault}`)).toContain(
      `model '${name}': ${kind} (the server keeps serving): ${fault}`,
    );
    const next = await call(name, 2);
    expect([next.status, next.json]).toEqual([200, answer(name, 2)]);
    await simpleAnswers();
  });
});

describe("an execute that never returns", () => {
  it.each(["ts_spin", "ts_main_hang"])("%s: an unload aborts it after --exit-timeout-secs, the request fails, the unload completes", async (name) => {
    const running = call(name, 7);
    // The model logs as its execute begins.
    expect(await logged(`model '${name}': executing`)).toContain(`model '${name}': executing`);
    const unload = await fetch(`${server.url}/v2/repository/models/${name}/unload`, { method: "POST", body: "{}" });
    expect(unload.status).toBe(200);
    const r = await running;
    expect([r.status, r.json]).toEqual([503, { error: `model '${name}' version 1 was unloaded while this request ran (aborted after 1 s)` }]);
    const entry = (await index()).find((e) => e.name === name)!;
    expect([entry.state, entry.reason]).toEqual(["UNAVAILABLE", "unloaded"]);
    expect(server.log()).toContain(`model '${name}' version 1: executions still running 1 s after the unload began; aborting them`);
    await simpleAnswers();
  });
});

describe("decoupled models in worker threads", () => {
  const stream = (model: string, signal?: AbortSignal) =>
    fetch(`${server.url}/v2/models/${model}/generate_stream`, { method: "POST", body: JSON.stringify({ IN: 1 }), signal });

  it("a client gone mid-stream: the worker's request sees the cancel after its execute returned", async () => {
    const controller = new AbortController();
    const res = await stream("ts_drip", controller.signal);
    const first = new TextDecoder().decode((await res.body!.getReader().read()).value);
    expect(first.startsWith('data: {"model_name":"ts_drip","model_version":"1","OUT":0}')).toBe(true);
    controller.abort();
    expect(await logged("model 'ts_drip': cancel seen after")).toMatch(/model 'ts_drip': cancel seen after \d+ response\(s\)/);
  });

  it("a worker that ends mid-stream closes the stream with an error event naming model and instance", async () => {
    const text = await (await stream("ts_stream_exit")).text();
    expect(text).toBe(
      'data: {"model_name":"ts_stream_exit","model_version":"1","OUT":1}\n\n' +
        'data: {"error":"model \'ts_stream_exit\' instance ts_stream_exit_0: the worker ended: the model called process.exit(2)"}\n\n',
    );
    const again = await (await stream("ts_stream_exit")).text();
    expect(again.startsWith('data: {"model_name":"ts_stream_exit","model_version":"1","OUT":1}')).toBe(true);
  });
});
