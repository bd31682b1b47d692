/**
 * Deno 2, as the product promises: `deno run -A --node-modules-dir=manual src/main.ts`
 * serves the shared frontend suite, the in-process API (check.ts) gives the same answers
 * under Deno, and SIGTERM exits 0. Deno comes from the npm package `deno`; without it
 * these tests fail (they do not skip).
 */
import { checkAnswers } from "./embedded/expected.ts";
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { startServerProcess, ROOT, type ServerProcess } from "../helpers/server-process.ts";
import { makeRepository } from "../helpers/repo.ts";
import { denoBinary, denoRun, DENO_ENV } from "../helpers/deno.ts";
import { frontendSuite } from "../suites/frontend.ts";

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;

beforeAll(async () => {
  repo = makeRepository(["simple", "simple_identity"]);
  server = await startServerProcess([`--model-repository=${repo.dir}`, "--model-control-mode=explicit", "--load-model=*", "--allow-client-shm=true"], {
    command: denoRun("src/main.ts"),
    env: DENO_ENV,
    timeoutMs: 90_000,
  });
});

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

describe("Deno itself", () => {
  it("is Deno 2", async () => {
    const { stdout } = await promisify(execFile)(denoBinary(), ["--version"], { env: { ...process.env, ...DENO_ENV } });
    expect(stdout).toMatch(/^deno 2\.\d+\.\d+/);
  });
});

frontendSuite("Deno", () => ({ url: server.url, grpcTarget: server.grpcTarget!, metricsUrl: server.metricsUrl! }));

describe("Deno running the server", () => {
  it("stops on SIGTERM with exit code 0", async () => {
    expect(await server.stop("SIGTERM")).toBe(0);
    expect(server.log()).toContain("All models are stopped");
  });

  it("runs the in-process API (check.ts) with the same answers", async () => {
    const r = makeRepository(["simple", "simple_identity"]);
    try {
      const [cmd, ...args] = denoRun("test/e2e/embedded/check.ts");
      const { stdout } = await promisify(execFile)(cmd!, [...args, r.dir], { cwd: ROOT, env: { ...process.env, ...DENO_ENV }, timeout: 90_000 });
      expect(JSON.parse(stdout.trim().split("\n").at(-1)!)).toEqual(checkAnswers("deno"));
    } finally {
      r.remove();
    }
  });
});
