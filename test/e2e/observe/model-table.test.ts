/**
 * The model table Triton logs once start-up loading ends, and a "loading:" line per
 * version, from the compiled binary (L-08, #18).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";

let repo: ReturnType<typeof makeRepository>;

beforeAll(() => {
  repo = makeRepository(["simple", "simple_identity"]);
  // A valid config whose version folder has no model file: UNAVAILABLE with the reason.
  repo.add(
    "nofile/config.pbtxt",
    'name: "nofile"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 0\ninput [ { name: "X" data_type: TYPE_FP32 dims: [ 1 ] } ]\noutput [ { name: "Y" data_type: TYPE_FP32 dims: [ 1 ] } ]\n',
  );
  repo.add("nofile/1/README", "no model.onnx here");
});

afterAll(() => repo?.remove());

describe("start-up log", () => {
  it("prints a loading line per version and the Model/Version/Status table with each reason", async () => {
    const server = await startServerProcess([`--model-repository=${repo.dir}`, "--exit-on-error=false", "--allow-grpc=false", "--allow-metrics=false"]);
    try {
      const log = server.log();
      for (const m of ["nofile", "simple", "simple_identity"]) expect(log).toMatch(new RegExp(`\\] loading: ${m}:1\\n`));
      // The table shows the reason as clients see it (no server paths, #29); the log line before it has the whole path.
      expect(log).toContain(`failed to load 'nofile' version 1: unable to find '${repo.dir}/nofile/1/model.onnx' for model 'nofile'`);
      const status = "UNAVAILABLE: unable to find 'nofile/1/model.onnx' for model 'nofile'";
      const w = status.length;
      const table = [
        `+-----------------+---------+-${"-".repeat(w)}-+`,
        `| Model           | Version | ${"Status".padEnd(w)} |`,
        `+-----------------+---------+-${"-".repeat(w)}-+`,
        `| nofile          | 1       | ${status} |`,
        `| simple          | 1       | ${"READY".padEnd(w)} |`,
        `| simple_identity | 1       | ${"READY".padEnd(w)} |`,
        `+-----------------+---------+-${"-".repeat(w)}-+`,
      ].join("\n");
      expect(log).toContain(` src/startup/core.ts] \n${table}\n\n`);
      // The table comes once loading has ended: after every load's outcome.
      expect(log.indexOf(table)).toBeGreaterThan(log.lastIndexOf("successfully loaded"));
    } finally {
      await server.stop();
    }
  });

  it("lists only the models explicit mode loaded", async () => {
    const server = await startServerProcess([
      `--model-repository=${repo.dir}`,
      "--model-control-mode=explicit",
      "--load-model=simple",
      "--allow-grpc=false",
      "--allow-metrics=false",
    ]);
    try {
      expect(server.log()).toContain(
        " src/startup/core.ts] \n+--------+---------+--------+\n| Model  | Version | Status |\n+--------+---------+--------+\n| simple | 1       | READY  |\n+--------+---------+--------+\n\n",
      );
      expect(server.log()).not.toMatch(/loading: simple_identity/);
    } finally {
      await server.stop();
    }
  });
});
