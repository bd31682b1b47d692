/**
 * Graceful shutdown (reference §5.2) through the server binary: on SIGTERM every
 * request already accepted gets its answer, new inference and live/ready answer 503
 * while the drain runs, and the process exits 0; with the drain cut short by
 * --exit-timeout-secs it exits 1.
 */
import { describe, it, expect, afterEach } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";

let server: ServerProcess | undefined;
let repo: ReturnType<typeof makeRepository> | undefined;

afterEach(async () => {
  await server?.stop("SIGKILL");
  repo?.remove();
});

/** `simple` behind a dynamic batcher that holds requests for `delayUs`. */
async function start(delayUs: number, extra: string[] = []) {
  repo = makeRepository(["simple"]);
  const config = readFileSync(join(repo.dir, "simple", "config.pbtxt"), "utf8").replace('name: "simple"', 'name: "slow"');
  repo.add("slow/config.pbtxt", `${config}\ndynamic_batching { preferred_batch_size: [ 8 ] max_queue_delay_microseconds: ${delayUs} }\n`);
  repo.add("slow/1/model.onnx", readFileSync(join(repo.dir, "simple", "1", "model.onnx")));
  server = await startServerProcess([`--model-repository=${repo.dir}`, ...extra]);
  return server;
}

const body = (base: number) =>
  JSON.stringify({
    inputs: [
      { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: Array.from({ length: 16 }, (_, i) => base + i) },
      { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: Array(16).fill(0) },
    ],
  });

async function infer(s: ServerProcess, model: string, base: number) {
  const res = await fetch(`${s.url}/v2/models/${model}/infer`, { method: "POST", body: body(base) });
  return { status: res.status, json: (await res.json()) as { error?: string; outputs?: { name: string; data: number[] }[] } };
}

describe("graceful shutdown", () => {
  it("answers every accepted request, refuses new work with 503 while draining, and exits 0", async () => {
    const s = await start(1_500_000);
    const accepted = [1, 2, 3].map((b) => infer(s, "slow", b * 100));
    await new Promise((r) => setTimeout(r, 300));
    void s.stop("SIGTERM");
    await new Promise((r) => setTimeout(r, 200));
    const refused = await infer(s, "simple", 0);
    expect(refused.status).toBe(503);
    expect(refused.json.error).toBe("Server is stopping");
    expect((await fetch(`${s.url}/v2/health/live`)).status).toBe(503);
    expect((await fetch(`${s.url}/v2/health/ready`)).status).toBe(503);
    const answers = await Promise.all(accepted);
    answers.forEach((a, i) => {
      expect(a.status).toBe(200);
      expect(a.json.outputs!.find((o) => o.name === "OUTPUT0")!.data).toEqual(Array.from({ length: 16 }, (_, k) => (i + 1) * 100 + k));
    });
    expect(await s.exited).toBe(0);
    expect(s.log()).toContain("Waiting for in-flight requests to complete.");
  });

  it("exits 1 when the drain outlasts --exit-timeout-secs", async () => {
    const s = await start(30_000_000, ["--exit-timeout-secs=1"]);
    const stuck = infer(s, "slow", 0).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 200));
    const t0 = Date.now();
    expect(await s.stop("SIGTERM")).toBe(1);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(s.log()).toContain("Exit timeout expired. Exiting immediately.");
    await stuck;
  });
});
