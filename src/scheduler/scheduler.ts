/**
 * @module The Scheduler seam between a model and its instances. Triton's schedulers
 * (default, dynamic batch, sequence batch, ensemble) each implement it.
 *
 * Ownership: enqueue() takes the prepared request; the scheduler settles the returned
 * promise exactly once, with the outputs of that request alone or with a ServerError.
 */
import type { PreparedRequest } from "../core/request-validate.ts";
import type { Tensor } from "../core/tensor.ts";
import type { Parameters } from "../core/request.ts";

export interface ScheduledResult {
  outputs: Tensor[];
  /** Response parameters the model set (per-request backends: typescript). */
  parameters?: Parameters;
  queueNs: number;
  computeInputNs: number;
  computeInferNs: number;
  computeOutputNs: number;
}

export interface Scheduler {
  enqueue(request: PreparedRequest): Promise<ScheduledResult>;
  /** Requests accepted and not yet settled. */
  inflightCount(): number;
  /** Requests waiting for an instance. */
  pendingCount(): number;
  /** Stops accepting work; resolves when everything in flight has settled. */
  stop(): Promise<void>;
}
