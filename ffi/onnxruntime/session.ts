/**
 * @module OrtSession: one ONNX Runtime session, its declared inputs and outputs, and
 * runs on the calling thread or on koffi's worker thread. The OrtValues of a run are
 * owned by the run and released in its finally block; the session is released once, by
 * close(), or after the runs in flight when close() comes during them.
 *
 * Other threads of the process may run the same session (OrtSession::Run is thread-safe):
 * share() gives them its address and a guard in shared memory, borrow() wraps them in
 * another thread. A borrower enters the guard for each run and never releases the
 * session; the owner's close() retires the guard and releases the session only once no
 * borrower is inside it.
 */
import { getKoffi, koffiNativePath, type Pointer } from "../load.ts";
import { SharedGuard } from "../shared-guard.ts";
import { ONNX_TYPE, ONNX_VALUE_TYPE_TENSOR } from "./symbols.ts";
import { check } from "./status.ts";
import { NativeError } from "../errors.ts";
import { copyBytes } from "../../src/core/bytes.ts";
import { OrtValue, elementSize, hasFixedSize, readTypeAndShape, type OrtInput, type OrtOutput } from "./value.ts";
import type { OrtEnvironment, OrtSessionOptions } from "./handles.ts";

export interface OrtTensorInfo {
  name: string;
  elementType: number;
  /** -1 for symbolic or unknown dimensions. */
  shape: number[];
  /** False for sequences, maps and other non-tensor values. */
  isTensor: boolean;
}

/** A pointer array ORT may read or write from another thread: kept out of V8's movable heap. */
function offHeapPointers(n: number): BigUint64Array {
  return new BigUint64Array(new ArrayBuffer(Math.max(n, 1) * 8)).subarray(0, n);
}

/** What another thread needs to run a session: its address, and the guard its runs enter. */
export interface SharedOrtSession {
  address: bigint;
  /** koffi's native module as the owner's thread loaded it (the compiled binary's embedded copy). */
  koffi: string | undefined;
  /** Int32 [runs of borrowers in flight, retired (1 once the owner closes)]. */
  guard: SharedArrayBuffer;
}

export class OrtSession {
  readonly inputs: OrtTensorInfo[];
  readonly outputs: OrtTensorInfo[];
  readonly #env: OrtEnvironment;
  #handle: Pointer;
  #running = 0;
  #closeWhenIdle = false;
  /** Native `const char* const*` arrays by name list; every native allocation, freed at close. */
  readonly #names = new Map<string, Pointer>();
  readonly #allocations: Pointer[] = [];
  readonly #pointerScratch: [BigUint64Array, BigUint64Array] = [offHeapPointers(8), offHeapPointers(8)];
  /** OrtValues kept bound to JS buffers for small synchronous runs, by input/output layout. */
  readonly #bound = new Map<string, BoundRun>();
  /** The layout used last: checked field by field before the key is built. */
  #lastBound: BoundRun | undefined;
  /** Set once the session is shared with other threads (share()), or borrowed from another. */
  #guard: SharedGuard | undefined;
  /** A borrowed session: another thread owns (and releases) the native session. */
  #borrowed = false;

  /** Creates the session on the calling thread, or adopts `created` (see open()). */
  constructor(env: OrtEnvironment, modelPath: string, options: OrtSessionOptions, created?: Pointer, borrowed = false) {
    this.#env = env;
    this.#borrowed = borrowed;
    if (created) {
      this.#handle = created;
    } else {
      const out = offHeapPointers(1);
      check(env.api, env.api.CreateSession(env.handle, modelPath, options.handle, out), `CreateSession(${modelPath})`);
      this.#handle = out[0] || null;
    }
    try {
      this.inputs = this.#describe(true);
      this.outputs = this.#describe(false);
    } catch (err) {
      this.close();
      throw err;
    }
  }

  /**
   * Creates the session on koffi's worker thread: loading and optimizing a large model
   * takes long, and several models load in parallel this way.
   */
  static async open(env: OrtEnvironment, modelPath: string, options: OrtSessionOptions): Promise<OrtSession> {
    const api = env.api;
    const out = offHeapPointers(1);
    const status = await new Promise<Pointer>((resolve, reject) =>
      api.CreateSession.async(env.handle, modelPath, options.handle, out, (err: unknown, res: Pointer) =>
        err ? reject(NativeError.fromKoffi("onnxruntime", "CreateSession", err)) : resolve(res),
      ),
    );
    check(api, status, `CreateSession(${modelPath})`);
    return new OrtSession(env, modelPath, options, out[0] || null);
  }

  /** This session as other threads of the process may run it (see borrow()). */
  share(): SharedOrtSession {
    if (!this.#handle || this.#borrowed) throw new NativeError("INTERNAL", "onnxruntime", "onnxruntime: only an open session of this thread can be shared");
    this.#guard ??= new SharedGuard();
    return { address: this.#handle, koffi: koffiNativePath(), guard: this.#guard.buffer };
  }

  /**
   * Another thread's session, to run here: enter() before each run and leave() after it.
   * close() frees only what this thread made (name arrays, bound values).
   */
  static borrow(env: OrtEnvironment, shared: SharedOrtSession): OrtSession {
    // Describing the session reads it: inside the guard, like a run, so that an owner
    // retiring it meanwhile cannot free it under the reads.
    const guard = new SharedGuard(shared.guard);
    if (!guard.enter()) throw new NativeError("UNAVAILABLE", "onnxruntime", "onnxruntime: the shared session was retired");
    try {
      const s = new OrtSession(env, "", undefined as unknown as OrtSessionOptions, shared.address, true);
      s.#guard = guard;
      return s;
    } finally {
      guard.leave();
    }
  }

  /** A borrower's run begins: false once the owner has retired the session, or this thread's copy is closing (run nothing then). */
  enter(): boolean {
    const g = this.#guard;
    if (!g || !this.#handle || this.#closeWhenIdle) return false;
    return g.enter();
  }

  /** A borrower's run has ended. */
  leave(): void {
    this.#guard?.leave();
  }

  #describe(input: boolean): OrtTensorInfo[] {
    const { api, allocator } = this.#env;
    const count: [number] = [0];
    check(api, input ? api.SessionGetInputCount(this.#handle, count) : api.SessionGetOutputCount(this.#handle, count), "SessionGetCount");
    const list: OrtTensorInfo[] = [];
    for (let i = 0; i < Number(count[0]); i++) {
      const namePtr: [Pointer] = [null];
      check(api, (input ? api.SessionGetInputName : api.SessionGetOutputName)(this.#handle, i, allocator, namePtr), "SessionGetName");
      const name = getKoffi().decode(namePtr[0], "char", -1) as string;
      check(api, api.AllocatorFree(allocator, namePtr[0]), "AllocatorFree");
      const typeInfo: [Pointer] = [null];
      check(api, (input ? api.SessionGetInputTypeInfo : api.SessionGetOutputTypeInfo)(this.#handle, i, typeInfo), "SessionGetTypeInfo");
      try {
        const onnxType: [number] = [0];
        check(api, api.GetOnnxTypeFromTypeInfo(typeInfo[0], onnxType), "GetOnnxTypeFromTypeInfo");
        if (onnxType[0] !== ONNX_VALUE_TYPE_TENSOR) {
          list.push({ name, elementType: 0, shape: [], isTensor: false });
          continue;
        }
        // The tensor info belongs to the type info: not released on its own.
        const tensorInfo: [Pointer] = [null];
        check(api, api.CastTypeInfoToTensorInfo(typeInfo[0], tensorInfo), "CastTypeInfoToTensorInfo");
        const { elementType, shape } = readTypeAndShape(api, tensorInfo[0]);
        list.push({ name, elementType, shape: shape.map((d) => (d < 0 ? -1 : d)), isTensor: true });
      } finally {
        api.ReleaseTypeInfo(typeInfo[0]);
      }
    }
    return list;
  }

  /**
   * Runs the session. With `async`, Run executes on koffi's worker thread and the event
   * loop stays free; otherwise it runs on the calling thread. `batched`: the model follows
   * Triton's batching contract (max_batch_size > 0), so a dynamic first dimension of every
   * input and output is the batch size; only then are outputs with a dynamic first
   * dimension preallocated in JS memory.
   */
  async run(inputs: readonly OrtInput[], outputNames: readonly string[], async: boolean, batched = false): Promise<OrtOutput[]> {
    if (!async) {
      const done = this.runBound(inputs, outputNames, batched);
      if (done) return done;
    } else if (!this.#handle || this.#closeWhenIdle) {
      throw new NativeError("INTERNAL", "onnxruntime", "onnxruntime: session is closed");
    }
    const env = this.#env;
    const api = env.api;
    // A sync run is one synchronous stretch from here to its finally block, so the
    // session's scratch pointer arrays serve it; async runs get their own.
    // String inputs are written in slices between turns of the event loop: such a run is
    // not one synchronous stretch either.
    const own = async || inputs.some((x) => x.elementType === ONNX_TYPE.STRING);
    const inValues = own ? offHeapPointers(inputs.length) : this.#scratch(0, inputs.length);
    const outValues = own ? offHeapPointers(outputNames.length) : this.#scratch(1, outputNames.length);
    const owned: OrtValue[] = [];
    const preallocated: (OrtOutput | undefined)[] = [];
    this.#running++;
    try {
      for (let i = 0; i < inputs.length; i++) {
        const input = inputs[i]!;
        const v =
          input.elementType === ONNX_TYPE.STRING
            ? await OrtValue.strings(env, input.name, input.shape, input.data ?? new Uint8Array(0))
            : OrtValue.overData(env, input.name, input.elementType, input.shape, input.data);
        owned.push(v);
        inValues[i] = v.handle ?? 0n;
      }
      // Outputs whose shape is known up front are written by ORT straight into JS memory.
      const batch = batched ? this.#batchOf(inputs) : undefined;
      outputNames.forEach((name, i) => {
        const out = this.#preallocate(name, batch);
        preallocated.push(out);
        if (!out) return;
        const v = OrtValue.overData(env, name, out.elementType, out.shape, out.data, false);
        owned.push(v);
        outValues[i] = v.handle ?? 0n;
      });
      const inNames = this.#namesArray(inputs.map((x) => x.name));
      const outNames = this.#namesArray(outputNames);
      const h = this.#handle;
      const n = inputs.length;
      const m = outputNames.length;
      const status: Pointer = async
        ? await new Promise<Pointer>((resolve, reject) =>
            api.Run.async(h, null, inNames, inValues, n, outNames, m, outValues, (err: unknown, res: Pointer) =>
              err ? reject(NativeError.fromKoffi("onnxruntime", "Run", err)) : resolve(res),
            ),
          )
        : api.Run(h, null, inNames, inValues, n, outNames, m, outValues);
      // Values ORT created for the other outputs are ours from here, even when Run failed.
      const created = outputNames.map((_, i) => (preallocated[i] || !outValues[i] ? undefined : OrtValue.adopt(api, outValues[i]!)));
      for (const v of created) if (v) owned.push(v);
      check(api, status, "Run");
      const results: OrtOutput[] = [];
      for (let i = 0; i < outputNames.length; i++) {
        const name = outputNames[i]!;
        const out = preallocated[i] ?? created[i]?.read(name) ?? unset(name);
        results.push(out instanceof Promise ? await out : out);
      }
      return results;
    } finally {
      for (const v of owned) v.close();
      this.#running--;
      if (this.#running === 0 && this.#closeWhenIdle) this.close();
    }
  }

  /**
   * A synchronous run with bound values (see #boundRun), made without a promise; undefined
   * when the run does not qualify (then run() it).
   */
  runBound(inputs: readonly OrtInput[], outputNames: readonly string[], batched = false): OrtOutput[] | undefined {
    if (!this.#handle || this.#closeWhenIdle) throw new NativeError("INTERNAL", "onnxruntime", "onnxruntime: session is closed");
    const bound = this.#boundRun(inputs, outputNames, batched);
    return bound ? this.#runBound(bound, inputs) : undefined;
  }

  /**
   * For small synchronous runs, the OrtValues of a given layout (input names, types and
   * shapes; output names) are created once over JS buffers and reused: a run then copies
   * the inputs in, calls Run and copies the outputs out. Creating and releasing four
   * OrtValues per call costs more than the whole Run of a tiny model (reference
   * ceilings: 1.7 µs with bound values, 9-13 µs without). Undefined when the run does
   * not qualify (strings, unknown output shapes, over 64 KiB, too many layouts).
   */
  #boundRun(inputs: readonly OrtInput[], outputNames: readonly string[], batched: boolean): BoundRun | undefined {
    const last = this.#lastBound;
    if (last && sameLayout(last, inputs, outputNames)) return last;
    let key = outputNames.join("\0") + "|";
    let bytes = 0;
    for (const input of inputs) {
      if (input.elementType === ONNX_TYPE.STRING || !input.data) return undefined;
      bytes += input.data.byteLength;
      key += `${input.name}\0${input.elementType}\0${input.shape.join(",")}\0${input.data.byteLength}|`;
    }
    if (bytes > BOUND_MAX_BYTES) return undefined;
    const found = this.#bound.get(key);
    if (found) return (this.#lastBound = found);
    const batch = batched ? this.#batchOf(inputs) : undefined;
    const outputs = outputNames.map((name) => this.#preallocate(name, batch));
    if (outputs.some((o) => !o) || outputs.reduce((n, o) => n + o!.data!.byteLength, bytes) > BOUND_MAX_BYTES) return undefined;
    if (this.#bound.size >= BOUND_MAX_LAYOUTS) return undefined;
    const env = this.#env;
    const values: OrtValue[] = [];
    try {
      const inputData = inputs.map((input) => new Uint8Array(new ArrayBuffer(input.data!.byteLength)));
      const inValues = offHeapPointers(inputs.length);
      inputs.forEach((input, i) => {
        const v = OrtValue.overData(env, input.name, input.elementType, input.shape, inputData[i], false);
        values.push(v);
        inValues[i] = v.handle ?? 0n;
      });
      const outValues = offHeapPointers(outputNames.length);
      outputs.forEach((o, i) => {
        const v = OrtValue.overData(env, o!.name, o!.elementType, o!.shape, o!.data, false);
        values.push(v);
        outValues[i] = v.handle ?? 0n;
      });
      const bound: BoundRun = {
        layout: inputs.map((x) => ({ name: x.name, elementType: x.elementType, shape: [...x.shape], byteLength: x.data!.byteLength })),
        outputNames: [...outputNames],
        inputData,
        outputs: outputs as OrtOutput[],
        values,
        inValues,
        outValues,
        inNames: this.#namesArray(inputs.map((x) => x.name)),
        outNames: this.#namesArray(outputNames),
      };
      this.#bound.set(key, bound);
      return (this.#lastBound = bound);
    } catch (err) {
      for (const v of values) v.close();
      throw err;
    }
  }

  #runBound(b: BoundRun, inputs: readonly OrtInput[]): OrtOutput[] {
    const api = this.#env.api;
    for (let i = 0; i < inputs.length; i++) b.inputData[i]!.set(inputs[i]!.data!);
    this.#running++;
    try {
      check(api, api.Run(this.#handle, null, b.inNames, b.inValues, inputs.length, b.outNames, b.outputs.length, b.outValues), "Run");
      const out: OrtOutput[] = new Array(b.outputs.length);
      for (let i = 0; i < out.length; i++) {
        const o = b.outputs[i]!;
        out[i] = { name: o.name, elementType: o.elementType, shape: o.shape.slice(), data: copyBytes(o.data!) };
      }
      return out;
    } finally {
      this.#running--;
      if (this.#running === 0 && this.#closeWhenIdle) this.close();
    }
  }

  #scratch(which: 0 | 1, n: number): BigUint64Array {
    let buf = this.#pointerScratch[which];
    if (buf.length < n) buf = this.#pointerScratch[which] = offHeapPointers(n);
    const view = buf.length === n ? buf : buf.subarray(0, n);
    view.fill(0n);
    return view;
  }

  /** The batch size when every input and the model agree that dim 0 is the batch. */
  #batchOf(inputs: readonly OrtInput[]): number | undefined {
    let batch: number | undefined;
    for (const input of inputs) {
      const info = this.inputs.find((i) => i.name === input.name);
      if (!info || info.shape[0] !== -1 || input.shape.length === 0) return undefined;
      if (batch === undefined) batch = input.shape[0];
      else if (batch !== input.shape[0]) return undefined;
    }
    return batch;
  }

  /** A zeroed output tensor in JS memory when the output's shape is fixed (apart from the batch). */
  #preallocate(name: string, batch: number | undefined): OrtOutput | undefined {
    const info = this.outputs.find((o) => o.name === name);
    if (!info?.isTensor || !hasFixedSize(info.elementType)) return undefined;
    const shape = info.shape.map((d, i) => (i === 0 && d === -1 ? (batch ?? -1) : d));
    if (shape.some((d) => d < 0)) return undefined;
    const bytes = shape.reduce((a, b) => a * b, 1) * elementSize(info.elementType);
    return { name, elementType: info.elementType, shape, data: new Uint8Array(new ArrayBuffer(bytes)) };
  }

  /** A native `const char* const*` for these names, cached for the session's lifetime. */
  #namesArray(names: readonly string[]): Pointer {
    const key = names.join("\0");
    let arr = this.#names.get(key);
    if (arr === undefined) {
      const koffi = getKoffi();
      const ptrs = names.map((n) => {
        const bytes = new TextEncoder().encode(n + "\0");
        const p = koffi.alloc("uint8_t", bytes.byteLength) as Pointer;
        this.#allocations.push(p);
        koffi.encode(p, "uint8_t", Array.from(bytes), bytes.byteLength);
        return p;
      });
      arr = koffi.alloc("void *", Math.max(names.length, 1)) as Pointer;
      this.#allocations.push(arr);
      if (names.length > 0) koffi.encode(arr, "void *", ptrs, names.length);
      this.#names.set(key, arr);
    }
    return arr;
  }

  /**
   * Releases the session now, or after the runs in flight when there are any: this
   * thread's, and, for a shared session, other threads' (SharedGuard.retire).
   */
  close(): void {
    if (!this.#handle) return;
    if (this.#running > 0) {
      this.#closeWhenIdle = true;
      return;
    }
    const g = this.#guard;
    if (g && !this.#borrowed) {
      // No run starts from here (#closeWhenIdle); the session goes once no borrower is inside it.
      this.#closeWhenIdle = true;
      g.retire(() => {
        this.#closeWhenIdle = false;
        this.#guard = undefined;
        this.close();
      });
      return;
    }
    for (const b of this.#bound.values()) for (const v of b.values) v.close();
    this.#bound.clear();
    this.#lastBound = undefined;
    if (!this.#borrowed) this.#env.api.ReleaseSession(this.#handle);
    this.#handle = null;
    const koffi = getKoffi();
    for (const p of this.#allocations.splice(0)) koffi.free(p);
    this.#names.clear();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/** Small runs whose OrtValues stay bound to JS buffers (see OrtSession.#boundRun). */
interface BoundRun {
  /** What the values were created for: input names, element types, shapes and byte sizes; output names. */
  layout: { name: string; elementType: number; shape: number[]; byteLength: number }[];
  outputNames: string[];
  inputData: Uint8Array[];
  outputs: OrtOutput[];
  values: OrtValue[];
  inValues: BigUint64Array;
  outValues: BigUint64Array;
  inNames: Pointer;
  outNames: Pointer;
}

/** Whether a run of `inputs` asking for `outputNames` fits the values of `b` as they are. */
function sameLayout(b: BoundRun, inputs: readonly OrtInput[], outputNames: readonly string[]): boolean {
  if (b.layout.length !== inputs.length || b.outputNames.length !== outputNames.length) return false;
  for (let i = 0; i < outputNames.length; i++) if (b.outputNames[i] !== outputNames[i]) return false;
  for (let i = 0; i < inputs.length; i++) {
    const l = b.layout[i]!;
    const x = inputs[i]!;
    if (l.name !== x.name || l.elementType !== x.elementType || !x.data || l.byteLength !== x.data.byteLength || l.shape.length !== x.shape.length)
      return false;
    for (let d = 0; d < l.shape.length; d++) if (l.shape[d] !== x.shape[d]) return false;
  }
  return true;
}

const BOUND_MAX_BYTES = 64 * 1024;
const BOUND_MAX_LAYOUTS = 16;

/** ORT sets every output it was asked for; this is the error should it not. */
function unset(name: string): never {
  throw new NativeError("INTERNAL", "onnxruntime", `onnxruntime: Run succeeded but left output '${name}' unset`, { call: "Run" });
}
