/**
 * @module POSIX shared memory through libc (shm_open, mmap, munmap, lseek, close; and
 * for clients and tests ftruncate and shm_unlink), for Triton's system shared-memory
 * extension. A SharedMemoryMapping owns one mmap and unmaps it exactly once; its
 * `bytes` view reads and writes the shared pages directly (no copy).
 */
import { getKoffi, loadLibrary, type KoffiFunc } from "../load.ts";

const O_RDWR = 0o2;
const O_CREAT = 0o100;
const PROT_READ = 1;
const PROT_WRITE = 2;
const MAP_SHARED = 1;
const SEEK_END = 2;

interface Libc {
  shm_open: KoffiFunc<(name: string, oflag: number, mode: number) => number>;
  shm_unlink: KoffiFunc<(name: string) => number>;
  ftruncate: KoffiFunc<(fd: number, length: number) => number>;
  lseek: KoffiFunc<(fd: number, offset: number, whence: number) => number | bigint>;
  mmap: KoffiFunc<(addr: null, length: number, prot: number, flags: number, fd: number, offset: number) => unknown>;
  munmap: KoffiFunc<(addr: unknown, length: number) => number>;
  close: KoffiFunc<(fd: number) => number>;
}

let libc: Libc | undefined;

function load(): Libc {
  if (libc) return libc;
  const { lib } = loadLibrary("the C library", ["libc.so.6"]);
  // glibc < 2.34 keeps shm_open and shm_unlink in librt.
  let rt = lib;
  try {
    lib.func("int shm_open(const char *name, int oflag, uint32_t mode)");
  } catch {
    rt = loadLibrary("librt (shm_open)", ["librt.so.1"]).lib;
  }
  libc = {
    shm_open: rt.func("int shm_open(const char *name, int oflag, uint32_t mode)"),
    shm_unlink: rt.func("int shm_unlink(const char *name)"),
    ftruncate: lib.func("int ftruncate(int fd, int64_t length)"),
    lseek: lib.func("int64_t lseek(int fd, int64_t offset, int whence)"),
    mmap: lib.func("void *mmap(void *addr, size_t length, int prot, int flags, int fd, int64_t offset)"),
    munmap: lib.func("int munmap(void *addr, size_t length)"),
    close: lib.func("int close(int fd)"),
  } as unknown as Libc;
  return libc;
}

export class SharedMemoryError extends Error {}

/** A read-write MAP_SHARED mapping of the first `length` bytes of a POSIX shared-memory object. */
export class SharedMemoryMapping {
  readonly key: string;
  readonly length: number;
  #addr: unknown;
  #bytes: Uint8Array | undefined;

  private constructor(key: string, length: number, addr: unknown) {
    this.key = key;
    this.length = length;
    this.#addr = addr;
    this.#bytes = new Uint8Array(getKoffi().view(addr, length));
  }

  /** Maps `length` bytes of object `key`; fails when the object does not exist or is smaller. */
  static open(key: string, length: number): SharedMemoryMapping {
    const c = load();
    const fd = c.shm_open(key, O_RDWR, 0);
    if (fd < 0) throw new SharedMemoryError(`Unable to open shared memory region: '${key}'`);
    try {
      const size = Number(c.lseek(fd, 0, SEEK_END));
      if (size < length) {
        throw new SharedMemoryError(`shared memory object '${key}' holds ${size} bytes, fewer than the ${length} requested`);
      }
      if (length === 0) throw new SharedMemoryError(`shared memory region of '${key}' must not be empty`);
      const addr = c.mmap(null, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (addr === null || addr === -1n || addr === 0xffffffffffffffffn) {
        throw new SharedMemoryError(`unable to map shared memory object '${key}'`);
      }
      return new SharedMemoryMapping(key, length, addr);
    } finally {
      c.close(fd);
    }
  }

  /** The mapped bytes; throws after unmap(). */
  get bytes(): Uint8Array {
    if (!this.#bytes) throw new SharedMemoryError(`shared memory '${this.key}' is no longer mapped`);
    return this.#bytes;
  }

  unmap(): void {
    if (this.#addr === undefined) return;
    const addr = this.#addr;
    this.#addr = undefined;
    this.#bytes = undefined;
    load().munmap(addr, this.length);
  }
}

/** Creates (or resizes) shared-memory object `key` of `size` bytes: what a client does before registering. */
export function createSharedMemory(key: string, size: number): void {
  const c = load();
  const fd = c.shm_open(key, O_RDWR | O_CREAT, 0o600);
  if (fd < 0) throw new SharedMemoryError(`shm_open('${key}') failed`);
  try {
    if (c.ftruncate(fd, size) !== 0) throw new SharedMemoryError(`ftruncate('${key}', ${size}) failed`);
  } finally {
    c.close(fd);
  }
}

export function unlinkSharedMemory(key: string): void {
  load().shm_unlink(key);
}
