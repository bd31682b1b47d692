/**
 * @module POSIX shared memory through libc, for Triton's system shared-memory extension.
 * The server holds a region as a SharedMemoryFile (shm_open, lseek, pread, pwrite,
 * close): it owns the descriptor and closes it exactly once, and moves bytes with
 * pread/pwrite into and out of its own buffers, so that a client shrinking the object
 * makes a read come up short instead of faulting (a MAP_SHARED page beyond the end of
 * the object raises SIGBUS, which JavaScript cannot catch). Clients and tests map
 * objects with SharedMemoryMapping (mmap, munmap; the `bytes` view reads and writes
 * the shared pages directly) and create, resize and remove them with
 * createSharedMemory, truncateSharedMemory and unlinkSharedMemory.
 *
 * Failures are SharedMemoryErrors (NativeErrors, so ServerErrors, ffi/errors.ts) with
 * Triton's codes: an object that cannot be opened is INTERNAL with Triton's own text
 * ("Unable to open shared memory region: '<key>'"), one smaller than the range asked for
 * is INVALID_ARG (Triton: "invalid args"), a failed lseek/pread/pwrite/mmap is INTERNAL
 * naming the call and errno.
 */
import type { ErrorCode } from "../../src/core/errors.ts";
import { NativeError } from "../errors.ts";
import { getKoffi, loadLibrary, type KoffiFunc } from "../load.ts";

const O_RDWR = 0o2;
const O_CREAT = 0o100;
const PROT_READ = 1;
const PROT_WRITE = 2;
const MAP_SHARED = 1;
const SEEK_END = 2;
const EINTR = 4;

interface Libc {
  shm_open: KoffiFunc<(name: string, oflag: number, mode: number) => number>;
  shm_unlink: KoffiFunc<(name: string) => number>;
  ftruncate: KoffiFunc<(fd: number, length: number) => number>;
  lseek: KoffiFunc<(fd: number, offset: number, whence: number) => number | bigint>;
  pread: KoffiFunc<(fd: number, buf: Uint8Array, count: number, offset: number) => number | bigint>;
  pwrite: KoffiFunc<(fd: number, buf: Uint8Array, count: number, offset: number) => number | bigint>;
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
    pread: lib.func("int64_t pread(int fd, void *buf, size_t count, int64_t offset)"),
    pwrite: lib.func("int64_t pwrite(int fd, const void *buf, size_t count, int64_t offset)"),
    mmap: lib.func("void *mmap(void *addr, size_t length, int prot, int flags, int fd, int64_t offset)"),
    munmap: lib.func("int munmap(void *addr, size_t length)"),
    close: lib.func("int close(int fd)"),
  } as unknown as Libc;
  return libc;
}

export class SharedMemoryError extends NativeError {
  constructor(code: ErrorCode, call: string | undefined, message: string) {
    super(code, "libc", message, { call });
    this.name = "SharedMemoryError";
  }
}

/** Opens object `key` read-write and checks that it holds at least `length` (> 0) bytes; the caller owns the descriptor. */
function openChecked(c: Libc, key: string, length: number): number {
  const fd = c.shm_open(key, O_RDWR, 0);
  if (fd < 0) throw new SharedMemoryError("INTERNAL", "shm_open", `Unable to open shared memory region: '${key}'`);
  try {
    const size = Number(c.lseek(fd, 0, SEEK_END));
    if (size < length) {
      throw new SharedMemoryError("INVALID_ARG", "lseek", `shared memory object '${key}' holds ${size} bytes, fewer than the ${length} requested`);
    }
    if (length === 0) throw new SharedMemoryError("INVALID_ARG", undefined, `shared memory region of '${key}' must not be empty`);
    return fd;
  } catch (err) {
    c.close(fd);
    throw err;
  }
}

/** errno of the libc call that just failed on this thread. */
const errno = (): number => getKoffi().errno();

/**
 * An open POSIX shared-memory object, read and written with pread/pwrite at absolute
 * positions (the descriptor's file offset is never used). Owns the descriptor; close()
 * closes it once, and every later use throws instead of touching a number the kernel
 * may have given to another file. A borrowed one (borrow()) uses another thread's
 * descriptor and never closes it: its owner keeps it open while it is lent.
 */
export class SharedMemoryFile {
  readonly key: string;
  #fd: number | undefined;
  readonly #borrowed: boolean;

  private constructor(key: string, fd: number, borrowed = false) {
    this.key = key;
    this.#fd = fd;
    this.#borrowed = borrowed;
  }

  /** Opens object `key`; fails when it does not exist or holds fewer than `length` (> 0) bytes. */
  static open(key: string, length: number): SharedMemoryFile {
    return new SharedMemoryFile(key, openChecked(load(), key, length));
  }

  /** Object `key` through descriptor `fd` of the process, which its owner (another thread's SharedMemoryFile) keeps open while this is used. */
  static borrow(key: string, fd: number): SharedMemoryFile {
    return new SharedMemoryFile(key, fd, true);
  }

  /** The descriptor, to lend to another thread (borrow()). */
  get descriptor(): number {
    return this.#open();
  }

  #open(): number {
    if (this.#fd === undefined) throw new SharedMemoryError("INTERNAL", undefined, `shared memory object '${this.key}' is closed`);
    return this.#fd;
  }

  /** The object's size now (lseek to its end; a client may resize it at any time). */
  size(): number {
    const n = Number(load().lseek(this.#open(), 0, SEEK_END));
    if (n < 0) throw new SharedMemoryError("INTERNAL", "lseek", `cannot get the size of shared memory object '${this.key}': lseek failed (errno ${errno()})`);
    return n;
  }

  /**
   * Fills `dst` from the object's bytes at `position`; returns how many bytes there were,
   * fewer than `dst.byteLength` when the object ends before (never a fault).
   */
  readAt(dst: Uint8Array, position: number): number {
    const c = load();
    const fd = this.#open();
    let done = 0;
    while (done < dst.byteLength) {
      const rest = done === 0 ? dst : dst.subarray(done);
      const n = Number(c.pread(fd, rest, rest.byteLength, position + done));
      if (n === 0) break;
      if (n < 0) {
        const e = errno();
        if (e === EINTR) continue;
        throw new SharedMemoryError("INTERNAL", "pread", `cannot read shared memory object '${this.key}': pread failed (errno ${e})`);
      }
      done += n;
    }
    return done;
  }

  /** Writes all of `src` at `position`. Past the object's end this grows it: check size() first. */
  writeAt(src: Uint8Array, position: number): void {
    const c = load();
    const fd = this.#open();
    let done = 0;
    while (done < src.byteLength) {
      const rest = done === 0 ? src : src.subarray(done);
      const n = Number(c.pwrite(fd, rest, rest.byteLength, position + done));
      if (n < 0) {
        const e = errno();
        if (e === EINTR) continue;
        throw new SharedMemoryError("INTERNAL", "pwrite", `cannot write shared memory object '${this.key}': pwrite failed (errno ${e})`);
      }
      done += n;
    }
  }

  /** Closes the descriptor (a borrowed one is only forgotten); safe to call twice. */
  close(): void {
    if (this.#fd === undefined) return;
    const fd = this.#fd;
    this.#fd = undefined;
    if (!this.#borrowed) load().close(fd);
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

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
    const fd = openChecked(c, key, length);
    try {
      const addr = c.mmap(null, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (addr === null || addr === -1n || addr === 0xffffffffffffffffn) {
        throw new SharedMemoryError("INTERNAL", "mmap", `unable to map shared memory object '${key}': mmap failed`);
      }
      return new SharedMemoryMapping(key, length, addr);
    } finally {
      c.close(fd);
    }
  }

  /** The mapped bytes; throws after unmap(). */
  get bytes(): Uint8Array {
    if (!this.#bytes) throw new SharedMemoryError("INTERNAL", undefined, `shared memory '${this.key}' is no longer mapped`);
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
  resize(key, size, O_RDWR | O_CREAT);
}

/** Resizes existing object `key` to `size` bytes: what a misbehaving client does after registering it. */
export function truncateSharedMemory(key: string, size: number): void {
  resize(key, size, O_RDWR);
}

function resize(key: string, size: number, flags: number): void {
  const c = load();
  const fd = c.shm_open(key, flags, 0o600);
  if (fd < 0) throw new SharedMemoryError("INTERNAL", "shm_open", `shm_open('${key}') failed`);
  try {
    if (c.ftruncate(fd, size) !== 0) throw new SharedMemoryError("INTERNAL", "ftruncate", `ftruncate('${key}', ${size}) failed`);
  } finally {
    c.close(fd);
  }
}

export function unlinkSharedMemory(key: string): void {
  load().shm_unlink(key);
}
