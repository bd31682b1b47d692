/**
 * --rate-limit through the server binary (S-19, #17): two TypeScript models whose
 * instances both need the global resource R (count 1) log when each execute starts and
 * ends; with --rate-limit=execution_count the executions never overlap, with off they do.
 * A --rate-limit-resource below what an instance needs keeps the model from loading.
 */
import { afterAll, describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";

const dir = mkdtempSync(join(tmpdir(), "nereid-rate-limit-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SLOW = `
import { appendFileSync } from "node:fs";
export default class Slow {
  initialize(args) { this.log = args.parameters.log; this.name = args.modelName; }
  async execute(requests) {
    appendFileSync(this.log, "start " + this.name + "\\n");
    await new Promise((r) => setTimeout(r, 200));
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
