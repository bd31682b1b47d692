/**
 * The shared frontend suite (test/suites/frontend.ts) against the compiled binary
 * (dist/nereid; `bun src/main.ts` when not built) with its default frontend threads (a
 * worker thread per core, at most 8; the main thread under Deno). Node in-process and Deno
 * run the same suite in node-inprocess.test.ts and deno.test.ts, and
 * frontend-thread-counts.test.ts runs it with 1, 2 and 4 threads.
 */
import { expect, beforeAll, afterAll } from "vitest";
import { startServerProcess, serverCommand, type ServerProcess } from "../helpers/server-process.ts";
import { makeRepository } from "../helpers/repo.ts";
import { frontendSuite } from "../suites/frontend.ts";

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;

beforeAll(async () => {
  repo = makeRepository(["simple", "simple_identity"]);
  server = await startServerProcess([`--model-repository=${repo.dir}`, "--model-control-mode=explicit", "--load-model=*", "--allow-client-shm=true"]);
});

afterAll(async () => {
  if (server) expect(await server.stop()).toBe(0);
  repo?.remove();
});

frontendSuite({ binary: "compiled binary", bun: "bun src/main.ts", deno: "deno src/main.ts" }[serverCommand().kind], () => ({
  url: server.url,
  grpcTarget: server.grpcTarget!,
  metricsUrl: server.metricsUrl!,
}));
