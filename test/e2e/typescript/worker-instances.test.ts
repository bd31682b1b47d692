/**
 * A CPU-bound TypeScript model with two worker-thread instances serves two requests at
 * once (#19 item 2): each execute logs its start, spins the CPU for 300 ms without
 * yielding, and logs its end. With instance_group count 2 the two starts come before
 * either end; with count 1 the executions follow one another.
 */
import { afterAll, describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";

const dir = mkdtempSync(join(tmpdir(), "nereid-worker-instances-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SPIN = `
import { appendFileSync } from "node:fs";
export default class Spin {
  initialize(args) { this.log = args.parameters.log; this.name = args.instanceName; }
  execute(requests) {
    appendFileSync(this.log, "start\\n");
    const until = Date.now() + 300;
    while (Date.now() < until) {}
    appendFileSync(this.log, "end\\n");
    return requests.map((r) => ({ outputs: [{ name: "Y", datatype: "INT32", shape: [1], data: r.input("X").data }] }));
  }
}
`;

async function run(count: number): Promise<string[]> {
  const log = join(dir, `count-${count}.txt`);
  const repo = makeRepository([]);
  repo.add(
    "spin/config.pbtxt",
    `name: "spin"\nbackend: "typescript"\nmax_batch_size: 0\ninput [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] } ]\n` +
      `instance_group [ { count: ${count} kind: KIND_CPU } ]\n` +
      `parameters { key: "execution_thread" value: { string_value: "worker" } }\nparameters { key: "log" value: { string_value: "${log}" } }\n`,
  );
  repo.add("spin/1/model.js", SPIN);
  const server = await startServerProcess([`--model-repository=${repo.dir}`, "--allow-grpc=false", "--allow-metrics=false"]);
  try {
    const infer = (v: number) =>
      fetch(`${server.url}/v2/models/spin/infer`, {
        method: "POST",
        body: JSON.stringify({ inputs: [{ name: "X", shape: [1], datatype: "INT32", data: [v] }] }),
      });
    const answers = await Promise.all([infer(1), infer(2)]);
    expect(answers.map((a) => a.status)).toEqual([200, 200]);
    expect(await Promise.all(answers.map(async (a) => ((await a.json()) as { outputs: { data: number[] }[] }).outputs[0]!.data[0]))).toEqual([1, 2]);
  } finally {
    await server.stop();
    repo.remove();
  }
  return readFileSync(log, "utf8").trim().split("\n");
}

describe("worker-thread instances of a CPU-bound TypeScript model", () => {
  it("count 2: two requests execute at once", async () => {
    expect(await run(2)).toEqual(["start", "start", "end", "end"]);
  });

  it("count 1: one after the other", async () => {
    expect(await run(1)).toEqual(["start", "end", "start", "end"]);
  });
});
