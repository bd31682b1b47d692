/**
 * @module The shared memory between the server and one stub: two POSIX objects of the
 * same size, one the server writes (request inputs, BLS results) and one the stub writes
 * (responses, BLS inputs). Each writer allocates in its own object with a first-fit list
 * of 64-byte aligned blocks and frees a block when the reader says it has copied it;
 * only offsets and sizes cross the control channel. The objects are unlinked as soon as
 * the stub has mapped them (the stub unlinks them itself; the server too, and at its
 * exit whatever a stub that never started left), so nothing stays in /dev/shm.
 */
import { randomBytes } from "node:crypto";
import { createSharedMemory, SharedMemoryMapping, unlinkSharedMemory } from "../../../ffi/libc/shm.ts";
import { checkedRange, doesNotFit } from "./wire.ts";

const ALIGN = 64;

/** Names not yet unlinked, removed when the server exits (a stub that never started could not). */
const linked = new Set<string>();
let hooked = false;

function track(names: string[]): void {
  for (const n of names) linked.add(n);
  if (hooked) return;
  hooked = true;
  process.once("exit", () => {
    for (const n of linked) {
      try {
        unlinkSharedMemory(n);
      } catch {
        // already gone
      }
    }
  });
}

/** A first-fit allocator of [offset, size) blocks. */
export class BlockList {
  readonly size: number;
  #free: [number, number][];
  readonly #used = new Map<number, number>();

  constructor(size: number) {
    this.size = size;
    this.#free = [[0, size]];
  }

  /** An offset for `n` bytes, or undefined when no free block is big enough. */
  alloc(n: number): number | undefined {
    const want = Math.max(ALIGN, Math.ceil(n / ALIGN) * ALIGN);
    for (let i = 0; i < this.#free.length; i++) {
      const [off, size] = this.#free[i]!;
      if (size < want) continue;
      if (size === want) this.#free.splice(i, 1);
      else this.#free[i] = [off + want, size - want];
      this.#used.set(off, want);
      return off;
    }
    return undefined;
  }

  release(off: number): void {
    const n = this.#used.get(off);
    if (n === undefined) return;
    this.#used.delete(off);
    this.#free.push([off, n]);
    this.#free.sort((a, b) => a[0] - b[0]);
    const merged: [number, number][] = [];
    for (const b of this.#free) {
      const last = merged[merged.length - 1];
      if (last && last[0] + last[1] === b[0]) last[1] += b[1];
      else merged.push([b[0], b[1]]);
    }
    this.#free = merged;
  }

  /** Bytes in use. */
  get used(): number {
    let n = 0;
    for (const v of this.#used.values()) n += v;
    return n;
  }
}

export class StubMemory {
  /** Object names as shm_open takes them ("/nereid-py-..."). */
  readonly toStub: string;
  readonly fromStub: string;
  readonly size: number;
  readonly blocks: BlockList;
  #out: SharedMemoryMapping | undefined;
  #in: SharedMemoryMapping | undefined;
  #linked = true;

  constructor(size: number) {
    const tag = `/nereid-py-${process.pid}-${randomBytes(6).toString("hex")}`;
    this.toStub = `${tag}-s2p`;
    this.fromStub = `${tag}-p2s`;
    this.size = size;
    this.blocks = new BlockList(size);
    track([this.toStub, this.fromStub]);
    try {
      createSharedMemory(this.toStub, size);
      createSharedMemory(this.fromStub, size);
      this.#out = SharedMemoryMapping.open(this.toStub, size);
      this.#in = SharedMemoryMapping.open(this.fromStub, size);
    } catch (err) {
      this.close();
      throw err;
    }
  }

  /** Copies `data` into a new block of the server's object; its offset. */
  put(data: Uint8Array, what: string): number {
    const off = this.blocks.alloc(data.byteLength);
    if (off === undefined) throw doesNotFit(what, data.byteLength, this.size);
    this.#out!.bytes.set(data, off);
    return off;
  }

  /** A copy of `length` bytes the stub wrote at `offset`. */
  take(offset: number, length: number): Uint8Array {
    checkedRange(this.size, offset, length, "shared memory");
    return this.#in!.bytes.slice(offset, offset + length);
  }

  /** Removes the names (both sides keep their mappings). */
  unlink(): void {
    if (!this.#linked) return;
    this.#linked = false;
    for (const key of [this.toStub, this.fromStub]) {
      linked.delete(key);
      try {
        unlinkSharedMemory(key);
      } catch {
        // already gone
      }
    }
  }

  close(): void {
    this.unlink();
    this.#out?.unmap();
    this.#in?.unmap();
    this.#out = this.#in = undefined;
  }
}
