/**
 * --rate-limit through the server binary (S-19, #17): two TypeScript models whose
 * instances both need the global resource R (count 1) log when each execute starts and
 * ends; with --rate-limit=execution_count the executions never overlap, with off they do.
 * A --rate-limit-resource below what an instance needs keeps the model from loading.
 */
import { afterAll, describe, expect, it } from "vitest";
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";

const dir = mkdtempSync(join(tmpdir(), "nereid-rate-limit-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SLOW = `
import { appendFileSync } from "node:fs";
export default class Slow {
  initialize(args) { this.log = args.parameters.log; this.name = args.modelName; this.ms = Number(args.parameters.ms ?? 200); }
  async execute(requests) {
    appendFileSync(this.log, "start " + this.name + "\\n");
    await new Promise((r) => setTimeout(r, this.ms));
    appendFileSync(this.log, "end " + this.name + "\\n");
    return requests.map((r) => ({ outputs: [{ name: "Y", datatype: "INT32", shape: [1], data: r.input("X").data }] }));
  }
}
`;

function repository(log: string, count = 1) {
  const repo = makeRepository([]);
  for (const m of ["ra", "rb"]) {
    repo.add(
      `${m}/config.pbtxt`,
      `name: "${m}"\nbackend: "typescript"\nmax_batch_size: 0\ninput [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] } ]\n` +
        `instance_group [ { count: 1 kind: KIND_CPU rate_limiter { resources [ { name: "R" global: true count: ${count} } ] priority: 1 } } ]\n` +
        `parameters { key: "log" value: { string_value: "${log}" } }\n`,
    );
    repo.add(`${m}/1/model.js`, SLOW);
  }
  return repo;
}

async function run(mode: "off" | "execution_count", log: string): Promise<string[]> {
  const repo = repository(log);
  const server = await startServerProcess([`--model-repository=${repo.dir}`, `--rate-limit=${mode}`, "--allow-grpc=false", "--allow-metrics=false"]);
  try {
    const infer = (m: string) =>
      fetch(`${server.url}/v2/models/${m}/infer`, {
        method: "POST",
        body: JSON.stringify({ inputs: [{ name: "X", shape: [1], datatype: "INT32", data: [7] }] }),
      });
    const answers = await Promise.all(["ra", "rb", "ra", "rb"].map(infer));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
  } finally {
    await server.stop();
    repo.remove();
  }
  return readFileSync(log, "utf8").trim().split("\n");
}

/** `simple` whose one instance needs the global resource R (count 1), as the TypeScript models' do. */
const LIMITED_SIMPLE =
  `name: "simple"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 8\n` +
  `input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] } ]\n` +
  `output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 16 ] } ]\n` +
  `instance_group [ { count: 1 kind: KIND_CPU rate_limiter { resources [ { name: "R" global: true count: 1 } ] } } ]\n`;

/**
 * An ONNX Runtime model and a TypeScript one share R: `simple`, asked while `ra` executes
 * (800 ms, so that with the limiter off `simple` answers inside it even on a loaded host),
 * answers only after `ra`'s execution ends when the limiter is on; twice. The lines of the
 * log, with the client's "simple answered" among the model's own, and simple's statistics
 * afterwards.
 */
async function across(mode: "off" | "execution_count", log: string, threads: string[]): Promise<{ lines: string[]; stats: unknown; server: string }> {
  const repo = makeRepository(["simple"]);
  repo.add("simple/config.pbtxt", LIMITED_SIMPLE);
  repo.add(
    "ra/config.pbtxt",
    `name: "ra"\nbackend: "typescript"\nmax_batch_size: 0\ninput [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] } ]\n` +
      `instance_group [ { count: 1 kind: KIND_CPU rate_limiter { resources [ { name: "R" global: true count: 1 } ] } } ]\n` +
      `parameters { key: "log" value: { string_value: "${log}" } }\nparameters { key: "ms" value: { string_value: "800" } }\n`,
  );
  repo.add("ra/1/model.js", SLOW);
  const server = await startServerProcess([
    `--model-repository=${repo.dir}`,
    `--rate-limit=${mode}`,
    "--log-verbose=1",
    "--allow-grpc=false",
    "--allow-metrics=false",
    ...threads,
  ]);
  try {
    const data = Array.from({ length: 16 }, (_, i) => i);
    // Twice: the second round needs R back from both models' first turns.
    for (let round = 1; round <= 2; round++) {
      const slow = fetch(`${server.url}/v2/models/ra/infer`, {
        method: "POST",
        body: JSON.stringify({ inputs: [{ name: "X", shape: [1], datatype: "INT32", data: [7] }] }),
      });
      const deadline = Date.now() + 10_000;
      while (!existsSync(log) || readFileSync(log, "utf8").split("start ra").length <= round) {
        if (Date.now() > deadline) throw new Error(`ra never started in round ${round}`);
        await new Promise((r) => setTimeout(r, 5));
      }
      const answer = await fetch(`${server.url}/v2/models/simple/infer`, {
        method: "POST",
        body: JSON.stringify({
          inputs: [
            { name: "INPUT0", shape: [1, 16], datatype: "INT32", data },
            { name: "INPUT1", shape: [1, 16], datatype: "INT32", data },
          ],
        }),
      });
      appendFileSync(log, "simple answered\n");
      const outputs = ((await answer.json()) as { outputs: { name: string; data: number[] }[] }).outputs;
      expect(outputs.map((o) => [o.name, o.data])).toEqual([
        ["OUTPUT0", data.map((x) => 2 * x)],
        ["OUTPUT1", data.map(() => 0)],
      ]);
      expect((await slow).status).toBe(200);
    }
    const stats = (
      (await (await fetch(`${server.url}/v2/models/simple/stats`)).json()) as {
        model_stats: { inference_stats: { success: { count: number } }; inference_count: number; execution_count: number }[];
      }
    ).model_stats[0]!;
    return {
      lines: readFileSync(log, "utf8").trim().split("\n"),
      stats: { success: stats.inference_stats.success.count, inference_count: stats.inference_count, execution_count: stats.execution_count },
      server: server.log(),
    };
  } finally {
    await server.stop();
    repo.remove();
  }
}

describe("--rate-limit across backends and threads (S-19, #30)", () => {
  const STATS = { success: 2, inference_count: 2, execution_count: 2 };
  const LIMITED = ["start ra", "end ra", "simple answered", "start ra", "end ra", "simple answered"];

  it("frontend workers: the ONNX Runtime model is scheduled on the scheduling thread, where the limiter makes it wait for the TypeScript model's execution", async () => {
    const r = await across("execution_count", join(dir, "across-workers.txt"), ["--http-thread-count=2"]);
    expect(r.lines).toEqual(LIMITED);
    expect(r.stats).toEqual(STATS);
    expect(r.server).toMatch(/frontend worker threads run these model versions themselves: \(none\)\n/);
    expect(r.server).toMatch(/frontend worker threads submit these model versions' requests to the scheduling thread: simple:1\n/);
  });

  it("one thread: the main thread's limiter does the same", async () => {
    const r = await across("execution_count", join(dir, "across-one.txt"), ["--http-thread-count=1"]);
    expect(r.lines).toEqual(LIMITED);
    expect(r.stats).toEqual(STATS);
  });

  it("off: the ONNX Runtime model answers while the TypeScript model executes", async () => {
    const r = await across("off", join(dir, "across-off.txt"), ["--http-thread-count=2"]);
    expect(r.lines).toEqual(["start ra", "simple answered", "end ra", "start ra", "simple answered", "end ra"]);
    expect(r.stats).toEqual(STATS);
    expect(r.server).toMatch(/frontend worker threads run these model versions themselves: ra:1, simple:1\n/);
  });
});

describe("--rate-limit", () => {
  it("execution_count: instances sharing a resource of count 1 never execute at once", async () => {
    const lines = await run("execution_count", join(dir, "limited.txt"));
    expect(lines).toHaveLength(8);
    for (let i = 0; i < 8; i += 2) {
      expect(lines[i]!.startsWith("start ")).toBe(true);
      expect(lines[i + 1]).toBe(lines[i]!.replace("start", "end"));
    }
  });

  it("off: the same two models execute at once", async () => {
    const lines = await run("off", join(dir, "free.txt"));
    expect(lines.slice(0, 2).map((l) => l.split(" ")[0])).toEqual(["start", "start"]);
  });

  it("a --rate-limit-resource below an instance's need keeps its model from loading, with Triton's reason", async () => {
    const repo = repository(join(dir, "unused.txt"), 3);
    const server = await startServerProcess([
      `--model-repository=${repo.dir}`,
      "--rate-limit=execution_count",
      "--rate-limit-resource=R:1",
      "--exit-on-error=false",
      "--allow-grpc=false",
      "--allow-metrics=false",
    ]);
    try {
      const index = (await (await fetch(`${server.url}/v2/repository/index`, { method: "POST" })).json()) as { name: string; state: string; reason: string }[];
      expect(index.map((m) => [m.name, m.state])).toEqual([
        ["ra", "UNAVAILABLE"],
        ["rb", "UNAVAILABLE"],
      ]);
      expect(index[0]!.reason).toContain(
        "Resource count for 'R' is limited to 1 which will prevent scheduling of one or more model instances, the minimum required count is 3",
      );
    } finally {
      await server.stop();
      repo.remove();
    }
  });
});
