/**
 * @module Triton's shared-memory extensions: named regions over POSIX shared-memory
 * objects (system: key, offset, byte_size) or over another process's GPU allocation
 * (CUDA: an IPC handle, device id, byte_size), tensors read from and written into them
 * by `shared_memory_region` / `shared_memory_offset` / `shared_memory_byte_size`
 * parameters. System and CUDA regions share one namespace. Behind `--allow-client-shm`
 * (off by default, as in Triton since 26.04). CUDA regions are copied through host
 * memory (ONNX Runtime here runs on the CPU).
 */
import { SharedMemoryMapping } from "../../ffi/libc/shm.ts";
import { CudaDriver, type DeviceBuffer, type PrimaryContext } from "../../ffi/cuda/driver.ts";
import { ServerError, invalidArg, notFound } from "./errors.ts";
import type { Parameters } from "./request.ts";

export const SHM_DISABLED = "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable.";

interface Region {
  name: string;
  key: string;
  offset: number;
  byteSize: number;
  mapping: SharedMemoryMapping;
}

interface CudaRegion {
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
    if (typeof offset !== "number" || !Number.isSafeInteger(offset) || offset < 0 || typeof byteSize !== "number" || !Number.isSafeInteger(byteSize) || byteSize <= 0) {
      throw invalidArg(`invalid offset ${offset} or byte_size ${byteSize} for shared memory region '${name}'`);
    }
    let mapping: SharedMemoryMapping;
    try {
      mapping = SharedMemoryMapping.open(key, offset + byteSize);
    } catch (err) {
      throw new ServerError("INTERNAL", (err as Error).message, { cause: err });
    }
    this.#regions.set(name, { name, key, offset, byteSize, mapping });
  }

  status(name?: string): RegionStatus[] {
    this.#gate();
    const regions = name === undefined ? [...this.#regions.values()] : [this.#regions.get(name)];
    if (regions[0] === undefined && name !== undefined) throw notFound(`Unable to find system shared memory region: '${name}'`);
    return regions.map((r) => ({ name: r!.name, key: r!.key, offset: r!.offset, byte_size: r!.byteSize }));
  }

  /** Unregisters `name`, or every region; unknown names are not an error, as in Triton. */
  unregister(name?: string): void {
    this.#gate();
    for (const r of name === undefined ? [...this.#regions.values()] : [this.#regions.get(name)]) {
      if (!r) continue;
      r.mapping.unmap();
      this.#regions.delete(r.name);
    }
  }

  /** Opens another process's GPU allocation from its 64-byte CUDA IPC handle. */
  registerCuda(name: string, rawHandle: Uint8Array, deviceId: number, byteSize: number | bigint): void {
    this.#gate();
    if (this.#regions.has(name) || this.#cuda.has(name)) throw new ServerError("ALREADY_EXISTS", `shared memory region '${name}' already in manager`);
    if (typeof byteSize !== "number" || !Number.isSafeInteger(byteSize) || byteSize <= 0) throw invalidArg(`invalid byte_size ${byteSize} for CUDA shared memory region '${name}'`);
    let context: PrimaryContext | undefined;
    try {
      context = CudaDriver.get().primaryContext(deviceId);
      const buffer = context.openIpc(rawHandle, byteSize);
      this.#cuda.set(name, { name, deviceId, byteSize, context, buffer });
    } catch (err) {
      context?.release();
      throw new ServerError("INTERNAL", `failed to register CUDA shared memory region '${name}': ${(err as Error).message.split("\n")[0]}`, { cause: err });
    }
  }

  cudaStatus(name?: string): CudaRegionStatus[] {
    this.#gate();
    const regions = name === undefined ? [...this.#cuda.values()] : [this.#cuda.get(name)];
    if (regions[0] === undefined && name !== undefined) throw notFound(`Unable to find cuda shared memory region: '${name}'`);
    return regions.map((r) => ({ name: r!.name, device_id: r!.deviceId, byte_size: r!.byteSize }));
  }

  unregisterCuda(name?: string): void {
    this.#gate();
    for (const r of name === undefined ? [...this.#cuda.values()] : [this.#cuda.get(name)]) {
      if (!r) continue;
      this.#closeCuda(r);
    }
  }

  #closeCuda(r: CudaRegion): void {
    this.#cuda.delete(r.name);
    r.buffer.free();
    r.context.release();
  }

  /** Unmaps everything (shutdown); no gate. */
  close(): void {
    for (const r of this.#regions.values()) r.mapping.unmap();
    this.#regions.clear();
    for (const r of [...this.#cuda.values()]) this.#closeCuda(r);
  }

  /** An input's bytes: a view of system shared memory, or a host copy of a CUDA region's range. */
  read(ref: ShmRef, what: string): Uint8Array {
    const c = this.#cudaRange(ref, what);
    if (!c) return this.view(ref, what);
    const out = new Uint8Array(ref.byteSize);
    c.buffer.read(out, undefined, ref.offset);
    return out;
  }

  /** Writes an output's bytes at the region range. */
  write(ref: ShmRef, data: Uint8Array, what: string): void {
    const c = this.#cudaRange({ ...ref, byteSize: data.byteLength }, what);
    if (c) c.buffer.write(data, undefined, ref.offset);
    else this.view({ ...ref, byteSize: data.byteLength }, what).set(data);
  }

  #cudaRange(ref: ShmRef, what: string): CudaRegion | undefined {
    const c = this.#cuda.get(ref.region);
    if (!c) return undefined;
    this.#gate();
    if (ref.offset + ref.byteSize > c.byteSize) {
      throw invalidArg(
        `Invalid offset + byte size for shared memory region: '${ref.region}' (${what}: offset ${ref.offset} + byte size ${ref.byteSize} > region byte size ${c.byteSize})`,
      );
    }
    return c;
  }

  /** The bytes [offset, offset + byteSize) of region `ref.region`, as a view of the shared pages. */
  view(ref: ShmRef, what: string): Uint8Array {
    this.#gate();
    const r = this.#regions.get(ref.region);
    if (!r) throw invalidArg(`Unable to find shared memory region: '${ref.region}'`);
    if (ref.offset < 0 || ref.byteSize < 0 || ref.offset + ref.byteSize > r.byteSize) {
      throw invalidArg(
        `Invalid offset + byte size for shared memory region: '${ref.region}' (${what}: offset ${ref.offset} + byte size ${ref.byteSize} > region byte size ${r.byteSize})`,
      );
    }
    return r.mapping.bytes.subarray(r.offset + ref.offset, r.offset + ref.offset + ref.byteSize);
  }
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
