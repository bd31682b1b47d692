/**
 * @module The CUDA driver API (libcuda.so.1, cuda.h), declared from the published
 * header: the versioned symbols (`_v2`) are the ones cuda.h maps the plain names to.
 * Every CUresult other than CUDA_SUCCESS becomes a CudaError (a ServerError, ffi/errors.ts)
 * reading "CUDA driver: <call> failed: <cuGetErrorName> (<CUresult>): <cuGetErrorString>",
 * with Triton's code for it (cudaError below). Handles: CudaDriver is a process-wide singleton (cuInit once);
 * a DeviceBuffer owns one cuMemAlloc and frees it exactly once; a PrimaryContext
 * retains and releases a device's primary context. `NEREID_CUDA_LIBRARY` names the
 * library to load instead of searching (a test points it at a double).
 */
import { getKoffi, loadLibrary, type KoffiFunc, type KoffiLibrary } from "../load.ts";
import type { ErrorCode } from "../../src/core/errors.ts";
import { NativeError } from "../errors.ts";

/** cuda.h CUdevice_attribute values used here. */
export const CU_DEVICE_ATTRIBUTE = {
  COMPUTE_CAPABILITY_MAJOR: 75,
  COMPUTE_CAPABILITY_MINOR: 76,
  MULTIPROCESSOR_COUNT: 16,
} as const;
/** cuda.h: sizeof(CUipcMemHandle) (CU_IPC_HANDLE_SIZE). */
export const CU_IPC_HANDLE_SIZE = 64;
/** cuda.h CUipcMem_flags. */
export const CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1;
/** cuda.h CUresult values referred to by name. */
export const CUDA_SUCCESS = 0;
export const CUDA_ERROR_INVALID_VALUE = 1;
export const CUDA_ERROR_NO_DEVICE = 100;
export const CUDA_ERROR_INVALID_DEVICE = 101;
export const CUDA_ERROR_INVALID_CONTEXT = 201;
export const CUDA_ERROR_INVALID_HANDLE = 400;
export const CUDA_ERROR_NOT_READY = 600;
export const CUDA_ERROR_NOT_SUPPORTED = 801;

/**
 * A failed driver call (`result` is its CUresult) or a misuse the binding refuses before
 * calling (no `result`). `code` is Triton's: INVALID_ARG for a value, device or handle the
 * driver refuses (a client's CUDA IPC handle or device id; Triton answers INVALID_ARG when
 * it cannot open one), UNAVAILABLE when there is no device, UNSUPPORTED for
 * CUDA_ERROR_NOT_SUPPORTED, else INTERNAL (as Triton's RETURN_IF_CUDA_ERR).
 */
export class CudaError extends NativeError {
  readonly result: number | undefined;
  constructor(code: ErrorCode, call: string | undefined, message: string, result?: number) {
    const where = call === undefined ? "" : result === undefined ? `${call}: ` : `${call} failed: `;
    super(code, "CUDA driver", `CUDA driver: ${where}${message}`, { call });
    this.name = "CudaError";
    this.result = result;
  }

  /** `call` answered `result`; `name` and `text` are cuGetErrorName / cuGetErrorString of it. */
  static failed(call: string, result: number, name: string, text: string): CudaError {
    return new CudaError(cudaErrorCode(result), call, `${name} (${result}): ${text}`, result);
  }
}

export function cudaErrorCode(result: number): ErrorCode {
  switch (result) {
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_INVALID_HANDLE:
      return "INVALID_ARG";
    case CUDA_ERROR_NO_DEVICE:
      return "UNAVAILABLE";
    case CUDA_ERROR_NOT_SUPPORTED:
      return "UNSUPPORTED";
    default:
      return "INTERNAL";
  }
}

type CUresult = number;
type Out = unknown[];

interface Api {
  lib: KoffiLibrary;
  cuInit: KoffiFunc<(flags: number) => CUresult>;
  cuDriverGetVersion: KoffiFunc<(v: Out) => CUresult>;
  cuDeviceGetCount: KoffiFunc<(n: Out) => CUresult>;
  cuDeviceGet: KoffiFunc<(d: Out, ordinal: number) => CUresult>;
  cuDeviceGetName: KoffiFunc<(buf: Buffer, len: number, dev: number) => CUresult>;
  cuDeviceTotalMem_v2: KoffiFunc<(bytes: Out, dev: number) => CUresult>;
  cuDeviceGetAttribute: KoffiFunc<(v: Out, attr: number, dev: number) => CUresult>;
  cuDevicePrimaryCtxRetain: KoffiFunc<(ctx: Out, dev: number) => CUresult>;
  cuDevicePrimaryCtxRelease_v2: KoffiFunc<(dev: number) => CUresult>;
  cuCtxSetCurrent: KoffiFunc<(ctx: unknown) => CUresult>;
  cuMemAlloc_v2: KoffiFunc<(ptr: Out, bytes: number) => CUresult>;
  cuMemFree_v2: KoffiFunc<(ptr: bigint) => CUresult>;
  cuMemcpyHtoD_v2: KoffiFunc<(dst: bigint, src: Uint8Array, n: number) => CUresult>;
  cuMemcpyDtoH_v2: KoffiFunc<(dst: Uint8Array, src: bigint, n: number) => CUresult>;
  cuMemcpyHtoDAsync_v2: KoffiFunc<(dst: bigint, src: Uint8Array, n: number, stream: unknown) => CUresult>;
  cuMemcpyDtoHAsync_v2: KoffiFunc<(dst: Uint8Array, src: bigint, n: number, stream: unknown) => CUresult>;
  cuStreamCreate: KoffiFunc<(s: Out, flags: number) => CUresult>;
  cuStreamSynchronize: KoffiFunc<(s: unknown) => CUresult>;
  cuStreamQuery: KoffiFunc<(s: unknown) => CUresult>;
  cuStreamDestroy_v2: KoffiFunc<(s: unknown) => CUresult>;
  cuIpcGetMemHandle: KoffiFunc<(handle: Uint8Array, ptr: bigint) => CUresult>;
  cuIpcOpenMemHandle_v2: KoffiFunc<(ptr: Out, handle: { reserved: number[] }, flags: number) => CUresult>;
  cuIpcCloseMemHandle: KoffiFunc<(ptr: bigint) => CUresult>;
  cuGetErrorName: KoffiFunc<(code: number, s: Out) => CUresult>;
  cuGetErrorString: KoffiFunc<(code: number, s: Out) => CUresult>;
}

let api: Api | undefined;
/** Set once a worker-thread cuStreamSynchronize answered CUDA_ERROR_INVALID_CONTEXT. */
let pollStreams = false;

let ipcType: unknown;

/** typedef struct CUipcMemHandle_st { char reserved[CU_IPC_HANDLE_SIZE]; } CUipcMemHandle; (passed by value) */
export function ipcHandleType(): unknown {
  const k = getKoffi();
  ipcType ??= k.struct("CUipcMemHandle", { reserved: k.array("char", CU_IPC_HANDLE_SIZE, "Array") });
  return ipcType;
}

function declare(lib: KoffiLibrary): Api {
  ipcHandleType();
  return {
    lib,
    cuInit: lib.func("int cuInit(unsigned int Flags)"),
    cuDriverGetVersion: lib.func("int cuDriverGetVersion(_Out_ int *driverVersion)"),
    cuDeviceGetCount: lib.func("int cuDeviceGetCount(_Out_ int *count)"),
    cuDeviceGet: lib.func("int cuDeviceGet(_Out_ int *device, int ordinal)"),
    cuDeviceGetName: lib.func("int cuDeviceGetName(void *name, int len, int dev)"),
    cuDeviceTotalMem_v2: lib.func("int cuDeviceTotalMem_v2(_Out_ size_t *bytes, int dev)"),
    cuDeviceGetAttribute: lib.func("int cuDeviceGetAttribute(_Out_ int *pi, int attrib, int dev)"),
    cuDevicePrimaryCtxRetain: lib.func("int cuDevicePrimaryCtxRetain(_Out_ void **pctx, int dev)"),
    cuDevicePrimaryCtxRelease_v2: lib.func("int cuDevicePrimaryCtxRelease_v2(int dev)"),
    cuCtxSetCurrent: lib.func("int cuCtxSetCurrent(void *ctx)"),
    cuMemAlloc_v2: lib.func("int cuMemAlloc_v2(_Out_ uint64_t *dptr, size_t bytesize)"),
    cuMemFree_v2: lib.func("int cuMemFree_v2(uint64_t dptr)"),
    cuMemcpyHtoD_v2: lib.func("int cuMemcpyHtoD_v2(uint64_t dstDevice, const void *srcHost, size_t ByteCount)"),
    cuMemcpyDtoH_v2: lib.func("int cuMemcpyDtoH_v2(void *dstHost, uint64_t srcDevice, size_t ByteCount)"),
    cuMemcpyHtoDAsync_v2: lib.func("int cuMemcpyHtoDAsync_v2(uint64_t dstDevice, const void *srcHost, size_t ByteCount, void *hStream)"),
    cuMemcpyDtoHAsync_v2: lib.func("int cuMemcpyDtoHAsync_v2(void *dstHost, uint64_t srcDevice, size_t ByteCount, void *hStream)"),
    cuStreamCreate: lib.func("int cuStreamCreate(_Out_ void **phStream, unsigned int Flags)"),
    cuStreamSynchronize: lib.func("int cuStreamSynchronize(void *hStream)"),
    cuStreamQuery: lib.func("int cuStreamQuery(void *hStream)"),
    cuStreamDestroy_v2: lib.func("int cuStreamDestroy_v2(void *hStream)"),
    cuIpcGetMemHandle: lib.func("int cuIpcGetMemHandle(void *pHandle, uint64_t dptr)"),
    cuIpcOpenMemHandle_v2: lib.func("int cuIpcOpenMemHandle_v2(_Out_ uint64_t *pdptr, CUipcMemHandle handle, unsigned int Flags)"),
    cuIpcCloseMemHandle: lib.func("int cuIpcCloseMemHandle(uint64_t dptr)"),
    cuGetErrorName: lib.func("int cuGetErrorName(int error, _Out_ const char **pStr)"),
    cuGetErrorString: lib.func("int cuGetErrorString(int error, _Out_ const char **pStr)"),
  } as unknown as Api;
}

function check(call: string, code: CUresult): void {
  if (code === CUDA_SUCCESS) return;
  const name: unknown[] = [null];
  const text: unknown[] = [null];
  const a = api!;
  const n = a.cuGetErrorName(code, name) === CUDA_SUCCESS ? String(name[0]) : "CUDA_ERROR_UNKNOWN";
  const t = a.cuGetErrorString(code, text) === CUDA_SUCCESS ? String(text[0]) : "unrecognized error code";
  throw CudaError.failed(call, code, n, t);
}

export interface CudaDeviceInfo {
  ordinal: number;
  name: string;
  totalMemoryBytes: number;
  computeCapability: string;
  multiprocessors: number;
}

/**
 * The driver, loaded and initialised once. `library`, else NEREID_CUDA_LIBRARY, is the only
 * candidate when given; otherwise libcuda.so.1 is searched for.
 */
export class CudaDriver {
  static #instance: CudaDriver | undefined;
  static #probed: { count: number; reason?: string } | undefined;
  readonly path: string;
  readonly #api: Api;

  private constructor(path: string, a: Api) {
    this.path = path;
    this.#api = a;
  }

  static get(library?: string): CudaDriver {
    if (CudaDriver.#instance) return CudaDriver.#instance;
    const explicit = library || process.env.NEREID_CUDA_LIBRARY;
    const candidates = explicit
      ? [explicit]
      : ["libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib/aarch64-linux-gnu/tegra/libcuda.so.1", "/usr/local/cuda/compat/libcuda.so.1"];
    const { lib, path } = loadLibrary("the CUDA driver (libcuda.so.1)", candidates);
    api = declare(lib);
    check("cuInit", api.cuInit(0));
    CudaDriver.#instance = new CudaDriver(path, api);
    return CudaDriver.#instance;
  }

  /**
   * How many GPUs the driver sees, asked once per process; 0 with the reason (the load
   * error's first line) when there is no usable driver.
   */
  static probeDevices(): { count: number; reason?: string } {
    if (CudaDriver.#probed) return CudaDriver.#probed;
    try {
      CudaDriver.#probed = { count: CudaDriver.get().deviceCount() };
    } catch (err) {
      CudaDriver.#probed = { count: 0, reason: `no CUDA driver: ${(err as Error).message.split("\n")[0]}` };
    }
    return CudaDriver.#probed;
  }

  /** cuDriverGetVersion as "major.minor" (e.g. 12040 → "12.4"). */
  version(): string {
    const v: unknown[] = [0];
    check("cuDriverGetVersion", this.#api.cuDriverGetVersion(v));
    const n = Number(v[0]);
    return `${Math.floor(n / 1000)}.${Math.floor((n % 1000) / 10)}`;
  }

  deviceCount(): number {
    const n: unknown[] = [0];
    check("cuDeviceGetCount", this.#api.cuDeviceGetCount(n));
    return Number(n[0]);
  }

  device(ordinal: number): CudaDeviceInfo {
    const a = this.#api;
    const d: unknown[] = [0];
    check("cuDeviceGet", a.cuDeviceGet(d, ordinal));
    const dev = Number(d[0]);
    const name = Buffer.alloc(256);
    check("cuDeviceGetName", a.cuDeviceGetName(name, name.length, dev));
    const mem: unknown[] = [0];
    check("cuDeviceTotalMem_v2", a.cuDeviceTotalMem_v2(mem, dev));
    const attr = (which: number) => {
      const v: unknown[] = [0];
      check("cuDeviceGetAttribute", a.cuDeviceGetAttribute(v, which, dev));
      return Number(v[0]);
    };
    return {
      ordinal,
      name: name.subarray(0, name.indexOf(0)).toString(),
      totalMemoryBytes: Number(mem[0]),
      computeCapability: `${attr(CU_DEVICE_ATTRIBUTE.COMPUTE_CAPABILITY_MAJOR)}.${attr(CU_DEVICE_ATTRIBUTE.COMPUTE_CAPABILITY_MINOR)}`,
      multiprocessors: attr(CU_DEVICE_ATTRIBUTE.MULTIPROCESSOR_COUNT),
    };
  }

  /** Retains device `ordinal`'s primary context and makes it current on this thread. */
  primaryContext(ordinal: number): PrimaryContext {
    const a = this.#api;
    const ctx: unknown[] = [null];
    check("cuDevicePrimaryCtxRetain", a.cuDevicePrimaryCtxRetain(ctx, ordinal));
    check("cuCtxSetCurrent", a.cuCtxSetCurrent(ctx[0]));
    return new PrimaryContext(a, ordinal, ctx[0]);
  }
}

export class PrimaryContext {
  readonly #api: Api;
  readonly ordinal: number;
  #ctx: unknown;

  constructor(a: Api, ordinal: number, ctx: unknown) {
    this.#api = a;
    this.ordinal = ordinal;
    this.#ctx = ctx;
  }

  /** cuCtxSetCurrent on the calling thread (the JS thread): before any call that uses this device. */
  makeCurrent(): void {
    if (this.#ctx === undefined) throw new CudaError("INTERNAL", "cuCtxSetCurrent", `primary context of device ${this.ordinal} already released`);
    check("cuCtxSetCurrent", this.#api.cuCtxSetCurrent(this.#ctx));
  }

  alloc(bytes: number): DeviceBuffer {
    const p: unknown[] = [0n];
    check("cuMemAlloc_v2", this.#api.cuMemAlloc_v2(p, bytes));
    return new DeviceBuffer(this.#api, BigInt(p[0] as bigint | number), bytes, "alloc");
  }

  stream(): CudaStream {
    const s: unknown[] = [null];
    check("cuStreamCreate", this.#api.cuStreamCreate(s, 0));
    return new CudaStream(this.#api, s[0], this);
  }

  /** Maps another process's allocation (CUDA shared memory extension). */
  openIpc(handle: Uint8Array, bytes: number): DeviceBuffer {
    if (handle.byteLength !== CU_IPC_HANDLE_SIZE) {
      throw new CudaError("INVALID_ARG", "cuIpcOpenMemHandle_v2", `a CUDA IPC handle is ${CU_IPC_HANDLE_SIZE} bytes, got ${handle.byteLength}`);
    }
    const p: unknown[] = [0n];
    const reserved = Array.from(new Int8Array(handle.buffer, handle.byteOffset, CU_IPC_HANDLE_SIZE));
    check("cuIpcOpenMemHandle_v2", this.#api.cuIpcOpenMemHandle_v2(p, { reserved }, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    return new DeviceBuffer(this.#api, BigInt(p[0] as bigint | number), bytes, "ipc");
  }

  release(): void {
    if (this.#ctx === undefined) return;
    this.#ctx = undefined;
    check("cuDevicePrimaryCtxRelease_v2", this.#api.cuDevicePrimaryCtxRelease_v2(this.ordinal));
  }
}

export class CudaStream {
  readonly #api: Api;
  readonly #context: PrimaryContext | undefined;
  handle: unknown;

  constructor(a: Api, handle: unknown, context?: PrimaryContext) {
    this.#api = a;
    this.handle = handle;
    this.#context = context;
  }

  synchronize(): void {
    check("cuStreamSynchronize", this.#api.cuStreamSynchronize(this.handle));
  }

  /**
   * Waits for the stream without blocking the event loop: cuStreamSynchronize on one of
   * koffi's worker threads. That thread has no current context; for a stream created by
   * cuStreamCreate the driver finds the context through the stream. Should a driver answer
   * CUDA_ERROR_INVALID_CONTEXT there, this and every later wait polls cuStreamQuery from
   * the JS thread instead, with the stream's context made current before each poll
   * (other models may switch it in between), yielding to the event loop between polls.
   */
  async synchronizeAsync(): Promise<void> {
    const h = this.handle;
    if (h === undefined) throw new CudaError("INTERNAL", "cuStreamSynchronize", "stream already destroyed");
    if (!pollStreams) {
      const code = await new Promise<CUresult>((resolve, reject) =>
        this.#api.cuStreamSynchronize.async(h, (err: unknown, res: CUresult) =>
          err ? reject(NativeError.fromKoffi("CUDA driver", "cuStreamSynchronize", err)) : resolve(res),
        ),
      );
      if (code !== CUDA_ERROR_INVALID_CONTEXT) return check("cuStreamSynchronize", code);
      pollStreams = true;
    }
    for (let polls = 0; ; polls++) {
      this.#context?.makeCurrent();
      const code = this.#api.cuStreamQuery(h);
      if (code === CUDA_SUCCESS) return;
      if (code !== CUDA_ERROR_NOT_READY) check("cuStreamQuery", code);
      await new Promise((r) => (polls < 64 ? setImmediate(r) : setTimeout(r, 1)));
    }
  }

  destroy(): void {
    if (this.handle === undefined) return;
    const h = this.handle;
    this.handle = undefined;
    check("cuStreamDestroy_v2", this.#api.cuStreamDestroy_v2(h));
  }
}

/** Device memory: from cuMemAlloc (freed with cuMemFree) or an opened IPC handle (closed with cuIpcCloseMemHandle). */
export class DeviceBuffer {
  readonly #api: Api;
  readonly bytes: number;
  readonly #kind: "alloc" | "ipc";
  #ptr: bigint | undefined;

  constructor(a: Api, ptr: bigint, bytes: number, kind: "alloc" | "ipc") {
    this.#api = a;
    this.#ptr = ptr;
    this.bytes = bytes;
    this.#kind = kind;
  }

  get pointer(): bigint {
    if (this.#ptr === undefined) throw new CudaError("INTERNAL", undefined, "device buffer already freed");
    return this.#ptr;
  }

  write(src: Uint8Array, stream?: CudaStream, offset = 0): void {
    if (offset + src.byteLength > this.bytes) {
      throw new CudaError("INTERNAL", "cuMemcpyHtoD_v2", `copy of ${src.byteLength} bytes at offset ${offset} into a ${this.bytes}-byte device buffer`);
    }
    const dst = this.pointer + BigInt(offset);
    if (stream) check("cuMemcpyHtoDAsync_v2", this.#api.cuMemcpyHtoDAsync_v2(dst, src, src.byteLength, stream.handle));
    else check("cuMemcpyHtoD_v2", this.#api.cuMemcpyHtoD_v2(dst, src, src.byteLength));
  }

  read(dst: Uint8Array, stream?: CudaStream, offset = 0): void {
    if (offset + dst.byteLength > this.bytes) {
      throw new CudaError("INTERNAL", "cuMemcpyDtoH_v2", `copy of ${dst.byteLength} bytes at offset ${offset} out of a ${this.bytes}-byte device buffer`);
    }
    const src = this.pointer + BigInt(offset);
    if (stream) check("cuMemcpyDtoHAsync_v2", this.#api.cuMemcpyDtoHAsync_v2(dst, src, dst.byteLength, stream.handle));
    else check("cuMemcpyDtoH_v2", this.#api.cuMemcpyDtoH_v2(dst, src, dst.byteLength));
  }

  /** cuIpcGetMemHandle: the 64 bytes another process passes to openIpc(). */
  ipcHandle(): Uint8Array {
    const h = new Uint8Array(CU_IPC_HANDLE_SIZE);
    check("cuIpcGetMemHandle", this.#api.cuIpcGetMemHandle(h, this.pointer));
    return h;
  }

  free(): void {
    if (this.#ptr === undefined) return;
    const p = this.#ptr;
    this.#ptr = undefined;
    if (this.#kind === "alloc") check("cuMemFree_v2", this.#api.cuMemFree_v2(p));
    else check("cuIpcCloseMemHandle", this.#api.cuIpcCloseMemHandle(p));
  }
}
