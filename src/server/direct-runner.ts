/**
 * @module The models a frontend worker thread runs itself (#30), the worker's half (the
 * main thread's is direct-models.ts). For a version in the table it does what the main
 * thread's core does for a default-scheduled model: validate the request against the
 * config (Triton's order and wording), run a borrowed instance, put the outputs in the
 * order and shapes asked for, and record the statistics, which go to the main thread
 * in batches. A request it cannot answer exactly as the main thread would (control
 * parameters, shared memory, classification, a version not in its table or just
 * retired) is left to the main thread: run() returns undefined.
 */
import { nowNs } from "../core/clock.ts";
import { ServerError, cancelled } from "../core/errors.ts";
import { prepareForInference } from "../core/request-validate.ts";
import { signatureOf, type ModelSignature } from "../core/signature.ts";
import { orderedOutputs } from "../core/outputs.ts";
import { FAILURE_REASONS, type FailureReason } from "../core/stats.ts";
import { borrowInstance } from "../backends/borrow.ts";
import { QueuedBytes } from "../core/queued-bytes.ts";
import { FAILURE, routeKey, SUCCESS, type DirectEntry, type DirectTable } from "./direct-table.ts";
import type { InferenceRequest, InferenceResponse, Parameters } from "../core/request.ts";
import type { BorrowedInstance } from "../backends/backend.ts";

/** Keys that make a request the main thread's (the scheduler or the server reads them). */
const CONTROL_KEYS = ["sequence_id", "sequence_start", "sequence_end", "priority", "timeout"];
/** Runs one worker keeps going at once before it hands more to the main thread (which queues them). */
export const MAX_DIRECT_IN_FLIGHT = 32;

interface Served {
  entry: DirectEntry;
  signature: ModelSignature;
  /** Borrowed on first use, one per instance of the owner. */
  instances: (BorrowedInstance | undefined)[];
  next: number;
}

export class DirectRunner {
  readonly #served = new Map<number, Served>();
  #routes = new Map<string, number>();
  #records: number[] = [];
  #inFlight = 0;
  /** The server's --max-queued-bytes count, shared with the main thread, once a table brought it. */
  #queued: QueuedBytes | undefined;
  readonly #flushSoon: () => void;
  readonly #onError: (e: ServerError, model: string) => void;

  /**
   * `flushSoon` is called when the first record of a batch is taken: the worker posts
   * take() within the turn. `onError` sees every failure the main thread would log.
   */
  constructor(flushSoon: () => void, onError: (e: ServerError, model: string) => void) {
    this.#flushSoon = flushSoon;
    this.#onError = onError;
  }

  /** A new table from the main thread: versions no longer in it are dropped (their runs finish first). */
  update(table: DirectTable): void {
    if (table.queued) this.#queued ??= QueuedBytes.of(table.queued);
    const ids = new Set(table.entries.map((e) => e.id));
    for (const [id, s] of this.#served) {
      if (ids.has(id)) continue;
      this.#served.delete(id);
      for (const i of s.instances) i?.close();
    }
    for (const entry of table.entries) {
      if (!this.#served.has(entry.id)) {
        this.#served.set(entry.id, { entry, signature: signatureOf(entry.config), instances: entry.instances.map(() => undefined), next: 0 });
      }
    }
    this.#routes = new Map(table.routes);
  }

  /** The records taken since the last take(), for the main thread (DirectModels.applyRecords). */
  take(): number[] {
    const r = this.#records;
    this.#records = [];
    return r;
  }

  /** Answers the request here, or undefined when the main thread must (nothing is recorded then). */
  run(model: string, version: string | undefined, request: InferenceRequest): Promise<InferenceResponse> | undefined {
    const id = this.#routes.get(routeKey(model, version));
    if (id === undefined || this.#inFlight >= MAX_DIRECT_IN_FLIGHT || !plain(request)) return undefined;
    const served = this.#served.get(id)!;
    const instance = this.#instance(served);
    if (!instance) return undefined;
    return this.#run(served, instance, request);
  }

  #instance(s: Served): BorrowedInstance | undefined {
    const i = s.next;
    s.next = (i + 1) % s.instances.length;
    try {
      return (s.instances[i] ??= borrowInstance(s.entry.instances[i]!));
    } catch {
      return undefined;
    }
  }

  async #run(s: Served, instance: BorrowedInstance, request: InferenceRequest): Promise<InferenceResponse> {
    const { entry, signature } = s;
    const start = nowNs();
    let reason: FailureReason = "OTHER";
    let held = 0;
    this.#inFlight++;
    try {
      const prepared = prepareForInference(request, signature);
      reason = "BACKEND";
      // Queued from here to the run's start, as the default scheduler counts a request that finds its instance free.
      const enqueuedAt = nowNs();
      if (request.signal?.aborted) throw cancelled(request.id);
      // Its input bytes join the main thread's under --max-queued-bytes until it is answered.
      if (this.#queued) held = this.#queued.admitRequest(request);
      const queueNs = nowNs() - enqueuedAt;
      const r = await instance.executeBorrowed(prepared.inputs, prepared.outputNames);
      if (!r) throw RETIRED;
      const outputs = orderedOutputs(signature, r.outputs, prepared.outputNames);
      const ci = r.computeInputNs ?? 0;
      const cinf = r.computeInferNs ?? 0;
      const co = r.computeOutputNs ?? 0;
      this.#record(SUCCESS, entry.id, nowNs() - start, ci, cinf, co, prepared.batchSize, queueNs);
      const response: InferenceResponse = { modelName: entry.name, modelVersion: entry.version, outputs };
      if (request.id) response.id = request.id;
      return response;
    } catch (err) {
      if (err === RETIRED) throw err;
      const e = ServerError.from(err);
      if (reason === "BACKEND") {
        e.inResponse = true;
        reason = e.reason ?? (e.code === "UNAVAILABLE" ? "REJECTED" : e.code === "CANCELLED" ? "CANCELED" : "BACKEND");
      }
      this.#record(FAILURE, entry.id, nowNs() - start, FAILURE_REASONS.indexOf(reason), 0, 0, 0, 0);
      this.#onError(e, entry.name);
      throw e;
    } finally {
      this.#queued?.add(-held);
      this.#inFlight--;
    }
  }

  #record(kind: number, id: number, requestNs: number, a: number, b: number, c: number, d: number, e: number): void {
    if (this.#records.length === 0) this.#flushSoon();
    this.#records.push(kind, id, requestNs, a, b, c, d, e);
  }
}

/**
 * Thrown by run()'s promise when the owner retired the version between the table and
 * the run: nothing ran and nothing was recorded; the caller hands the request to the
 * main thread (isRetired).
 */
const RETIRED = new Error("the version was retired before it ran here");
export const isRetired = (err: unknown): boolean => err === RETIRED;

/** No control parameters, no shared memory, no classification: what the worker answers exactly as the main thread does. */
function plain(request: InferenceRequest): boolean {
  const p: Parameters | undefined = request.parameters;
  if (p) for (const k of CONTROL_KEYS) if (p[k] !== undefined) return false;
  for (const i of request.inputs) if (i.parameters?.shared_memory_region !== undefined) return false;
  if (request.outputs)
    for (const o of request.outputs) if (o.parameters?.shared_memory_region !== undefined || o.parameters?.classification !== undefined) return false;
  return true;
}
