/**
 * A broken config.pbtxt and a corrupt model.onnx make those models UNAVAILABLE with
 * their reasons while the others serve (L-02 with --exit-on-error=false, R-08).
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { startServerProcess, runServerToExit, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";

let repo: ReturnType<typeof makeRepository>;

beforeAll(() => {
  repo = makeRepository(["simple"]);
  repo.add(
    "bad_config/config.pbtxt",
    'name: "bad_config"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 8\ninput [ { name: "X" data_type: TYPE_NOPE dims: [ 1 ] } ]\n',
  );
  repo.add("bad_config/1/model.onnx", "not used");
  repo.add(
    "corrupt_onnx/config.pbtxt",
    'name: "corrupt_onnx"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 0\ninput [ { name: "X" data_type: TYPE_FP32 dims: [ 1 ] } ]\noutput [ { name: "Y" data_type: TYPE_FP32 dims: [ 1 ] } ]\n',
  );
  repo.add("corrupt_onnx/1/model.onnx", new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]));
});

afterAll(() => repo?.remove());

describe("with --exit-on-error=false", () => {
  let server: ServerProcess;
  beforeAll(async () => {
    server = await startServerProcess([`--model-repository=${repo.dir}`, "--exit-on-error=false"]);
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("logs each failure with its reason", () => {
    expect(server.log()).toMatch(/failed to load 'bad_config'.*config\.pbtxt.*TYPE_NOPE/);
    expect(server.log()).toMatch(/failed to load 'corrupt_onnx' version 1: .*onnxruntime/);
    expect(server.log()).toMatch(/successfully loaded 'simple' version 1/);
  });

  it("reports the broken models unavailable with reasons on ready and metadata", async () => {
    for (const model of ["bad_config", "corrupt_onnx"]) {
      for (const path of [`/v2/models/${model}/ready`, `/v2/models/${model}`]) {
        const res = await fetch(server.url + path);
        expect(res.status).toBe(503);
        const body = (await res.json()) as { error: string };
        expect(body.error).toMatch(new RegExp(`^Request for unknown model: '${model}'`));
        expect(body.error).toMatch(model === "bad_config" ? /TYPE_NOPE/ : /onnxruntime/);
      }
    }
  });

  it("is live but not ready (strict readiness), and the good model serves", async () => {
    expect((await fetch(server.url + "/v2/health/live")).status).toBe(200);
    expect((await fetch(server.url + "/v2/health/ready")).status).toBe(400);
    const res = await fetch(server.url + "/v2/models/simple/infer", {
      method: "POST",
      body: JSON.stringify({
        inputs: [
          { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: Array(16).fill(2) },
          { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: Array(16).fill(3) },
        ],
      }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).outputs[0].data).toEqual(Array(16).fill(5));
  });
});

describe("process behaviour", () => {
  it("exits 1 when a model fails and --exit-on-error is left at true (L-02)", async () => {
    const { code, output } = await runServerToExit([`--model-repository=${repo.dir}`, "--http-port=0", "--allow-grpc=false", "--allow-metrics=false"]);
    expect(code).toBe(1);
    expect(output).toMatch(/failed to load all models/);
  });

  it("rejects bad flags with exit code 1 and a message (L-07)", async () => {
    const unknown = await runServerToExit(["--model-repository=/tmp", "--no-such-flag=1"]);
    expect(unknown.code).toBe(1);
    expect(unknown.output).toMatch(/unknown option '--no-such-flag'/);
    const badBool = await runServerToExit(["--model-repository=/tmp", "--exit-on-error=maybe"]);
    expect(badBool.code).toBe(1);
    expect(badBool.output).toMatch(/invalid value 'maybe' for --exit-on-error/);
    const missing = await runServerToExit([]);
    expect(missing.code).toBe(1);
    expect(missing.output).toMatch(/--model-repository must be specified/);
  });

  it("--help and --version exit 0", async () => {
    const help = await runServerToExit(["--help"]);
    expect(help.code).toBe(0);
    expect(help.output).toMatch(/--model-repository/);
    const version = await runServerToExit(["--version"]);
    expect(version.code).toBe(0);
    expect(version.output).toMatch(/^nereid \d+\.\d+\.\d+/);
  });
});

describe("a missing ONNX Runtime library", () => {
  it("makes the models unavailable with a message naming the library tried (its path in the log), and the server still answers", async () => {
    const server = await startServerProcess([
      `--model-repository=${repo.dir}`,
      "--exit-on-error=false",
      "--backend-config=onnxruntime,library=/nonexistent/libonnxruntime.so.1",
    ]);
    try {
      // The log line has the path (its newline escaped, #29); a client sees the library's name, not the server's path.
      expect(server.log()).toMatch(
        /failed to load 'simple' version 1: cannot load ONNX Runtime \(libonnxruntime\.so\.1\); tried:\\n\s+\/nonexistent\/libonnxruntime\.so\.1: /,
      );
      const res = await fetch(`${server.url}/v2/models/simple/ready`);
      expect(res.status).toBe(503);
      const error = ((await res.json()) as { error: string }).error;
      expect(error).toMatch(/tried:\n\s+libonnxruntime\.so\.1: /);
      expect(error).not.toContain("/nonexistent");
      expect((await fetch(`${server.url}/v2/health/live`)).status).toBe(200);
    } finally {
      await server.stop();
    }
  });
});
