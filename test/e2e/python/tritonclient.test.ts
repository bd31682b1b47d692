/**
 * Issue #32: Triton's model.py files, unchanged, answer through Triton's own Python client
 * (tritonclient[http,grpc], pinned in test/helpers/tritonclient.ts) as they do on Triton:
 * add_sub over HTTP and gRPC, BYTES, BLS, a decoupled model over gRPC streaming
 * (start_stream / async_stream_infer), custom metrics on /metrics after requests, and a
 * model's errors as tritonclient shows them. The models are those of python.test.ts
 * (models.ts); the client's side is tritonclient_checks.py, whose JSON this file checks.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { SYSTEM_PYTHON, tritonclientPython } from "../../helpers/tritonclient.ts";
import { pythonModels } from "./models.ts";

const MODELS = ["py_add_sub", "py_echo", "py_repeat", "py_square", "py_bls", "py_metrics"];
const SCRIPT = join(import.meta.dirname, "tritonclient_checks.py");

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;
let python: string;

beforeAll(async () => {
  python = tritonclientPython();
  repo = makeRepository([]);
  for (const [path, text] of Object.entries(pythonModels(SYSTEM_PYTHON))) {
    if (MODELS.includes(path.split("/")[0]!)) repo.add(path, text);
  }
  server = await startServerProcess([`--model-repository=${repo.dir}`], { env: { PATH: "/usr/bin:/bin" } });
}, 900_000);

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

/** Runs one check of tritonclient_checks.py and returns what the client saw. */
function check(name: string): any {
  const out = execFileSync(python, [SCRIPT, name, server.url.replace("http://", ""), server.grpcTarget!, server.metricsUrl!], {
    encoding: "utf8",
    timeout: 120_000,
    stdio: "pipe",
  });
  return JSON.parse(out);
}

const f32 = (shape: number[], data: number[]) => ({ dtype: "float32", shape, data });
const i32 = (shape: number[], data: number[]) => ({ dtype: "int32", shape, data });
const str = (shape: number[], data: string[]) => ({ dtype: "object", shape, data });

describe("tritonclient against the python backend", () => {
  it("add_sub over HTTP and gRPC: exact OUTPUT0 / OUTPUT1, the request id echoed", () => {
    const expected = {
      ready: true,
      id: "add-sub-1",
      OUTPUT0: f32([2, 4], [2, 3, 4, 5, 7, 8, 9, 10]),
      OUTPUT1: f32([2, 4], [0, 1, 2, 3, 3, 4, 5, 6]),
    };
    expect(check("add_sub")).toEqual({ http: expected, grpc: expected });
  });

  it("BYTES in and out as numpy object arrays; request id, parameters and requested outputs reach the model", () => {
    const expected = {
      UPPER: str([3], ["ABC", "ZüRICH", ""]),
      META: str([4], ["bytes-2", '{"tag": "x"}', '["META"]', "0"]),
    };
    expect(check("bytes")).toEqual({ http: expected, grpc: expected });
  });

  it("BLS: exec, async_exec and a decoupled exec inside the model, and a missing model's error", () => {
    const expected = {
      SYNC: f32([4], [2, 4, 6, 8]),
      ASYNC: f32([4], [6, 12, 18, 24]),
      STREAM: i32([4], [0, 1, 2, 3]),
      MISSING: str([1], ["Request for unknown model: 'py_nope' is not found"]),
    };
    expect(check("bls")).toEqual({ http: expected, grpc: expected });
  });

  it("decoupled over gRPC streaming: every response in order, the final flag, and unary infer refused", () => {
    const response = (id: string, model: string, out: number | null, final: boolean) => ({ id, model, OUT: out === null ? null : i32([1], [out]), final });
    expect(check("decoupled")).toEqual({
      "repeat-4": [...[0, 1, 2, 3].map((i) => response("repeat-4", "py_repeat", i, false)), response("repeat-4", "py_repeat", null, true)],
      "square-3": [response("square-3", "py_square", 3, false), response("square-3", "py_square", 3, false), response("square-3", "py_square", 3, true)],
      "repeat-2": [response("repeat-2", "py_repeat", 0, false), response("repeat-2", "py_repeat", 1, false), response("repeat-2", "py_repeat", null, true)],
      unary: { status: "StatusCode.UNIMPLEMENTED", message: "ModelInfer RPC doesn't support models with decoupled transaction policy" },
    });
  });

  it("custom metrics: the model's counter, gauge and histogram on /metrics after requests over HTTP and gRPC", () => {
    const l = 'model="py_metrics",version="1"';
    expect(check("metrics")).toEqual({
      counts: [1, 2, 3],
      lines: [
        "# HELP custom_requests Requests seen",
        "# TYPE custom_requests counter",
        `custom_requests{${l}} 3`,
        "# HELP custom_last_value Last X",
        "# TYPE custom_last_value gauge",
        `custom_last_value{${l}} 0.5`,
        "# HELP custom_x X values",
        "# TYPE custom_x histogram",
        `custom_x_bucket{${l},le="1"} 1`,
        `custom_x_bucket{${l},le="5"} 2`,
        `custom_x_bucket{${l},le="+Inf"} 3`,
        `custom_x_sum{${l}} 10.5`,
        `custom_x_count{${l}} 3`,
      ],
    });
  });

  it("a model's errors: TritonError's code and message, and a raised exception, as InferenceServerException", () => {
    const raised = "Failed to process the request(s) for model instance 'py_echo_0', message: ValueError: raised on purpose";
    expect(check("errors")).toEqual({
      "http fail": { status: "400", message: "bad text" },
      "http raise": { status: "500", message: raised },
      "grpc fail": { status: "StatusCode.INVALID_ARGUMENT", message: "bad text" },
      "grpc raise": { status: "StatusCode.INTERNAL", message: raised },
    });
  });
});
