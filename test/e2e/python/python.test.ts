/**
 * Issue #32: the `python` backend through the server binary, with Python models written
 * into a temporary repository: one stub process per instance (distinct PIDs), add/sub
 * with batching and the initialize args, auto_complete_config, default_model_filename,
 * BYTES as object arrays, request id / parameters / requested outputs, TritonError codes
 * and raised exceptions, decoupled response senders (repeat from a thread, square with
 * the final flag on the last response), BLS exec / async_exec / decoupled streams,
 * cancellation seen by is_cancelled(), a model whose Python lacks numpy, and a stub that
 * crashes or hangs (answered with an error naming the model, then restarted).
 *
 * The Python is Debian's /usr/bin/python3 with python3-numpy (.ci/run installs it): the
 * server runs with PATH=/usr/bin:/bin, so `python3` on its PATH is that one. The tests
 * speak HTTP (and gRPC) directly rather than through Triton's Python client.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServerProcess, inferJson, type ServerProcess } from "../../helpers/server-process.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { eventually } from "../../helpers/eventually.ts";
import { CRASH_MODELS, pythonModels } from "./models.ts";

const PYTHON = "/usr/bin/python3";
const ENV = { PATH: "/usr/bin:/bin" };

let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;
const markers = mkdtempSync(join(tmpdir(), "nereid-py-markers-"));

function fp32(name: string, shape: number[], data: number[]) {
  return { name, datatype: "FP32", shape, data };
}

beforeAll(async () => {
  try {
    execFileSync(PYTHON, ["-c", "import numpy"], { stdio: "pipe" });
  } catch (err) {
    throw new Error(`these tests need ${PYTHON} with numpy (apt-get install python3-numpy): ${String(err)}`);
  }
  repo = makeRepository([]);
  for (const [path, text] of Object.entries(pythonModels(PYTHON))) repo.add(path, text);
  chmodSync(join(repo.dir, "py_no_numpy/env/bin/python3"), 0o755);
  server = await startServerProcess([`--model-repository=${repo.dir}`, "--exit-on-error=false"], { env: ENV });
}, 120_000);

afterAll(async () => {
  await server?.stop();
  repo?.remove();
});

async function post(path: string, body: unknown): Promise<Response> {
  return fetch(`${server.url}${path}`, { method: "POST", body: JSON.stringify(body) });
}

function events(text: string): any[] {
  return text
    .split("\n")
    .filter((l) => l.startsWith("data: "))
    .map((l) => JSON.parse(l.slice(6)));
}

describe("python backend: ordinary models", () => {
  it("add_sub computes OUTPUT0 = a + b and OUTPUT1 = a - b for a batch", async () => {
    const { status, json } = await inferJson(server, "py_add_sub", {
      inputs: [fp32("INPUT0", [2, 4], [1, 2, 3, 4, 5, 6, 7, 8]), fp32("INPUT1", [2, 4], [1, 1, 1, 1, 2, 2, 2, 2])],
      outputs: [{ name: "OUTPUT0" }, { name: "OUTPUT1" }],
    });
    expect(status).toBe(200);
    expect(json.outputs).toEqual([
      { name: "OUTPUT0", datatype: "FP32", shape: [2, 4], data: [2, 3, 4, 5, 7, 8, 9, 10] },
      { name: "OUTPUT1", datatype: "FP32", shape: [2, 4], data: [0, 1, 2, 3, 3, 4, 5, 6] },
    ]);
  });

  it("initialize gets Triton's args, and each instance is a stub process of its own", async () => {
    const pids = new Set<number>();
    const infos = new Set<string>();
    const one = () =>
      inferJson(server, "py_add_sub", {
        inputs: [fp32("INPUT0", [1, 4], [1, 2, 3, 4]), fp32("INPUT1", [1, 4], [0, 0, 0, 0])],
        outputs: [{ name: "PID" }, { name: "INFO" }],
        parameters: { sleep_ms: 150 },
      });
    for (let round = 0; round < 5 && pids.size < 2; round++) {
      for (const { status, json } of await Promise.all(Array.from({ length: 6 }, one))) {
        expect(status).toBe(200);
        pids.add(json.outputs[0].data[0]);
        infos.add(JSON.stringify(json.outputs[1].data));
      }
    }
    expect(pids.size).toBe(2);
    expect(pids.has(server.pid!)).toBe(false);
    expect([...infos].sort()).toEqual([
      JSON.stringify(["py_add_sub", "1", "CPU", "0", "py_add_sub_0_0"]),
      JSON.stringify(["py_add_sub", "1", "CPU", "0", "py_add_sub_0_1"]),
    ]);
    expect(server.log()).toContain("py_add_sub initialized py_add_sub_0_1");
  });

  it("auto_complete_config fills a config.pbtxt that names only the backend", async () => {
    const config = (await (await fetch(`${server.url}/v2/models/py_auto/config`)).json()) as any;
    expect(config.max_batch_size).toBe(4);
    expect(config.input).toEqual([expect.objectContaining({ name: "IN", data_type: "TYPE_INT32", dims: [-1] })]);
    expect(config.output).toEqual([expect.objectContaining({ name: "OUT", data_type: "TYPE_INT32", dims: [-1] })]);
    expect(config.dynamic_batching).toBeDefined();
    const { status, json } = await inferJson(server, "py_auto", { inputs: [{ name: "IN", datatype: "INT32", shape: [1, 3], data: [1, 2, -3] }] });
    expect(status).toBe(200);
    expect(json.outputs[0].data).toEqual([2, 4, -6]);
  });

  it("BYTES arrive as object arrays of bytes; request id, parameters and requested outputs reach the model", async () => {
    const { status, json } = await inferJson(server, "py_echo", {
      id: "req-7",
      // The keys the server consumes (P-29) do not reach the model.
      parameters: { answer: 42, tag: "x", priority: 0, timeout: 0, binary_data_output: false },
      inputs: [{ name: "TEXT", datatype: "BYTES", shape: [3], data: ["abc", "Zürich", ""] }],
    });
    expect(status).toBe(200);
    expect(json.id).toBe("req-7");
    const upper = json.outputs.find((o: any) => o.name === "UPPER");
    expect(upper).toEqual({ name: "UPPER", datatype: "BYTES", shape: [3], data: ["ABC", "ZüRICH", ""] });
    const meta = json.outputs.find((o: any) => o.name === "META").data;
    expect(meta[0]).toBe("req-7");
    expect(JSON.parse(meta[1])).toEqual({ answer: 42, tag: "x" });
    expect(JSON.parse(meta[2])).toEqual(["UPPER", "META"]);
    expect(meta[3]).toBe("0");
  });

  it("a response's parameters reach the client; parameters that are not strings, booleans or numbers fail the request (#32)", async () => {
    const { status, json } = await inferJson(server, "py_params", { inputs: [{ name: "X", datatype: "INT32", shape: [1], data: [2] }] });
    expect(status).toBe(200);
    expect(json.parameters).toEqual({ source: "py", count: 6, ratio: 0.5, ok: true });
    expect(json.outputs).toEqual([{ name: "Y", datatype: "INT32", shape: [1], data: [2] }]);
    const bad = await inferJson(server, "py_params", { inputs: [{ name: "X", datatype: "INT32", shape: [1], data: [1] }] });
    expect(bad.status).toBe(500);
    expect(bad.json).toEqual({ error: "model 'py_params' returned response parameter 'nested' that is not a string, boolean or finite number" });
  });

  it("a response's TritonError keeps its code; a raised exception fails the request naming the instance", async () => {
    const bad = await inferJson(server, "py_echo", { inputs: [{ name: "TEXT", datatype: "BYTES", shape: [1], data: ["fail"] }] });
    expect(bad.status).toBe(400);
    expect(bad.json).toEqual({ error: "bad text" });
    const raised = await inferJson(server, "py_echo", { inputs: [{ name: "TEXT", datatype: "BYTES", shape: [1], data: ["raise"] }] });
    expect(raised.status).toBe(500);
    expect(raised.json.error).toBe("Failed to process the request(s) for model instance 'py_echo_0', message: ValueError: raised on purpose");
    const again = await inferJson(server, "py_echo", { inputs: [{ name: "TEXT", datatype: "BYTES", shape: [1], data: ["ok"] }] });
    expect(again.json.outputs[0].data).toEqual(["OK"]);
  });
});

describe("python backend: decoupled models and BLS", () => {
  it.each([0, 1, 5])("py_repeat streams N = %i responses in order from a thread", async (n) => {
    const res = await post("/v2/models/py_repeat/generate_stream", { N: n });
    expect(res.status).toBe(200);
    expect(events(await res.text())).toEqual(Array.from({ length: n }, (_, i) => ({ model_name: "py_repeat", model_version: "1", OUT: i })));
  });

  it("py_square sends N responses, the last one final", async () => {
    const res = await post("/v2/models/py_square/generate_stream", { IN: 3 });
    expect(events(await res.text()).map((e) => e.OUT)).toEqual([3, 3, 3]);
  });

  it("a decoupled model refuses a unary infer", async () => {
    const r = await inferJson(server, "py_repeat", { inputs: [{ name: "N", datatype: "INT32", shape: [1], data: [2] }] });
    expect([r.status, r.json]).toEqual([501, { error: "HTTP end point doesn't support models with decoupled transaction policy" }]);
  });

  it("BLS: exec, two async_exec at once, a decoupled stream, and a missing model's error", async () => {
    const { status, json } = await inferJson(server, "py_bls", {
      inputs: [fp32("X", [4], [1, 2, 3, 4]), { name: "N", datatype: "INT32", shape: [1], data: [4] }],
    });
    expect(status).toBe(200);
    const out = (n: string) => json.outputs.find((o: any) => o.name === n).data;
    expect(out("SYNC")).toEqual([2, 4, 6, 8]);
    expect(out("ASYNC")).toEqual([6, 12, 18, 24]);
    expect(out("STREAM")).toEqual([0, 1, 2, 3]);
    expect(out("MISSING")[0]).toContain("py_nope");
  });

  it("cancellation: a request whose HTTP client goes away reads is_cancelled() true", async () => {
    const marker = join(markers, "cancel-1");
    const ac = new AbortController();
    const pending = fetch(`${server.url}/v2/models/py_cancel/infer`, {
      method: "POST",
      body: JSON.stringify({ parameters: { marker }, inputs: [{ name: "X", datatype: "INT32", shape: [1], data: [1] }] }),
      signal: ac.signal,
    }).catch((e) => e);
    await new Promise((r) => setTimeout(r, 500));
    ac.abort();
    await pending;
    await eventually(async () => expect(existsSync(marker) && readFileSync(marker, "utf8")).toBe("cancelled"), 30_000);
  });
});

describe("python backend: custom metrics", () => {
  it("MetricFamily / Metric counters, gauges and histograms appear on /metrics", async () => {
    const call = (x: number) => inferJson(server, "py_metrics", { inputs: [{ name: "X", datatype: "FP32", shape: [1], data: [x] }] });
    const first = await call(3);
    expect(first.json.outputs[0].data).toEqual([1]);
    expect(first.json.outputs[1].data[0]).toBe("metric family 'custom_requests' already exists with another kind or description");
    expect((await call(7)).json.outputs[0].data).toEqual([2]);
    const text = await (await fetch(`${server.metricsUrl}/metrics`)).text();
    const l = 'model="py_metrics",version="1"';
    for (const line of [
      "# HELP custom_requests Requests seen",
      "# TYPE custom_requests counter",
      `custom_requests{${l}} 2`,
      "# TYPE custom_last_value gauge",
      `custom_last_value{${l}} 7`,
      "# TYPE custom_x histogram",
      `custom_x_bucket{${l},le="1"} 0`,
      `custom_x_bucket{${l},le="5"} 1`,
      `custom_x_bucket{${l},le="+Inf"} 2`,
      `custom_x_sum{${l}} 10`,
      `custom_x_count{${l}} 2`,
    ]) {
      expect(text.split("\n")).toContain(line);
    }
  });
});

describe("python backend: load failures", () => {
  async function reason(model: string): Promise<string> {
    const index = (await (await post("/v2/repository/index", {})).json()) as any[];
    const e = index.find((m) => m.name === model);
    expect(e.state).toBe("UNAVAILABLE");
    return e.reason;
  }

  it("a model whose Python has no numpy fails to load and says so", async () => {
    const r = await reason("py_no_numpy");
    expect(r).toContain("cannot import numpy");
    expect(r).toContain("py_no_numpy/env/bin/python3");
  });

  it("EXECUTION_ENV_PATH outside the model's folder is refused", async () => {
    expect(await reason("py_outside_env")).toContain("EXECUTION_ENV_PATH must lie inside the model's folder");
  });

  it("the other models still serve", async () => {
    const { status } = await inferJson(server, "py_auto", { inputs: [{ name: "IN", datatype: "INT32", shape: [1, 1], data: [5] }] });
    expect(status).toBe(200);
  });
});

describe("python backend: a stub that crashes or hangs", () => {
  let crash: ServerProcess;
  let crashRepo: ReturnType<typeof makeRepository>;

  beforeAll(async () => {
    crashRepo = makeRepository([]);
    for (const [path, text] of Object.entries(CRASH_MODELS)) crashRepo.add(path, text);
    crash = await startServerProcess([`--model-repository=${crashRepo.dir}`, "--backend-config=python,stub-timeout-seconds=1"], { env: ENV });
  }, 120_000);

  afterAll(async () => {
    await crash?.stop();
    crashRepo?.remove();
  });

  const call = (x: number) => inferJson(crash, "py_crash", { inputs: [{ name: "X", datatype: "INT32", shape: [1], data: [x] }] });

  async function pidAfterRestart(before: number): Promise<number> {
    let pid = before;
    await eventually(async () => {
      const r = await call(0);
      expect(r.status).toBe(200);
      pid = r.json.outputs[0].data[0];
      expect(pid).not.toBe(before);
    }, 30_000);
    return pid;
  }

  it("a stub that exits fails its request with INTERNAL naming the model, and is restarted", async () => {
    const first = await call(0);
    expect(first.status).toBe(200);
    const died = await call(1);
    expect(died.status).toBe(500);
    expect(died.json.error).toBe(
      "Failed to process the request(s) for model 'py_crash' instance 'py_crash_0': the Python stub process exited with code 7; the instance is being restarted",
    );
    await pidAfterRestart(first.json.outputs[0].data[0]);
    expect(crash.log()).toContain("the Python stub process was restarted");
  }, 60_000);

  it("a decoupled stub that dies mid-stream ends its stream with the error after what it sent", async () => {
    const res = await fetch(`${crash.url}/v2/models/py_crash_stream/generate_stream`, { method: "POST", body: JSON.stringify({ N: 1 }) });
    expect(res.status).toBe(200);
    const evs = (await res.text())
      .split("\n")
      .filter((l) => l.startsWith("data: "))
      .map((l) => JSON.parse(l.slice(6)));
    expect(evs).toEqual([
      { model_name: "py_crash_stream", model_version: "1", OUT: 0 },
      {
        error:
          "Failed to process the request(s) for model 'py_crash_stream' instance 'py_crash_stream_0': the Python stub process exited with code 9; the instance is being restarted",
      },
    ]);
  }, 60_000);

  it("a stub that stops answering is killed after the health-check timeout, and is restarted", async () => {
    const before = (await call(0)).json.outputs[0].data[0];
    const hung = await call(2);
    expect(hung.status).toBe(500);
    expect(hung.json.error).toBe(
      "Failed to process the request(s) for model 'py_crash' instance 'py_crash_0': the Python stub process did not answer a health check within 1 s and was killed; the instance is being restarted",
    );
    await pidAfterRestart(before);
  }, 60_000);
});
