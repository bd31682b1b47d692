/**
 * HTTP/1.1 pipelining through the server binary: several requests written at once on one
 * connection (P-03, P-04, P-05, P-06). Bun closes a connection on which a request arrives while
 * the answer before it is still pending (docs/compatibility.md), so through the frontend
 * workers, whose answers come from another thread, a pipelining client can get fewer
 * answers than it asked for. What must hold everywhere: every answer that does come is
 * whole, exact and in order, a connection that answers fewer closes (it does not hang),
 * and the server keeps serving. With one HTTP thread, requests answered at once
 * (readiness, metadata) are all answered.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { BODY, MIXED, expectAnswer, pipeline, type Kind } from "../../helpers/pipelining.ts";

const repo = makeRepository(["simple"]);
const servers: ServerProcess[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  repo.remove();
});

async function inferOnce(server: ServerProcess): Promise<void> {
  const r = await fetch(`${server.url}/v2/models/simple/infer`, { method: "POST", body: BODY, headers: { "content-type": "application/json" } });
  expectAnswer("infer", r.status, await r.text());
}

describe.each([
  ["the default frontend workers", []],
  ["one HTTP thread", ["--http-thread-count=1"]],
  ["4 HTTP workers", ["--http-thread-count=4"]],
])("pipelined requests with %s (P-03, P-04, P-05, P-06)", (_name, args) => {
  let server: ServerProcess;
  beforeAll(async () => {
    server = await startServerProcess([`--model-repository=${repo.dir}`, ...args]);
    servers.push(server);
  });

  it("every answer that comes is whole, exact and in order; fewer answers means the connection closed; the server keeps serving", async () => {
    for (let round = 0; round < 5; round++) {
      const { answers, rest, closed } = await pipeline(server.port, MIXED);
      expect(answers.length).toBeLessThanOrEqual(MIXED.length);
      answers.forEach((a, i) => expectAnswer(MIXED[i]!, a.status, a.body));
      // No answer cut part way: fewer answers means the close came between two whole ones.
      if (answers.length < MIXED.length) expect(rest).toBe(0);
      else expect(closed).toBe(false);
      await inferOnce(server);
    }
  });
});

describe("one HTTP thread answers pipelined requests it answers at once (P-03, P-04, P-05)", () => {
  it("readiness, server and model metadata: all answered in order", async () => {
    const server = await startServerProcess([`--model-repository=${repo.dir}`, "--http-thread-count=1"]);
    servers.push(server);
    const kinds: Kind[] = ["ready", "server", "metadata", "ready", "metadata", "server"];
    const { answers, closed } = await pipeline(server.port, kinds);
    expect(closed).toBe(false);
    expect(answers.length).toBe(kinds.length);
    answers.forEach((a, i) => expectAnswer(kinds[i]!, a.status, a.body));
  });
});
