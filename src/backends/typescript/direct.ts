/**
 * @module A `typescript` model's worker-thread instance as a frontend worker thread
 * reaches it directly (#30): the request goes to the instance's worker over a MessagePort
 * of this frontend worker's own (asked of the main thread once, backends/connect.ts), its
 * large input buffers transferred, and the answer comes back the same way, checked here
 * as the main thread's instance checks it (outcome.ts). The instance's worker runs the
 * executes of every thread one at a time, in arrival order; the shared `busy` counter
 * (executes waiting or running there, any thread's) lets a frontend worker pick the least
 * busy instance. A request cancelled while it waits there is dropped unrun (CANCELLED, as
 * the default scheduler's queue drops it). An instance that is finalizing hands the request back (`retired`, its
 * buffers returned) for the main thread to run; one whose worker ended fails what it held
 * with the main thread's INTERNAL error and reason: the worker's own `fatal` (a fault of the
 * model's, told over the port before the worker ends, which hands back the requests that
 * had not started, for the main thread), or the main thread's word (`ended`: why it ended
 * the worker, or saw it end), which the port's close waits for. A port is known by the
 * ENDED slot's value it was made under: once the slot holds another, nothing more goes to
 * it, even where the fault's report on it has not been read yet and a fresh worker is
 * ready (a request sent there would be lost with the old worker). A turn's requests are
 * posted together at its end, after that check again: those the worker can no longer take
 * go back whole to the main thread (a fault in the moment between that check and the post
 * is left to the worker, which reads its ports before it ends).
 */
import { nowNs } from "../../core/clock.ts";
import { cancelled, internal, unavailable, type ServerError } from "../../core/errors.ts";
import { inputBuffers } from "../../core/threads/transfer.ts";
import { Thread, type WorkerLike } from "../../core/threads/thread.ts";
import { MessageBatcher } from "../../core/threads/batcher.ts";
import type { PreparedRequest } from "../../core/request-validate.ts";
import type { InferenceRequest } from "../../core/request.ts";
import type { ModelConfig } from "../../core/model-config-types.ts";
import type { BorrowedInstance, PreparedRun, SharedInstance } from "../backend.ts";
import { OutcomeChecker, requestFields } from "./outcome.ts";
import { endedSlot, workerEnded, type FromInstancePort, type PlainRequest, type ToInstancePort } from "./worker-protocol.ts";
import { HeldRequests, type Held } from "../held-requests.ts";

/** A worker-thread instance as shared with the frontend workers (TsInstance.share). */
export interface SharedTsInstance {
  /** What the main thread's connectShared knows it by. */
  key: string;
  model: string;
  instance: string;
  config: ModelConfig;
  /** [BUSY]: the executes waiting or running in the instance's worker, whichever thread sent them; [RETIRED]: 1 once the owner closes it; [COMPLETED]: this side's executes completed; [ENDED]: its worker ended and no fresh one is ready yet. */
  state: Int32Array;
}

interface Waiting extends Held {
  prepared: PreparedRequest;
  reject(e: unknown): void;
  /** Gives the request its transferred buffers back (a retired request goes to the main thread whole). */
  restore(buffers: ArrayBuffer[]): void;
}

/** The slots of SharedTsInstance.state. */
export const BUSY = 0;
export const RETIRED = 1;
/** Executes the frontend workers sent that the instance completed (its owner's restart count starts again after one). */
export const COMPLETED = 2;
/**
 * Bit 0 set from the moment the instance's worker ends (by the worker itself as it reports a
 * fault, or by the owner, before any request it held is failed) until a fresh one is
 * ready: no request goes to a port of the old one, and none is given out. The bits above
 * are the worker's generation (worker-protocol.ts, endedSlot).
 */
export const ENDED = 3;
/** The bytes of SharedTsInstance.state. */
export const STATE_BYTES = 16;

export class TsBorrowed implements BorrowedInstance {
  readonly key: string;
  readonly #shared: SharedTsInstance;
  readonly #checker: OutcomeChecker;
  readonly #connect: (key: string) => void;
  #thread: Thread<ToInstancePort, FromInstancePort> | undefined;
  #port: MessagePort | undefined;
  /** The ENDED slot's value the port was made under: once the slot holds another, the port's worker has ended (a fresh one may be ready already). */
  #live = 0;
  /** The instance's worker serves the port (its `serving` came): nothing is sent before, since a fault before then would lose it. */
  #serving = false;
  /** A port was asked of the main thread and has not come yet. */
  #asked = false;
  readonly #held: HeldRequests<Waiting>;
  #next = 0;
  /** What this turn sends on the port, posted as one batch at its end (#post checks the port again first). */
  readonly #batcher = new MessageBatcher<ToInstancePort>((batch, transfer) => this.#post(batch, transfer as ArrayBuffer[]));

  constructor(shared: SharedTsInstance, connect: (key: string) => void) {
    this.key = shared.key;
    this.#shared = shared;
    this.#checker = new OutcomeChecker(shared.model, shared.config);
    this.#connect = connect;
    this.#held = new HeldRequests(shared.state, BUSY, () => this.#drop());
  }

  /** The executes waiting or running in the instance; undefined while this thread has no port to it (one is asked for). */
  load(): number | undefined {
    if (this.#thread && this.#stale()) {
      // The port's worker ended: nothing more goes to it. What it holds fails when the worker or
      // the main thread says why; once a fresh worker is ready, a port that holds nothing is
      // dropped, and one to the fresh worker asked for, before that word comes.
      if (endedSlot.isEnded(this.#shared.state, ENDED) || this.#held.size > 0 || this.#held.closed) return undefined;
      this.#drop();
    }
    if (!this.#thread) {
      if (!this.#asked && !this.#held.closed) {
        this.#asked = true;
        this.#connect(this.key);
      }
      return undefined;
    }
    if (!this.#serving) return undefined;
    return Atomics.load(this.#shared.state, BUSY);
  }

  /** Whether the port's worker has ended: the ENDED slot no longer holds the value the port was made under (ended, or a fresh worker's generation). */
  #stale(): boolean {
    return Atomics.load(this.#shared.state, ENDED) !== this.#live;
  }

  /** Drops the port; what this turn has not posted on it yet goes to the main thread. */
  #drop(): void {
    this.#handBack(this.#batcher.take());
    const port = this.#port;
    this.#port = undefined;
    this.#thread = undefined;
    port?.close();
  }

  /** The main thread's answer to a connect: the port and the ENDED slot's value it was made under, or none (the instance cannot take one now; a later request asks again). */
  attach(port: MessagePort | undefined, live = 0): void {
    this.#asked = false;
    if (!port) return;
    if (this.#held.closed || this.#thread) {
      port.close();
      return;
    }
    this.#port = port;
    this.#live = live;
    this.#serving = false;
    this.#thread = new Thread<ToInstancePort, FromInstancePort>(
      port as unknown as WorkerLike,
      {
        message: (m) => this.#answer(m),
        // The instance's worker ended (a fault, a restart, an unload past its limit): its port closed.
        exit: () => this.#lost(port),
      },
      // Received through the Thread; posted through #batcher, which checks the port first.
      { batch: false },
    );
  }

  executeBorrowed(): Promise<undefined> {
    return Promise.resolve(undefined);
  }

  runPrepared(prepared: PreparedRequest, own = true): Promise<PreparedRun | undefined> {
    // A retired instance is finalizing: the main thread runs the request (whole: nothing was transferred yet).
    if (!this.#thread || !this.#serving || this.#held.closed || this.#stale() || Atomics.load(this.#shared.state, RETIRED) === 1)
      return Promise.resolve(undefined);
    const t0 = nowNs();
    const plain: PlainRequest = { ...requestFields(prepared), cancelled: false };
    const request = prepared.request;
    // Buffers the request owns move to the instance; others (an ensemble's tensors) are copied with the message.
    const buffers = own ? inputBuffers(request) : [];
    const restore = restorer(request, buffers);
    const id = this.#next++;
    const t1 = nowNs();
    return new Promise((resolve, reject) => {
      const signal = request.signal;
      const cancel = () => this.#batcher.send({ t: "cancel", id, index: 0 });
      signal?.addEventListener("abort", cancel, { once: true });
      this.#held.hold(id, { prepared, resolve, reject, t0, t1, restore, forget: () => signal?.removeEventListener("abort", cancel) });
      this.#batcher.send({ t: "execute", id, requests: [plain], buffers }, buffers);
    });
  }

  /**
   * Posts this turn's batch, unless the port's worker has ended since the requests were
   * given to it: then they go back whole (nothing was transferred yet) for the main thread
   * to run, where one sent now would most likely be lost with the worker. A fault between
   * this check and the post is still possible, but the worker reads what is unread on its
   * ports before it ends.
   */
  #post(batch: ToInstancePort[], transfer: ArrayBuffer[]): void {
    const port = this.#port;
    if (port && this.#serving && !this.#stale()) {
      try {
        port.postMessage(batch, transfer);
        return;
      } catch {
        // Nothing is transferred when the batch cannot be posted: its requests go to the main thread.
      }
    }
    this.#handBack(batch);
    this.#held.closeIfDone();
  }

  /** The executes of `batch`, never posted, go back whole to the main thread; its cancellations are moot. */
  #handBack(batch: ToInstancePort[]): void {
    for (const m of batch) if (m.t === "execute") this.#held.take(m.id)?.resolve(undefined);
  }

  #answer(m: FromInstancePort): void {
    if (m.t === "serving") {
      this.#serving = true;
      return;
    }
    if (m.t === "fatal") return this.#fatal(m.reason, m.back);
    const w = this.#held.take(m.id);
    if (!w) return;
    if (m.t === "retired") {
      w.restore(m.buffers);
      w.resolve(undefined);
    } else if (m.t === "cancelled") {
      w.reject(cancelled(w.prepared.request.id));
    } else {
      Atomics.add(this.#shared.state, COMPLETED, 1);
      const t2 = nowNs();
      const outcome = m.thrown
        ? { error: this.#checker.thrown(Object.assign(new Error(String(m.thrown.message)), { code: m.thrown.code })) }
        : this.#checker.outcomes([w.prepared], m.responses)[0]!;
      const waitNs = Math.max(0, Math.min(Number(m.waitNs) || 0, t2 - w.t1));
      w.resolve({ outcome, queueNs: waitNs, computeInputNs: w.t1 - w.t0, computeInferNs: t2 - w.t1 - waitNs, computeOutputNs: nowNs() - t2 });
    }
    this.#held.closeIfDone();
  }

  /**
   * The port closed: its worker ended. What it held waits for the owner's word (ended(),
   * which the main thread sends whenever it stops a worker that served, or sees it end: a
   * fault, an abort after an unload's grace, the end of a finalize), or failed already on
   * the worker's own report of a fault.
   */
  #lost(port: MessagePort): void {
    if (this.#port !== port) return;
    this.#drop();
    this.#held.closeIfDone();
  }

  /**
   * A fault of the model's ends the instance's worker (it said so before it ended): the
   * executes it had not started come back whole, for the main thread to run on the
   * restarted worker (as one thread's queue keeps them); the rest fail with the reason.
   */
  #fatal(reason: unknown, back: { id: number; buffers: ArrayBuffer[] }[] | undefined): void {
    if (Array.isArray(back)) {
      for (const b of back) {
        const w = this.#held.take(b.id);
        if (!w) continue;
        w.restore(b.buffers);
        w.resolve(undefined);
      }
    }
    this.ended(internal(workerEnded(this.#shared.model, this.#shared.instance, `ended: ${String(reason)}`)));
  }

  /**
   * The instance's worker ended: `error` is what the main thread's executes failed with (none:
   * the owner stopped it after finalize: a request sent just then never ran, and fails as
   * one for an unloaded instance). What the port held fails, and the port is dropped: one
   * asked for just as the worker ended may never close.
   */
  ended(error: ServerError | undefined): void {
    const s = this.#shared;
    this.#drop();
    if (error) this.#held.fail(error);
    else if (Atomics.load(s.state, RETIRED) === 1) this.#held.fail(unavailable(`model '${s.model}' instance ${s.instance} is unloaded`));
    else this.#held.fail(internal(workerEnded(s.model, s.instance, "ended")));
    this.#held.closeIfDone();
  }

  /** The version left the table: the port closes once what it holds is answered. */
  close(): void {
    this.#held.close();
  }

  /** After close(): whether requests are still held here; `done` is told once none is. */
  closing(done: () => void): boolean {
    return this.#held.closing(done);
  }
}

/** Gives `request`'s inputs views of `buffers` again once they come back (they were transferred). */
function restorer(request: InferenceRequest, buffers: ArrayBuffer[]): (back: ArrayBuffer[]) => void {
  if (buffers.length === 0) return () => {};
  const views = request.inputs.flatMap((t) => {
    const k = buffers.indexOf(t.data.buffer as ArrayBuffer);
    return k < 0 ? [] : [{ t, k, offset: t.data.byteOffset, length: t.data.byteLength }];
  });
  return (back) => {
    for (const v of views) v.t.data = new Uint8Array(back[v.k]!, v.offset, v.length);
  };
}

export function borrowTsInstance(shared: SharedInstance, connect: (key: string) => void): TsBorrowed {
  return new TsBorrowed(shared.spec as SharedTsInstance, connect);
}
