/**
 * @module Owned ONNX Runtime handles. OrtRuntime owns the bound API, the process's one
 * OrtEnv, the default allocator and a CPU OrtMemoryInfo. OrtSession owns its
 * OrtSession; each run creates and releases its own OrtValues. Every handle is released
 * exactly once, with ORT's own Release function; close() is safe to call twice.
 */
import { getKoffi, type Pointer } from "../load.ts";
import { bindOrtApi, ONNX_TYPE, ORT_LOGGING_LEVEL, ONNX_VALUE_TYPE_TENSOR, type OrtApi } from "./symbols.ts";
import { check } from "./status.ts";
import { ortLibraryCandidates } from "./library.ts";

export type OnnxElementType = (typeof ONNX_TYPE)[keyof typeof ONNX_TYPE];

export interface OrtTensorInfo {
  name: string;
  elementType: number;
  /** -1 for symbolic or unknown dimensions. */
  shape: number[];
  /** False for sequences, maps and other non-tensor values. */
  isTensor: boolean;
}

export interface OrtInput {
  name: string;
  elementType: number;
  shape: number[];
  /** Raw element bytes; for STRING, one Uint8Array per element in `strings`. */
  data?: Uint8Array;
  strings?: Uint8Array[];
}

export interface OrtOutput {
  name: string;
  elementType: number;
  shape: number[];
  /** Raw element bytes (a copy ORT no longer references); for STRING see `strings`. */
  data: Uint8Array;
  strings?: Uint8Array[];
}

export interface SessionConfig {
  intraOpThreads: number;
  interOpThreads: number;
  graphOptimizationLevel: number;
  allowSpinning: boolean;
  memArena: boolean;
  /** Extra ORT session config entries (AddSessionConfigEntry), e.g. session.disable_prepacking. */
  entries?: Record<string, string>;
}

let runtime: OrtRuntime | undefined;

export class OrtRuntime {
  readonly api: OrtApi;
  #env: Pointer;
  readonly allocator: Pointer;
  readonly cpuMemory: Pointer;

  private constructor(api: OrtApi) {
    this.api = api;
    const env: Pointer[] = [null];
    check(api, api.CreateEnv(ORT_LOGGING_LEVEL.ERROR, "nereid", env), "CreateEnv");
    this.#env = env[0]!;
    const alloc: Pointer[] = [null];
    check(api, api.GetAllocatorWithDefaultOptions(alloc), "GetAllocatorWithDefaultOptions");
    this.allocator = alloc[0]!;
    const mem: Pointer[] = [null];
    try {
      check(api, api.CreateCpuMemoryInfo(1 /* OrtArenaAllocator */, 0 /* OrtMemTypeDefault */, mem), "CreateCpuMemoryInfo");
    } catch (err) {
      api.ReleaseEnv(this.#env);
      throw err;
    }
    this.cpuMemory = mem[0]!;
  }

  /** The process's runtime; the first call decides which library is loaded. */
  static get(explicitLibrary?: string): OrtRuntime {
    // ORT 1.30 otherwise starts its telemetry at CreateEnv (it leaves /tmp/mat-debug-<pid>.log).
    process.env.ORT_DISABLE_TELEMETRY ??= "1";
    if (!runtime) runtime = new OrtRuntime(bindOrtApi(ortLibraryCandidates(explicitLibrary)));
    return runtime;
  }

  get env(): Pointer {
    return this.#env;
  }

  get version(): string {
    return this.api.version;
  }

  availableProviders(): string[] {
    const koffi = getKoffi();
    const out: Pointer[] = [null];
    const count = [0];
    check(this.api, this.api.GetAvailableProviders(out, count), "GetAvailableProviders");
    const names = koffi.decode(out[0], "const char *", count[0]) as string[];
    check(this.api, this.api.ReleaseAvailableProviders(out[0], count[0]), "ReleaseAvailableProviders");
    return names;
  }
}

export class OrtSessionOptions {
  #api: OrtApi;
  #handle: Pointer;

  constructor(api: OrtApi, config: SessionConfig) {
    this.#api = api;
    const out: Pointer[] = [null];
    check(api, api.CreateSessionOptions(out), "CreateSessionOptions");
    this.#handle = out[0]!;
    try {
      check(api, api.SetIntraOpNumThreads(this.#handle, config.intraOpThreads), "SetIntraOpNumThreads");
      check(api, api.SetInterOpNumThreads(this.#handle, config.interOpThreads), "SetInterOpNumThreads");
      check(api, api.SetSessionGraphOptimizationLevel(this.#handle, config.graphOptimizationLevel), "SetSessionGraphOptimizationLevel");
      const spin = config.allowSpinning ? "1" : "0";
      check(api, api.AddSessionConfigEntry(this.#handle, "session.intra_op.allow_spinning", spin), "AddSessionConfigEntry");
      check(api, api.AddSessionConfigEntry(this.#handle, "session.inter_op.allow_spinning", spin), "AddSessionConfigEntry");
      check(api, config.memArena ? api.EnableCpuMemArena(this.#handle) : api.DisableCpuMemArena(this.#handle), "CpuMemArena");
      for (const [key, value] of Object.entries(config.entries ?? {})) {
        check(api, api.AddSessionConfigEntry(this.#handle, key, value), `AddSessionConfigEntry(${key})`);
      }
    } catch (err) {
      this.close();
      throw err;
    }
  }

  get handle(): Pointer {
    return this.#handle;
  }

  close(): void {
    if (this.#handle) {
      this.#api.ReleaseSessionOptions(this.#handle);
      this.#handle = null;
    }
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

const INT64_SIZE = 8;
const MAX_RANK = 16;
/**
 * V8 keeps typed arrays of up to 64 bytes inside its moving heap; JavaScriptCore (Bun)
 * does not move array storage. Under V8 such inputs are copied before ORT holds them.
 */
const MOVABLE_SMALL_ARRAYS = typeof (globalThis as { Bun?: unknown }).Bun === "undefined";

export class OrtSession {
  readonly inputs: OrtTensorInfo[];
  readonly outputs: OrtTensorInfo[];
  #rt: OrtRuntime;
  #handle: Pointer;
  #running = 0;
  #closeWhenIdle = false;
  /** Native name arrays by name list, and every native allocation to free at close. */
  readonly #names = new Map<string, Pointer>();
  readonly #shapeScratch = new BigInt64Array(new ArrayBuffer(MAX_RANK * 8));
  readonly #outScratch = offHeapPointers(1);
  readonly #pointerScratch: [BigUint64Array, BigUint64Array] = [offHeapPointers(8), offHeapPointers(8)];
  readonly #allocations: Pointer[] = [];

  /** Creates the session on the calling thread, or adopts `created` (see open()). */
  constructor(rt: OrtRuntime, modelPath: string, options: OrtSessionOptions, created?: Pointer) {
    this.#rt = rt;
    const api = rt.api;
    if (created) {
      this.#handle = created;
    } else {
      const out: Pointer[] = [null];
      check(api, api.CreateSession(rt.env, modelPath, options.handle, out), `CreateSession(${modelPath})`);
      this.#handle = out[0]!;
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
  static async open(rt: OrtRuntime, modelPath: string, options: OrtSessionOptions): Promise<OrtSession> {
    const api = rt.api;
    const out = new BigUint64Array(1);
    const status = await new Promise<Pointer>((resolve, reject) =>
      api.CreateSessionAsync.async(rt.env, modelPath, options.handle, out, (err: Error | null, res: Pointer) => (err ? reject(err) : resolve(res))),
    );
    check(api, status, `CreateSession(${modelPath})`);
    return new OrtSession(rt, modelPath, options, out[0]!);
  }

  #describe(input: boolean): OrtTensorInfo[] {
    const api = this.#rt.api;
    const koffi = getKoffi();
    const count = [0];
    check(api, input ? api.SessionGetInputCount(this.#handle, count) : api.SessionGetOutputCount(this.#handle, count), "SessionGetCount");
    const list: OrtTensorInfo[] = [];
    for (let i = 0; i < Number(count[0]); i++) {
      const namePtr: Pointer[] = [null];
      check(api, (input ? api.SessionGetInputName : api.SessionGetOutputName)(this.#handle, i, this.#rt.allocator, namePtr), "SessionGetName");
      const name = koffi.decode(namePtr[0], "char", -1) as string;
      check(api, api.AllocatorFree(this.#rt.allocator, namePtr[0]), "AllocatorFree");
      const typeInfo: Pointer[] = [null];
      check(api, (input ? api.SessionGetInputTypeInfo : api.SessionGetOutputTypeInfo)(this.#handle, i, typeInfo), "SessionGetTypeInfo");
      try {
        const onnxType = [0];
        check(api, api.GetOnnxTypeFromTypeInfo(typeInfo[0], onnxType), "GetOnnxTypeFromTypeInfo");
        if (onnxType[0] !== ONNX_VALUE_TYPE_TENSOR) {
          list.push({ name, elementType: 0, shape: [], isTensor: false });
          continue;
        }
        const tensorInfo: Pointer[] = [null];
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
   * Runs the session. With `async`, Run executes on koffi's worker thread and the
   * event loop stays free; otherwise it runs on the calling thread.
   */
  /**
   * `batched`: the model follows Triton's batching contract (max_batch_size > 0), so a
   * dynamic first dimension of every input and output is the batch size. Only then are
   * outputs with a dynamic first dimension preallocated.
   */
  async run(inputs: readonly OrtInput[], outputNames: readonly string[], async: boolean, batched = false): Promise<OrtOutput[]> {
    if (!this.#handle || this.#closeWhenIdle) throw new Error("onnxruntime: session is closed");
    const api = this.#rt.api;
    // A sync run is one synchronous stretch from here to its finally block, so the
    // session's scratch pointer arrays serve it; async runs get their own.
    const values = async ? offHeapPointers(inputs.length) : this.#scratch(0, inputs.length);
    const outValues = async ? offHeapPointers(outputNames.length) : this.#scratch(1, outputNames.length);
    const keepAlive: unknown[] = [];
    const preallocated: (OrtOutput | undefined)[] = [];
    this.#running++;
    try {
      inputs.forEach((input, i) => (values[i] = this.#createValue(input, keepAlive) ?? 0n));
      // Outputs whose shape is known up front are written by ORT straight into JS memory.
      const batch = batched ? this.#batchOf(inputs) : undefined;
      outputNames.forEach((name, i) => {
        const out = this.#preallocate(name, batch);
        preallocated.push(out);
        if (out) outValues[i] = this.#createValue(out, keepAlive, false) ?? 0n;
      });
      const inNames = this.#namesArray(inputs.map((x) => x.name));
      const outNames = this.#namesArray(outputNames);
      const h = this.#handle;
      const status: Pointer = async
        ? await new Promise<Pointer>((resolve, reject) =>
            api.RunRaw.async(h, null, inNames, values, inputs.length, outNames, outputNames.length, outValues, (err: Error | null, res: Pointer) =>
              err ? reject(err) : resolve(res),
            ),
          )
        : api.RunRaw(h, null, inNames, values, inputs.length, outNames, outputNames.length, outValues);
      check(api, status, "Run");
      return outputNames.map((name, i) => preallocated[i] ?? this.#readValue(name, outValues[i] || null));
    } finally {
      for (const v of values) if (v) api.ReleaseValue(v);
      for (const v of outValues) if (v) api.ReleaseValue(v);
      keepAlive.length = 0;
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
    if (!info || !info.isTensor || info.elementType === ONNX_TYPE.STRING || !(info.elementType in SIZES)) return undefined;
    const shape = info.shape.map((d, i) => (i === 0 && d === -1 ? batch ?? -1 : d));
    if (shape.some((d) => d < 0)) return undefined;
    const bytes = shape.reduce((a, b) => a * b, 1) * elementSize(info.elementType);
    return { name, elementType: info.elementType, shape, data: new Uint8Array(new ArrayBuffer(bytes)) };
  }

  /** A native `const char* const*` for these names, cached for the session's lifetime. */
  #namesArray(names: readonly string[]): Pointer {
    const key = names.join("\0");
    let arr = this.#names.get(key);
    if (!arr) {
      const koffi = getKoffi();
      const ptrs = names.map((n) => {
        const bytes = new TextEncoder().encode(n + "\0");
        const p = koffi.alloc("uint8_t", bytes.byteLength) as Pointer;
        koffi.encode(p, "uint8_t", Array.from(bytes), bytes.byteLength);
        this.#allocations.push(p);
        return p;
      });
      arr = koffi.alloc("void *", Math.max(names.length, 1)) as Pointer;
      if (names.length > 0) koffi.encode(arr, "void *", ptrs, names.length);
      this.#allocations.push(arr);
      this.#names.set(key, arr);
    }
    return arr;
  }

  /**
   * Fills a string tensor. FillStringTensor takes NUL-terminated C strings, so elements
   * that contain a 0 byte are written one by one into buffers of their exact length.
   */
  #fillStrings(value: Pointer, elements: readonly Uint8Array[], name: string): void {
    if (elements.length === 0) return;
    const api = this.#rt.api;
    if (!elements.some((e) => e.includes(0))) {
      const cStrings = elements.map((e) => {
        const z = new Uint8Array(e.byteLength + 1);
        z.set(e);
        return z;
      });
      check(api, api.FillStringTensor(value, cStrings, cStrings.length), `FillStringTensor(${name})`);
      return;
    }
    const koffi = getKoffi();
    const buffer: Pointer[] = [null];
    elements.forEach((e, i) => {
      check(api, api.GetResizedStringTensorElementBuffer(value, i, e.byteLength, buffer), `GetResizedStringTensorElementBuffer(${name})`);
      if (e.byteLength > 0) new Uint8Array(koffi.view(buffer[0], e.byteLength) as ArrayBuffer).set(e);
    });
  }

  /** `copySmall`: false when `input.data` is known to own an ArrayBuffer (preallocated outputs). */
  #createValue(input: OrtInput, keepAlive: unknown[], copySmall = true): Pointer {
    const api = this.#rt.api;
    // ORT copies the shape and writes the value pointer during the call itself, so one
    // scratch buffer per session serves every call.
    const shape = input.shape.length <= MAX_RANK ? this.#shapeScratch : new BigInt64Array(new ArrayBuffer(input.shape.length * 8));
    for (let i = 0; i < input.shape.length; i++) shape[i] = BigInt(input.shape[i]!);
    const out = this.#outScratch;
    if (input.elementType === ONNX_TYPE.STRING) {
      check(api, api.CreateTensorAsOrtValueRaw(this.#rt.allocator, shape, input.shape.length, ONNX_TYPE.STRING, out), "CreateTensorAsOrtValue");
      const value = out[0]!;
      const elements = input.strings ?? [];
      try {
        this.#fillStrings(value, elements, input.name);
      } catch (err) {
        api.ReleaseValue(value);
        throw err;
      }
      return value;
    }
    // Zero-copy: ORT reads the JS buffer, which stays referenced until the value is
    // released. V8 may move small typed arrays that live inside its heap, so those are
    // copied into an ArrayBuffer of their own first.
    let data = input.data && input.data.byteLength > 0 ? input.data : new Uint8Array(new ArrayBuffer(1));
    if (copySmall && MOVABLE_SMALL_ARRAYS && data.byteLength <= 128) {
      const copy = new Uint8Array(new ArrayBuffer(data.byteLength));
      copy.set(data);
      data = copy;
    }
    keepAlive.push(data);
    check(
      api,
      api.CreateTensorWithDataAsOrtValueRaw(this.#rt.cpuMemory, data, input.data?.byteLength ?? 0, shape, input.shape.length, input.elementType, out),
      `CreateTensorWithDataAsOrtValue(${input.name})`,
    );
    return out[0] || null;
  }

  #readValue(name: string, value: Pointer): OrtOutput {
    const api = this.#rt.api;
    const koffi = getKoffi();
    const info: Pointer[] = [null];
    check(api, api.GetTensorTypeAndShape(value, info), `GetTensorTypeAndShape(${name})`);
    let elementType: number;
    let shape: number[];
    try {
      ({ elementType, shape } = readTypeAndShape(api, info[0]));
    } finally {
      api.ReleaseTensorTypeAndShapeInfo(info[0]);
    }
    const count = shape.reduce((a, b) => a * b, 1);
    if (elementType === ONNX_TYPE.STRING) {
      const len = [0];
      check(api, api.GetStringTensorDataLength(value, len), "GetStringTensorDataLength");
      const total = Number(len[0]);
      const buf = new Uint8Array(Math.max(total, 1));
      const offsets = new BigUint64Array(Math.max(count, 1));
      if (count > 0) check(api, api.GetStringTensorContent(value, buf, total, offsets, count), "GetStringTensorContent");
      const strings: Uint8Array[] = [];
      for (let i = 0; i < count; i++) {
        const start = Number(offsets[i]);
        const end = i + 1 < count ? Number(offsets[i + 1]) : total;
        strings.push(buf.slice(start, end));
      }
      return { name, elementType, shape, data: new Uint8Array(0), strings };
    }
    const bytes = count * elementSize(elementType);
    if (bytes === 0) return { name, elementType, shape, data: new Uint8Array(0) };
    const ptr: Pointer[] = [null];
    check(api, api.GetTensorMutableData(value, ptr), `GetTensorMutableData(${name})`);
    const data = new Uint8Array(koffi.view(ptr[0], bytes) as ArrayBuffer).slice();
    return { name, elementType, shape, data };
  }

  /** Releases the session now, or after the runs in flight when there are any. */
  close(): void {
    if (!this.#handle) return;
    if (this.#running > 0) {
      this.#closeWhenIdle = true;
      return;
    }
    this.#rt.api.ReleaseSession(this.#handle);
    this.#handle = null;
    const koffi = getKoffi();
    for (const p of this.#allocations.splice(0)) koffi.free(p);
    this.#names.clear();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/** A pointer array ORT may write into from another thread: kept out of V8's movable heap. */
function offHeapPointers(n: number): BigUint64Array {
  return new BigUint64Array(new ArrayBuffer(Math.max(n, 1) * 8)).subarray(0, n);
}

function readTypeAndShape(api: OrtApi, info: Pointer): { elementType: number; shape: number[] } {
  const et = [0];
  check(api, api.GetTensorElementType(info, et), "GetTensorElementType");
  const n = [0];
  check(api, api.GetDimensionsCount(info, n), "GetDimensionsCount");
  const dims = new BigInt64Array(Math.max(Number(n[0]), 1));
  if (Number(n[0]) > 0) check(api, api.GetDimensions(info, dims, Number(n[0])), "GetDimensions");
  return { elementType: et[0]!, shape: [...dims.subarray(0, Number(n[0]))].map(Number) };
}

const SIZES: Record<number, number> = {
  [ONNX_TYPE.FLOAT]: 4, [ONNX_TYPE.UINT8]: 1, [ONNX_TYPE.INT8]: 1, [ONNX_TYPE.UINT16]: 2, [ONNX_TYPE.INT16]: 2,
  [ONNX_TYPE.INT32]: 4, [ONNX_TYPE.INT64]: INT64_SIZE, [ONNX_TYPE.BOOL]: 1, [ONNX_TYPE.FLOAT16]: 2, [ONNX_TYPE.DOUBLE]: 8,
  [ONNX_TYPE.UINT32]: 4, [ONNX_TYPE.UINT64]: 8, [ONNX_TYPE.BFLOAT16]: 2,
};

export function elementSize(elementType: number): number {
  const s = SIZES[elementType];
  if (s === undefined) throw new Error(`onnxruntime: unsupported tensor element type ${elementType}`);
  return s;
}
