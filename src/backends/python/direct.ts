/**
 * @module A Python model's instance as a frontend worker thread reaches it directly (#30):
 * over a Unix socket connection of the worker's own to the instance's stub process, which
 * listens on a path in the server's private folder (instance.ts). An execute goes out with
 * its input bytes inline and comes back with the response's, so nothing crosses the main
 * thread, which keeps the stub's pipes for its own requests, BLS calls, logs and metrics.
 * The stub runs the executes of every connection and of the main thread one at a time, in
 * arrival order; the shared BUSY count (executes waiting or running there, any thread's)
 * lets a frontend worker pick the least busy instance, and a request cancelled while it
 * waits there is dropped unrun (CANCELLED, as the default scheduler's queue drops it).
 *
 * Lifecycle, as for a TypeScript worker-thread instance (typescript/direct.ts): a retired
 * (finalizing) instance hands the request back for the main thread to run; the ENDED slot
 * holds the stub's generation, with bit 0 set from the moment its process ends until a
 * fresh one is ready. A connection is known by the generation it was made under: once the
 * slot holds another, nothing more goes to it, and what it held fails with the main
 * thread's word (ended(): the error the main thread's own requests to that stub failed with).
 */
import { nowNs } from "../../core/clock.ts";
import { cancelled, internal, unavailable, type ServerError } from "../../core/errors.ts";
import type { PreparedRequest } from "../../core/request-validate.ts";
import type { ModelConfig } from "../../core/model-config-types.ts";
import type { Tensor } from "../../core/tensor.ts";
import type { BorrowedInstance, PreparedRun, SharedInstance } from "../backend.ts";
import { endedSlot } from "../typescript/worker-protocol.ts";
import { HeldRequests, type Held } from "../held-requests.ts";
import { ResponseChecker, checkedRange, doesNotFit, execEntry, wireError, type WireError, type WireResponse } from "./wire.ts";

/** A Python instance as shared with the frontend workers (PythonInstance.share). */
export interface SharedPythonInstance {
  /** What the main thread's sharedEnded names it by. */
  key: string;
  model: string;
  /** "model 'x' instance 'x_0'", as errors name the stub. */
  label: string;
  config: ModelConfig;
  /** The stub's socket. */
  socket: string;
  /** The size of the stub's shared regions: a request whose inputs could not fit there fails as on the main thread. */
  regionSize: number;
  /** [BUSY]: executes waiting or running in the stub, any thread's; [RETIRED]: 1 once the owner closes it; [ENDED]: the stub's generation, bit 0 set while it has ended and no fresh one is ready. */
  state: Int32Array;
}

export const BUSY = 0;
export const RETIRED = 1;
export const ENDED = 2;
/** The bytes of SharedPythonInstance.state. */
export const STATE_BYTES = 12;

/** The bytes of one message's header: the JSON's length and the inline bytes' length, little-endian uint32. */
const HEAD = 8;
const ALIGN = 64;
/** The largest JSON part of a stub's message (as its control pipe's limit, stub-process.ts). */
const MAX_JSON = 64 << 20;
/** How long a connection that closed while its stub lives on (a broken channel) may wait for the owner's word before what it held fails. */
const LOST_GRACE_MS = 2_000;

interface Waiting extends Held {
  prepared: PreparedRequest;
  reject(e: unknown): void;
}

interface Connection {
  write(data: Uint8Array): number;
  end(): void;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A message to the stub: header, JSON, inline bytes. */
function frame(message: unknown, parts: readonly Uint8Array[], bytes: number): Uint8Array {
  const json = encoder.encode(JSON.stringify(message));
  const out = new Uint8Array(HEAD + json.byteLength + bytes);
  const view = new DataView(out.buffer);
  view.setUint32(0, json.byteLength, true);
  view.setUint32(4, bytes, true);
  out.set(json, HEAD);
  let at = HEAD + json.byteLength;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/**
 * Whole messages out of a connection's byte stream. The bytes of a message that has not
 * come whole wait (copied: a socket's chunk is only lent for its call) and are joined once
 * it has, so a large answer in many chunks costs one copy more, not one per chunk.
 */
class Frames {
  #parts: Uint8Array[] = [];
  #size = 0;
  /** The bytes the waiting parts must reach before a message can be whole. */
  #need = HEAD;
  /** The largest inline bytes a message may carry (the stub's region: its answer would have to fit there). */
  readonly #maxBytes: number;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /** Calls `each` with every message made whole by `chunk`; false (and nothing more read) once a message declares more than a stub may send. */
  push(chunk: Uint8Array, each: (json: Uint8Array, raw: Uint8Array) => void): boolean {
    let buf = chunk;
    if (this.#size > 0) {
      this.#parts.push(new Uint8Array(chunk));
      this.#size += chunk.byteLength;
      if (this.#size < this.#need) return true;
      buf = new Uint8Array(this.#size);
      let at = 0;
      for (const p of this.#parts) {
        buf.set(p, at);
        at += p.byteLength;
      }
      this.#parts = [];
      this.#size = 0;
    }
    let at = 0;
    for (;;) {
      const left = buf.byteLength - at;
      const view = left >= HEAD ? new DataView(buf.buffer, buf.byteOffset + at, HEAD) : undefined;
      const json = view ? view.getUint32(0, true) : 0;
      const bytes = view ? view.getUint32(4, true) : 0;
      if (json > MAX_JSON || bytes > this.#maxBytes) return false;
      const total = HEAD + json + bytes;
      if (left < total) {
        this.#need = total;
        break;
      }
      each(buf.subarray(at + HEAD, at + HEAD + json), buf.subarray(at + HEAD + json, at + total));
      at += total;
    }
    if (at < buf.byteLength) {
      const rest = new Uint8Array(buf.subarray(at));
      this.#parts = [rest];
      this.#size = rest.byteLength;
    }
    return true;
  }
}

export class PythonBorrowed implements BorrowedInstance {
  readonly key: string;
  readonly #shared: SharedPythonInstance;
  readonly #checker: ResponseChecker;
  #conn: Connection | undefined;
  #connecting = false;
  /** The ENDED slot's value under which a connection was refused (a stub that could not listen): no other is tried until a fresh stub's. */
  #refusedUnder: number | undefined;
  /** The ENDED slot's value the connection was made under. */
  #live = 0;
  /** Bytes the socket has not taken yet, in order. */
  #unsent: Uint8Array[] = [];
  /** The messages coming from the stub. */
  #frames: Frames;
  readonly #held: HeldRequests<Waiting>;
  #next = 0;

  constructor(shared: SharedPythonInstance) {
    this.key = shared.key;
    this.#shared = shared;
    this.#checker = new ResponseChecker(shared.model, shared.label, shared.config);
    this.#held = new HeldRequests(shared.state, BUSY, () => this.#drop());
    this.#frames = new Frames(shared.regionSize);
  }

  /** The executes waiting or running in the stub; undefined while this thread has no connection to it (one is made). */
  load(): number | undefined {
    const state = this.#shared.state;
    if (this.#conn && this.#stale()) {
      // The stub ended: nothing more goes to it. What the connection holds fails with the
      // owner's word; once a fresh stub is ready, a connection that holds nothing is dropped.
      if (endedSlot.isEnded(state, ENDED) || this.#held.size > 0 || this.#held.closed) return undefined;
      this.#drop();
    }
    if (!this.#conn) {
      if (!this.#connecting && !this.#held.closed && !endedSlot.isEnded(state, ENDED) && this.#refusedUnder !== Atomics.load(state, ENDED)) this.#connect();
      return undefined;
    }
    return Atomics.load(state, BUSY);
  }

  #stale(): boolean {
    return Atomics.load(this.#shared.state, ENDED) !== this.#live;
  }

  #connect(): void {
    this.#connecting = true;
    const live = Atomics.load(this.#shared.state, ENDED);
    let conn: Connection | undefined;
    Bun.connect({
      unix: this.#shared.socket,
      socket: {
        data: (_s, chunk: Uint8Array) => {
          if (conn === this.#conn) this.#data(chunk);
        },
        drain: () => {
          if (conn === this.#conn) this.#flush();
        },
        close: () => {
          if (conn && conn === this.#conn) this.#lost();
        },
        error: () => {
          if (conn && conn === this.#conn) this.#lost();
        },
      },
    }).then(
      (socket) => {
        this.#connecting = false;
        conn = socket;
        if (this.#held.closed || Atomics.load(this.#shared.state, ENDED) !== live) {
          socket.end();
          return;
        }
        this.#conn = socket;
        this.#live = live;
        this.#unsent = [];
        this.#frames = new Frames(this.#shared.regionSize);
      },
      () => {
        // Not listening: the stub could not (its requests go to the main thread), or it ended
        // as this was asked (its successor is tried).
        this.#connecting = false;
        this.#refusedUnder = live;
      },
    );
  }

  executeBorrowed(): Promise<undefined> {
    return Promise.resolve(undefined);
  }

  runPrepared(prepared: PreparedRequest): Promise<PreparedRun | undefined> {
    const state = this.#shared.state;
    // A retired instance is finalizing: the main thread runs the request.
    if (!this.#conn || this.#held.closed || this.#stale() || Atomics.load(state, RETIRED) === 1) return Promise.resolve(undefined);
    const t0 = nowNs();
    const parts: Uint8Array[] = [];
    let bytes = 0;
    let room = this.#shared.regionSize;
    let misfit: ServerError | undefined;
    const entry = execEntry(prepared, (t: Tensor) => {
      // As the main thread's region would take them: each input in 64-byte blocks, all at once.
      const size = Math.max(ALIGN, Math.ceil(t.data.byteLength / ALIGN) * ALIGN);
      if (size > room) misfit ??= doesNotFit(`input '${t.name}'`, t.data.byteLength, this.#shared.regionSize);
      room -= size;
      const at = bytes;
      parts.push(t.data);
      bytes += t.data.byteLength;
      return at;
    });
    if (misfit) return Promise.resolve({ outcome: { error: misfit }, queueNs: 0, computeInputNs: nowNs() - t0, computeInferNs: 0, computeOutputNs: 0 });
    const id = ++this.#next;
    const message = frame({ t: "exec", id, reqs: [entry] }, parts, bytes);
    const t1 = nowNs();
    return new Promise((resolve, reject) => {
      const signal = prepared.request.signal;
      const cancel = () => this.#write(frame({ t: "cancel", id }, [], 0));
      signal?.addEventListener("abort", cancel, { once: true });
      this.#held.hold(id, { prepared, resolve, reject, t0, t1, forget: () => signal?.removeEventListener("abort", cancel) });
      this.#write(message);
    });
  }

  #write(data: Uint8Array): void {
    const conn = this.#conn;
    if (!conn) return;
    if (this.#unsent.length > 0) {
      this.#unsent.push(data);
      return;
    }
    const n = conn.write(data);
    if (n < data.byteLength) this.#unsent.push(n > 0 ? data.subarray(n) : data);
  }

  /** The socket takes more: what waits goes out, in order. */
  #flush(): void {
    const conn = this.#conn;
    while (conn && this.#unsent.length > 0) {
      const data = this.#unsent[0]!;
      const n = conn.write(data);
      if (n >= data.byteLength) this.#unsent.shift();
      else {
        if (n > 0) this.#unsent[0] = data.subarray(n);
        return;
      }
    }
  }

  #data(chunk: Uint8Array): void {
    let fault: string | undefined;
    try {
      if (!this.#frames.push(chunk, (json, raw) => this.#answer(JSON.parse(decoder.decode(json)), raw))) fault = "a message larger than its connection allows";
    } catch {
      fault = "a malformed message";
    }
    if (fault === undefined) return;
    // A broken stub: nothing more is read from it, and what the connection held fails now.
    this.#drop();
    this.#held.fail(internal(`${this.#shared.label}: the Python stub process sent ${fault} over a frontend worker's connection`));
    this.#held.closeIfDone();
  }

  #answer(m: { t: string; id: number; w?: number; err?: WireError; resps?: WireResponse[] }, raw: Uint8Array): void {
    if (typeof m !== "object" || m === null) throw new TypeError("not a message");
    const w = this.#held.take(m.id);
    if (!w) return;
    if (m.t === "cancelled") {
      w.reject(cancelled(w.prepared.request.id));
    } else {
      const t2 = nowNs();
      const outcome = m.err
        ? { error: wireError(m.err) }
        : this.#checker.outcome(w.prepared, m.resps?.[0] ?? { err: { m: `${this.#shared.label} sent no response`, c: "INTERNAL" } }, (descs) =>
            this.#checker.tensors(descs, (offset, length) => {
              checkedRange(raw.byteLength, offset, length, `message to ${this.#shared.label}'s frontend worker`);
              // A copy at offset 0: the stub packs tensors unaligned, and typed views need alignment.
              return new Uint8Array(raw.subarray(offset, offset + length));
            }),
          );
      const waitNs = Math.max(0, Math.min(Number(m.w) || 0, t2 - w.t1));
      w.resolve({ outcome, queueNs: waitNs, computeInputNs: w.t1 - w.t0, computeInferNs: t2 - w.t1 - waitNs, computeOutputNs: nowNs() - t2 });
    }
    this.#held.closeIfDone();
  }

  #drop(): void {
    const conn = this.#conn;
    this.#conn = undefined;
    this.#unsent = [];
    this.#frames = new Frames(this.#shared.regionSize);
    try {
      conn?.end();
    } catch {
      // already closed
    }
  }

  /**
   * The connection closed. When the stub ended, what it held fails with the owner's word
   * (ended()); a connection that closed while the stub lives on fails what it held itself,
   * after a grace for that word to come.
   */
  #lost(): void {
    this.#drop();
    if (this.#held.size > 0) {
      const ids = this.#held.ids();
      const timer = setTimeout(() => {
        const left = ids.filter((id) => this.#held.has(id));
        if (left.length > 0) this.#held.fail(internal(`${this.#shared.label}: the connection to the Python stub process closed`), left);
        this.#held.closeIfDone();
      }, LOST_GRACE_MS);
      (timer as { unref?: () => void }).unref?.();
    }
    this.#held.closeIfDone();
  }

  /** The owner's word that the stub ended: `error` is what the main thread's requests to it failed with (none: the owner finalized it). */
  ended(error: ServerError | undefined): void {
    const s = this.#shared;
    this.#drop();
    if (error) this.#held.fail(error);
    else if (Atomics.load(s.state, RETIRED) === 1) this.#held.fail(unavailable(`model '${s.model}' is unloaded`));
    else this.#held.fail(internal(`${s.label}: the Python stub process ended`));
    this.#held.closeIfDone();
  }

  /** The version left the table: the connection closes once what it holds is answered. */
  close(): void {
    this.#held.close();
  }

  closing(done: () => void): boolean {
    return this.#held.closing(done);
  }
}

export function borrowPythonInstance(shared: SharedInstance): PythonBorrowed {
  return new PythonBorrowed(shared.spec as SharedPythonInstance);
}
