/**
 * What the main thread answers for the HTTP and gRPC frontends' worker threads (#19 item 1),
 * through the compiled binary with 2 threads each: streams, cancels, errors in Triton's
 * order, large tensors, restricted protocols. The shared frontend suite on 1, 2 and 4
 * threads is frontend-thread-counts.test.ts's.
 */
import { describe, expect, it, beforeAll, afterAll } from "vitest";
import { gzipSync } from "node:zlib";
import { startServerProcess, type ServerProcess } from "../helpers/server-process.ts";
import { makeRepository } from "../helpers/repo.ts";
import { type Client, credentials, makeGenericClientConstructor, Metadata, type ClientDuplexStream, type ServiceError } from "@grpc/grpc-js";
import { serviceDefinition } from "../../src/frontends/grpc/protos.ts";
import { inferenceClient } from "../helpers/grpc-client.ts";
import { encodeModel, valueInfo, node, ElemType } from "../../scripts/lib/onnx-builder.ts";

/** A decoupled model: N responses OUT = 0..N-1, then a flag-only final. */
const COUNT = `export default class Count {
  execute(requests) {
    for (const r of requests) {
      const s = r.getResponseSender();
      const n = r.input("N").data[0];
      setTimeout(() => { for (let i = 0; i < n; i++) s.send({ outputs: [{ name: "OUT", datatype: "INT32", shape: [1], data: [i] }] }); s.send(undefined, { final: true }); }, 0);
    }
  }
}`;

/** A decoupled model: a response every 5 ms until the request is cancelled. */
const DRIP = `export default class Drip {
  execute(requests) {
    for (const r of requests) {
      const s = r.getResponseSender();
      let i = 0;
      const tick = () => (r.isCancelled() ? s.send(undefined, { final: true }) : (s.send({ outputs: [{ name: "OUT", datatype: "INT32", shape: [1], data: [i++] }] }), setTimeout(tick, 5)));
      tick();
    }
  }
}`;

/** An ordinary model that answers only once its request is cancelled. */
const HOLD = `export default class Hold {
  async execute(requests) {
    return Promise.all(requests.map((r) => new Promise((resolve) => {
      const done = () => resolve({ error: { message: "stopped: the client cancelled", code: "CANCELLED" } });
      if (r.isCancelled()) done(); else r.signal.addEventListener("abort", done, { once: true });
    })));
  }
}`;

/** `simple` and the decoupled `count` and `drip`, each with an INT32 input N and output OUT. */
function decoupledRepository(): ReturnType<typeof makeRepository> {
  const models = makeRepository(["simple"]);
  for (const [name, source] of [
    ["count", COUNT],
    ["drip", DRIP],
  ] as const) {
    models.add(
      `${name}/config.pbtxt`,
      `name: "${name}"\nbackend: "typescript"\nmax_batch_size: 0\nmodel_transaction_policy { decoupled: true }\ninput [ { name: "N" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]\n`,
    );
    models.add(`${name}/1/model.js`, source);
  }
  return models;
}

describe("HTTP on worker threads: what the main thread answers for them", () => {
  let other: ServerProcess;
  let models: ReturnType<typeof makeRepository>;
  beforeAll(async () => {
    models = decoupledRepository();
    other = await startServerProcess([`--model-repository=${models.dir}`, "--http-thread-count=2", "--http-max-input-size=4096", "--allow-grpc=false"]);
  });
  afterAll(async () => {
    await other?.stop();
    models?.remove();
  });
  const simple = JSON.stringify({ inputs: ["INPUT0", "INPUT1"].map((name) => ({ name, shape: [1, 16], datatype: "INT32", data: Array(16).fill(2) })) });

  it("streams generate_stream's events through a worker, in order", async () => {
    const res = await fetch(`${other.url}/v2/models/count/generate_stream`, { method: "POST", body: JSON.stringify({ N: 50 }) });
    expect([res.status, res.headers.get("content-type")]).toEqual([200, "text/event-stream; charset=utf-8"]);
    const events = (await res.text())
      .split("\n\n")
      .filter(Boolean)
      .map((e) => JSON.parse(e.slice("data: ".length)).OUT);
    expect(events).toEqual(Array.from({ length: 50 }, (_, i) => i));
  });

  it("an SSE client that goes away from a worker cancels its request on the main thread", async () => {
    const canceled = async () => {
      const text = await (await fetch(`${other.metricsUrl}/metrics`)).text();
      return Number(/^nv_inference_request_failure\{model="drip",version="1",reason="CANCELED"\} (\d+)/m.exec(text)?.[1]);
    };
    expect(await canceled()).toBe(0);
    const controller = new AbortController();
    const res = await fetch(`${other.url}/v2/models/drip/generate_stream`, { method: "POST", body: JSON.stringify({ N: 1 }), signal: controller.signal });
    await res.body!.getReader().read();
    controller.abort();
    for (let i = 0; i < 200 && (await canceled()) !== 1; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await canceled()).toBe(1);
  });

  it("decodes a gzip body in the worker and answers the same outputs", async () => {
    const res = await fetch(`${other.url}/v2/models/simple/infer`, { method: "POST", headers: { "content-encoding": "gzip" }, body: gzipSync(simple) });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { outputs: { data: number[] }[] }).outputs[0]!.data).toEqual(Array(16).fill(4));
  });

  it("reports an unknown model before a bad or too large body, as on one thread", async () => {
    const bad = await fetch(`${other.url}/v2/models/nope/infer`, { method: "POST", body: "{bad" });
    expect([bad.status, await bad.json()]).toEqual([404, { error: "Request for unknown model: 'nope' is not found" }]);
    const large = await fetch(`${other.url}/v2/models/nope/infer`, { method: "POST", body: "x".repeat(5000) });
    expect(large.status).toBe(404);
    const tooLarge = await fetch(`${other.url}/v2/models/simple/infer`, { method: "POST", body: "x".repeat(5000) });
    expect([tooLarge.status, await tooLarge.json()]).toEqual([
      400,
      { error: "Request JSON size of 5000 exceeds the maximum allowed value of 4096. Use --http-max-input-size to increase the limit." },
    ]);
  });
});

describe("gRPC (and HTTP) on worker threads: what the main thread answers for them", () => {
  let other: ServerProcess;
  let models: ReturnType<typeof makeRepository>;
  beforeAll(async () => {
    models = decoupledRepository();
    models.add(
      "hold/config.pbtxt",
      'name: "hold"\nbackend: "typescript"\nmax_batch_size: 0\ninput [ { name: "N" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]\n',
    );
    models.add("hold/1/model.js", HOLD);
    models.add(
      "fp32_identity/config.pbtxt",
      'name: "fp32_identity"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 0\ninput [ { name: "X" data_type: TYPE_FP32 dims: [ -1 ] } ]\noutput [ { name: "Y" data_type: TYPE_FP32 dims: [ -1 ] } ]\n',
    );
    models.add(
      "fp32_identity/1/model.onnx",
      encodeModel({
        name: "id",
        inputs: [valueInfo("X", ElemType.FLOAT, ["n"])],
        outputs: [valueInfo("Y", ElemType.FLOAT, ["n"])],
        nodes: [node("Identity", ["X"], ["Y"])],
      }),
    );
    other = await startServerProcess([
      `--model-repository=${models.dir}`,
      "--grpc-infer-thread-count=2",
      "--http-thread-count=2",
      "--grpc-header-forward-pattern=^x-fwd-",
      "--grpc-restricted-protocol=model-repository:admin-key=yes",
    ]);
    expect(other.log()).toMatch(/gRPC frontend on 2 worker threads/);
  });
  afterAll(async () => {
    await other?.stop();
    models?.remove();
  });
  const n = (v: number) => ({
    model_name: "count",
    inputs: [{ name: "N", datatype: "INT32", shape: [1] }],
    raw_input_contents: [new Uint8Array(Int32Array.of(v).buffer)],
  });
  const outOf = (r: { infer_response?: { raw_output_contents?: Uint8Array[] } }) =>
    new Int32Array(new Uint8Array(r.infer_response!.raw_output_contents![0]!).buffer)[0];

  /** Opens ModelStreamInfer, writes `requests`, and reads until the server ends the stream (or `stopAfter` messages, then cancels). */
  async function stream(requests: object[], stopAfter?: number): Promise<any[]> {
    const Ctor = makeGenericClientConstructor(serviceDefinition("inference.GRPCInferenceService"), "GRPCInferenceService");
    const c = new Ctor(other.grpcTarget!, credentials.createInsecure()) as unknown as Client & { ModelStreamInfer: () => ClientDuplexStream<object, any> };
    const call = c.ModelStreamInfer();
    const got: any[] = [];
    try {
      return await new Promise<any[]>((resolve, reject) => {
        call.on("data", (m: any) => {
          got.push(m);
          if (got.length === stopAfter) {
            call.cancel();
            resolve(got);
          }
        });
        call.on("end", () => resolve(got));
        call.on("error", (e: ServiceError) => (e.code === 1 ? resolve(got) : reject(e)));
        for (const r of requests) call.write(r);
        if (stopAfter === undefined) call.end();
      });
    } finally {
      c.close();
    }
  }

  it("relays a decoupled model's stream through a worker: every response in order, then the final flag", async () => {
    const msgs = await stream([n(40), n(3)]);
    const outputs = msgs.filter((m) => m.infer_response?.raw_output_contents?.length).map(outOf);
    expect(outputs).toEqual([...Array.from({ length: 40 }, (_, i) => i), 0, 1, 2]);
    expect(msgs.filter((m) => m.error_message)).toEqual([]);
  });

  it("a stream's in-band error for an unknown model, and the stream goes on", async () => {
    const msgs = await stream([{ model_name: "nope" }, n(2)]);
    expect(msgs[0].error_message).toBe("Request for unknown model: 'nope' is not found");
    expect(
      msgs
        .slice(1)
        .filter((m) => m.infer_response?.raw_output_contents?.length)
        .map(outOf),
    ).toEqual([0, 1]);
  });

  const canceled = async (model: string) => {
    const text = await (await fetch(`${other.metricsUrl}/metrics`)).text();
    return Number(new RegExp(`^nv_inference_request_failure\\{model="${model}",version="1",reason="CANCELED"\\} (\\d+)`, "m").exec(text)?.[1]);
  };

  it("a client that cancels a stream on a worker cancels its request on the main thread", async () => {
    expect(await canceled("drip")).toBe(0);
    await stream([{ ...n(1), model_name: "drip" }], 3);
    for (let i = 0; i < 200 && (await canceled("drip")) !== 1; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await canceled("drip")).toBe(1);
  });

  it("a ModelInfer deadline passing on a worker cancels the request on the main thread", async () => {
    expect(await canceled("hold")).toBe(0);
    const { client } = inferenceClient(other.grpcTarget!);
    const err = await new Promise<ServiceError | null>((resolve) =>
      (client as any).ModelInfer({ ...n(1), model_name: "hold" }, { deadline: Date.now() + 300 }, (e: ServiceError | null) => resolve(e)),
    );
    client.close();
    expect(err?.code).toBe(4); // DEADLINE_EXCEEDED
    for (let i = 0; i < 200 && (await canceled("hold")) !== 1; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await canceled("hold")).toBe(1);
  });

  it("ModelInfer: an unknown model before a malformed request, a decoupled model refused, exact sums", async () => {
    const { client, call } = inferenceClient(other.grpcTarget!);
    try {
      const bad = { model_name: "nope", inputs: [{ name: "X", datatype: "NOPE", shape: [1] }] };
      await expect(call("ModelInfer")(bad)).rejects.toMatchObject({ code: 5, details: "Request for unknown model: 'nope' is not found" });
      await expect(call("ModelInfer")(n(1))).rejects.toMatchObject({
        code: 12,
        details: "ModelInfer RPC doesn't support models with decoupled transaction policy",
      });
      const a = new Uint8Array(Int32Array.from({ length: 16 }, (_, i) => i).buffer);
      const simple = {
        model_name: "simple",
        inputs: [
          { name: "INPUT0", datatype: "INT32", shape: [1, 16] },
          { name: "INPUT1", datatype: "INT32", shape: [1, 16] },
        ],
        raw_input_contents: [a, a],
      };
      const r = await call("ModelInfer")(simple);
      expect([...new Int32Array(new Uint8Array(r.raw_output_contents[0]).buffer)]).toEqual(Array.from({ length: 16 }, (_, i) => 2 * i));
    } finally {
      client.close();
    }
  });

  it("large tensors (moved to the main thread by transfer) come back exactly, over gRPC and HTTP binary, many at once", async () => {
    const n = (16 * 1024 * 1024) / 4;
    const x = new Float32Array(n).map((_, i) => Math.sin(i) * 1e3);
    const { client, call } = inferenceClient(other.grpcTarget!);
    try {
      const r = await call("ModelInfer")({
        model_name: "fp32_identity",
        inputs: [{ name: "X", datatype: "FP32", shape: [n] }],
        raw_input_contents: [new Uint8Array(x.buffer)],
      });
      expect(Buffer.compare(Buffer.from(r.raw_output_contents[0]), Buffer.from(x.buffer))).toBe(0);
      // 1 MB tensors, each different, 8 at once on each protocol: each answer is its own request's.
      const m = 262_144;
      const xs = Array.from({ length: 8 }, (_, k) => new Float32Array(m).map((_, i) => i * 0.5 + k));
      const header = JSON.stringify({
        inputs: [{ name: "X", shape: [m], datatype: "FP32", parameters: { binary_data_size: m * 4 } }],
        outputs: [{ name: "Y", parameters: { binary_data: true } }],
      });
      const [grpcAnswers, httpAnswers] = await Promise.all([
        Promise.all(
          xs.map((v) =>
            call("ModelInfer")({
              model_name: "fp32_identity",
              inputs: [{ name: "X", datatype: "FP32", shape: [m] }],
              raw_input_contents: [new Uint8Array(v.buffer)],
            }).then((a) => Buffer.from(a.raw_output_contents[0])),
          ),
        ),
        Promise.all(
          xs.map(async (v) => {
            const res = await fetch(`${other.url}/v2/models/fp32_identity/infer`, {
              method: "POST",
              headers: { "Inference-Header-Content-Length": String(header.length) },
              body: Buffer.concat([Buffer.from(header), Buffer.from(v.buffer)]),
            });
            const body = Buffer.from(await res.arrayBuffer());
            return body.subarray(Number(res.headers.get("inference-header-content-length")));
          }),
        ),
      ]);
      xs.forEach((v, k) => {
        expect(Buffer.compare(grpcAnswers[k]!, Buffer.from(v.buffer))).toBe(0);
        expect(Buffer.compare(httpAnswers[k]!, Buffer.from(v.buffer))).toBe(0);
      });
    } finally {
      client.close();
    }
  }, 60_000);

  it("--grpc-restricted-protocol is checked in the worker: UNAVAILABLE without the header, served with it", async () => {
    const { client, call } = inferenceClient(other.grpcTarget!);
    try {
      await expect(call("RepositoryIndex")({})).rejects.toMatchObject({ code: 14, details: "This protocol is restricted, expecting header 'admin-key'" });
      const md = new Metadata();
      md.set("triton-grpc-protocol-admin-key", "yes");
      const index = await new Promise<any>((resolve, reject) =>
        (client as any).RepositoryIndex({}, md, (err: ServiceError | null, res: unknown) => (err ? reject(err) : resolve(res))),
      );
      expect(index.models.map((m: { name: string }) => m.name).sort()).toEqual(["count", "drip", "fp32_identity", "hold", "simple"]);
    } finally {
      client.close();
    }
  });
});
