/**
 * A POST with no body and no Content-Length (what `curl -X POST .../load` sends), over and
 * over, on the HTTP worker threads (#30, P-17, P-18). Each worker relays such a request to
 * the main thread with its empty body; that body used to be one constant, detached by its
 * first transfer, so a worker's second such request could not be posted: the worker ended
 * (DataCloneError under Bun), failing what its connections held, and was started again.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { sendHttp } from "../../fuzz/run.ts";

let server: ServerProcess;
beforeAll(async () => {
  server = await startServerProcess(["--model-repository=model_repository", "--http-thread-count=2", "--model-control-mode=explicit", "--load-model=simple"]);
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

/** One POST on a connection of its own, written by hand: no Content-Length, no body (the fuzz suite's unframed sender). The status and body. */
async function bodilessPost(path: string): Promise<{ status: number; body: string }> {
  const a = await sendHttp(server.url, { method: "POST", path, headers: {}, body: new Uint8Array(0) }, 10_000, "none");
  return { status: a.status, body: a.body.toString() };
}

describe("POSTs without a body on the HTTP worker threads", () => {
  it("are all answered, and no worker ends: the repository index and a model's load, 12 times each", async () => {
    for (let i = 0; i < 12; i++) {
      const index = await bodilessPost("/v2/repository/index");
      expect(index.status).toBe(200);
      expect(index.body).toContain('"name":"simple"');
      const load = await bodilessPost("/v2/repository/models/simple/load");
      expect(load.status).toBe(200);
    }
    expect((await fetch(`${server.url}/v2/health/ready`)).status).toBe(200);
    expect(server.log()).not.toContain("worker thread ended");
    expect(server.log()).not.toContain("DataCloneError");
  }, 60_000);
});
