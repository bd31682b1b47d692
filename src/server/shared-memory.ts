/**
 * @module Triton's shared-memory extensions: named regions over POSIX shared-memory
 * objects (system: key, offset, byte_size) or over another process's GPU allocation
 * (CUDA: an IPC handle, device id, byte_size), tensors read from and written into them
 * by `shared_memory_region` / `shared_memory_offset` / `shared_memory_byte_size`
 * parameters. System and CUDA regions share one namespace. Behind `--allow-client-shm`
 * (off by default, as in Triton since 26.04).
 *
 * The client keeps control of the memory, so nothing here may trust it: a system region
 * is held as an open descriptor, never mapped, and tensors are copied with pread/pwrite
 * into and out of the server's own buffers. A client that shrinks its object makes a
 * read come up short (an INVALID_ARG naming the region) where a mapping would have
 * faulted. CUDA regions are copied through host memory (ONNX Runtime here runs on the CPU).
 *
 * A request holds every region it names from the start of InferenceServer.inferAsync
 * until it settles (acquire/release), and so does a request a frontend worker answers
 * (direct-shared-memory.ts, which borrows this thread's descriptor: SharedRegionLink).
 * Unregistering a region in use succeeds at once and closes it when its last user, on
 * any thread, releases it; until then it stays listed and usable, as Triton does since
 * 24.12 (server #7743, "deferred unregistering").
 */
import { SharedMemoryFile } from "../../ffi/libc/shm.ts";
import { CudaDriver, CudaError, type DeviceBuffer, type PrimaryContext } from "../../ffi/cuda/driver.ts";
import { ServerError, invalidArg, notFound } from "../core/errors.ts";
import { getLogger } from "../core/logger.ts";
import { waitAsync } from "../core/threads/wait-async.ts";
import type { InferenceRequest, InputTensor, OutputTensor, Parameters } from "../core/request.ts";
import type { Tensor } from "../core/tensor.ts";

const log = getLogger("src/server/shared-memory.ts");

export const SHM_DISABLED = "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable.";

/** How many requests hold a region, and whether unregister waits for them to finish. */
interface Users {
  users: number;
  awaitingUnregister: boolean;
}

/** A system region as the main thread holds it, and a frontend worker while it borrows the main thread's descriptor. */
export interface SystemRegion {
  name: string;
  key: string;
  offset: number;
  byteSize: number;
  file: SharedMemoryFile;
}

interface Region extends Users, SystemRegion {
  kind: "system";
  /** Unique for the life of the process: a name registered again is another region. */
  id: number;
  /** [WORKER_USERS, STATE, a slot's holds per worker] in shared memory: the frontend workers' holds on the descriptor, and whether it may still be lent. */
  lent: Int32Array;
  /** #dropWhenReturned waits for the workers' holds to end. */
  watched?: boolean;
}

/**
 * A system region as the frontend workers' table carries it: the main thread's descriptor,
 * which a worker borrows (direct-shared-memory.ts) under the protocol of `lent`. A worker
 * first adds itself to WORKER_USERS (and to its slot's count), then reads STATE: at DROPPING
 * it takes itself off again and leaves the request to the main thread. The main thread stores DROPPING before
 * it reads WORKER_USERS, and closes the descriptor only when that read is 0, so no worker
 * uses the descriptor after it is closed (every access is sequentially consistent).
 */
export interface SharedRegionLink {
  id: number;
  name: string;
  key: string;
  offset: number;
  byteSize: number;
  fd: number;
  lent: SharedArrayBuffer;
}

/** Indices and states of SharedRegionLink.lent. */
export const WORKER_USERS = 0;
export const STATE = 1;
/**
 * After WORKER_USERS and STATE, each frontend worker's own holds, by its slot (the slot
 * DirectModels gives it): the holds of a worker that ended go back (workerEnded). A worker
 * with no slot below WORKER_SLOTS borrows no region; its requests go to the main thread.
 */
export const WORKER_SLOTS = 256;
export const slotHolds = (slot: number): number => 2 + slot;
/** Registered (or awaiting unregister: still usable); the descriptor may be borrowed. */
export const LENT = 0;
/** Being dropped, or dropped: a worker that sees it does not use the descriptor. */
export const DROPPING = 1;

interface CudaRegion extends Users {
  kind: "cuda";
  name: string;
  deviceId: number;
  byteSize: number;
  context: PrimaryContext;
  buffer: DeviceBuffer;
}

export interface CudaRegionStatus {
  name: string;
  device_id: number;
  byte_size: number;
}

export interface RegionStatus {
  name: string;
  key: string;
  offset: number;
  byte_size: number;
}

/** Where a tensor lives in shared memory, from its parameters. */
export interface ShmRef {
  region: string;
  offset: number;
  byteSize: number;
}

export class SharedMemoryManager {
  readonly allowed: boolean;
  readonly #regions = new Map<string, Region>();
  readonly #cuda = new Map<string, CudaRegion>();
  #nextId = 1;
  readonly #listeners = new Set<() => void>();

  constructor(allowed: boolean) {
    this.allowed = allowed;
  }

  #gate(): void {
    if (!this.allowed) throw new ServerError("UNAVAILABLE", SHM_DISABLED);
  }

  /** `offset` and `byteSize` may be bigint (a 64-bit value beyond 2^53), which is refused. */
  register(name: string, key: string, offset: number | bigint, byteSize: number | bigint): void {
    this.#gate();
    this.#sweep();
    if (this.#regions.has(name) || this.#cuda.has(name)) throw new ServerError("ALREADY_EXISTS", `shared memory region '${name}' already in manager`);
    if (name.startsWith("triton_python_backend_shm_region_")) throw invalidArg(`shared memory region name '${name}' is reserved`);
    if (
      typeof offset !== "number" ||
      !Number.isSafeInteger(offset) ||
      offset < 0 ||
      typeof byteSize !== "number" ||
      !Number.isSafeInteger(byteSize) ||
      byteSize <= 0
    ) {
      throw invalidArg(`invalid offset ${offset} or byte_size ${byteSize} for shared memory region '${name}'`);
    }
    // A SharedMemoryError keeps Triton's code: INTERNAL when the object cannot be opened, INVALID_ARG when it is too small.
    const file = SharedMemoryFile.open(key, offset + byteSize);
    const lent = new Int32Array(new SharedArrayBuffer(4 * slotHolds(WORKER_SLOTS)));
    this.#regions.set(name, { kind: "system", id: this.#nextId++, name, key, offset, byteSize, file, lent, users: 0, awaitingUnregister: false });
    this.#changed();
  }

  /**
   * Calls `listener` synchronously whenever a system region is registered or goes (the
   * frontend workers' table lists them); returns what stops it.
   */
  onSystemChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #changed(): void {
    for (const listener of this.#listeners) listener();
  }

  /** The system regions registered now, for the frontend workers (none while client shared memory is off). */
  systemRegions(): SharedRegionLink[] {
    if (!this.allowed) return [];
    return [...this.#regions.values()].map((r) => ({
      id: r.id,
      name: r.name,
      key: r.key,
      offset: r.offset,
      byteSize: r.byteSize,
      fd: r.file.descriptor,
      lent: r.lent.buffer as SharedArrayBuffer,
    }));
  }

  status(name?: string): RegionStatus[] {
    this.#gate();
    this.#sweep();
    const regions = name === undefined ? [...this.#regions.values()] : [this.#regions.get(name)];
    if (regions[0] === undefined && name !== undefined) throw notFound(`Unable to find system shared memory region: '${name}'`);
    return regions.map((r) => ({ name: r!.name, key: r!.key, offset: r!.offset, byte_size: r!.byteSize }));
  }

  /**
   * Unregisters `name`, or every system region; unknown names are not an error, as in
   * Triton. A region that requests still use is closed when the last of them settles.
   */
  unregister(name?: string): void {
    this.#gate();
    for (const r of name === undefined ? [...this.#regions.values()] : [this.#regions.get(name)]) {
      if (r) this.#unregisterOrDefer(r);
    }
  }

  /** Opens another process's GPU allocation from its 64-byte CUDA IPC handle. */
  registerCuda(name: string, rawHandle: Uint8Array, deviceId: number, byteSize: number | bigint): void {
    this.#gate();
    this.#sweep();
    if (this.#regions.has(name) || this.#cuda.has(name)) throw new ServerError("ALREADY_EXISTS", `shared memory region '${name}' already in manager`);
    if (typeof byteSize !== "number" || !Number.isSafeInteger(byteSize) || byteSize <= 0)
      throw invalidArg(`invalid byte_size ${byteSize} for CUDA shared memory region '${name}'`);
    let context: PrimaryContext | undefined;
    try {
      context = CudaDriver.get().primaryContext(deviceId);
      const buffer = context.openIpc(rawHandle, byteSize);
      this.#cuda.set(name, { kind: "cuda", name, deviceId, byteSize, context, buffer, users: 0, awaitingUnregister: false });
    } catch (err) {
      context?.release();
      // The driver's refusal keeps its code (a bad handle or device is INVALID_ARG, as in Triton);
      // a host without a usable driver stays INTERNAL, with the first line of the load error.
      const code = err instanceof CudaError ? err.code : "INTERNAL";
      throw new ServerError(code, `failed to register CUDA shared memory region '${name}': ${(err as Error).message.split("\n")[0]}`, { cause: err });
    }
  }

  cudaStatus(name?: string): CudaRegionStatus[] {
    this.#gate();
    const regions = name === undefined ? [...this.#cuda.values()] : [this.#cuda.get(name)];
    if (regions[0] === undefined && name !== undefined) throw notFound(`Unable to find cuda shared memory region: '${name}'`);
    return regions.map((r) => ({ name: r!.name, device_id: r!.deviceId, byte_size: r!.byteSize }));
  }

  /** As unregister(), for CUDA regions (the same deferral; untested here, without a GPU). */
  unregisterCuda(name?: string): void {
    this.#gate();
    for (const r of name === undefined ? [...this.#cuda.values()] : [this.#cuda.get(name)]) {
      if (r) this.#unregisterOrDefer(r);
    }
  }

  #unregisterOrDefer(r: Region | CudaRegion): void {
    if (r.users === 0 && this.#dropUnlent(r)) return;
    if (r.awaitingUnregister) return;
    r.awaitingUnregister = true;
    log.verbose(1, `Shared memory region '${r.name}' will be unregistered after in-flight requests complete.`);
    if (r.kind === "system") this.#watch(r);
  }

  /** Drops `r` unless a frontend worker holds its descriptor now (then false: it stays usable). */
  #dropUnlent(r: Region | CudaRegion): boolean {
    if (r.kind === "system") {
      if (this.#regions.get(r.name) !== r) return true;
      Atomics.store(r.lent, STATE, DROPPING);
      if (Atomics.load(r.lent, WORKER_USERS) !== 0) {
        Atomics.store(r.lent, STATE, LENT);
        return false;
      }
    }
    this.#drop(r);
    return true;
  }

  #watch(r: Region): void {
    this.#dropWhenReturned(r).catch((err: unknown) => log.error(`failed to unregister shared memory region '${r.name}': ${(err as Error).message}`));
  }

  /**
   * Drops `r`, awaiting unregister, once no request holds it: the main thread's last hold
   * ends in #release, a worker's wakes this (it notifies WORKER_USERS when it lets go).
   */
  async #dropWhenReturned(r: Region): Promise<void> {
    if (r.watched) return;
    r.watched = true;
    try {
      while (this.#regions.get(r.name) === r) {
        const holds = Atomics.load(r.lent, WORKER_USERS);
        if (holds === 0) {
          if (r.users > 0 || this.#dropUnlent(r)) return;
          continue;
        }
        const wait = waitAsync(r.lent, WORKER_USERS, holds);
        if (wait.async) await wait.value;
      }
    } finally {
      r.watched = false;
    }
  }

  /**
   * The frontend worker of `slot` ended: its holds on every region go back, and a region
   * awaiting unregister that only it held is dropped now. Called on the worker's close
   * event, which Bun sends once the worker's event loop has stopped: no code of it runs after.
   */
  workerEnded(slot: number): void {
    if (slot < 0 || slot >= WORKER_SLOTS) return;
    for (const r of this.#regions.values()) {
      const held = Atomics.exchange(r.lent, slotHolds(slot), 0);
      if (held <= 0) continue;
      // Never more than the total counts (the other workers' holds stay counted).
      let total = Atomics.load(r.lent, WORKER_USERS);
      for (;;) {
        const next = Math.max(0, total - held);
        const was = Atomics.compareExchange(r.lent, WORKER_USERS, total, next);
        if (was === total) break;
        total = was;
      }
      if (total - held <= 0) Atomics.notify(r.lent, WORKER_USERS);
    }
    this.#sweep();
  }

  /** Drops the system regions awaiting unregister that no request holds any more (a worker's last hold may have ended a moment ago). */
  #sweep(): void {
    for (const r of [...this.#regions.values()]) if (r.awaitingUnregister && r.users === 0) this.#dropUnlent(r);
  }

  /** Forgets region `r` and frees what it holds; each region is dropped once (it leaves its map first). */
  #drop(r: Region | CudaRegion): void {
    if (r.kind === "system") {
      if (this.#regions.get(r.name) !== r) return;
      Atomics.store(r.lent, STATE, DROPPING);
      this.#regions.delete(r.name);
      r.file.close();
      this.#changed();
    } else {
      if (this.#cuda.get(r.name) !== r) return;
      this.#cuda.delete(r.name);
      try {
        r.buffer.free();
      } finally {
        r.context.release();
      }
    }
  }

  /** Closes everything, in use or not (shutdown; later reads and writes of those regions fail cleanly); no gate. */
  close(): void {
    for (const r of [...this.#regions.values(), ...this.#cuda.values()]) {
      if (r.kind === "system") {
        Atomics.store(r.lent, STATE, DROPPING);
        if (Atomics.load(r.lent, WORKER_USERS) !== 0) {
          // A frontend worker still reads or writes it (past the exit timeout): its descriptor
          // is left open (not freed: the process is ending) rather than closed under the worker.
          this.#regions.delete(r.name);
          continue;
        }
      }
      this.#drop(r);
    }
  }

  /**
   * Holds every region in `names` for one request (a name given twice is held twice), so
   * that none is closed before the returned function releases them; call it when the
   * request settles (a second call does nothing). An unknown name throws, holding nothing.
   */
  acquire(names: readonly string[]): () => void {
    this.#gate();
    const held: (Region | CudaRegion)[] = [];
    for (const name of names) {
      const r = this.#regions.get(name) ?? this.#cuda.get(name);
      if (!r) {
        this.#release(held);
        throw invalidArg(`Unable to find shared memory region: '${name}'`);
      }
      r.users++;
      held.push(r);
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#release(held);
    };
  }

  /** Never throws: it runs as a request settles, and a failure to free belongs in the log, not in that request's answer. */
  #release(held: readonly (Region | CudaRegion)[]): void {
    for (const r of held) {
      r.users--;
      if (r.users > 0 || !r.awaitingUnregister) continue;
      try {
        if (!this.#dropUnlent(r) && r.kind === "system") this.#watch(r);
      } catch (err) {
        log.error(`failed to unregister shared memory region '${r.name}': ${(err as Error).message}`);
      }
    }
  }

  /**
   * An input's bytes, copied out of the region into a buffer the server owns. A system
   * object that now ends before the range is an INVALID_ARG naming the region.
   */
  read(ref: ShmRef, what: string): Uint8Array {
    const c = this.#cudaRange(ref, what);
    if (c) {
      const out = new Uint8Array(ref.byteSize);
      c.buffer.read(out, undefined, ref.offset);
      return out;
    }
    return readSystem(this.#systemRegion(ref), ref, what);
  }

  /**
   * Writes an output's bytes at the region range. The system object's current size is
   * checked first, so that a shrunk object is refused rather than grown back.
   */
  write(ref: ShmRef, data: Uint8Array, what: string): void {
    const sized = { ...ref, byteSize: data.byteLength };
    const c = this.#cudaRange(sized, what);
    if (c) {
      c.buffer.write(data, undefined, ref.offset);
      return;
    }
    writeSystem(this.#systemRegion(sized), ref, data, what);
  }

  #cudaRange(ref: ShmRef, what: string): CudaRegion | undefined {
    const c = this.#cuda.get(ref.region);
    if (!c) return undefined;
    this.#gate();
    if (ref.offset + ref.byteSize > c.byteSize) throw outOfRange(ref, what, c.byteSize);
    return c;
  }

  #systemRegion(ref: ShmRef): Region {
    this.#gate();
    const r = this.#regions.get(ref.region);
    if (!r) throw invalidArg(`Unable to find shared memory region: '${ref.region}'`);
    return r;
  }
}

/**
 * An input's bytes, copied out of system region `r` into a buffer the caller owns. A
 * range outside the region, or an object that now ends before it, is an INVALID_ARG
 * naming the region.
 */
export function readSystem(r: SystemRegion, ref: ShmRef, what: string): Uint8Array {
  checkRange(r, ref, what);
  const start = r.offset + ref.offset;
  // Uninitialized memory is fine: the read fills all of it or the request fails.
  const out = new Uint8Array(Buffer.allocUnsafeSlow(ref.byteSize).buffer, 0, ref.byteSize);
  let n: number;
  try {
    n = r.file.readAt(out, start);
  } catch (err) {
    throw new ServerError(ServerError.from(err).code, `cannot read shared memory region '${ref.region}' for ${what}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  if (n < ref.byteSize) throw truncated(r, what, n > 0 ? start + n : endOf(r.file, start), start, ref.byteSize);
  return out;
}

/**
 * Writes an output's bytes at the range of system region `r`. The object's current size
 * is checked first, so that a shrunk object is refused rather than grown back.
 */
export function writeSystem(r: SystemRegion, ref: ShmRef, data: Uint8Array, what: string): void {
  checkRange(r, { ...ref, byteSize: data.byteLength }, what);
  const start = r.offset + ref.offset;
  try {
    const end = r.file.size();
    if (end < start + data.byteLength) throw truncated(r, what, end, start, data.byteLength);
    r.file.writeAt(data, start);
  } catch (err) {
    if (err instanceof ServerError) throw err;
    throw new ServerError(ServerError.from(err).code, `cannot write shared memory region '${ref.region}' for ${what}: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

function checkRange(r: SystemRegion, ref: ShmRef, what: string): void {
  if (ref.offset < 0 || ref.byteSize < 0 || ref.offset + ref.byteSize > r.byteSize) throw outOfRange(ref, what, r.byteSize);
}

/** Fills each input that names a region with its bytes from there (`read`), as the core does before it validates the request. */
export function readInputsFromSharedMemory(inputs: readonly InputTensor[], read: (ref: ShmRef, what: string) => Uint8Array): void {
  for (const input of inputs) {
    const ref = shmRef(input.parameters, `input '${input.name}'`);
    if (ref) input.data = read(ref, `input '${input.name}'`);
  }
}

/** `outputs` with those the request asks for in shared memory written there (`write`): they are answered without data. */
export function outputsToSharedMemory(
  request: InferenceRequest,
  outputs: Tensor[],
  write: (ref: ShmRef, data: Uint8Array, what: string) => void,
): OutputTensor[] {
  if (!request.outputs?.some((o) => o.parameters?.shared_memory_region !== undefined)) return outputs;
  const params = new Map(request.outputs.map((o) => [o.name, o.parameters]));
  return outputs.map((t) => {
    const ref = shmRef(params.get(t.name), `output '${t.name}'`);
    if (!ref) return t;
    // INTERNAL, as Triton's output allocator refuses it (http_server.cc, infer_handler.cc).
    if (ref.byteSize < t.data.byteLength) {
      throw new ServerError(
        "INTERNAL",
        `shared memory size specified with the request for output '${t.name}' (${ref.byteSize} bytes) should be at least ${t.data.byteLength} bytes to hold the results`,
      );
    }
    write(ref, t.data, `output '${t.name}'`);
    return {
      name: t.name,
      datatype: t.datatype,
      shape: t.shape,
      data: new Uint8Array(0),
      sharedMemory: { region: ref.region, offset: ref.offset, byteSize: t.data.byteLength },
    };
  });
}

function outOfRange(ref: ShmRef, what: string, regionSize: number): ServerError {
  return invalidArg(
    `Invalid offset + byte size for shared memory region: '${ref.region}' (${what}: offset ${ref.offset} + byte size ${ref.byteSize} > region byte size ${regionSize})`,
  );
}

/** Where the object ends now, for a message; `fallback` when even that fails. */
function endOf(file: SharedMemoryFile, fallback: number): number {
  try {
    return file.size();
  } catch {
    return fallback;
  }
}

/** The object behind region `r` now ends at byte `end`, before the tensor's bytes [start, start + size). */
function truncated(r: SystemRegion, what: string, end: number, start: number, size: number): ServerError {
  return invalidArg(
    `shared memory region '${r.name}' holds fewer bytes than ${what} needs: object '${r.key}' ends at byte ${end}, the tensor spans bytes ${start} to ${start + size} (the object was truncated?)`,
  );
}

/** The regions that a request's inputs and outputs name, in order (with repeats), or undefined when none does. */
export function regionsNamed(inputs: readonly { parameters?: Parameters }[], outputs: readonly { parameters?: Parameters }[] = []): string[] | undefined {
  let names: string[] | undefined;
  for (let i = 0; i < inputs.length; i++) {
    const region = inputs[i]!.parameters?.shared_memory_region;
    if (typeof region === "string") (names ??= []).push(region);
  }
  for (let i = 0; i < outputs.length; i++) {
    const region = outputs[i]!.parameters?.shared_memory_region;
    if (typeof region === "string") (names ??= []).push(region);
  }
  return names;
}

/** The shared-memory reference in a tensor's parameters, or undefined; both region and byte size are required. */
export function shmRef(params: Parameters | undefined, what: string): ShmRef | undefined {
  if (!params || params.shared_memory_region === undefined) {
    if (params?.shared_memory_byte_size !== undefined || params?.shared_memory_offset !== undefined) {
      throw invalidArg(`${what}: 'shared_memory_byte_size' and 'shared_memory_offset' need 'shared_memory_region'`);
    }
    return undefined;
  }
  const region = params.shared_memory_region;
  if (typeof region !== "string") throw invalidArg(`${what}: 'shared_memory_region' must be a string`);
  if (params.shared_memory_byte_size === undefined) throw invalidArg(`${what}: 'shared_memory_byte_size' is required with 'shared_memory_region'`);
  const int = (v: unknown, key: string) => {
    const n = typeof v === "bigint" ? Number(v) : v;
    if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 0) throw invalidArg(`${what}: '${key}' must be a non-negative integer`);
    return n;
  };
  return {
    region,
    byteSize: int(params.shared_memory_byte_size, "shared_memory_byte_size"),
    offset: params.shared_memory_offset === undefined ? 0 : int(params.shared_memory_offset, "shared_memory_offset"),
  };
}
