/**
 * --model-load-thread-count and --model-load-retry-count through the server binary
 * (#17, L-04): TypeScript models whose initialize logs its start and end to a shared file
 * and waits, so the order of the lines shows whether loads overlapped; and a model whose
 * first initialize fails, loaded on the retry.
 */
import { afterAll, describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";

const dir = mkdtempSync(join(tmpdir(), "nereid-load-threads-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** initialize appends "start <model>" and, 300 ms later, "end <model>" to the file its parameter names. */
const SLOW = `
import { appendFileSync } from "node:fs";
export default class Slow {
  async initialize(args) {
    appendFileSync(args.parameters.log, "start " + args.modelName + "\\n");
    await new Promise((r) => setTimeout(r, 300));
    appendFileSync(args.parameters.log, "end " + args.modelName + "\\n");
  }
  execute(requests) { return requests.map((r) => ({ outputs: [{ name: "Y", datatype: "INT32", shape: [1], data: r.input("X").data }] })); }
}
`;

/** initialize fails while the file its parameter names does not exist yet, creating it. */
const FLAKY = `
import { existsSync, writeFileSync } from "node:fs";
export default class Flaky {
  initialize(args) {
    if (!existsSync(args.parameters.flag)) { writeFileSync(args.parameters.flag, "tried"); throw new Error("first try fails"); }
  }
  execute(requests) { return requests.map((r) => ({ outputs: [{ name: "Y", datatype: "INT32", shape: [1], data: r.input("X").data }] })); }
}
`;

const config = (name: string, key: string, value: string) =>
  `name: "${name}"\nbackend: "typescript"\nmax_batch_size: 0\ninput [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] } ]\nparameters { key: "${key}" value: { string_value: "${value}" } }\n`;

function slowRepository(log: string) {
  const repo = makeRepository([]);
  for (const m of ["slow_a", "slow_b", "slow_c"]) {
    repo.add(`${m}/config.pbtxt`, config(m, "log", log));
    repo.add(`${m}/1/model.js`, SLOW);
  }
  return repo;
}

describe("--model-load-thread-count", () => {
  it("1: each load starts after the previous one ended", async () => {
    const log = join(dir, "one.txt");
    const repo = slowRepository(log);
    const server = await startServerProcess([`--model-repository=${repo.dir}`, "--model-load-thread-count=1", "--allow-grpc=false", "--allow-metrics=false"]);
    await server.stop();
    repo.remove();
    const lines = readFileSync(log, "utf8").trim().split("\n");
    expect(lines).toHaveLength(6);
    for (let i = 0; i < 6; i += 2)
      expect([lines[i]!.split(" ")[0], lines[i + 1]!.split(" ")[0], lines[i]!.split(" ")[1]]).toEqual(["start", "end", lines[i + 1]!.split(" ")[1]]);
  });

  it("3 (and the default 4): the three loads run at once", async () => {
    const log = join(dir, "three.txt");
    const repo = slowRepository(log);
    const server = await startServerProcess([`--model-repository=${repo.dir}`, "--model-load-thread-count=3", "--allow-grpc=false", "--allow-metrics=false"]);
    await server.stop();
    repo.remove();
    const lines = readFileSync(log, "utf8").trim().split("\n");
    expect(lines.slice(0, 3).map((l) => l.split(" ")[0])).toEqual(["start", "start", "start"]);
  });
});

describe("--model-load-retry-count", () => {
  it("1: a model whose first load fails is loaded on the retry; 0: it stays UNAVAILABLE", async () => {
    for (const [retries, state] of [
      [1, "READY"],
      [0, "UNAVAILABLE"],
    ] as const) {
      const flag = join(dir, `flaky-${retries}`);
      const repo = makeRepository([]);
      repo.add("flaky/config.pbtxt", config("flaky", "flag", flag));
      repo.add("flaky/1/model.js", FLAKY);
      const server = await startServerProcess([
        `--model-repository=${repo.dir}`,
        `--model-load-retry-count=${retries}`,
        "--exit-on-error=false",
        "--allow-grpc=false",
        "--allow-metrics=false",
      ]);
      try {
        const index = (await (await fetch(`${server.url}/v2/repository/index`, { method: "POST" })).json()) as { name: string; state: string }[];
        expect(index.find((m) => m.name === "flaky")?.state).toBe(state);
        if (retries === 1) expect(server.log()).toMatch(/retrying the load of 'flaky' version 1 \(1 of 1\) after: .*first try fails/);
      } finally {
        await server.stop();
        repo.remove();
      }
    }
  });
});
