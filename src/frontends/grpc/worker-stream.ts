/**
 * @module ModelStreamInfer in a gRPC frontend worker (#30): the stream's requests for the
 * models of the worker's table (none of them decoupled) are run here and answered in
 * request order, as stream.ts answers an ordinary model's requests on the main thread;
 * one the worker cannot run just now (its runs at the limit, its version retired, shared
 * memory it cannot borrow, or chosen for a trace: the main thread traces it) has the main
 * thread's core answer it in its place in that order (never a sequence-batched version's:
 * a traced one is not in the table). The first request that is none of these (a model
 * outside the table, a decoupled one among them; any while a newer table is on its way;
 * sequence parameters the worker leaves to the main thread; a message that does not
 * convert, whose error the main thread reports in Triton's order) hands the stream to the
 * main thread's handler, stream.ts, from there on, once every answer of the worker's own
 * has been written: the responses come in an order one thread gives, and a sequence's
 * requests reach its model in the order sent. A request so handed on starts only then,
 * where on one thread it starts when it arrives.
 */
import type { ServerDuplexStream } from "@grpc/grpc-js";
import { ServerError } from "../../core/errors.ts";
import { LocalAbort } from "../../core/cancel.ts";
import type { InferenceRequest, InferenceResponse, StreamedResponse } from "../../core/request.ts";
import { isRetired } from "../../server/direct-runner.ts";
import { toInferenceRequest, type WireInferRequest } from "./convert.ts";
import { emptyFinalAsked, StreamCall } from "./stream.ts";
import { isUndecodable, type Undecodable } from "./protos.ts";
import type { HeaderForwarder } from "../header-forward.ts";

type Call = ServerDuplexStream<WireInferRequest, unknown>;

/** The main thread's stream handler serving a stream from some message on (worker-entry.ts relays its messages). */
export interface StreamRelay {
  data(msg: WireInferRequest): void;
  halfClose(): void;
}

/** What the worker gives a stream: its table's runner, the main thread's core, and the main thread's stream handler. */
export interface StreamHost {
  /** Runs `request` here (DirectRunner.run), or undefined when the worker does not. */
  run(model: string, version: string | undefined, request: InferenceRequest): Promise<InferenceResponse> | undefined;
  /** Whether the worker's table lists the model's version (so none of its requests is decoupled), and `request` carries no sequence parameters. */
  listed(model: string, version: string | undefined, request: InferenceRequest): boolean;
  /** Has the main thread's core answer `request` (ModelInfer's relay); `cancel` settles it as cancelled. */
  onMain(model: string, version: string | undefined, request: InferenceRequest): { answer: Promise<StreamedResponse>; cancel(): void };
  /** Opens the main thread's handler of `call` (its metadata goes with it). */
  relay(call: Call): StreamRelay;
}

export function workerStream(call: Call, host: StreamHost, forward: HeaderForwarder): void {
  const stream = new StreamCall(call);
  /** Set by the first message left to the main thread's handler: the messages that wait for the worker's own answers, then the relay. */
  let handed: { waiting: WireInferRequest[]; halfClosed: boolean; relay?: StreamRelay } | undefined;

  /**
   * The main thread's core answers `request` in its place; the stream's cancel settles it.
   * It answers as ModelInfer does: should the model have been swapped for a decoupled
   * version meanwhile (the run retired), the request is refused where one thread would
   * stream its responses.
   */
  const onMain = (model: string, version: string | undefined, request: InferenceRequest): Promise<StreamedResponse> => {
    // A request retired after the stream was cancelled is not started again.
    if (stream.gone) return Promise.resolve({ error: new ServerError("CANCELLED", "the stream was cancelled"), final: true });
    const { answer, cancel } = host.onMain(model, version, request);
    return answer.finally(stream.onCancel(cancel));
  };

  /** `msg`'s one response, from here or the main thread's core; undefined when the stream goes to the main thread's handler. */
  const answer = (msg: WireInferRequest): Promise<StreamedResponse> | undefined => {
    let request: InferenceRequest;
    try {
      request = toInferenceRequest(msg);
      forward?.(request.parameters);
    } catch {
      return undefined;
    }
    const model = msg.model_name ?? "";
    const version = msg.model_version || undefined;
    // Cancelled with the stream (S-20): only this thread's schedulers and instances listen (a LocalAbort, as ModelInfer's).
    const controller = new LocalAbort();
    request.signal = controller.signal;
    const run = host.run(model, version, request);
    if (!run) {
      delete request.signal;
      return host.listed(model, version, request) ? onMain(model, version, request) : undefined;
    }
    const forget = stream.onCancel(() => controller.abort());
    return run.then(
      (response): StreamedResponse | Promise<StreamedResponse> => {
        forget();
        return { response, final: true };
      },
      (err: unknown) => {
        forget();
        delete request.signal;
        return isRetired(err) ? onMain(model, version, request) : { error: ServerError.from(err), final: true };
      },
    );
  };

  /** Leaves the stream to the main thread's handler from `msg` on, once the worker's own answers are written. */
  const hand = (msg: WireInferRequest) => {
    const h: NonNullable<typeof handed> = { waiting: [msg], halfClosed: false };
    handed = h;
    // Nothing more is read meanwhile (a client that does not read its answers would otherwise pile messages here).
    const release = stream.holdReading();
    void (async () => {
      await stream.settled();
      if (stream.gone) return;
      const relay = host.relay(call);
      for (const m of h.waiting) relay.data(m);
      h.waiting = [];
      h.relay = relay;
      if (h.halfClosed) relay.halfClose();
      release();
    })();
  };

  call.on("data", (msg: WireInferRequest | Undecodable) => {
    if (stream.closed) return;
    if (handed) {
      // The main thread's handler ends the call at a message that did not decode, as it would here.
      if (handed.relay) handed.relay.data(msg as WireInferRequest);
      else handed.waiting.push(msg as WireInferRequest);
      return;
    }
    if (isUndecodable(msg)) return stream.undecodable();
    const first = answer(msg);
    if (!first) return hand(msg);
    // Written after the responses of the requests before it, as stream.ts writes an ordinary model's.
    stream.track(stream.inOrder(msg, first, emptyFinalAsked(msg)));
  });

  call.on("end", () => {
    if (!handed) return void stream.endWhenDone();
    if (handed.relay) handed.relay.halfClose();
    else handed.halfClosed = true;
  });
}
