/**
 * @module An OpenVINO instance as a frontend worker thread runs it (#30): the owner's
 * compiled model, borrowed (OvCompiledModel.share), with an infer request of this
 * thread's own, made at its first run and freed by this thread. An infer request runs one
 * inference at a time, so this thread's requests for the instance take turns in arrival
 * order, and a request's wait for its turn is its queue time, as the default scheduler
 * counts a request that waits for its instance. A request cancelled while it waits is
 * dropped unrun when its turn comes (CANCELLED, as the scheduler's queue drops it); one
 * whose turn comes after the owner retired the compiled model (an unload, a version swap)
 * or after this thread let the instance go is handed back to the main thread (undefined),
 * which answers it.
 */
import { nowNs } from "../../core/clock.ts";
import { cancelled } from "../../core/errors.ts";
import { koffiNativePath, setKoffiNativePath } from "../../../ffi/load.ts";
import { OpenVinoRuntime } from "../../../ffi/openvino/runtime.ts";
import { OvCompiledModel } from "../../../ffi/openvino/model.ts";
import type { OvInferRequest } from "../../../ffi/openvino/infer-request.ts";
import type { PreparedRequest } from "../../core/request-validate.ts";
import type { BorrowedInstance, PreparedRun, SharedInstance } from "../backend.ts";
import { executeOn, type OpenVinoPorts, type SharedOpenVinoInstance } from "./backend.ts";

interface Turn {
  prepared: PreparedRequest;
  /** When the request was taken. */
  at: number;
  resolve(r: PreparedRun | undefined): void;
  reject(e: unknown): void;
}

export class OpenVinoBorrowed implements BorrowedInstance {
  readonly #runtime: OpenVinoRuntime;
  readonly #compiled: OvCompiledModel;
  readonly #ports: OpenVinoPorts;
  #request: OvInferRequest | undefined;
  readonly #turns: Turn[] = [];
  #running = false;
  #closed = false;

  constructor(spec: SharedOpenVinoInstance) {
    // In the compiled binary koffi's native module is an embedded file the owner's thread was told of.
    if (spec.compiled.koffi && !koffiNativePath()) setKoffiNativePath(spec.compiled.koffi);
    this.#runtime = OpenVinoRuntime.get(spec.compiled.library);
    this.#compiled = OvCompiledModel.borrow(this.#runtime, spec.compiled);
    this.#ports = { inputs: new Map(spec.inputs), outputs: new Map(spec.outputs) };
  }

  /** This thread's requests waiting for the instance or running in it. */
  load(): number {
    return this.#turns.length + (this.#running ? 1 : 0);
  }

  /** Not used: the runner takes runPrepared, which counts the wait for a turn. */
  executeBorrowed(): Promise<undefined> {
    return Promise.resolve(undefined);
  }

  runPrepared(prepared: PreparedRequest): Promise<PreparedRun | undefined> {
    if (this.#closed) return Promise.resolve(undefined);
    return new Promise((resolve, reject) => {
      this.#turns.push({ prepared, at: nowNs(), resolve, reject });
      if (!this.#running) void this.#next();
    });
  }

  /** Runs the turns one at a time until none is left. */
  async #next(): Promise<void> {
    this.#running = true;
    for (let turn = this.#turns.shift(); turn; turn = this.#turns.shift()) {
      try {
        turn.resolve(await this.#run(turn));
      } catch (err) {
        turn.reject(err);
      }
    }
    this.#running = false;
    if (this.#closed) this.#release();
  }

  async #run(turn: Turn): Promise<PreparedRun | undefined> {
    const request = turn.prepared.request;
    const queueNs = nowNs() - turn.at;
    if (request.signal?.aborted) throw cancelled(request.id);
    if (!this.#compiled.enter()) return undefined;
    try {
      this.#request ??= this.#compiled.createInferRequest();
      const r = await executeOn(this.#runtime, this.#request, this.#ports, turn.prepared.inputs, turn.prepared.outputNames);
      return {
        outcome: { outputs: r.outputs },
        queueNs,
        computeInputNs: r.computeInputNs ?? 0,
        computeInferNs: r.computeInferNs ?? 0,
        computeOutputNs: r.computeOutputNs ?? 0,
      };
    } finally {
      this.#compiled.leave();
    }
  }

  /** The version left this thread's table: what waits goes back to the main thread, and the infer request is freed once the run in it has ended. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const turn of this.#turns.splice(0)) turn.resolve(undefined);
    if (!this.#running) this.#release();
  }

  #release(): void {
    this.#request?.close();
    this.#request = undefined;
    this.#compiled.close();
  }
}

export function borrowOpenVinoInstance(shared: SharedInstance): OpenVinoBorrowed {
  return new OpenVinoBorrowed(shared.spec as SharedOpenVinoInstance);
}
