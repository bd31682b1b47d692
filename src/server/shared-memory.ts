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
 * until it settles (acquire/release). Unregistering a region in use succeeds at once
 * and closes it when its last user releases it; until then it stays listed and usable,
 * as Triton does since 24.12 (server #7743, "deferred unregistering").
 */
import { SharedMemoryFile } from "../../ffi/libc/shm.ts";
import { CudaDriver, CudaError, type DeviceBuffer, type PrimaryContext } from "../../ffi/cuda/driver.ts";
import { ServerError, invalidArg, notFound } from "../core/errors.ts";
import { getLogger } from "../core/logger.ts";
import type { Parameters } from "../core/request.ts";

const log = getLogger("src/server/shared-memory.ts");

export const SHM_DISABLED = "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable.";

/** How many requests hold a region, and whether unregister waits for them to finish. */
interface Users {
  users: number;
  awaitingUnregister: boolean;
}

interface Region extends Users {
  kind: "system";
  name: string;
  key: string;
  offset: number;
  byteSize: number;
  file: SharedMemoryFile;
}

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

  constructor(allowed: boolean) {
    this.allowed = allowed;
  }

  #gate(): void {
    if (!this.allowed) throw new ServerError("UNAVAILABLE", SHM_DISABLED);
  }

  /** `offset` and `byteSize` may be bigint (a 64-bit value beyond 2^53), which is refused. */
  register(name: string, key: string, offset: number | bigint, byteSize: number | bigint): void {
    this.#gate();
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
    this.#regions.set(name, { kind: "system", name, key, offset, byteSize, file, users: 0, awaitingUnregister: false });
  }

  status(name?: string): RegionStatus[] {
    this.#gate();
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
    if (r.users === 0) return this.#drop(r);
    r.awaitingUnregister = true;
    log.verbose(1, `Shared memory region '${r.name}' will be unregistered after in-flight requests complete.`);
  }

  /** Forgets region `r` and frees what it holds; each region is dropped once (it leaves its map first). */
  #drop(r: Region | CudaRegion): void {
    if (r.kind === "system") {
      if (this.#regions.get(r.name) !== r) return;
      this.#regions.delete(r.name);
      r.file.close();
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
    for (const r of [...this.#regions.values(), ...this.#cuda.values()]) this.#drop(r);
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
        this.#drop(r);
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
    const r = this.#systemRange(ref, what);
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
    const r = this.#systemRange(sized, what);
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

  #cudaRange(ref: ShmRef, what: string): CudaRegion | undefined {
    const c = this.#cuda.get(ref.region);
    if (!c) return undefined;
    this.#gate();
    if (ref.offset + ref.byteSize > c.byteSize) throw outOfRange(ref, what, c.byteSize);
    return c;
  }

  #systemRange(ref: ShmRef, what: string): Region {
    this.#gate();
    const r = this.#regions.get(ref.region);
    if (!r) throw invalidArg(`Unable to find shared memory region: '${ref.region}'`);
    if (ref.offset < 0 || ref.byteSize < 0 || ref.offset + ref.byteSize > r.byteSize) throw outOfRange(ref, what, r.byteSize);
    return r;
  }
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
function truncated(r: Region, what: string, end: number, start: number, size: number): ServerError {
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
