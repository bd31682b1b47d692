/**
 * A ModelStreamInfer stream on which a message does not decode (G-02, G-09): the requests
 * before it are answered, in order, and then the call ends with INTERNAL "Error
 * deserializing request"; nothing after it is read. grpc-js decodes a message as soon as
 * it arrives and ends the call at once, so in a frontend worker, whose answers come a few
 * turns later, the answers of the valid requests before it were dropped, where one thread
 * running the model inline had written them already (a difference between thread counts the
 * fuzz suite's streams showed). Through the binary on one thread and on 2 gRPC workers, on
 * a stream the worker answers itself and on one it hands to the main thread.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process.ts";
import { rawGrpcClient } from "../../fuzz/grpc-gen.ts";
import { messageType } from "../../../src/frontends/grpc/protos.ts";

const Request = messageType("inference.ModelInferRequest");
const Response = messageType("inference.ModelStreamInferResponse");

const i32 = (xs: number[]) => new Uint8Array(Int32Array.from(xs).buffer);
function simple(id: string, add: number): Uint8Array {
  return Request.encode(
    Request.fromObject({
      id,
      model_name: "simple",
      inputs: [
        { name: "INPUT0", datatype: "INT32", shape: [1, 16] },
        { name: "INPUT1", datatype: "INT32", shape: [1, 16] },
      ],
      raw_input_contents: [i32(Array.from({ length: 16 }, (_, i) => i)), i32(Array(16).fill(add))],
    }),
  ).finish();
}
/** Not a ModelInferRequest: field 31, wire type 7 (no such wire type). */
const GARBAGE = new Uint8Array([0xff, 0xff, 0xff]);
/** A model no thread has: the worker hands the stream to the main thread's handler from here on. */
const UNKNOWN = Request.encode(Request.fromObject({ id: "unknown", model_name: "nope" })).finish();

/** Each response of a stream as [id, error_message, OUTPUT0's first value]. */
function read(stream: Uint8Array[] = []) {
  return stream.map((b) => {
    const r = Response.toObject(Response.decode(b), { longs: Number }) as {
      error_message?: string;
      infer_response?: { id?: string; outputs?: { name: string }[]; raw_output_contents?: Uint8Array[] };
    };
    const raw = r.infer_response?.raw_output_contents?.[0];
    return [r.infer_response?.id ?? "", r.error_message ?? "", raw ? new Int32Array(Uint8Array.from(raw).buffer)[1] : undefined];
  });
}

describe.each([
  ["2 gRPC worker threads", "--grpc-infer-thread-count=2"],
  ["one gRPC thread", "--grpc-infer-thread-count=1"],
])("a message that does not decode on a stream, %s", (_name, threads) => {
  let server: ServerProcess;
  let client: ReturnType<typeof rawGrpcClient>;
  beforeAll(async () => {
    server = await startServerProcess(["--model-repository=model_repository", "--model-control-mode=explicit", "--load-model=simple", threads]);
    client = rawGrpcClient(server.grpcTarget!);
  }, 60_000);
  afterAll(async () => {
    client?.close();
    await server?.stop();
  });

  it("answers the requests before it in order, then ends with INTERNAL; the one after it is not read", async () => {
    for (let round = 0; round < 5; round++) {
      const a = await client.stream([simple("a", 1), simple("b", 2), GARBAGE, simple("c", 3)], 10_000);
      expect(read(a.stream)).toEqual([
        ["a", "", 2],
        ["b", "", 3],
      ]);
      expect([a.code, a.details]).toEqual([13, "Error deserializing request"]);
    }
  });

  it("a stream that begins with one answers nothing", async () => {
    const a = await client.stream([GARBAGE, simple("a", 1)], 10_000);
    expect([read(a.stream), a.code, a.details]).toEqual([[], 13, "Error deserializing request"]);
  });

  it("on a stream handed to the main thread's handler, the same", async () => {
    const a = await client.stream([UNKNOWN, simple("a", 1), GARBAGE, simple("c", 3)], 10_000);
    expect(read(a.stream)).toEqual([
      ["unknown", "Request for unknown model: 'nope' is not found", undefined],
      ["a", "", 2],
    ]);
    expect([a.code, a.details]).toEqual([13, "Error deserializing request"]);
  });

  it("keeps serving, and logs no error for the client's message", async () => {
    const a = await client.stream([simple("z", 5)], 10_000);
    expect([read(a.stream), a.code]).toEqual([[["z", "", 6]], 0]);
    expect(server.log()).not.toMatch(/^E.*deserializ/im);
  });
});
