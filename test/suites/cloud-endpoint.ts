/**
 * The shared suite of the single-endpoint cloud frontends (#17): SageMaker's /invocations
 * and Vertex AI's AIP_PREDICT_ROUTE. Both take Triton's JSON and Triton's binary tensors
 * under their own content type (`application/vnd.<service>-triton.binary+json;
 * json-header-size=<n>`, answered the same way, with no Inference-Header-Content-Length),
 * and answer errors in Triton's shape. sagemaker.test.ts and vertex-ai.test.ts run it
 * against the compiled binary.
 *
 * The endpoint must infer on the example model `simple` (its default model). Also here:
 * the `params` model both files load to see which headers reach a model.
 */
import { describe, it, expect } from "vitest";

export interface EndpointTarget {
  /** POSTs `body` to the endpoint's inference route (the default model, `simple`). */
  invoke(body: string | Uint8Array | undefined, headers?: Record<string, string>): Promise<Response>;
  /** The binary content type up to and with `json-header-size=`. */
  binaryMime: string;
}

/** A model that answers its request parameters, to see which headers were forwarded; X = -1 makes it fail. */
export const PARAMS_MODEL = `
export default class Params {
  execute(requests) {
    if (requests.some((r) => r.input("X").data[0] === -1)) throw new Error("the model failed on X = -1");
    return requests.map((r) => ({ outputs: [{ name: "PARAMS", datatype: "BYTES", shape: [1], data: [JSON.stringify(r.parameters)] }] }));
  }
}
`;
export const PARAMS_CONFIG = `name: "params"
backend: "typescript"
max_batch_size: 0
input [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "PARAMS" data_type: TYPE_STRING dims: [ 1 ] } ]
`;

/** The request parameters `params` saw for a request to `url` (X = 1) sent with header `x-fwd-user: alice` and `headers`. */
export async function forwardedParams(url: string, headers: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "x-fwd-user": "alice", ...headers },
    body: JSON.stringify({ inputs: [{ name: "X", shape: [1], datatype: "INT32", data: [1] }] }),
  });
  expect(res.status).toBe(200);
  return JSON.parse(((await res.json()) as { outputs: { data: string[] }[] }).outputs[0]!.data[0]!);
}

const A = Array.from({ length: 16 }, (_, i) => i);
const B = Array(16).fill(3);
/** A request to `simple` (INPUT0 in JSON as given). */
const simpleBody = (input0: object = { shape: [1, 16], datatype: "INT32", data: A }) =>
  JSON.stringify({
    inputs: [
      { name: "INPUT0", ...input0 },
      { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: B },
    ],
  });
/** `simple`'s answer to simpleBody(), byte for byte. */
export const SIMPLE_ANSWER = {
  model_name: "simple",
  model_version: "1",
  outputs: [
    { name: "OUTPUT0", datatype: "INT32", shape: [1, 16], data: A.map((a) => a + 3) },
    { name: "OUTPUT1", datatype: "INT32", shape: [1, 16], data: A.map((a) => a - 3) },
  ],
};
export const SIMPLE_BODY = simpleBody();

export function endpointSuite(label: string, target: () => EndpointTarget): void {
  describe(`endpoint suite: ${label}`, () => {
    const invoke: EndpointTarget["invoke"] = (body, headers) => target().invoke(body, headers);

    it("infers on the default model with Triton's JSON", async () => {
      const res = await invoke(SIMPLE_BODY, { "content-type": "application/json" });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("application/json");
      expect(await res.json()).toEqual(SIMPLE_ANSWER);
    });

    it("takes and gives binary data under its own content type", async () => {
      const header = JSON.stringify({
        inputs: [
          { name: "INPUT0", shape: [1, 16], datatype: "INT32", parameters: { binary_data_size: 64 } },
          { name: "INPUT1", shape: [1, 16], datatype: "INT32", parameters: { binary_data_size: 64 } },
        ],
        outputs: [{ name: "OUTPUT1", parameters: { binary_data: true } }],
      });
      const body = Buffer.concat([Buffer.from(header), Buffer.from(new Int32Array(A).buffer), Buffer.from(new Int32Array(B).buffer)]);
      const { binaryMime } = target();
      const res = await invoke(body, { "content-type": `${binaryMime}${Buffer.byteLength(header)}` });
      expect(res.status).toBe(200);
      const type = res.headers.get("content-type")!;
      expect(type.startsWith(binaryMime)).toBe(true);
      const n = Number(type.slice(binaryMime.length));
      expect(type).toBe(`${binaryMime}${n}`);
      expect(res.headers.get("inference-header-content-length")).toBeNull();
      const bytes = Buffer.from(await res.arrayBuffer());
      expect(JSON.parse(bytes.subarray(0, n).toString())).toEqual({
        model_name: "simple",
        model_version: "1",
        outputs: [{ name: "OUTPUT1", datatype: "INT32", shape: [1, 16], parameters: { binary_data_size: 64 } }],
      });
      expect(bytes.byteLength).toBe(n + 64);
      expect([...new Int32Array(bytes.buffer.slice(bytes.byteOffset + n, bytes.byteOffset + n + 64))]).toEqual(A.map((a) => a - 3));
    });

    it("refuses a malformed binary content type with Triton's messages", async () => {
      const { binaryMime } = target();
      const send = async (type: string) => {
        const res = await invoke("{}", { "content-type": type });
        return { status: res.status, json: await res.json() };
      };
      expect(await send(`text/x;${binaryMime}4`)).toEqual({
        status: 400,
        json: { error: `expect MIME type for binary data starts with '${binaryMime}', got: text/x;${binaryMime}4` },
      });
      expect(await send(`${binaryMime}abc`)).toEqual({ status: 400, json: { error: "Unable to parse inference header size, got: abc" } });
      expect(await send(`${binaryMime}3`)).toEqual({ status: 400, json: { error: "inference header size should be in range (0, 2), got: 3" } });
    });

    it("answers a request the model refuses with Triton's error shape and 400", async () => {
      const refused = async (input0: object) => {
        const res = await invoke(simpleBody(input0));
        expect(res.headers.get("content-type")).toBe("application/json");
        return { status: res.status, json: await res.json() };
      };
      expect(await refused({ shape: [1, 16], datatype: "FP32", data: A })).toEqual({
        status: 400,
        json: { error: "inference input 'INPUT0' data-type is 'FP32', but model 'simple' expects 'INT32'" },
      });
      expect(await refused({ shape: [1, 15], datatype: "INT32", data: A.slice(1) })).toEqual({
        status: 400,
        json: {
          error:
            "unexpected shape for input 'INPUT0' for model 'simple'. Expected [-1,16], got [1,15]. NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to be prepended to each input shape. If you want to specify the full shape including the batch dim in your input dims config, try setting max_batch_size to zero. See the model configuration docs for more info on max_batch_size.",
        },
      });
    });
  });
}
