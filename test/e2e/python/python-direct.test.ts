/**
 * #30: a Python model's requests answered by the frontend worker threads straight from its
 * stubs, each worker over a connection of its own (backends/python/direct.ts), through the
 * compiled binary: answers over HTTP and gRPC while the main thread's event loop is held;
 * the same answers and statistics as one thread (BYTES, request ids and parameters, response
 * parameters, model errors, BLS, an ensemble of Python steps), an input too large for the
 * stub's shared region refused alike; a stub that dies under the workers' requests fails them with the
 * main thread's error and is reached again once restarted; unloads, loads and a version
 * swap under four client loops.
 *
 * The Python is Debian's /usr/bin/python3 with python3-numpy (.ci/run installs it).
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { request as httpRequest, Agent } from "node:http";
import type { ServerProcess } from "../../helpers/server-process.ts";
import { onOneAndTwoThreads, startOnThreads } from "../../helpers/thread-servers.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { modelCounts } from "../../helpers/model-counts.ts";
import { inferenceClient, simpleOutput } from "../../helpers/grpc-client.ts";
import { addHoldModel, whileMainHeld } from "../../helpers/hold-model.ts";
import { LoadLoops } from "../../helpers/load-loops.ts";
import { eventually } from "../../helpers/eventually.ts";
import { pythonSimpleFiles } from "../../../scripts/lib/bench-models.ts";
import { pythonModels } from "./models.ts";

const PYTHON = "/usr/bin/python3";
/** Each of a stub's two shared regions: small, so that one input can outgrow it. */
const REGION = 4096;
const A = Array.from({ length: 16 }, (_, i) => i * 5 - 7);
const B = Array.from({ length: 16 }, (_, i) => 3 - i);
const SUM = A.map((a, i) => a + B[i]!);
const DIFF = A.map((a, i) => a - B[i]!);

const SIMPLE_CONFIG = readFileSync(new URL("../../../model_repository/simple/config.pbtxt", import.meta.url), "utf8");

/**
 * py_crash: X = 1 ends the stub (os._exit(7)), X = 2 stops it (SIGSTOP: it hangs), X = 3
 * sleeps 300 ms first, X = 9 appends a line to the file "ran" beside the model's folder,
 * X = 7 (too large) or 8 (not JSON) writes a broken message on every connection the
 * frontend workers have to the stub (found through the stub's own objects, as hostile model
 * code could); it answers Y = X.
 */
const CRASH = `
import gc, os, signal, struct, time
import triton_python_backend_utils as pb_utils

def broken(junk):
    for o in gc.get_objects():
        if type(o).__name__ == "Direct":
            try:
                o.conn.sendall(junk)
            except OSError:
                pass

class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "X").as_numpy()
            if int(x[0]) == 1:
                os._exit(7)
            if int(x[0]) == 2:
                os.kill(os.getpid(), signal.SIGSTOP)
            if int(x[0]) == 3:
                time.sleep(0.3)
            if int(x[0]) == 7:
                broken(struct.pack("<II", 0xFFFFFFF0, 0))
            if int(x[0]) == 8:
                broken(struct.pack("<II", 5, 0) + b"{nope")
            if int(x[0]) == 9:
                with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ran"), "a") as f:
                    f.write("ran\\n")
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("Y", x)]))
        return out
`;

/** py_echo: Y = X, FP32 of any length; X = [-1] raises. */
const ECHO = `
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "X").as_numpy()
            if x.size == 1 and x[0] == -1:
                raise pb_utils.TritonModelException("X = [-1] is refused")
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("Y", x)]))
        return out
`;

function repository() {
  const repo = makeRepository([]);
  for (const [path, text] of Object.entries(pythonSimpleFiles(SIMPLE_CONFIG))) repo.add(path, text);
  repo.add(
    "py_crash/config.pbtxt",
    'backend: "python"\ninput [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] } ]\n',
  );
  repo.add("py_crash/1/model.py", CRASH);
  repo.add(
    "py_echo/config.pbtxt",
    'backend: "python"\ninput [ { name: "X" data_type: TYPE_FP32 dims: [ -1 ] } ]\noutput [ { name: "Y" data_type: TYPE_FP32 dims: [ -1 ] } ]\n',
  );
  repo.add("py_echo/1/model.py", ECHO);
  return repo;
}

const PY_ARGS = [`--backend-config=python,interpreter=${PYTHON}`, `--backend-config=python,shm-default-byte-size=${REGION}`];

function requireNumpy(): void {
  try {
    execFileSync(PYTHON, ["-c", "import numpy"], { stdio: "pipe" });
  } catch (err) {
    throw new Error(`these tests need ${PYTHON} with numpy (apt-get install python3-numpy): ${String(err)}`);
  }
}

const simpleBody = (a = A) =>
  JSON.stringify({
    inputs: [
      { name: "INPUT0", datatype: "INT32", shape: [1, 16], data: a },
      { name: "INPUT1", datatype: "INT32", shape: [1, 16], data: B },
    ],
  });
const grpcSimple = (a = A) => ({
  model_name: "py_simple",
  inputs: [
    { name: "INPUT0", datatype: "INT32", shape: [1, 16] },
    { name: "INPUT1", datatype: "INT32", shape: [1, 16] },
  ],
  raw_input_contents: [new Uint8Array(Int32Array.from(a).buffer), new Uint8Array(Int32Array.from(B).buffer)],
});

/** One POST on a connection of its own (no keep-alive), so that requests spread over the workers. */
function postFresh(url: string, body: string, abortAfterMs?: number): Promise<{ status: number; text: string }> {
  return new Promise((done, fail) => {
    const req = httpRequest(url, { method: "POST", agent: new Agent({ keepAlive: false }) }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c) => (text += c));
      res.on("end", () => done({ status: res.statusCode!, text }));
    });
    req.on("error", (err) => (abortAfterMs === undefined ? fail(err) : done({ status: 0, text: "gone" })));
    req.end(body);
    if (abortAfterMs !== undefined) setTimeout(() => req.destroy(), abortAfterMs);
  });
}

/** Requests on fresh connections (and gRPC channels to py_simple, unless `grpc` is false) until every frontend worker has sent some (each then holds its connection to the stubs). */
async function warmUp(server: ServerProcess, models: { model: string; body: string }[], grpc = true): Promise<void> {
  for (const { model, body } of models) {
    const url = `${server.url}/v2/models/${model}/infer`;
    for (let round = 0; round < 3; round++) {
      const answers = await Promise.all(Array.from({ length: 16 }, () => postFresh(url, body)));
      for (const a of answers) expect(a.status, a.text).toBe(200);
    }
  }
  for (let i = 0; grpc && i < 12; i++) {
    const { client, call } = inferenceClient(server.grpcTarget!);
    try {
      await call("ModelInfer")(grpcSimple());
      await call("ModelInfer")(grpcSimple());
    } finally {
      client.close();
    }
  }
  // A worker's connection to a stub is made after its first request there.
  await new Promise((r) => setTimeout(r, 300));
}

describe("a Python model answered by the frontend workers, shown with the main thread's event loop held", () => {
  let server: ServerProcess;
  let repo: ReturnType<typeof makeRepository>;
  let held: { held: string; release: string };
  beforeAll(async () => {
    requireNumpy();
    repo = repository();
    held = addHoldModel(repo);
    // Regions of 8 MiB: a 4 MB tensor fits (it crosses the workers' sockets in many chunks).
    server = await startOnThreads(repo.dir, 2, [`--backend-config=python,interpreter=${PYTHON}`, `--backend-config=python,shm-default-byte-size=${8 << 20}`]);
  }, 120_000);
  afterAll(async () => {
    if (server) expect(await server.stop(), server.log().slice(-3000)).toBe(0);
    repo?.remove();
  });

  it("answers exactly over HTTP and gRPC while the main thread cannot", async () => {
    expect(server.log()).toMatch(/frontend worker threads run these model versions themselves: [^\n]*py_simple:1/);
    await warmUp(server, [{ model: "py_simple", body: simpleBody() }]);
    const http: unknown[] = [];
    const grpc: unknown[] = [];
    await whileMainHeld(server.url, held, async () => {
      // The main thread stays held for 20 s: an answer that needed it would not come within 5.
      const url = `${server.url}/v2/models/py_simple/infer`;
      const answers = await Promise.all(
        Array.from({ length: 8 }, async (_, k) => {
          const a = A.map((v) => v + k);
          const r = await fetch(url, { method: "POST", body: simpleBody(a), signal: AbortSignal.timeout(5000) });
          return { k, status: r.status, outputs: ((await r.json()) as any).outputs.map((o: any) => o.data) };
        }),
      );
      http.push(...answers);
      const { client, call } = inferenceClient(server.grpcTarget!);
      try {
        for (let k = 0; k < 4; k++) {
          const g = await Promise.race([
            call("ModelInfer")(grpcSimple(A.map((v) => v * k))),
            new Promise<never>((_, reject) => setTimeout(() => reject(new Error("not answered within 5 s")), 5000)),
          ]);
          grpc.push({ k, out: simpleOutput(g) });
        }
      } finally {
        client.close();
      }
    });
    expect(http).toEqual(Array.from({ length: 8 }, (_, k) => ({ k, status: 200, outputs: [A.map((v, i) => v + k + B[i]!), A.map((v, i) => v + k - B[i]!)] })));
    expect(grpc).toEqual(Array.from({ length: 4 }, (_, k) => ({ k, out: A.map((v, i) => v * k + B[i]!) })));
  }, 60_000);

  it("echoes a 4 MB tensor exactly, out and back in many socket chunks, while the main thread cannot", async () => {
    const n = 1_000_000;
    const x = new Float32Array(n);
    for (let i = 0; i < n; i++) x[i] = (i % 1009) * 0.5 - 250;
    const header = new TextEncoder().encode(
      JSON.stringify({
        inputs: [{ name: "X", datatype: "FP32", shape: [n], parameters: { binary_data_size: 4 * n } }],
        outputs: [{ name: "Y", parameters: { binary_data: true } }],
      }),
    );
    const body = new Uint8Array(header.byteLength + 4 * n);
    body.set(header);
    body.set(new Uint8Array(x.buffer), header.byteLength);
    const post = () =>
      fetch(`${server.url}/v2/models/py_echo/infer`, {
        method: "POST",
        body,
        headers: { "inference-header-content-length": String(header.byteLength) },
        signal: AbortSignal.timeout(10_000),
      });
    await warmUp(server, [{ model: "py_echo", body: JSON.stringify({ inputs: [{ name: "X", datatype: "FP32", shape: [1], data: [2] }] }) }]);
    const answers: Uint8Array[] = [];
    await whileMainHeld(server.url, held, async () => {
      for (const r of await Promise.all([post(), post(), post()])) {
        expect(r.status).toBe(200);
        const bytes = new Uint8Array(await r.arrayBuffer());
        answers.push(bytes.subarray(Number(r.headers.get("inference-header-content-length"))));
      }
    });
    for (const a of answers) expect(Buffer.compare(Buffer.from(a), Buffer.from(x.buffer))).toBe(0);
  }, 60_000);
});

describe("a Python model on the workers: the same answers and statistics as one thread", () => {
  const servers: Record<number, { server: ServerProcess; repo: ReturnType<typeof makeRepository> }> = {};
  onOneAndTwoThreads(
    async (threads) => {
      requireNumpy();
      const repo = repository();
      return { repo, server: await startOnThreads(repo.dir, threads, PY_ARGS) };
    },
    (one, two) => Object.assign(servers, { 1: one, 2: two }),
  );

  /** The same requests, in the same order: good ones, a bad datatype, a model error, an input too large for the stub's region, a cancelled one. */
  async function sequence(server: ServerProcess): Promise<string[]> {
    await warmUp(server, [
      { model: "py_simple", body: simpleBody() },
      { model: "py_echo", body: JSON.stringify({ inputs: [{ name: "X", datatype: "FP32", shape: [2], data: [1.5, -2] }] }) },
    ]);
    const out: string[] = [];
    const post = async (model: string, body: string) => {
      const r = await postFresh(`${server.url}/v2/models/${model}/infer`, body);
      out.push(`${model} ${r.status} ${r.text}`);
    };
    for (let k = 0; k < 6; k++) await post("py_simple", simpleBody(A.map((v) => v - k)));
    await post("py_simple", simpleBody().replace('"INPUT0","datatype":"INT32"', '"INPUT0","datatype":"FP32"'));
    await post("py_echo", JSON.stringify({ inputs: [{ name: "X", datatype: "FP32", shape: [3], data: [0.25, 8, -1e3] }] }));
    await post("py_echo", JSON.stringify({ inputs: [{ name: "X", datatype: "FP32", shape: [1], data: [-1] }] }));
    // 4,000 bytes, and 4,096 bytes of the 4,096-byte region once in 64-byte blocks: fits. 4,100 bytes: does not.
    await post("py_echo", JSON.stringify({ inputs: [{ name: "X", datatype: "FP32", shape: [1000], data: Array(1000).fill(0.5) }] }));
    await post("py_echo", JSON.stringify({ inputs: [{ name: "X", datatype: "FP32", shape: [1025], data: Array(1025).fill(0.5) }] }));
    const { client, call } = inferenceClient(server.grpcTarget!);
    try {
      for (let k = 0; k < 4; k++) out.push(`grpc ${JSON.stringify(simpleOutput(await call("ModelInfer")(grpcSimple(A.map((v) => v * 3 - k)))))}`);
      const e = await call("ModelInfer")({
        model_name: "py_echo",
        inputs: [{ name: "X", datatype: "FP32", shape: [1] }],
        raw_input_contents: [new Uint8Array(new Float32Array([-1]).buffer)],
      }).catch((err: { code: number; details: string }) => err);
      out.push(`grpc ${(e as { code: number }).code} ${(e as { details: string }).details}`);
    } finally {
      client.close();
    }
    return out;
  }

  it("answers every request alike, and counts them alike", async () => {
    const one = await sequence(servers[1]!.server);
    const two = await sequence(servers[2]!.server);
    expect(two).toEqual(one);
    // Spot checks of the shared answers: exact sums, the model's own error, the region's limit.
    expect(one[0]).toBe(
      `py_simple 200 ${JSON.stringify({
        model_name: "py_simple",
        model_version: "1",
        outputs: [
          { name: "OUTPUT0", datatype: "INT32", shape: [1, 16], data: SUM },
          { name: "OUTPUT1", datatype: "INT32", shape: [1, 16], data: DIFF },
        ],
      })}`,
    );
    expect(one[8]).toContain("X = [-1] is refused");
    expect(one[9]).toMatch(/^py_echo 200 /);
    expect(one[10]).toBe(
      `py_echo 500 ${JSON.stringify({ error: "input 'X' of 4100 bytes does not fit the free space of the python stub's shared memory (4096 bytes; raise --backend-config=python,shm-default-byte-size)" })}`,
    );
    for (const model of ["py_simple", "py_echo"]) {
      expect(await modelCounts(servers[2]!.server, model), model).toEqual(await modelCounts(servers[1]!.server, model));
    }
  }, 120_000);
});

/** py_ens: py_params twice in a row (X → mid → Z), an ensemble whose steps are Python models. */
const ENSEMBLE = `name: "py_ens"
platform: "ensemble"
input [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "Z" data_type: TYPE_INT32 dims: [ 1 ] } ]
ensemble_scheduling { step [
  { model_name: "py_params" model_version: -1 input_map { key: "X" value: "X" } output_map { key: "Y" value: "mid" } },
  { model_name: "py_params" model_version: -1 input_map { key: "X" value: "mid" } output_map { key: "Y" value: "Z" } }
] }
`;

describe("the python backend's own test models on the workers: BYTES, parameters, BLS and an ensemble of Python steps, as one thread answers them", () => {
  const MODELS = ["py_echo", "py_params", "py_add_sub", "py_repeat", "py_bls"];
  const servers: Record<number, { server: ServerProcess; repo: ReturnType<typeof makeRepository> }> = {};
  onOneAndTwoThreads(
    async (threads) => {
      requireNumpy();
      const repo = makeRepository([]);
      const files = pythonModels(PYTHON);
      for (const m of MODELS) for (const [path, text] of Object.entries(files)) if (path.startsWith(`${m}/`)) repo.add(path, text);
      repo.add("py_ens/config.pbtxt", ENSEMBLE);
      repo.add("py_ens/1/.keep", "");
      return { repo, server: await startOnThreads(repo.dir, threads, [`--backend-config=python,interpreter=${PYTHON}`]) };
    },
    (one, two) => Object.assign(servers, { 1: one, 2: two }),
  );

  async function sequence(server: ServerProcess): Promise<string[]> {
    const text = (data: string[], extra: object = {}) =>
      JSON.stringify({ ...extra, inputs: [{ name: "TEXT", datatype: "BYTES", shape: [data.length], data }] });
    const x = (v: number) => JSON.stringify({ inputs: [{ name: "X", datatype: "INT32", shape: [1], data: [v] }] });
    await warmUp(
      server,
      [
        { model: "py_echo", body: text(["warm"]) },
        { model: "py_params", body: x(2) },
        { model: "py_ens", body: x(2) },
      ],
      false,
    );
    const out: string[] = [];
    const post = async (model: string, body: string) => {
      const r = await postFresh(`${server.url}/v2/models/${model}/infer`, body);
      out.push(`${model} ${r.status} ${r.text}`);
    };
    await post("py_echo", text(["héllo", "", "wörld"], { id: "r-7", parameters: { lang: "de", n: 3 }, outputs: [{ name: "UPPER" }, { name: "META" }] }));
    await post("py_echo", text(["raise"]));
    await post("py_echo", text(["fail"]));
    await post("py_echo", text(["ok"], { outputs: [{ name: "META" }] }));
    await post("py_params", x(2));
    await post("py_params", x(1));
    await post("py_ens", x(3));
    await post("py_ens", x(1));
    await post(
      "py_bls",
      JSON.stringify({
        inputs: [
          { name: "X", datatype: "FP32", shape: [4], data: [1, 2, 3, 4] },
          { name: "N", datatype: "INT32", shape: [1], data: [3] },
        ],
      }),
    );
    return out;
  }

  it("answers every request alike, and counts them alike", async () => {
    expect(servers[2]!.server.log()).toMatch(/frontend worker threads run these model versions themselves: [^\n]*py_ens:1/);
    const one = await sequence(servers[1]!.server);
    const two = await sequence(servers[2]!.server);
    expect(two).toEqual(one);
    // bytes.upper() leaves the non-ASCII bytes of UTF-8 as they are.
    expect(one[0]).toMatch(/^py_echo 200 .*"data":\["HéLLO","","WöRLD"\]}.*"data":\["r-7",/);
    expect(one[6]).toMatch(/^py_ens 200 .*"data":\[3\]/);
    expect(one[8]).toMatch(/^py_bls 200 /);
    for (const model of ["py_echo", "py_params", "py_ens", "py_bls"]) {
      expect(await modelCounts(servers[2]!.server, model), model).toEqual(await modelCounts(servers[1]!.server, model));
    }
  }, 120_000);
});

describe("a Python stub that dies, hangs or holds a cancelled request under the workers' requests", () => {
  let server: ServerProcess;
  let repo: ReturnType<typeof makeRepository>;
  beforeAll(async () => {
    requireNumpy();
    repo = repository();
    server = await startOnThreads(repo.dir, 2, [...PY_ARGS, "--backend-config=python,stub-timeout-seconds=1"]);
  }, 120_000);
  afterAll(async () => {
    if (server) expect(await server.stop(), server.log().slice(-3000)).toBe(0);
    repo?.remove();
  });

  const body = (x: number) => JSON.stringify({ inputs: [{ name: "X", datatype: "INT32", shape: [1], data: [x] }] });

  it("fails what they held with the main thread's error, and answers them again once it is restarted", async () => {
    await warmUp(server, [{ model: "py_crash", body: body(5) }]);
    const url = `${server.url}/v2/models/py_crash/infer`;
    // Slow requests queue in the stub behind one another from fresh connections (both workers), then one ends it.
    const slow = Array.from({ length: 6 }, () => postFresh(url, body(3)));
    await new Promise((r) => setTimeout(r, 100));
    const killer = postFresh(url, body(1));
    const answers = await Promise.all([...slow, killer]);
    const error = JSON.stringify({
      error:
        "Failed to process the request(s) for model 'py_crash' instance 'py_crash_0': the Python stub process exited with code 7; the instance is being restarted",
    });
    // Each answer is exact (run before the end) or the main thread's error for what the stub held.
    for (const a of answers.slice(0, 6))
      expect([
        `200 ${JSON.stringify({ model_name: "py_crash", model_version: "1", outputs: [{ name: "Y", datatype: "INT32", shape: [1], data: [3] }] })}`,
        `500 ${error}`,
      ]).toContain(`${a.status} ${a.text}`);
    expect(`${answers[6]!.status} ${answers[6]!.text}`).toBe(`500 ${error}`);
    // Restarted: every request on fresh connections is answered again, and the workers reach the fresh stub.
    await eventually(async () => {
      const again = await Promise.all(Array.from({ length: 8 }, (_, k) => postFresh(url, body(10 + k))));
      expect(again.map((a) => a.status)).toEqual(Array(8).fill(200));
    }, 30_000);
    expect(server.log()).toContain("the Python stub process was restarted");
    expect(server.log()).not.toMatch(/worker thread ended|worker thread: /);
  }, 60_000);

  it("a stub that stops answering is killed after the health-check timeout, failing what the workers sent", async () => {
    await warmUp(server, [{ model: "py_crash", body: body(5) }]);
    const url = `${server.url}/v2/models/py_crash/infer`;
    const answers = await Promise.all([postFresh(url, body(2)), ...Array.from({ length: 3 }, () => postFresh(url, body(4)))]);
    const error = JSON.stringify({
      error:
        "Failed to process the request(s) for model 'py_crash' instance 'py_crash_0': the Python stub process did not answer a health check within 1 s and was killed; the instance is being restarted",
    });
    expect(answers[0]).toEqual({ status: 500, text: error });
    for (const a of answers.slice(1))
      expect([
        `500 ${error}`,
        `200 ${JSON.stringify({ model_name: "py_crash", model_version: "1", outputs: [{ name: "Y", datatype: "INT32", shape: [1], data: [4] }] })}`,
      ]).toContain(`${a.status} ${a.text}`);
    await eventually(async () => expect((await postFresh(url, body(6))).status).toBe(200), 30_000);
  }, 60_000);

  it("a request whose client goes away while it waits in the stub is never run, and is counted CANCELED", async () => {
    await warmUp(server, [{ model: "py_crash", body: body(5) }]);
    const before = await canceled();
    const url = `${server.url}/v2/models/py_crash/infer`;
    const slow = Array.from({ length: 4 }, () => postFresh(url, body(3)));
    await new Promise((r) => setTimeout(r, 50));
    const gone = Array.from({ length: 4 }, () => postFresh(url, body(9), 200));
    const answers = await Promise.all([...slow, ...gone]);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 0, 0, 0, 0]);
    await eventually(async () => expect(await canceled()).toBe(before + 4), 10_000);
    expect(existsSync(join(repo.dir, "py_crash", "ran"))).toBe(false);
  }, 60_000);

  it("a stub that writes a broken message to the workers' connections fails what they held there, and no worker thread ends", async () => {
    const url = `${server.url}/v2/models/py_crash/infer`;
    const exact = (v: number) =>
      `200 ${JSON.stringify({ model_name: "py_crash", model_version: "1", outputs: [{ name: "Y", datatype: "INT32", shape: [1], data: [v] }] })}`;
    for (const [x, fault] of [
      [7, "a message larger than its connection allows"],
      [8, "a malformed message"],
    ] as const) {
      await warmUp(server, [{ model: "py_crash", body: body(5) }], false);
      const answers = await Promise.all(Array.from({ length: 8 }, () => postFresh(url, body(x))));
      const error = `500 ${JSON.stringify({ error: `model 'py_crash' instance 'py_crash_0': the Python stub process sent ${fault} over a frontend worker's connection` })}`;
      for (const a of answers) expect([exact(x), error]).toContain(`${a.status} ${a.text}`);
      // The broken message reaches every worker's connection: the requests a worker held there fail.
      expect(answers.map((a) => a.status)).toContain(500);
      // The workers connect again, and answer exactly once the stub has run what it still held
      // (a broken message it writes meanwhile reaches the new connections too).
      await eventually(async () => {
        const again = await Promise.all(Array.from({ length: 8 }, (_, k) => postFresh(url, body(20 + k))));
        expect(again.map((a) => `${a.status} ${a.text}`)).toEqual(Array.from({ length: 8 }, (_, k) => exact(20 + k)));
      }, 10_000);
    }
    expect(server.log()).not.toMatch(/worker thread ended|worker thread: /);
  }, 60_000);

  async function canceled(): Promise<number> {
    const metrics = await (await fetch(`${server.metricsUrl}/metrics`)).text();
    return Number(/^nv_inference_request_failure\{model="py_crash",version="1",reason="CANCELED"\} (\S+)$/m.exec(metrics)?.[1] ?? 0);
  }
});

describe("load, unload and a version swap of a Python model while four clients run requests on the workers", () => {
  let server: ServerProcess;
  let repo: ReturnType<typeof makeRepository>;
  beforeAll(async () => {
    requireNumpy();
    repo = repository();
    server = await startOnThreads(repo.dir, 2, [...PY_ARGS, "--model-control-mode=explicit", "--load-model=py_simple"]);
  }, 120_000);
  afterAll(async () => {
    if (server) expect(await server.stop(), server.log().slice(-4000)).toBe(0);
    repo?.remove();
  });

  it("every answer is exact or a clean refusal; nothing crashes, nothing is lost", async () => {
    const url = `${server.url}/v2/models/py_simple/infer`;
    const REFUSAL = /Request for unknown model: 'py_simple'|is not at ready state|unloaded|stopped accepting/;
    const run = new LoadLoops(REFUSAL);
    const httpLoop = async () => {
      while (!run.stop) {
        const r = await postFresh(url, simpleBody());
        if (r.status === 200) {
          const j = JSON.parse(r.text);
          if (JSON.stringify(j.outputs.map((o: any) => o.data)) === JSON.stringify([SUM, DIFF]) && ["1", "2"].includes(j.model_version)) run.tally.ok++;
          else run.tally.wrong.push(r.text);
        } else if (REFUSAL.test(r.text)) run.tally.refused++;
        else run.tally.wrong.push(`${r.status} ${r.text}`);
      }
    };
    const grpcLoop = run.grpc(
      server.grpcTarget!,
      () => grpcSimple(),
      (g) => JSON.stringify(simpleOutput(g)) === JSON.stringify(SUM),
    );
    const loops = [httpLoop, httpLoop, httpLoop, grpcLoop].map((loop) => run.guard(loop));
    await run.churnModel(loops, server.url, repo.dir, "py_simple", 300);
    expect(run.tally.wrong, server.log().slice(-4000)).toEqual([]);
    expect(run.tally.ok).toBeGreaterThan(0);
    const r = await postFresh(url, simpleBody());
    expect(JSON.parse(r.text).outputs[0].data).toEqual(SUM);
    expect(server.log()).not.toMatch(/worker thread ended|worker thread: |Traceback/);
  }, 120_000);
});
