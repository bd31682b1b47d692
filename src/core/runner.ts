/**
 * @module The server's inference entry as code inside the server calls it (#31): an
 * ensemble's steps and a model's BLS calls (the typescript and python backends). The
 * server implements it; the repository receives it at construction and hands it to every
 * load (the ensemble scheduler, and each backend through its load context).
 */
import { unavailable } from "./errors.ts";
import type { InferenceRequest, InferenceResponse, StreamedResponse } from "./request.ts";

export interface ModelRunner {
  /** One request made inside the server: its one response (validation, scheduler, cache, statistics as for a client's). */
  inferStep(request: InferenceRequest): Promise<InferenceResponse>;
  /** One request made inside the server, its responses as they come (a decoupled model's 0..N, the last one final). */
  inferStepStream(request: InferenceRequest): AsyncIterable<StreamedResponse>;
}

/**
 * The runner handed to the repository and the backends before the server exists (the
 * server is built on the repository): it forwards to the server once bound, exactly once,
 * and refuses a call before (UNAVAILABLE).
 */
export class LateRunner implements ModelRunner {
  #target: ModelRunner | undefined;

  /** Binds the runner to the server; a second bind is a programming error. */
  bind(target: ModelRunner): void {
    if (this.#target) throw new Error("the model runner is already bound");
    this.#target = target;
  }

  inferStep(request: InferenceRequest): Promise<InferenceResponse> {
    const target = this.#target;
    return target ? target.inferStep(request) : Promise.reject(notBound());
  }

  inferStepStream(request: InferenceRequest): AsyncIterable<StreamedResponse> {
    const target = this.#target;
    if (!target) throw notBound();
    return target.inferStepStream(request);
  }
}

const notBound = () => unavailable("the server is not running yet: no model may call another before it starts");
