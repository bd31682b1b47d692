/**
 * @module ModelStreamInfer (Triton's ModelStreamInferHandler): each request on the
 * stream goes to the server's streaming entry. An ordinary model's one response is
 * written in request order; a decoupled model's responses are written as they come.
 * Every response carries `triton_final_response`; a decoupled request's response-less
 * final goes out only when it asked for `triton_enable_empty_final_response`. Errors
 * travel in-band (error_message) and the stream stays open. When the client cancels the
 * call, every request still running on it has its signal aborted.
 */
import type { ServerDuplexStream } from "@grpc/grpc-js";
import { ServerError } from "../../core/errors.ts";
import { toGrpcError } from "./status.ts";
import { toInferenceRequest, fromInferenceResponse, type WireInferRequest } from "./convert.ts";
import type { InferenceServer, ResolvedModel } from "../../server/server.ts";
import type { StreamedResponse } from "../../core/request.ts";
import type { HeaderForwarder } from "../header-forward.ts";

type Call = ServerDuplexStream<WireInferRequest, unknown>;

/** The model a stream message names, or why it names none (reported as that message's error). */
function resolveFor(server: InferenceServer, msg: WireInferRequest): ResolvedModel | ServerError {
  try {
    return server.resolve(msg.model_name ?? "", msg.model_version || undefined);
  } catch (err) {
    return ServerError.from(err);
  }
}

/** One request's responses: its own errors (decoding, unknown model) as one final error. */
async function* responsesOf(
  server: InferenceServer,
  msg: WireInferRequest,
  model: ResolvedModel | ServerError,
  signal: AbortSignal,
  forward: HeaderForwarder,
): AsyncGenerator<StreamedResponse> {
  let events: AsyncGenerator<StreamedResponse>;
  try {
    if (model instanceof ServerError) throw model;
    const request = toInferenceRequest(msg);
    forward?.(request.parameters);
    request.signal = signal;
    events = server.inferStream(request, model);
  } catch (err) {
    yield { error: ServerError.from(err), final: true };
    return;
  }
  yield* events;
}

/** Whether the request asked for a decoupled request's response-less final (`triton_enable_empty_final_response`). */
export function emptyFinalAsked(msg: WireInferRequest): boolean {
  const p = (msg.parameters as Record<string, { bool_param?: boolean }> | undefined)?.triton_enable_empty_final_response;
  return p?.bool_param === true;
}

/** Triton's triton_grpc_error mode (client metadata `triton_grpc_error: true`): the first error ends the stream with its gRPC status instead of travelling in-band. */
export const grpcErrorMode = (call: Call): boolean => call.metadata.get("triton_grpc_error")[0] === "true";

/** The stream message that carries `r`, one of the responses to `msg`; none for a response-less final nobody asked for. */
export function streamMessage(msg: WireInferRequest, r: StreamedResponse, emptyFinal: boolean): unknown {
  const header = { id: msg.id ?? "", model_name: msg.model_name ?? "", model_version: msg.model_version ?? "" };
  if (r.error) return { error_message: r.error.message, infer_response: header };
  if (r.response) return { error_message: "", infer_response: fromInferenceResponse(r.response, { triton_final_response: r.final }) };
  if (r.final && emptyFinal) return { error_message: "", infer_response: { ...header, parameters: { triton_final_response: { bool_param: true } } } };
  return undefined;
}

export function streamInfer(server: InferenceServer, call: Call, forward?: HeaderForwarder): void {
  let ordered: Promise<void> = Promise.resolve();
  const running = new Set<Promise<void>>();
  const controllers = new Set<AbortController>();
  let gone = false;

  const abortAll = () => {
    gone = true;
    for (const c of controllers) c.abort();
  };
  call.on("cancelled", abortAll);
  call.on("error", abortAll);
  const errorMode = grpcErrorMode(call);

  /** In triton_grpc_error mode: ends the call with `error`'s status and stops every request on it. */
  const fail = (error: ServerError) => {
    if (gone) return;
    abortAll();
    call.emit("error", toGrpcError(error));
  };

  /** Writes one message, waiting for the transport to drain when its buffer is full. */
  const write = async (message: unknown) => {
    if (gone || call.cancelled) return;
    if (!call.write(message)) await new Promise<void>((resolve) => call.once("drain", resolve));
  };

  call.on("data", (msg: WireInferRequest) => {
    const controller = new AbortController();
    controllers.add(controller);
    const model = resolveFor(server, msg);
    const events = responsesOf(server, msg, model, controller.signal, forward);
    const emptyFinal = emptyFinalAsked(msg);
    let work: Promise<void>;
    if (!(model instanceof ServerError) && model.decoupled) {
      work = (async () => {
        for await (const r of events) {
          if (r.error && errorMode) return fail(r.error);
          const m = streamMessage(msg, r, emptyFinal);
          if (m !== undefined) await write(m);
        }
      })();
    } else {
      // One response; written after the responses of the requests before it.
      const first = events.next();
      const previous = ordered;
      work = ordered = (async () => {
        const r = await first;
        await previous;
        if (!r.done) {
          if (r.value.error && errorMode) return fail(r.value.error);
          const m = streamMessage(msg, r.value, emptyFinal);
          if (m !== undefined) await write(m);
        }
      })();
    }
    const done = work
      .catch(() => undefined)
      .finally(() => {
        controllers.delete(controller);
        running.delete(done);
      });
    running.add(done);
  });

  call.on("end", () => {
    void (async () => {
      while (running.size > 0) await Promise.all(running);
      if (!gone) call.end();
    })();
  });
}
