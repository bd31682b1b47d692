/**
 * @module ModelStreamInfer (Triton's ModelStreamInferHandler): each request on the
 * stream goes to the server's streaming entry. An ordinary model's one response is
 * written in request order; a decoupled model's responses are written as they come.
 * Every response carries `triton_final_response`; a decoupled request's response-less
 * final goes out only when it asked for `triton_enable_empty_final_response`. Errors
 * travel in-band (error_message) and the stream stays open. When the client cancels the
 * call, every request still running on it has its signal aborted.
 */
import { status, type ServerDuplexStream } from "@grpc/grpc-js";
import { ServerError } from "../../core/errors.ts";
import { isUndecodable, UNDECODABLE_DETAILS, type Undecodable } from "./protos.ts";
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
const grpcErrorMode = (call: Call): boolean => call.metadata.get("triton_grpc_error")[0] === "true";

/** The stream message that carries `r`, one of the responses to `msg`; none for a response-less final nobody asked for. */
function streamMessage(msg: WireInferRequest, r: StreamedResponse, emptyFinal: boolean): unknown {
  const header = { id: msg.id ?? "", model_name: msg.model_name ?? "", model_version: msg.model_version ?? "" };
  if (r.error) return { error_message: r.error.message, infer_response: header };
  if (r.response) return { error_message: "", infer_response: fromInferenceResponse(r.response, { triton_final_response: r.final }) };
  if (r.final && emptyFinal) return { error_message: "", infer_response: { ...header, parameters: { triton_final_response: { bool_param: true } } } };
  return undefined;
}

/**
 * A stream a frontend worker relays to this thread (grpc/workers.ts RelayedStream): told when
 * each request on it settles, so that the worker, which reads the client's messages, stops
 * reading at MAX_STREAM_PENDING requests not yet settled here.
 */
export interface RelayedCallSide {
  settled(): void;
}

/**
 * Requests one stream may have taken and not yet answered (running, or answered and waiting
 * for the client to read earlier answers) before the server stops reading its next ones:
 * reading goes on once half of them are written (Nereid's bound; Triton's handler has none).
 * A client that sends without reading holds at most these, not every request it sends.
 */
export const MAX_STREAM_PENDING = 256;

/**
 * One ModelStreamInfer call as the stream handlers (this one and a frontend worker's,
 * worker-stream.ts) serve it: the requests running on it, cancelled when the client
 * cancels or the call fails; responses written as they come or in request order, each
 * write waiting for the transport to drain; in triton_grpc_error mode the call ended with
 * the first error's status; the call ended once every request on it is done; reading
 * paused while MAX_STREAM_PENDING requests are pending on it.
 */
export class StreamCall {
  readonly #call: Call;
  readonly #errorMode: boolean;
  readonly #cancels = new Set<() => void>();
  readonly #running = new Set<Promise<void>>();
  #ordered: Promise<void> = Promise.resolve();
  #gone = false;
  /** A message did not decode: nothing more is taken, and the call ends with its status once the requests before it are answered. */
  #ending = false;
  /** Paused for MAX_STREAM_PENDING; and how many others hold the reading paused (holdReading). */
  #paused = false;
  #holds = 0;

  constructor(call: Call) {
    this.#call = call;
    this.#errorMode = grpcErrorMode(call);
    const abortAll = () => this.#abortAll();
    call.on("cancelled", abortAll);
    call.on("error", abortAll);
  }

  /** Whether the call is over for the server (cancelled, failed, or ended with an error's status): nothing more is taken. */
  get gone(): boolean {
    return this.#gone;
  }

  /** Whether the call takes no more requests: gone, or ending after a message that did not decode. */
  get closed(): boolean {
    return this.#gone || this.#ending;
  }

  /**
   * A message did not decode (protos.ts Undecodable): the call reads nothing more and, once
   * every request before it is answered, ends with INTERNAL "Error deserializing request",
   * the status grpc-js gives, without logging it (the client's fault, not the server's).
   */
  undecodable(): void {
    if (this.closed) return;
    this.#ending = true;
    this.holdReading();
    void this.settled().then(() => {
      if (this.#gone) return;
      this.#abortAll();
      this.#call.emit("error", { code: status.INTERNAL, details: UNDECODABLE_DETAILS });
    });
  }

  /** Calls `cancel` if the call goes before the returned function is called (at once if it has gone). */
  onCancel(cancel: () => void): () => void {
    if (this.#gone) cancel();
    this.#cancels.add(cancel);
    return () => this.#cancels.delete(cancel);
  }

  #abortAll(): void {
    this.#gone = true;
    for (const cancel of [...this.#cancels]) cancel();
  }

  /** Writes `r`, one of `msg`'s responses (in triton_grpc_error mode an error ends the call instead); false once the call is ended. */
  async send(msg: WireInferRequest, r: StreamedResponse, emptyFinal: boolean): Promise<boolean> {
    if (r.error && this.#errorMode) {
      this.#fail(r.error);
      return false;
    }
    const m = streamMessage(msg, r, emptyFinal);
    if (m !== undefined) await this.#write(m);
    return true;
  }

  /** Sends `msg`'s one response (none: nothing) after the responses of the requests before it. */
  inOrder(msg: WireInferRequest, first: Promise<StreamedResponse | undefined>, emptyFinal: boolean): Promise<void> {
    const previous = this.#ordered;
    this.#ordered = (async () => {
      const r = await first;
      // A response before it that failed to go out does not hold this one back.
      await previous.catch(() => undefined);
      if (r) await this.send(msg, r, emptyFinal);
    })();
    return this.#ordered;
  }

  /**
   * Counts `work` among the requests pending on the call until it settles, then calls
   * `done`; at MAX_STREAM_PENDING the call's reading pauses, until half of them are done.
   */
  track(work: Promise<void>, done?: () => void): void {
    const settled: Promise<void> = work
      .catch(() => undefined)
      .finally(() => {
        done?.();
        this.#running.delete(settled);
        (this.#call as Partial<RelayedCallSide>).settled?.();
        if (this.#paused && this.#running.size <= MAX_STREAM_PENDING / 2) {
          this.#paused = false;
          if (this.#holds === 0) this.#call.resume();
        }
      });
    this.#running.add(settled);
    if (!this.#paused && this.#running.size >= MAX_STREAM_PENDING) {
      this.#paused = true;
      if (this.#holds === 0) this.#call.pause();
    }
  }

  /** Pauses the call's reading until the returned function is called (once). */
  holdReading(): () => void {
    if (this.#holds++ === 0 && !this.#paused) this.#call.pause();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.#holds === 0 && !this.#paused) this.#call.resume();
    };
  }

  /** Resolves once no request runs on the call. */
  async settled(): Promise<void> {
    while (this.#running.size > 0) await Promise.all(this.#running);
  }

  /** Ends the call once no request runs on it (unless it is gone). */
  async endWhenDone(): Promise<void> {
    await this.settled();
    if (!this.#gone && !this.#ending) this.#call.end();
  }

  /** In triton_grpc_error mode: ends the call with `error`'s status and stops every request on it. */
  #fail(error: ServerError): void {
    if (this.#gone) return;
    this.#abortAll();
    this.#call.emit("error", toGrpcError(error));
  }

  /** Writes one message, waiting for the transport to drain when its buffer is full. */
  async #write(message: unknown): Promise<void> {
    if (this.#gone || this.#call.cancelled) return;
    if (!this.#call.write(message)) await new Promise<void>((resolve) => this.#call.once("drain", resolve));
  }
}

export function streamInfer(server: InferenceServer, call: Call, forward?: HeaderForwarder): void {
  const stream = new StreamCall(call);
  call.on("data", (msg: WireInferRequest | Undecodable) => {
    if (stream.closed) return;
    if (isUndecodable(msg)) return stream.undecodable();
    const controller = new AbortController();
    const forget = stream.onCancel(() => controller.abort());
    const model = resolveFor(server, msg);
    const events = responsesOf(server, msg, model, controller.signal, forward);
    const emptyFinal = emptyFinalAsked(msg);
    if (!(model instanceof ServerError) && model.decoupled) {
      const work = (async () => {
        for await (const r of events) if (!(await stream.send(msg, r, emptyFinal))) return;
      })();
      stream.track(work, forget);
    } else {
      // One response; written after the responses of the requests before it.
      const first = events.next().then((r) => (r.done ? undefined : r.value));
      stream.track(stream.inOrder(msg, first, emptyFinal), forget);
    }
  });
  call.on("end", () => void stream.endWhenDone());
}
