/**
 * ModelStreamInfer in a gRPC frontend worker (src/frontends/grpc/worker-stream.ts, #30),
 * with a stand-in call and host: responses written in request order whatever order the
 * runs end in; a request the worker cannot run just then answered by the main thread's
 * core in its place, a retired one too; the first request for another model hands the
 * rest of the stream to the main thread's handler only once the worker's own answers are
 * written (a half-close meanwhile goes after them, a cancel meanwhile opens nothing); a
 * cancel aborts the worker's runs and the main thread's; triton_grpc_error mode ends the
 * call with the first error's status; reading pauses while too many requests are pending,
 * and while a hand-over waits.
 */
import { EventEmitter } from "node:events";
import { describe, expect, it } from "vitest";
import { Metadata, type ServerDuplexStream } from "@grpc/grpc-js";
import { workerStream, type StreamHost, type StreamRelay } from "../../../src/frontends/grpc/worker-stream.ts";
import { MAX_STREAM_PENDING } from "../../../src/frontends/grpc/stream.ts";
import { ServerError } from "../../../src/core/errors.ts";
import { RETIRED } from "../../../src/server/direct-runner.ts";
import type { InferenceRequest, InferenceResponse, StreamedResponse } from "../../../src/core/request.ts";
import type { WireInferRequest } from "../../../src/frontends/grpc/convert.ts";

const turn = () => new Promise((r) => setImmediate(r));

/** A duplex call that records what is written to it and how it ends. */
class FakeCall extends EventEmitter {
  cancelled = false;
  metadata = new Metadata();
  written: string[] = [];
  ended = false;
  status: string | undefined;
  /** Whether the server reads the call's next messages. */
  reading = true;
  pause(): this {
    this.reading = false;
    return this;
  }
  resume(): this {
    this.reading = true;
    return this;
  }
  write(message: any): boolean {
    const r = message.infer_response;
    this.written.push(
      message.error_message ? `${r.id} error ${message.error_message}` : `${r.id} ${r.model_name} ${r.parameters.triton_final_response.bool_param}`,
    );
    return true;
  }
  end(): void {
    this.ended = true;
  }
  override emit(event: string | symbol, ...args: unknown[]): boolean {
    if (event === "error") this.status = `${(args[0] as { code: number }).code} ${(args[0] as { details: string }).details}`;
    return super.emit(event, ...args);
  }
}

/** Request `id` for `model` as the wire carries it. */
const msg = (id: string, model = "m"): WireInferRequest =>
  ({ id, model_name: model, inputs: [{ name: "X", datatype: "INT32", shape: [1] }], raw_input_contents: [new Uint8Array(4)] }) as unknown as WireInferRequest;

const response = (request: InferenceRequest): InferenceResponse => ({ id: request.id, modelName: request.modelName, modelVersion: "1", outputs: [] });

/**
 * A host whose runs the test settles by hand: model "m" runs here, "busy" is listed but not
 * run here just now (the main thread's core answers it), anything else is not listed.
 */
function fakeHost() {
  const events: string[] = [];
  const runs = new Map<string, { resolve: (r: InferenceResponse) => void; reject: (e: unknown) => void; request: InferenceRequest }>();
  const onMain = new Map<string, (r: StreamedResponse) => void>();
  const relayed: string[] = [];
  const host: StreamHost = {
    run: (model, _version, request) => {
      if (model !== "m") return undefined;
      events.push(`run ${request.id}`);
      return new Promise((resolve, reject) => runs.set(request.id!, { resolve, reject, request }));
    },
    listed: (model) => model === "m" || model === "busy",
    onMain: (_model, _version, request) => {
      events.push(`main ${request.id}`);
      return {
        answer: new Promise<StreamedResponse>((resolve) => onMain.set(request.id!, resolve)),
        cancel: () => {
          events.push(`cancel main ${request.id}`);
          onMain.get(request.id!)?.({ error: new ServerError("CANCELLED", "cancelled"), final: true });
        },
      };
    },
    relay: (): StreamRelay => {
      events.push("relay opened");
      return { data: (m) => relayed.push(m.id ?? ""), halfClose: () => relayed.push("half-close") };
    },
  };
  const answer = (id: string) => runs.get(id)!.resolve(response(runs.get(id)!.request));
  return { host, events, runs, onMain, relayed, answer };
}

function stream(h: ReturnType<typeof fakeHost>, errorMode = false) {
  const call = new FakeCall();
  if (errorMode) call.metadata.set("triton_grpc_error", "true");
  workerStream(call as unknown as ServerDuplexStream<WireInferRequest, unknown>, h.host, undefined);
  return call;
}

describe("a ModelStreamInfer stream served in a gRPC worker", () => {
  it("writes the responses in request order whatever order the runs end in, then ends the call after the client's half-close", async () => {
    const h = fakeHost();
    const call = stream(h);
    for (const id of ["a", "b", "c"]) call.emit("data", msg(id));
    call.emit("end");
    h.answer("c");
    h.answer("b");
    await turn();
    expect(call.written).toEqual([]);
    h.answer("a");
    await turn();
    expect(call.written).toEqual(["a m true", "b m true", "c m true"]);
    expect(call.ended).toBe(true);
  });

  it("has the main thread's core answer a listed request it cannot run just then, and a retired one, each in its place", async () => {
    const h = fakeHost();
    const call = stream(h);
    call.emit("data", msg("a"));
    call.emit("data", msg("b", "busy"));
    call.emit("data", msg("c"));
    call.emit("data", msg("d"));
    h.runs.get("c")!.reject(RETIRED);
    h.runs.get("d")!.reject(new ServerError("INVALID_ARG", "bad input"));
    await turn();
    expect(h.events).toEqual(["run a", "main b", "run c", "run d", "main c"]);
    h.onMain.get("c")!({ response: { id: "c", modelName: "m", modelVersion: "2", outputs: [] }, final: true });
    h.answer("a");
    await turn();
    expect(call.written).toEqual(["a m true"]);
    h.onMain.get("b")!({ error: new ServerError("UNAVAILABLE", "busy"), final: true });
    await turn();
    expect(call.written).toEqual(["a m true", "b error busy", "c m true", "d error bad input"]);
  });

  it("hands the stream to the main thread's handler at a model it does not list, once its own answers are written", async () => {
    const h = fakeHost();
    const call = stream(h);
    call.emit("data", msg("a"));
    call.emit("data", msg("x", "other"));
    call.emit("data", msg("y"));
    call.emit("end");
    await turn();
    // "y" is not run here: everything from "x" on is the main thread's.
    expect(h.events).toEqual(["run a"]);
    expect(h.relayed).toEqual([]);
    h.answer("a");
    await turn();
    await turn();
    expect(call.written).toEqual(["a m true"]);
    expect(h.events).toEqual(["run a", "relay opened"]);
    expect(h.relayed).toEqual(["x", "y", "half-close"]);
    // The main thread's handler ends the call; the worker does not.
    expect(call.ended).toBe(false);
    call.emit("data", msg("z"));
    expect(h.relayed).toEqual(["x", "y", "half-close", "z"]);
  });

  it(`stops reading at ${MAX_STREAM_PENDING} requests pending (a client that sends without reading), and reads on once half are written`, async () => {
    const h = fakeHost();
    const call = stream(h);
    for (let i = 0; i < MAX_STREAM_PENDING - 1; i++) call.emit("data", msg(`r${i}`));
    expect(call.reading).toBe(true);
    call.emit("data", msg(`r${MAX_STREAM_PENDING - 1}`));
    expect(call.reading).toBe(false);
    for (let i = 0; i < MAX_STREAM_PENDING / 2 - 1; i++) h.answer(`r${i}`);
    await turn();
    await turn();
    expect(call.written).toHaveLength(MAX_STREAM_PENDING / 2 - 1);
    expect(call.reading).toBe(false);
    h.answer(`r${MAX_STREAM_PENDING / 2 - 1}`);
    await turn();
    await turn();
    expect(call.reading).toBe(true);
  });

  it("stops reading while a hand-over waits for the worker's answers, and reads on once the relay has the waiting messages", async () => {
    const h = fakeHost();
    const call = stream(h);
    call.emit("data", msg("a"));
    call.emit("data", msg("x", "other"));
    expect(call.reading).toBe(false);
    h.answer("a");
    await turn();
    await turn();
    expect(h.relayed).toEqual(["x"]);
    expect(call.reading).toBe(true);
  });

  it("a cancel aborts the worker's runs and the main thread's, and opens no relay for a hand-over still waiting", async () => {
    const h = fakeHost();
    const call = stream(h);
    call.emit("data", msg("a"));
    call.emit("data", msg("b", "busy"));
    call.emit("data", msg("x", "other"));
    const signal = h.runs.get("a")!.request.signal!;
    call.cancelled = true;
    call.emit("cancelled");
    expect(signal.aborted).toBe(true);
    expect(h.events).toEqual(["run a", "main b", "cancel main b"]);
    h.answer("a");
    await turn();
    await turn();
    expect(call.written).toEqual([]);
    expect(h.events).not.toContain("relay opened");
    // Nothing more is taken.
    call.emit("data", msg("c"));
    expect(h.events).toEqual(["run a", "main b", "cancel main b"]);
  });

  it("in triton_grpc_error mode ends the call with the first error's status, after the answers before it", async () => {
    const h = fakeHost();
    const call = stream(h, true);
    call.emit("data", msg("a"));
    call.emit("data", msg("b"));
    call.emit("data", msg("c"));
    h.runs.get("b")!.reject(new ServerError("INVALID_ARG", "bad input"));
    h.answer("c");
    await turn();
    expect(call.status).toBeUndefined();
    h.answer("a");
    await turn();
    await turn();
    expect(call.written).toEqual(["a m true"]);
    expect(call.status).toBe("3 bad input");
  });
});
