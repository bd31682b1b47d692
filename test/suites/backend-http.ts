/**
 * The shared suite of a native backend end to end, over HTTP: what a server owes clients
 * about a backend whose library it may or may not find. It runs against the OpenVINO and
 * TensorRT backends over their test doubles (e2e/http/openvino.test.ts,
 * e2e/http/tensorrt.test.ts); the Backend interface itself is the backend suite's
 * (./backend.ts).
 *
 * The setup's repository holds the example `simple` model and the model under test:
 * INPUT0 → OUTPUT0, FP32 of shape [-1, 4] (max_batch_size 8), OUTPUT0 = compute(INPUT0)
 * element by element. The suite starts one server with the backend's library and one
 * without it, both with --exit-on-error=false, and registers the setup's own tests beside
 * its own on each.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { inferJson, SIMPLE_TWOS_AND_THREES, startServerProcess, type ServerProcess } from "../helpers/server-process.ts";

/** How to start one of the two servers. */
export interface ServerStart {
  args: string[];
  env?: Record<string, string>;
  cleanEnv?: boolean;
}

export interface BackendOverHttp {
  /** The model under test. */
  model: string;
  compute(x: number): number;
  /** Writes the repository and builds the libraries (the suite's beforeAll); returns where the repository is. */
  prepare(): string;
  /** Removes what prepare() made (the suite's afterAll). */
  cleanup(): void;
  /** How to start the server with the library, and the one without it (called after prepare()). */
  withLibrary(): ServerStart;
  withoutLibrary(): ServerStart;
  /** The model's reason without the library: in the log (which names the path) and, as given, in the client's error. */
  missing: { log: RegExp; error: string };
  /** More tests on the server with the library, registered in its describe. */
  moreWithLibrary?(server: () => ServerProcess): void;
  /** More tests on the server without the library. */
  moreWithoutLibrary?(server: () => ServerProcess): void;
}

/** Starts a server over `repo` as `how` says for the describe it is called in; the getter returns it. */
function serverFor(repo: () => string, how: () => ServerStart): () => ServerProcess {
  let server: ServerProcess;
  beforeAll(async () => {
    const start = how();
    server = await startServerProcess([`--model-repository=${repo()}`, "--exit-on-error=false", ...start.args], {
      ...(start.env ? { env: start.env } : {}),
      ...(start.cleanEnv ? { cleanEnv: true } : {}),
    });
  });
  afterAll(async () => {
    await server?.stop();
  });
  return () => server;
}

const servesSimple = async (server: ServerProcess) => {
  const { status, json } = await inferJson(server, "simple", SIMPLE_TWOS_AND_THREES);
  expect(status).toBe(200);
  expect(json.outputs[0].data).toEqual(Array(16).fill(5));
};

export function backendOverHttpSuite(label: string, setup: BackendOverHttp): void {
  const { model } = setup;
  const f32 = (values: number[]) => Array.from(new Float32Array(values));
  describe(`backend over HTTP: ${label}`, () => {
    let repo = "";
    beforeAll(() => {
      repo = setup.prepare();
    });
    afterAll(() => setup.cleanup());

    describe("with the library", () => {
      const server = serverFor(
        () => repo,
        () => setup.withLibrary(),
      );

      it(`loads ${model} and describes it`, async () => {
        expect(server().log()).toMatch(new RegExp(`successfully loaded '${model}' version 1`));
        expect((await fetch(`${server().url}/v2/models/${model}/ready`)).status).toBe(200);
        const res = await fetch(`${server().url}/v2/models/${model}`);
        expect(res.status).toBe(200);
        const meta = (await res.json()) as any;
        expect(meta.inputs).toEqual([{ name: "INPUT0", datatype: "FP32", shape: [-1, 4] }]);
        expect(meta.outputs).toEqual([{ name: "OUTPUT0", datatype: "FP32", shape: [-1, 4] }]);
      });

      it("answers inferences with exact values at batch 1 and 3, and counts them", async () => {
        const one = await inferJson(server(), model, { inputs: [{ name: "INPUT0", shape: [1, 4], datatype: "FP32", data: [1, 2, 3, 4] }] });
        expect(one.status).toBe(200);
        expect(one.json.outputs).toEqual([{ name: "OUTPUT0", datatype: "FP32", shape: [1, 4], data: f32([1, 2, 3, 4].map(setup.compute)) }]);
        const input = [0, 1.5, -2, 1000, 0.25, -0.5, 3, 4, 1e-3, -7.75, 65504, 0.1];
        const three = await inferJson(server(), model, { inputs: [{ name: "INPUT0", shape: [3, 4], datatype: "FP32", data: input }] });
        expect(three.status).toBe(200);
        expect(three.json.outputs[0].shape).toEqual([3, 4]);
        expect(three.json.outputs[0].data).toEqual(f32(f32(input).map(setup.compute)));
        const stats = (await (await fetch(`${server().url}/v2/models/${model}/stats`)).json()) as any;
        expect(stats.model_stats[0].inference_count).toBe(4);
      });

      it("refuses a wrong shape before the backend, and keeps serving both models", async () => {
        const wrong = await inferJson(server(), model, { inputs: [{ name: "INPUT0", shape: [1, 3], datatype: "FP32", data: [1, 2, 3] }] });
        expect(wrong.status).toBe(400);
        expect(wrong.json.error).toMatch(new RegExp(`^unexpected shape for input 'INPUT0' for model '${model}'\\. Expected \\[-1,4\\], got \\[1,3\\]`));
        await servesSimple(server());
        const again = await inferJson(server(), model, { inputs: [{ name: "INPUT0", shape: [1, 4], datatype: "FP32", data: [1, 2, 3, 4] }] });
        expect(again.json.outputs[0].data).toEqual(f32([1, 2, 3, 4].map(setup.compute)));
      });

      setup.moreWithLibrary?.(server);
    });

    describe("without the library", () => {
      const server = serverFor(
        () => repo,
        () => setup.withoutLibrary(),
      );

      it(`keeps ${model} UNAVAILABLE with the reason on ready, metadata and the index`, async () => {
        expect(server().log()).toMatch(setup.missing.log);
        for (const path of [`/v2/models/${model}/ready`, `/v2/models/${model}`]) {
          const res = await fetch(server().url + path);
          expect(res.status).toBe(503);
          const error = ((await res.json()) as { error: string }).error;
          expect(error).toMatch(new RegExp(`^Request for unknown model: '${model}'`));
          expect(error).toContain(setup.missing.error);
        }
        const index = await fetch(`${server().url}/v2/repository/index`, { method: "POST", body: "{}" });
        const entry = ((await index.json()) as { name: string; state: string; reason: string }[]).find((m) => m.name === model);
        expect(entry?.state).toBe("UNAVAILABLE");
        expect(entry?.reason).toContain(setup.missing.error);
      });

      it("still serves simple", async () => {
        await servesSimple(server());
      });

      setup.moreWithoutLibrary?.(server);
    });
  });
}
