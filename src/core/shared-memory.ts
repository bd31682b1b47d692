/**
 * @module Triton's system shared-memory extension: named regions over POSIX
 * shared-memory objects (key, offset, byte_size), tensors read from and written into
 * them by `shared_memory_region` / `shared_memory_offset` / `shared_memory_byte_size`
 * parameters. Behind `--allow-client-shm` (off by default, as in Triton since 26.04).
 */
import { SharedMemoryMapping } from "../../ffi/libc/shm.ts";
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

  constructor(allowed: boolean) {
    this.allowed = allowed;
  }

  #gate(): void {
    if (!this.allowed) throw new ServerError("UNAVAILABLE", SHM_DISABLED);
  }

  register(name: string, key: string, offset: number, byteSize: number): void {
    this.#gate();
    if (this.#regions.has(name)) throw new ServerError("ALREADY_EXISTS", `shared memory region '${name}' already in manager`);
    if (name.startsWith("triton_python_backend_shm_region_")) throw invalidArg(`shared memory region name '${name}' is reserved`);
    if (!Number.isSafeInteger(offset) || offset < 0 || !Number.isSafeInteger(byteSize) || byteSize <= 0) {
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

  /** Unmaps everything (shutdown); no gate. */
  close(): void {
    for (const r of this.#regions.values()) r.mapping.unmap();
    this.#regions.clear();
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
