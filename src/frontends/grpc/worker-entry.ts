/**
 * @module One gRPC frontend worker thread (see worker-protocol.ts): grpc-js on the shared
 * port (SO_REUSEPORT), ModelInfer converted here in both directions, ModelStreamInfer
 * served here while its requests are for the worker's table, the health RPCs answered
 * here, every other call relayed to the main thread. Started by workers.ts from a URL, and
 * bundled into the compiled binary as an entry point of its own (scripts/build.ts).
 */
import { status, type Metadata, type sendUnaryData, type ServerDuplexStream, type ServerUnaryCall, type UntypedServiceImplementation } from "@grpc/grpc-js";
import { listenGrpcServices, type GrpcListener, type GrpcListenOptions } from "./server.ts";
import { fromInferenceResponse, toInferenceRequest, type WireInferRequest } from "./convert.ts";
import { forwarded } from "./service.ts";
import { grpcError, grpcStatus } from "./status.ts";
import { grpcRoot } from "./protos.ts";
import { ServerError } from "../../core/errors.ts";
import { LocalAbort } from "../../core/cancel.ts";
import type { InferenceRequest, StreamedResponse } from "../../core/request.ts";
import { workerDirectRunner } from "../worker-threads.ts";
import { serveThread } from "../../core/threads/serve.ts";
import { inputBuffers } from "../../core/threads/transfer.ts";
import { fromWireError, wireError, type WireError } from "../../core/threads/wire-error.ts";
import { hasSequenceParameters, isRetired } from "../../server/direct-runner.ts";
import { workerStream, type StreamHost, type StreamRelay } from "./worker-stream.ts";
import { MAX_STREAM_PENDING } from "./stream.ts";
import { turnEnd } from "../answer-turn.ts";
import type { FromGrpcWorker, GrpcWorkerConfig, ToGrpcWorker, WireMetadata } from "./worker-protocol.ts";
import { SharedHealth, type Health } from "../../server/shared-health.ts";
import { healthCheckReply, serverLiveReply, serverReadyReply } from "./health-replies.ts";

const { post, postNow } = serveThread<ToGrpcWorker, FromGrpcWorker>(receive, { batch: true });

type Answer = Extract<ToGrpcWorker, { t: "response" | "failed" | "reply" | "status" }>;

/** Unary calls waiting for the main thread, by id. */
const pending = new Map<number, (a: Answer) => void>();
/** Streams the main thread serves, by id. */
const streams = new Map<number, ServerDuplexStream<unknown, unknown>>();
/** Those streams' counts of requests relayed and not yet settled there (relayStream). */
const relayed = new Map<number, { settled(): void }>();
let nextId = 0;
let listener: GrpcListener | undefined;
/** Requests of streams served here: their failures go back in-band and are not logged (as the main thread's stream handler does not log them). */
const streamed = new WeakSet<InferenceRequest>();
// Failures logged as the one-thread handlers log them: ModelInfer's INTERNAL errors only (toGrpcError), a stream's none.
const direct = workerDirectRunner(post, (_model, request, e) => (e.code !== "INTERNAL" || streamed.has(request) ? undefined : "ModelInfer"));

function receive(m: ToGrpcWorker): void {
  switch (m.t) {
    case "start":
      void start(m.config);
      return;
    case "stop":
      void stop();
      return;
    case "models":
    case "recordBatches":
    case "flush":
    case "port":
    case "ended":
    case "batch":
    case "stepped":
      direct.receive(m);
      return;
    case "write":
      // Acknowledged once grpc-js has sent it (HTTP/2 flow control allowing): the main thread's SendWindow.
      streams.get(m.id)?.write(m.message, () => post({ t: "ack", id: m.id, count: 1 }));
      return;
    case "settled":
      relayed.get(m.id)?.settled();
      return;
    case "end": {
      const s = streams.get(m.id);
      streams.delete(m.id);
      relayed.delete(m.id);
      s?.end();
      return;
    }
    case "status": {
      const s = streams.get(m.id);
      if (s) {
        // The main thread's stream handler ended the call with a status.
        streams.delete(m.id);
        relayed.delete(m.id);
        s.emit("error", grpcError(m.status.code, m.status.details));
        return;
      }
      break;
    }
  }
  const answer = pending.get(m.id);
  pending.delete(m.id);
  answer?.(m as Answer);
}

const wireMetadata = (md: Metadata): WireMetadata => Object.entries(md.getMap()).map(([k, v]) => [k, typeof v === "string" ? v : new Uint8Array(v)]);
const errorOf = (e: WireError) => grpcError(grpcStatus(e.code), e.message);

async function start(c: GrpcWorkerConfig): Promise<void> {
  try {
    const tls = c.listen.tls;
    const opts: GrpcListenOptions = {
      ...c.listen,
      reusePort: true,
      // Buffers arrive as plain Uint8Arrays; grpc-js's TLS wants Buffers.
      ...(tls ? { tls: { ...tls, cert: Buffer.from(tls.cert), key: Buffer.from(tls.key), root: tls.root ? Buffer.from(tls.root) : null } } : {}),
    };
    const local = c.health ? healthReplies(new SharedHealth(c.health)) : undefined;
    const inference: UntypedServiceImplementation = {};
    for (const method of c.inferenceMethods) {
      inference[method] =
        method === "ModelInfer"
          ? modelInfer(opts.headerForward)
          : method === "ModelStreamInfer"
            ? modelStreamInfer(opts.headerForward)
            : (local?.inference[method] ?? relayUnary("inference", method));
    }
    const health: UntypedServiceImplementation = {};
    for (const method of c.healthMethods) health[method] = local?.health[method] ?? relayUnary("health", method);
    listener = await listenGrpcServices({ inference, health }, opts);
    postNow({ t: "listening", port: listener.port });
    // The protos are reflected now that the start no longer waits for it, rather than in the first call.
    setTimeout(() => {
      try {
        grpcRoot();
      } catch {
        // The first call that needs the protos reports it.
      }
    }, 0);
  } catch (err) {
    postNow({ t: "startFailed", message: (err as Error).message });
  }
}

async function stop(): Promise<void> {
  await listener?.close();
  postNow({ t: "stopped" });
}

/** Posts `m` (with `transfer`) and calls `answer` with the main thread's reply; a client's cancel is posted on. */
function ask(id: number, call: ServerUnaryCall<unknown, unknown>, m: FromGrpcWorker, answer: (a: Answer) => void, transfer?: ArrayBuffer[]): void {
  const onCancel = () => {
    if (pending.delete(id)) post({ t: "cancel", id });
  };
  call.once("cancelled", onCancel);
  pending.set(id, (a) => {
    call.removeListener("cancelled", onCancel);
    answer(a);
  });
  post(m, transfer);
  // A call cancelled before it got here (during a run the worker began itself) is cancelled there too.
  if (call.cancelled) onCancel();
}

/** The health RPCs answered here from the server's health, without a message to the main thread (#30). */
function healthReplies(h: SharedHealth): { inference: UntypedServiceImplementation; health: UntypedServiceImplementation } {
  const reply = (fn: (health: Health) => unknown) => (_call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) =>
    callback(null, fn(h.read()));
  return { inference: { ServerLive: reply(serverLiveReply), ServerReady: reply(serverReadyReply) }, health: { Check: reply(healthCheckReply) } };
}

/** A unary RPC the main thread's handler (service.ts) answers. */
function relayUnary(service: "inference" | "health", method: string) {
  return (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => {
    const id = nextId++;
    ask(id, call, { t: "unary", id, service, method, request: call.request, metadata: wireMetadata(call.metadata) }, (a) => {
      if (a.t === "reply") callback(null, a.value);
      else if (a.t === "status") callback(grpcError(a.status.code, a.status.details));
      else callback(grpcError(status.INTERNAL, `unexpected answer '${a.t}' to ${method}`));
    });
  };
}

/**
 * ModelInfer: the request converted here, run by the main thread's core, the response
 * converted here. A request that does not convert goes to the main thread whole, which
 * reports an unknown model before a malformed request, as Triton does.
 */
function modelInfer(headerForward: RegExp | undefined) {
  const relay = relayUnary("inference", "ModelInfer");
  return (call: ServerUnaryCall<WireInferRequest, unknown>, callback: sendUnaryData<unknown>) => {
    const msg = call.request;
    let request: InferenceRequest;
    try {
      request = toInferenceRequest(msg);
      forwarded(headerForward, call.metadata)?.(request.parameters);
    } catch {
      relay(call as ServerUnaryCall<unknown, unknown>, callback);
      return;
    }
    const answer = (a: Answer) => {
      if (a.t === "failed") return callback(errorOf(a.error));
      if (a.t !== "response") return callback(grpcError(status.INTERNAL, `unexpected answer '${a.t}' to ModelInfer`));
      let out: unknown;
      try {
        out = fromInferenceResponse(a.response);
      } catch (err) {
        const e = ServerError.from(err);
        return callback(grpcError(grpcStatus(e.code), e.message));
      }
      callback(null, out);
    };
    const toMain = () => {
      const id = nextId++;
      const m: FromGrpcWorker = { t: "infer", id, model: msg.model_name ?? "", ...(msg.model_version ? { version: msg.model_version } : {}), request };
      ask(id, call as ServerUnaryCall<unknown, unknown>, m, answer, inputBuffers(request));
    };
    // The call cancelled (by the client, its deadline or a dropped connection) cancels a run
    // here as on the main thread (S-20): a request queued on the scheduling thread or waiting
    // for a TypeScript instance leaves, counted CANCELED. A LocalAbort: only this thread's
    // schedulers and instances listen to it (1.4 µs less per call than an AbortController).
    const controller = new LocalAbort();
    const cancel = () => controller.abort();
    call.once("cancelled", cancel);
    request.signal = controller.signal;
    const here = direct.runner.run(msg.model_name ?? "", msg.model_version || undefined, request);
    const settled = () => {
      call.removeListener("cancelled", cancel);
      delete request.signal;
    };
    if (!here) {
      settled();
      return toMain();
    }
    here.then(
      (response) => {
        settled();
        const turn = turnEnd();
        if (turn) void turn.then(() => answer({ t: "response", id: -1, response }));
        else answer({ t: "response", id: -1, response });
      },
      (err: unknown) => {
        settled();
        if (isRetired(err)) toMain();
        else answer({ t: "failed", id: -1, error: wireError(err) });
      },
    );
  };
}

/**
 * ModelStreamInfer: served here while its requests are for the worker's table
 * (worker-stream.ts); from the first that is not, the stream's messages are relayed both
 * ways and the main thread's stream handler (stream.ts) serves it.
 */
function modelStreamInfer(headerForward: RegExp | undefined) {
  const host: StreamHost = {
    run: (model, version, request) => {
      streamed.add(request);
      return direct.runner.run(model, version, request);
    },
    listed: (model, version, request) => direct.runner.lists(model, version) && !hasSequenceParameters(request),
    onMain: (model, version, request) => {
      const id = nextId++;
      let settle: (r: StreamedResponse) => void = () => {};
      const answer = new Promise<StreamedResponse>((resolve) => (settle = resolve));
      pending.set(id, (a) =>
        settle(
          a.t === "response"
            ? { response: a.response, final: true }
            : {
                error: a.t === "failed" ? fromWireError(a.error) : new ServerError("INTERNAL", `unexpected answer '${a.t}' to a stream's request`),
                final: true,
              },
        ),
      );
      const m: FromGrpcWorker = { t: "infer", id, model, ...(version ? { version } : {}), request, streamed: true };
      post(m, inputBuffers(request));
      const cancel = () => {
        if (!pending.delete(id)) return;
        post({ t: "cancel", id });
        settle({ error: new ServerError("CANCELLED", "the stream was cancelled"), final: true });
      };
      return { answer, cancel };
    },
    relay: (call) => relayStream(call as ServerDuplexStream<unknown, unknown>),
  };
  return (call: ServerDuplexStream<WireInferRequest, unknown>) => workerStream(call, host, forwarded(headerForward, call.metadata));
}

/**
 * Relays stream `call`'s messages to the main thread's stream handler from now on, and its
 * answers back. Reading pauses while MAX_STREAM_PENDING relayed requests have not settled
 * there, until half of them have (the bound stream.ts keeps on a stream it reads itself).
 */
function relayStream(call: ServerDuplexStream<unknown, unknown>): StreamRelay {
  const id = nextId++;
  streams.set(id, call);
  let pending = 0;
  let paused = false;
  relayed.set(id, {
    settled: () => {
      pending--;
      if (paused && pending <= MAX_STREAM_PENDING / 2) {
        paused = false;
        call.resume();
      }
    },
  });
  post({ t: "open", id, metadata: wireMetadata(call.metadata) });
  call.on("cancelled", () => {
    relayed.delete(id);
    if (streams.delete(id)) post({ t: "cancel", id });
  });
  return {
    data: (request) => {
      post({ t: "data", id, request });
      if (++pending >= MAX_STREAM_PENDING && !paused) {
        paused = true;
        call.pause();
      }
    },
    halfClose: () => post({ t: "halfClose", id }),
  };
}
