/**
 * @module Triton's SequenceBatchScheduler (reference §7.5, §7.6). Every request carries
 * a correlation ID; a sequence is pinned to one instance from its START to its END and
 * its requests run one at a time, in order.
 *
 * - direct: each instance has max_batch_size slots; a sequence holds one slot, and the
 *   batch row of its requests is its slot index. Rows of slots with nothing to run are
 *   padding, marked READY = false.
 * - oldest: each instance takes up to max_candidate_sequences sequences and batches
 *   their oldest requests (at most one per sequence per batch) with preferred sizes and
 *   max_queue_delay_microseconds, rows packed.
 * Sequences beyond capacity wait in a FIFO backlog. Control inputs (START, END, READY,
 * CORRID) and implicit state are added to every batch; a sequence's state is reset at
 * START and dropped at END or when the sequence has been idle for
 * max_sequence_idle_microseconds.
 *
 * Cancellation (S-20), as Triton's sequence batcher has it: cancelling a queued request
 * cancels its sequence. The request and every request of the sequence queued behind it
 * are answered CANCELLED at once (a backlogged sequence: all of its requests); requests
 * queued before it still run; then the sequence ends as after END: its slot goes to the
 * backlog, its state is dropped, and a later request without START is refused.
 */
import { InflightDrain } from "./drain.ts";
import { getLogger } from "../core/logger.ts";
import { cancelled, invalidArg, unavailable } from "../core/errors.ts";
import { whenCancelled } from "../core/cancel.ts";
import { batchKey, batchRules, concatInputs, splitOutputs, type BatchRules } from "./batch.ts";
import { logPrefix, type CorrelationId } from "../core/request.ts";
import { systemClock, WakeTimer, type SchedulerClock } from "./timer.ts";
import { checkCorrelationId, controlTensor, initialState, stateTensor, type RowFlags } from "./sequence/tensors.ts";
import type { SequenceSettings } from "./sequence/config.ts";
import type { BackendInstance } from "../backends/backend.ts";
import type { PreparedRequest } from "../core/request-validate.ts";
import type { ModelSignature } from "../core/signature.ts";
import type { ModelStats } from "../core/stats.ts";
import type { Scheduler, ScheduledResult } from "./scheduler.ts";

const log = getLogger("src/scheduler/sequence-batch-scheduler.ts");

interface SeqRequest extends RowFlags {
  readonly prepared: PreparedRequest;
  readonly enqueuedAt: number;
  readonly key: string;
  readonly resolve: (r: ScheduledResult) => void;
  readonly reject: (e: unknown) => void;
  /** Stops listening for the request's cancellation (set once queued). */
  forget: () => void;
}

interface Sequence {
  readonly key: string;
  readonly corrId: CorrelationId;
  /** Assigned instance, or undefined while in the backlog. */
  instance?: number;
  /** direct: the batch row this sequence owns on its instance. */
  slot?: number;
  readonly queue: SeqRequest[];
  /** Implicit state by state input name: one batch item each. */
  state: Map<string, Uint8Array> | undefined;
  lastActive: number;
  running: boolean;
  /** An END request is queued or running; further non-START requests are refused. */
  ending: boolean;
  /** A request of it was cancelled: it ends once what was queued before that has run. */
  cancelled: boolean;
}

interface InstanceSlotTable {
  readonly instance: BackendInstance;
  busy: boolean;
  /** direct: slot index → sequence; oldest: the candidate sequences (no fixed rows). */
  readonly members: (Sequence | undefined)[];
}

export interface SequenceBatchSchedulerOptions {
  modelName: string;
  modelDir: string;
  instances: readonly BackendInstance[];
  signature: ModelSignature;
  settings: SequenceSettings;
  /** Where executions are counted (the scheduling thread posts its to the main thread). */
  stats: Pick<ModelStats, "recordExecution">;
  clock?: SchedulerClock;
  /** Each state's initial value, read already (the scheduling thread gets them from the main thread); read from modelDir otherwise. */
  initial?: ReadonlyMap<string, Uint8Array>;
}

export class SequenceBatchScheduler implements Scheduler {
  readonly #model: string;
  readonly #settings: SequenceSettings;
  readonly #stats: Pick<ModelStats, "recordExecution">;
  readonly #clock: SchedulerClock;
  readonly #batched: boolean;
  readonly #rules: BatchRules;
  readonly #tables: InstanceSlotTable[];
  readonly #initial: Map<string, Uint8Array>;
  readonly #sequences = new Map<string, Sequence>();
  readonly #backlog: Sequence[] = [];
  #pending = 0;
  readonly #drain = new InflightDrain(() => this.#timer.cancel());
  readonly #timer: WakeTimer;

  constructor(opts: SequenceBatchSchedulerOptions) {
    this.#model = opts.modelName;
    this.#settings = opts.settings;
    this.#stats = opts.stats;
    this.#clock = opts.clock ?? systemClock;
    this.#timer = new WakeTimer(this.#clock, () => this.#schedule());
    this.#batched = opts.signature.maxBatchSize > 0;
    this.#rules = batchRules(opts.signature);
    this.#tables = opts.instances.map((instance) => ({ instance, busy: false, members: [] }));
    this.#initial = new Map(opts.initial ?? opts.settings.states.map((s) => [s.inputName, initialState(s, opts.modelDir)]));
  }

  enqueue(prepared: PreparedRequest): Promise<ScheduledResult> {
    return new Promise<ScheduledResult>((resolve, reject) => {
      const { sequenceId: id, sequenceStart: start, sequenceEnd: end } = prepared.control;
      const prefix = logPrefix(prepared.request.id);
      if (prepared.batchSize !== 1) {
        throw invalidArg(`${prefix}inference request to model '${this.#model}' must specify batch-size 1 due to requirements of sequence batcher`);
      }
      if (id === undefined) {
        throw invalidArg(`${prefix}inference request to model '${this.#model}' must specify a non-zero or non-empty correlation ID`);
      }
      checkCorrelationId(this.#settings.controls, id, this.#model);
      const key = typeof id === "string" ? `s:${id}` : `n:${id}`;
      let seq = this.#sequences.get(key);
      if (this.#drain.stopping && (start || !seq)) {
        throw unavailable(`${prefix}Server is stopping, scheduler for model has stopped accepting new inference requests`);
      }
      if (!start && (!seq || seq.ending)) {
        throw invalidArg(
          `${prefix}inference request for sequence ${id} to model '${this.#model}' must specify the START flag on the first request of the sequence`,
        );
      }
      if (start && seq) {
        log.warn(`sequence ${id} for model '${this.#model}' has restarted: a new START arrived before END; the old sequence ends here`);
        seq.cancelled = false;
      }
      const now = this.#clock.now();
      if (!seq) {
        seq = { key, corrId: id, queue: [], state: undefined, lastActive: now, running: false, ending: false, cancelled: false };
        this.#sequences.set(key, seq);
        this.#assign(seq);
      }
      seq.ending = end;
      const r: SeqRequest = {
        prepared,
        enqueuedAt: now,
        key: batchKey(prepared.inputs, this.#rules),
        start,
        end,
        corrId: id,
        resolve,
        reject,
        forget: () => {},
      };
      seq.queue.push(r);
      this.#drain.enter();
      this.#pending++;
      const signal = prepared.request.signal;
      const owner = seq;
      if (signal?.aborted) {
        this.#cancel(owner, r);
        return;
      }
      r.forget = whenCancelled(signal, () => this.#cancel(owner, r));
      this.#schedule();
    });
  }

  /**
   * A queued request was cancelled: it and the requests of its sequence queued behind it
   * (in the backlog: all of them) are answered CANCELLED; the sequence ends once nothing
   * of it runs, freeing its slot and state.
   */
  #cancel(seq: Sequence, r: SeqRequest): void {
    const i = seq.queue.indexOf(r);
    if (i < 0) return; // already running or answered
    const dropped = seq.queue.splice(seq.instance === undefined ? 0 : i);
    this.#pending -= dropped.length;
    seq.ending = true;
    seq.cancelled = true;
    log.verbose(
      1,
      `${logPrefix(r.prepared.request.id)}sequence ${seq.corrId} of model '${this.#model}' cancelled: ${dropped.length} queued request(s) answered CANCELLED`,
    );
    if (!seq.running && seq.queue.length === 0 && this.#sequences.get(seq.key) === seq) this.#release(seq);
    for (const d of dropped) {
      d.forget();
      d.reject(cancelled(d.prepared.request.id));
    }
    if (this.#drain.leave(dropped.length)) return;
    this.#schedule();
  }

  inflightCount(): number {
    return this.#drain.count;
  }

  pendingCount(): number {
    return this.#pending;
  }

  /** Live sequences (holding a slot or in the backlog). */
  sequenceCount(): number {
    return this.#sequences.size;
  }

  backlogCount(): number {
    return this.#backlog.length;
  }

  stop(): Promise<void> {
    return this.#drain.stop();
  }

  /** Gives `seq` a place on the instance with the most room, or puts it in the backlog. */
  #assign(seq: Sequence): void {
    const cap = this.#settings.capacityPerInstance;
    let best = -1;
    let bestFree = 0;
    this.#tables.forEach((t, i) => {
      const used = t.members.filter((m) => m !== undefined).length;
      if (cap - used > bestFree) {
        best = i;
        bestFree = cap - used;
      }
    });
    if (best < 0) {
      this.#backlog.push(seq);
      return;
    }
    const members = this.#tables[best]!.members;
    let slot = members.indexOf(undefined);
    if (slot < 0) slot = members.length;
    members[slot] = seq;
    seq.instance = best;
    seq.slot = slot;
  }

  #release(seq: Sequence): void {
    this.#sequences.delete(seq.key);
    if (seq.instance === undefined) {
      const i = this.#backlog.indexOf(seq);
      if (i >= 0) this.#backlog.splice(i, 1);
      return;
    }
    const members = this.#tables[seq.instance]!.members;
    members[seq.slot!] = undefined;
    while (members.length > 0 && members[members.length - 1] === undefined) members.pop();
    seq.instance = seq.slot = undefined;
    const next = this.#backlog.shift();
    if (next) this.#assign(next);
  }

  /** Reaps idle sequences, then starts a batch on every idle instance that has work. */
  #schedule(): void {
    const now = this.#clock.now();
    const idleDeadline = this.#reap(now);
    let wake = 0;
    this.#tables.forEach((t, i) => {
      if (t.busy) return;
      const batch = this.#settings.strategy === "direct" ? this.#directBatch(t) : this.#oldestBatch(t, now);
      if (batch.waitNs > 0) wake = wake === 0 ? batch.waitNs : Math.min(wake, batch.waitNs);
      if (batch.rows.some((r) => r !== undefined)) void this.#execute(i, batch.rows, now);
    });
    let at = wake > 0 ? now + wake : 0;
    if (idleDeadline !== 0 && (at === 0 || idleDeadline < at)) at = idleDeadline;
    this.#timer.set(at, now);
  }

  /** direct: every slot whose sequence has a request ready; rows are slot indices. */
  #directBatch(t: InstanceSlotTable): { rows: (Sequence | undefined)[]; waitNs: number } {
    const rows = t.members.map((s) => (s && !s.running && s.queue.length > 0 ? s : undefined));
    while (rows.length > 0 && rows[rows.length - 1] === undefined) rows.pop();
    // Requests whose variable-dim inputs differ in shape cannot share a batch: keep the
    // rows matching the lowest ready slot, the others wait for the next batch.
    const first = rows.find((r) => r !== undefined);
    if (!first) return { rows: [], waitNs: 0 };
    const key = first.queue[0]!.key;
    return { rows: rows.map((r) => (r && r.queue[0]!.key === key ? r : undefined)), waitNs: 0 };
  }

  /** oldest: the oldest ready requests of the candidate sequences, one per sequence, packed. */
  #oldestBatch(t: InstanceSlotTable, now: number): { rows: (Sequence | undefined)[]; waitNs: number } {
    const ready = t.members.filter((s): s is Sequence => s !== undefined && !s.running && s.queue.length > 0);
    if (ready.length === 0) return { rows: [], waitNs: 0 };
    ready.sort((a, b) => a.queue[0]!.enqueuedAt - b.queue[0]!.enqueuedAt);
    const key = ready[0]!.queue[0]!.key;
    const rows = ready.filter((s) => s.queue[0]!.key === key).slice(0, this.#settings.maxBatchSize);
    const maxPreferred = Math.max(0, ...this.#settings.preferred);
    const delay = this.#settings.maxQueueDelayNs;
    const age = now - rows[0]!.queue[0]!.enqueuedAt;
    const full =
      rows.length >= this.#settings.maxBatchSize || (maxPreferred > 0 && rows.length >= maxPreferred) || this.#settings.preferred.includes(rows.length);
    // Every candidate already has a request in: waiting cannot make the batch bigger.
    const allIn = rows.length === t.members.filter((m) => m !== undefined && !m.running).length;
    if (delay === 0 || full || allIn || age >= delay) return { rows, waitNs: 0 };
    return { rows: [], waitNs: delay - age };
  }

  async #execute(index: number, rowSeqs: (Sequence | undefined)[], now: number): Promise<void> {
    const table = this.#tables[index]!;
    table.busy = true;
    const rows = rowSeqs.map((s) => (s ? s.queue.shift()! : undefined));
    for (const s of rowSeqs) if (s) s.running = true;
    for (const r of rows) r?.forget();
    const real = rows.filter((r): r is SeqRequest => r !== undefined);
    this.#pending -= real.length;
    try {
      if (table.instance.executeRequests) {
        await this.#executeRequests(table.instance, rows, rowSeqs, now);
        return;
      }
      const template = real[0]!.prepared.inputs;
      // Padding rows (direct slots with nothing to run) repeat the first request's inputs.
      const itemInputs = rows.map((r) => (r ? r.prepared.inputs : template));
      const inputs = rows.length === 1 ? [...itemInputs[0]!] : concatInputs(itemInputs, this.#rules.ragged);
      for (const spec of this.#settings.states) {
        const items = rowSeqs.map((s, i) => (s && !rows[i]!.start && s.state?.get(spec.inputName)) || this.#initial.get(spec.inputName)!);
        inputs.push(stateTensor(spec, items, this.#batched));
      }
      for (const c of this.#settings.controls) inputs.push(controlTensor(c, rows, this.#batched));
      const names = new Set<string>();
      for (const r of real) for (const n of r.prepared.outputNames) names.add(n);
      for (const s of this.#settings.states) names.add(s.outputName);

      const start = this.#clock.now();
      const result = await table.instance.execute(inputs, [...names]);
      const total = this.#clock.now() - start;
      const inNs = result.computeInputNs ?? 0;
      const outNs = result.computeOutputNs ?? 0;
      const inferNs = result.computeInferNs ?? Math.max(0, total - inNs - outNs);
      const perRow = this.#batched
        ? splitOutputs(
            result.outputs,
            rows.map(() => 1),
            this.#model,
          )
        : [result.outputs];
      this.#stats.recordExecution(real.length, inNs, inferNs, outNs);
      const done = this.#clock.now();
      rows.forEach((r, i) => {
        if (!r) return;
        const seq = rowSeqs[i]!;
        const outputs = perRow[i]!;
        const state = new Map<string, Uint8Array>();
        for (const spec of this.#settings.states) {
          const t = outputs.find((o) => o.name === spec.outputName);
          if (t) state.set(spec.inputName, t.data.slice());
        }
        seq.state = state;
        this.#finish(seq, r, done);
        r.resolve({ outputs, queueNs: now - r.enqueuedAt, computeInputNs: inNs, computeInferNs: inferNs, computeOutputNs: outNs });
      });
    } catch (err) {
      const done = this.#clock.now();
      rows.forEach((r, i) => {
        if (!r) return;
        this.#finish(rowSeqs[i]!, r, done);
        r.reject(err);
      });
    } finally {
      table.busy = false;
      this.#schedule();
    }
  }

  /**
   * Per-request execution: each real row goes to the instance as its own request, with
   * its own state and control inputs (batch dim 1 when the model batches).
   */
  async #executeRequests(instance: BackendInstance, rows: (SeqRequest | undefined)[], rowSeqs: (Sequence | undefined)[], now: number): Promise<void> {
    const idx = rows.flatMap((r, i) => (r ? [i] : []));
    const prepared = idx.map((i) => {
      const r = rows[i]!;
      const seq = rowSeqs[i]!;
      const inputs = [...r.prepared.inputs];
      for (const spec of this.#settings.states) {
        const item = (!r.start && seq.state?.get(spec.inputName)) || this.#initial.get(spec.inputName)!;
        inputs.push(stateTensor(spec, [item], this.#batched));
      }
      for (const c of this.#settings.controls) inputs.push(controlTensor(c, [r], this.#batched));
      const outputNames = [...r.prepared.outputNames];
      for (const st of this.#settings.states) if (!outputNames.includes(st.outputName)) outputNames.push(st.outputName);
      return { ...r.prepared, inputs, outputNames };
    });
    const start = this.#clock.now();
    const result = await instance.executeRequests!(prepared);
    const total = this.#clock.now() - start;
    const inNs = result.computeInputNs ?? 0;
    const outNs = result.computeOutputNs ?? 0;
    const inferNs = result.computeInferNs ?? Math.max(0, total - inNs - outNs);
    this.#stats.recordExecution(idx.length, inNs, inferNs, outNs);
    const done = this.#clock.now();
    idx.forEach((i, k) => {
      const r = rows[i]!;
      const seq = rowSeqs[i]!;
      const o = result.outcomes[k]!;
      if (o.outputs) {
        const state = new Map<string, Uint8Array>();
        for (const spec of this.#settings.states) {
          const t = o.outputs.find((x) => x.name === spec.outputName);
          if (t) state.set(spec.inputName, t.data.slice());
        }
        seq.state = state;
      }
      this.#finish(seq, r, done);
      if (o.error) r.reject(o.error);
      else
        r.resolve({
          outputs: o.outputs,
          parameters: o.parameters,
          queueNs: now - r.enqueuedAt,
          computeInputNs: inNs,
          computeInferNs: inferNs,
          computeOutputNs: outNs,
        });
    });
  }

  /** After a request ran: the sequence is free for its next request, or gone after END. */
  #finish(seq: Sequence, r: SeqRequest, now: number): void {
    seq.running = false;
    seq.lastActive = now;
    // A START queued behind this END restarts the same correlation ID, so keep it.
    if ((r.end || seq.cancelled) && seq.queue.length === 0 && this.#sequences.get(seq.key) === seq) this.#release(seq);
    this.#drain.leave();
  }

  /**
   * Frees sequences idle longer than max_sequence_idle_microseconds; returns when the
   * next idle sequence expires (0 for none). Sequences with requests queued or running
   * are not idle.
   */
  #reap(now: number): number {
    let next = 0;
    for (const seq of [...this.#sequences.values()]) {
      if (seq.running || seq.queue.length > 0) continue;
      const expiry = seq.lastActive + this.#settings.idleNs;
      if (now >= expiry) {
        log.info(`sequence ${seq.corrId} of model '${this.#model}' was idle for more than ${this.#settings.idleNs / 1000} us; its slot is released`);
        this.#release(seq);
      } else if (next === 0 || expiry < next) {
        next = expiry;
      }
    }
    return next;
  }
}
