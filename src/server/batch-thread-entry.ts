/**
 * @module The scheduling thread (#30 item 2): one per process, started by the main
 * thread (batch-thread.ts) when a dynamically or sequence-batched ONNX Runtime version
 * loads, or the first instance claims a rate-limiter resource, while frontend worker
 * threads run. For each dynamically batched version it runs the dynamic batcher
 * (DynamicBatchScheduler, unchanged: preferred sizes, queue delay, priority levels,
 * queue policies, timeouts, preserve_ordering) over the main thread's sessions,
 * borrowed (OrtSession.borrow); for a sequence-batched one the sequence batcher, and for
 * a rate-limited one without batching the default scheduler. With --rate-limit the
 * server's one RateLimiter lives here: these instances take their claims from it
 * directly, the main thread's by message (batch-rate-limiter.ts). Every thread that
 * submits requests (each frontend worker, and the main thread for those that reach it)
 * has a channel of slots (batch-slots.ts): this thread sleeps on each channel's
 * submission ring with Atomics.waitAsync, takes the requests in place, and writes each
 * result back into its slot. Executions are counted here, in each version's shared
 * counters (and those they have no row for posted to the main thread in batches); the
 * requests are counted where they came from, so the statistics equal one thread's.
 */
import { serveThread } from "../core/threads/serve.ts";
import { DefaultScheduler } from "../scheduler/default-scheduler.ts";
import { DynamicBatchScheduler } from "../scheduler/dynamic-batch-scheduler.ts";
import { RateLimiterHost } from "./batch-rate-limiter.ts";
import { SequenceBatchScheduler } from "../scheduler/sequence-batch-scheduler.ts";
import { sequenceSettings } from "../scheduler/sequence/config.ts";
import { forwardLog } from "../core/logger.ts";
import { signatureOf } from "../core/signature.ts";
import { ServerError, unavailable } from "../core/errors.ts";
import { borrowInstance } from "../backends/borrow.ts";
import { LocalAbort } from "../core/cancel.ts";
import { SharedStatsWriter } from "../core/shared-stats.ts";
import { InOrder } from "./batch-order.ts";
import {
  CLOSED_ABANDONED,
  BUSY,
  CLOSED,
  SUB_HEAD,
  SUB_TAIL,
  SlotChannel,
  whileRung,
  type ChannelPort,
  type WireRequest,
  type WireResult,
} from "./batch-slots.ts";
import type { FromBatch, FromBatchPort, SequenceAdd, ToBatch, ToBatchPort } from "./batch-protocol.ts";
import type { BackendInstance, BorrowedInstance } from "../backends/backend.ts";
import type { InferenceRequest, RequestControl } from "../core/request.ts";
import { NO_CLASSIFICATION, type PreparedRequest } from "../core/request-validate.ts";

const { post } = serveThread<ToBatch, FromBatch>(receive, { batch: true });
// What is logged here (the sequence batcher: a restart, a reaped sequence) goes to the main thread's log, under its settings.
forwardLog((entry) => post({ t: "log", entry }));

/** Execution records (those the shared counters have no row for) go to the main thread at most this often (a statistics read flushes them first). */
const RECORDS_EVERY_MS = 50;

interface Version {
  name: string;
  scheduler: DynamicBatchScheduler | SequenceBatchScheduler | DefaultScheduler;
  borrowed: BorrowedInstance[];
  /** Int32 [in flight, queued], read by the main thread (pending count, metrics). */
  counters: Int32Array;
  stopping: boolean;
}

const versions = new Map<number, Version>();
/** Each open channel's drain: takes the requests its ring holds. */
const drains = new Set<() => void>();
const drainAll = () => {
  for (const drain of drains) drain();
};
/** Every open channel's control words, to say BUSY on. */
const controls = new Set<Int32Array>();
/** Instances of the versions here, and how many of them run now: BUSY while all do. */
const instanceCount = { total: 0, running: 0 };
function setBusy(): void {
  const busy = instanceCount.total > 0 && instanceCount.running >= instanceCount.total ? 1 : 0;
  for (const ctrl of controls) Atomics.store(ctrl, BUSY, busy);
}
function running(delta: number): void {
  instanceCount.running += delta;
  setBusy();
}
/** Versions this thread could not take (their sessions could not be borrowed): their requests fail with why. */
const refused = new Map<number, string>();
let records: number[] = [];
/** The server's rate limiter (--rate-limit=execution_count) and the main thread's claims on it. */
const limits = new RateLimiterHost();
/** The main thread's count of record batches begun here and not applied there yet (BatchThread.settle). */
let recordBatches: Int32Array | undefined;

function receive(m: ToBatch): void {
  switch (m.t) {
    case "add":
      add(m);
      return;
    case "remove":
      void remove(m.id);
      return;
    case "channel":
      open(m.buffer, m.port);
      return;
    case "recordBatches":
      recordBatches = new Int32Array(m.buffer);
      return;
    case "flush":
      postRecords();
      post({ t: "flushed", id: m.id });
      return;
    case "claim":
    case "acquire":
    case "release":
    case "unclaim":
      limits.receive(m, (ticket) => post({ t: "granted", ticket }));
      return;
  }
}

/** The scheduling thread takes ONNX Runtime sessions only (BatchThread.scheduler), which connect to nothing. */
const noConnect = (): void => {};

function add(m: Extract<ToBatch, { t: "add" }>): void {
  try {
    const borrowed = m.instances.map((s) => borrowInstance(s, noConnect));
    const counters = new Int32Array(m.counters);
    const instances: BackendInstance[] = borrowed.map((b, i) => {
      // A rate-limited instance runs each batch only while the limiter gives it its claim's resources.
      const claimId = m.instances[i]!.claim;
      const claim = claimId === undefined ? undefined : limits.claim(claimId);
      if (claimId !== undefined && !claim) throw new Error(`rate limiter claim ${claimId} is unknown`);
      return {
        name: `${m.name}_${i}`,
        execute: async (inputs, names) => {
          // The batch has just left the queue.
          update(v);
          if (claim) await limits.limiter.acquire(claim);
          running(1);
          let r: Awaited<ReturnType<typeof b.executeBorrowed>>;
          try {
            r = await b.executeBorrowed(inputs, names);
          } finally {
            running(-1);
            if (claim) limits.limiter.release(claim);
            // What came while it ran (BUSY cleared first, see BatchSlots.submit) joins the
            // queue before the scheduler picks the next batch, whether the run failed or not.
            drainAll();
          }
          if (!r) throw unavailable(`model '${m.name}' was unloaded while this request ran`);
          return r;
        },
        close: () => b.close(),
      };
    });
    const shared = new SharedStatsWriter(m.stats, 0);
    const stats = {
      recordExecution: (n: number, ci: number, cinf: number, co: number) => {
        if (!shared.recordExecution(n, ci, cinf, co)) record(m.id, n, ci, cinf, co);
      },
    };
    const scheduler = m.sequence
      ? sequenceScheduler(m, m.sequence, instances, stats)
      : m.plain
        ? new DefaultScheduler(m.name, instances, stats)
        : new DynamicBatchScheduler({
            modelName: m.name,
            instances,
            signature: signatureOf(m.config),
            config: m.config.dynamic_batching ?? {},
            stats,
          });
    const v: Version = { name: m.name, scheduler, borrowed, counters, stopping: false };
    versions.set(m.id, v);
    instanceCount.total += borrowed.length;
    setBusy();
  } catch (err) {
    const message = `model '${m.name}': the scheduling thread cannot run it: ${(err as Error).message}`;
    refused.set(m.id, message);
    post({ t: "error", message });
  }
}

async function remove(id: number): Promise<void> {
  refused.delete(id);
  const v = versions.get(id);
  if (v) {
    v.stopping = true;
    await v.scheduler.stop();
    versions.delete(id);
    for (const b of v.borrowed) b.close();
    instanceCount.total -= v.borrowed.length;
    setBusy();
    update(v);
  }
  postRecords();
  post({ t: "removed", id });
}

function update(v: Version): void {
  Atomics.store(v.counters, 0, v.scheduler.inflightCount());
  Atomics.store(v.counters, 1, v.scheduler.pendingCount());
}

function record(id: number, n: number, ci: number, cinf: number, co: number): void {
  if (records.length === 0) {
    // Counted before the batch's requests are answered, so a statistics read after them waits for these records.
    if (recordBatches) Atomics.add(recordBatches, 0, 1);
    setTimeout(postRecords, RECORDS_EVERY_MS);
  }
  records.push(id, n, ci, cinf, co);
}

function postRecords(): void {
  if (records.length === 0) return;
  post({ t: "records", records });
  records = [];
}

/** A submitter's channel: requests from its ring and its port, results back the same way. */
function open(buffer: SharedArrayBuffer, port: ChannelPort): void {
  const channel = new SlotChannel(buffer);
  /** The requests of this channel in the scheduler, by ref: cancelling one aborts it. */
  const live = new Map<number, LocalAbort>();
  // The results of one execution are answered in one run of microtasks: the submitter is
  // woken once for them all, after the last (#30: a wake-up per result cost its thread
  // an event-loop turn and a waitAsync each).
  let wakePending = false;
  const wake = () => {
    wakePending = false;
    channel.wakeSubmitter();
  };
  const answer = (ref: number, slot: number, result: WireResult) => {
    live.delete(ref);
    if (slot >= 0 && channel.writeResult(slot, result)) {
      channel.complete(slot, false);
      if (!wakePending) {
        wakePending = true;
        queueMicrotask(wake);
      }
    } else port.postMessage({ t: "result", ref, slot, result } satisfies FromBatchPort);
  };
  /** Requests cancelled while held back by `order`: aborted once taken. */
  const cancelledEarly = new Set<number>();
  const take = (slot: number, r: WireRequest) => {
    const cancelledFirst = cancelledEarly.delete(r.ref);
    const v = versions.get(r.entry);
    const why = refused.get(r.entry);
    if (why !== undefined) {
      answer(r.ref, slot, { t: "error", code: "INTERNAL", message: why });
      return;
    }
    if (!v || v.stopping) {
      answer(r.ref, slot, { t: "retired" });
      return;
    }
    const controller = new LocalAbort();
    live.set(r.ref, controller);
    const request = { id: r.id || undefined, modelName: v.name, inputs: [], signal: controller.signal } as unknown as InferenceRequest;
    const prepared: PreparedRequest = {
      request,
      control: controlOf(r),
      batchSize: r.batchSize,
      inputs: r.inputs,
      outputNames: r.outputNames,
      classification: NO_CLASSIFICATION,
    };
    v.scheduler.enqueue(prepared).then(
      (s) => {
        update(v);
        answer(r.ref, slot, {
          t: "ok",
          outputs: s.outputs,
          queueNs: s.queueNs,
          computeInputNs: s.computeInputNs,
          computeInferNs: s.computeInferNs,
          computeOutputNs: s.computeOutputNs,
        });
      },
      (err: unknown) => {
        update(v);
        const e = ServerError.from(err);
        answer(r.ref, slot, { t: "error", code: e.code, message: e.message, ...(e.reason ? { reason: e.reason } : {}) });
      },
    );
    if (cancelledFirst) controller.abort();
    update(v);
  };
  // Taken in the order submitted: a request that came as a message is not passed by a later one on the ring.
  const order = new InOrder<[number, WireRequest]>(([slot, r]) => take(slot, r));
  const drain = () => {
    for (const slot of channel.takeSubmitted()) {
      const r = channel.readRequest(slot);
      order.arrive(r.ref, [slot, r]);
    }
  };
  port.onmessage = (e: MessageEvent) => {
    const m = e.data as ToBatchPort;
    if (m.t === "submit") order.arrive(m.request.ref, [-1, m.request]);
    else {
      // A cancel may pass its request on the ring: take what the ring holds first.
      drain();
      if (order.held(m.ref)) cancelledEarly.add(m.ref);
      else live.get(m.ref)?.abort();
    }
  };
  drains.add(drain);
  controls.add(channel.ctrl);
  setBusy();
  whileRung(
    channel.ctrl,
    SUB_TAIL,
    SUB_HEAD,
    () => {
      drain();
      const closed = Atomics.load(channel.ctrl, CLOSED);
      if (closed === 0) return true;
      drains.delete(drain);
      controls.delete(channel.ctrl);
      port.close();
      // Its worker ended: what it submitted is cancelled rather than run for no one (the outcome, which the worker counts, ends with it).
      if (closed === CLOSED_ABANDONED) {
        for (const controller of [...live.values()]) {
          try {
            controller.abort();
          } catch {
            // A scheduler's cancel that throws leaves that request to run; the others are still cancelled.
          }
        }
      }
      return false;
    },
    () => Atomics.load(channel.ctrl, CLOSED) !== 0,
  );
}

/**
 * A sequence-batched version's scheduler (the main thread's SequenceBatchScheduler,
 * unchanged: direct and oldest strategies, control inputs, implicit state, backlog, idle
 * reaping, cancellation) over the borrowed sessions; the initial states as the main thread read them.
 */
function sequenceScheduler(
  m: Extract<ToBatch, { t: "add" }>,
  sequence: SequenceAdd,
  instances: BackendInstance[],
  stats: { recordExecution(n: number, ci: number, cinf: number, co: number): void },
): SequenceBatchScheduler {
  return new SequenceBatchScheduler({
    modelName: m.name,
    modelDir: "",
    instances,
    signature: signatureOf(m.config),
    settings: sequenceSettings(m.config),
    stats,
    initial: new Map(sequence.initial),
  });
}

/** A request's control fields as RequestControl has them (a sequence's, when it is part of one), made without spreads. */
function controlOf(r: WireRequest): RequestControl {
  const s = r.sequence;
  if (!s) return { priority: r.priority, timeoutUs: r.timeoutUs, sequenceStart: false, sequenceEnd: false };
  if (s.id === undefined) return { priority: r.priority, timeoutUs: r.timeoutUs, sequenceStart: s.start, sequenceEnd: s.end };
  return { priority: r.priority, timeoutUs: r.timeoutUs, sequenceId: s.id, sequenceStart: s.start, sequenceEnd: s.end };
}
