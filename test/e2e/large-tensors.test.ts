/**
 * Issue #29, large tensors through the compiled server: the BYTES element limit answers
 * the same on every protocol (HTTP JSON, HTTP binary, gRPC typed contents, gRPC
 * raw_input_contents); 2^20 BYTES elements, now decoded, run and encoded in slices, come
 * back exact on each; a JSON output over --http-max-input-size is refused naming it
 * (binary data is not bounded), one under it is written in slices with exact values; a
 * TypeScript model that puts a string into an FP32 output gets an error naming the model
 * and the output, not NaN. All of it with the frontends on the main thread and on worker
 * threads.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { startServerProcess, type ServerProcess } from "../helpers/server-process.ts";
import { makeRepository } from "../helpers/repo.ts";
import { inferenceClient, type ServiceError } from "../helpers/grpc-client.ts";
import { joinBytes } from "../../src/core/tensor.ts";

const MAX_INPUT = 16 * 1024 * 1024;
let server: ServerProcess;
let repo: ReturnType<typeof makeRepository>;
let grpc: ReturnType<typeof inferenceClient>;

beforeAll(async () => {
  repo = makeRepository(["simple_identity"]);
  repo.add(
    "big_output/config.pbtxt",
    'name: "big_output"\nbackend: "typescript"\nmax_batch_size: 0\ninput [ { name: "N" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "Y" data_type: TYPE_FP32 dims: [ -1 ] } ]\n',
  );
  repo.add(
    "big_output/1/model.ts",
    `export default class BigOutput {
  execute(requests: any[]) {
    return requests.map((r) => {
      const n = r.input("N").data[0];
      const y = new Float32Array(n);
      for (let i = 0; i < n; i++) y[i] = (i % 1000) / 8;
      return { outputs: [{ name: "Y", datatype: "FP32", shape: [n], data: y }] };
    });
  }
}
`,
  );
  repo.add(
    "string_in_fp32/config.pbtxt",
    'name: "string_in_fp32"\nbackend: "typescript"\nmax_batch_size: 0\ninput [ { name: "N" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "Y" data_type: TYPE_FP32 dims: [ 1 ] } ]\n',
  );
  repo.add(
    "string_in_fp32/1/model.ts",
    `export default class StringInFp32 {
  execute(requests: any[]) {
    return requests.map(() => ({ outputs: [{ name: "Y", datatype: "FP32", shape: [1], data: ["a"] }] }));
  }
}
`,
  );
}, 90_000);

afterAll(() => repo?.remove());

const enc = new TextEncoder();
/**
 * POSTs an inference. A keep-alive connection the server closed as the request began (its
 * 10 s idle timeout, when checking the previous 2^20-element answer took the client that
 * long on a loaded machine) fails before any answer (EPIPE, ECONNRESET, or undici's "other
 * side closed"): that one is sent again, on a new connection.
 */
async function post(model: string, body: string | Uint8Array, headers: Record<string, string> = {}): Promise<Response> {
  const send = () => fetch(`${server.url}/v2/models/${model}/infer`, { method: "POST", body, headers });
  try {
    return await send();
  } catch (err) {
    const code = ((err as Error).cause as { code?: string } | undefined)?.code;
    if (code !== "EPIPE" && code !== "ECONNRESET" && code !== "UND_ERR_SOCKET") throw err;
    return send();
  }
}

/** A body of JSON header then binary data, with its Inference-Header-Content-Length. */
function binaryBody(header: object, data: Uint8Array): { body: Uint8Array; headers: Record<string, string> } {
  const head = enc.encode(JSON.stringify(header));
  const body = new Uint8Array(head.byteLength + data.byteLength);
  body.set(head);
  body.set(data, head.byteLength);
  return { body, headers: { "inference-header-content-length": String(head.byteLength) } };
}

/** The binary part of a response with binary data after its JSON. */
async function binaryPart(res: Response): Promise<{ json: any; data: Uint8Array }> {
  const all = new Uint8Array(await res.arrayBuffer());
  const n = Number(res.headers.get("inference-header-content-length"));
  return { json: JSON.parse(new TextDecoder().decode(all.subarray(0, n))), data: all.subarray(n) };
}

async function grpcError(p: Promise<unknown>): Promise<{ code: number; details: string }> {
  const err = (await p.then(
    () => undefined,
    (e: ServiceError) => e,
  ))!;
  expect(err).toBeDefined();
  return { code: err.code, details: err.details };
}

// The same answers with the frontends' converters on worker threads (src/frontends/*/worker-entry.ts).
// Both counts are given: the default follows the host's cores (the main thread on one core).
describe.each([
  ["main thread", ["--http-thread-count=1", "--grpc-infer-thread-count=1"]],
  ["worker threads", ["--http-thread-count=2", "--grpc-infer-thread-count=2"]],
])("frontends on the %s", (_, flags) => {
  beforeAll(async () => {
    server = await startServerProcess([`--model-repository=${repo.dir}`, `--http-max-input-size=${MAX_INPUT}`, ...flags], { timeoutMs: 60_000 });
    grpc = inferenceClient(server.grpcTarget!);
  }, 90_000);

  afterAll(async () => {
    grpc?.client.close();
    await server?.stop();
  });

  describe("the BYTES element limit: one answer on every protocol", () => {
    const n = 2 ** 20 + 1;
    const message = `input 'INPUT0' has ${n} BYTES elements (shape [1,${n}]), more than the 1048576 one BYTES input may have`;
    const empty = new Uint8Array(n * 4); // n empty strings, serialized

    it("HTTP JSON → 400", async () => {
      const res = await post("simple_identity", JSON.stringify({ inputs: [{ name: "INPUT0", datatype: "BYTES", shape: [1, n], data: Array(n).fill("") }] }));
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: message });
    });

    it("HTTP binary → 400", async () => {
      const { body, headers } = binaryBody(
        { inputs: [{ name: "INPUT0", datatype: "BYTES", shape: [1, n], parameters: { binary_data_size: empty.byteLength } }] },
        empty,
      );
      const res = await post("simple_identity", body, headers);
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: message });
    });

    it("gRPC raw_input_contents → INVALID_ARGUMENT (it used to be accepted)", async () => {
      const r = await grpcError(
        grpc.call("ModelInfer")({ model_name: "simple_identity", inputs: [{ name: "INPUT0", datatype: "BYTES", shape: [1, n] }], raw_input_contents: [empty] }),
      );
      expect(r).toEqual({ code: 3, details: message });
    });

    it("gRPC typed bytes_contents → INVALID_ARGUMENT", async () => {
      const none = new Uint8Array(0);
      const r = await grpcError(
        grpc.call("ModelInfer")({
          model_name: "simple_identity",
          inputs: [{ name: "INPUT0", datatype: "BYTES", shape: [1, n], contents: { bytes_contents: Array(n).fill(none) } }],
        }),
      );
      expect(r).toEqual({ code: 3, details: message });
    });
  });

  describe("2^20 BYTES elements come back exact on every protocol", () => {
    const n = 2 ** 20;
    // Empty, escaped, multi-byte, long (copied whole) and plain elements.
    const strings = Array.from({ length: n }, (_, i) => (i % 997 === 0 ? "" : i % 13 === 0 ? `q"\\\n${i}` : i % 101 === 0 ? `é${i}`.padEnd(80, "ü") : `s${i}`));
    const serialized = joinBytes(strings.map((s) => enc.encode(s)));

    it("HTTP JSON in, JSON out", async () => {
      const res = await post("simple_identity", JSON.stringify({ inputs: [{ name: "INPUT0", datatype: "BYTES", shape: [1, n], data: strings }] }));
      expect(res.status).toBe(200);
      const out = ((await res.json()) as { outputs: { name: string; shape: number[]; data: string[] }[] }).outputs[0]!;
      expect(out.shape).toEqual([1, n]);
      expect(out.data).toEqual(strings);
    });

    it("HTTP binary in, binary out", async () => {
      const { body, headers } = binaryBody(
        {
          inputs: [{ name: "INPUT0", datatype: "BYTES", shape: [1, n], parameters: { binary_data_size: serialized.byteLength } }],
          parameters: { binary_data_output: true },
        },
        serialized,
      );
      const res = await post("simple_identity", body, headers);
      expect(res.status).toBe(200);
      const { json, data } = await binaryPart(res);
      expect(json.outputs[0].parameters.binary_data_size).toBe(serialized.byteLength);
      expect(Buffer.compare(data, serialized)).toBe(0);
    });

    it("gRPC raw_input_contents and typed bytes_contents", async () => {
      const raw = await grpc.call("ModelInfer")({
        model_name: "simple_identity",
        inputs: [{ name: "INPUT0", datatype: "BYTES", shape: [1, n] }],
        raw_input_contents: [serialized],
      });
      expect(raw.outputs[0].shape.map(Number)).toEqual([1, n]);
      expect(Buffer.compare(raw.raw_output_contents[0], serialized)).toBe(0);
      const typed = await grpc.call("ModelInfer")({
        model_name: "simple_identity",
        inputs: [{ name: "INPUT0", datatype: "BYTES", shape: [1, n], contents: { bytes_contents: strings.map((s) => enc.encode(s)) } }],
      });
      expect(Buffer.compare(typed.raw_output_contents[0], serialized)).toBe(0);
    });
  });

  describe("JSON outputs are bounded by --http-max-input-size", () => {
    const request = (n: number, binary = false) =>
      JSON.stringify({
        inputs: [{ name: "N", datatype: "INT32", shape: [1], data: [n] }],
        ...(binary ? { outputs: [{ name: "Y", parameters: { binary_data: true } }] } : {}),
      });
    const expected = (n: number) => Float32Array.from({ length: n }, (_, i) => (i % 1000) / 8);

    it("over the bound as JSON → 400 naming the output and model; as binary data → 200 with every byte", async () => {
      const n = 5_000_000; // 20 MB of FP32, over 16 MiB
      const res = await post("big_output", request(n));
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({
        error: `output 'Y' of model 'big_output' has ${n * 4} bytes of data, more than the ${MAX_INPUT} bytes one JSON output may have (--http-max-input-size); request it as binary data (binary_data: true) instead`,
      });
      const bin = await post("big_output", request(n, true));
      expect(bin.status).toBe(200);
      const { data } = await binaryPart(bin);
      expect(Buffer.compare(data, new Uint8Array(expected(n).buffer))).toBe(0);
    });

    it("under the bound: written in slices, every value exact", async () => {
      const n = 1_000_000;
      const res = await post("big_output", request(n));
      expect(res.status).toBe(200);
      const out = ((await res.json()) as { outputs: { data: number[] }[] }).outputs[0]!;
      expect(out.data).toEqual(Array.from(expected(n)));
    });
  });

  describe("a number output holding a string", () => {
    const message = `model 'string_in_fp32' returned a bad output 'Y': element 0 of its data is "a", not a number (datatype FP32)`;

    it("HTTP → 500 naming the model and the output", async () => {
      const res = await post("string_in_fp32", JSON.stringify({ inputs: [{ name: "N", datatype: "INT32", shape: [1], data: [1] }] }));
      expect(res.status).toBe(500);
      expect(await res.json()).toEqual({ error: message });
    });

    it("gRPC → INTERNAL with the same message", async () => {
      const r = await grpcError(
        grpc.call("ModelInfer")({ model_name: "string_in_fp32", inputs: [{ name: "N", datatype: "INT32", shape: [1], contents: { int_contents: [1] } }] }),
      );
      expect(r).toEqual({ code: 13, details: message });
    });
  });
});

// #29: JSON.parse of a large body runs in one piece, so on the main thread it held every
// other request for as long; a JSON part of 4 MiB or more is decoded on a thread of its own.
// The decode thread serves the main thread's HTTP frontend; a worker thread decodes its own
// bodies off the main thread already, so this runs the single-thread path (--http-thread-count=1).
describe("large JSON bodies on the decode thread (frontends on the main thread)", () => {
  beforeAll(async () => {
    server = await startServerProcess([`--model-repository=${repo.dir}`, `--http-max-input-size=${MAX_INPUT}`, "--log-verbose=1", "--http-thread-count=1"], {
      timeoutMs: 60_000,
    });
  }, 90_000);

  afterAll(async () => {
    await server?.stop();
  });

  const long = "x".repeat(5 * 1024 * 1024);

  it("a 5 MiB JSON body comes back exact, decoded on the decode thread", async () => {
    const strings = [long, "", 'é"\\\n', "s3"];
    const res = await post("simple_identity", JSON.stringify({ id: "big", inputs: [{ name: "INPUT0", datatype: "BYTES", shape: [1, 4], data: strings }] }));
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { id: string; model_name: string; outputs: { shape: number[]; data: string[] }[] };
    expect([doc.id, doc.model_name, doc.outputs[0]!.shape]).toEqual(["big", "simple_identity", [1, 4]]);
    expect(doc.outputs[0]!.data).toEqual(strings);
    expect(server.log()).toMatch(/started the decode thread for JSON bodies of 4194304 bytes or more/);
  });

  it("decoding errors there are the same answers as on the main thread, naming the model", async () => {
    // Data that does not fit the shape; binary data shorter than its binary_data_size.
    const shape = (pad: string) =>
      post("simple_identity", JSON.stringify({ id: pad, inputs: [{ name: "INPUT0", datatype: "BYTES", shape: [1, 2], data: ["a"] }] }));
    const short = (pad: string) => {
      const { body, headers } = binaryBody(
        { id: pad, inputs: [{ name: "INPUT0", datatype: "BYTES", shape: [1, 1], parameters: { binary_data_size: 9 } }] },
        new Uint8Array([1, 0, 0, 0, 65]),
      );
      return post("simple_identity", body, headers);
    };
    for (const send of [shape, short]) {
      const [small, large] = [await send("x"), await send(long)];
      expect([small.status, large.status]).toEqual([400, 400]);
      expect(await large.json()).toEqual(await small.json());
    }
    const again = (await (await short(long)).json()) as { error: string };
    expect(again.error).toBe("unexpected size for input 'INPUT0', expecting 4 additional bytes for model 'simple_identity'");
  });
});
