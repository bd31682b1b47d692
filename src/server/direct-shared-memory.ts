/**
 * @module The system shared-memory regions a frontend worker reads inputs from and writes
 * outputs into itself (#30), the worker's half of shared-memory.ts. The main thread lists
 * its system regions in the workers' table (SharedRegionLink) and publishes a new table
 * whenever one is registered or goes. A worker borrows the main thread's descriptor of a
 * region for as long as one of its requests holds the region, under the protocol that
 * SharedRegionLink describes: it adds itself to the region's holds before it looks at
 * the region's state, and leaves a region being dropped to the main thread (which then
 * answers the request as the region is there: still usable, or gone). Its last hold's end
 * wakes the main thread, which drops a region awaiting unregister when no request holds
 * it, as on one thread. Its holds are also counted under its slot, so that those of a
 * worker that ends while it holds a region go back (SharedMemoryManager.workerEnded);
 * a worker without a slot borrows nothing. Names the table does not list (CUDA regions among them) go to the
 * main thread too. Reads and writes are the main thread's own (readSystem, writeSystem),
 * so are their errors.
 */
import { SharedMemoryFile } from "../../ffi/libc/shm.ts";
import { ServerError } from "../core/errors.ts";
import {
  DROPPING,
  readSystem,
  slotHolds,
  STATE,
  WORKER_SLOTS,
  WORKER_USERS,
  writeSystem,
  type SharedRegionLink,
  type ShmRef,
  type SystemRegion,
} from "./shared-memory.ts";

interface Lent {
  /** The registration (SharedRegionLink.id): a name registered again is another region. */
  id: number;
  region: SystemRegion;
  lent: Int32Array;
}

/** The regions one request holds: what it reads and writes goes through them, whatever tables come meanwhile. */
export interface RegionHolds {
  /** An input's bytes from region `ref.region`, as the main thread reads them. */
  read(ref: ShmRef, what: string): Uint8Array;
  /** Writes an output's bytes into region `ref.region`, as the main thread writes them. */
  write(ref: ShmRef, data: Uint8Array, what: string): void;
  /** Ends the holds (a second call does nothing). */
  release(): void;
}

export class DirectSharedMemory {
  /** By name: the regions of the newest table. */
  #regions = new Map<string, Lent>();
  /** This worker's index in the regions' holds (slotHolds); none: it borrows nothing. */
  #slot: number | undefined;

  /**
   * The regions of a new table (a region keeps its entry while its registration, `id`, is
   * the same), and this worker's slot (DirectModels gives it once; the first one stays).
   */
  update(links: readonly SharedRegionLink[] | undefined, slot: number | undefined): void {
    if (this.#slot === undefined && slot !== undefined && slot >= 0 && slot < WORKER_SLOTS) this.#slot = slotHolds(slot);
    const next = new Map<string, Lent>();
    for (const link of links ?? []) {
      const known = this.#regions.get(link.name);
      if (known && known.id === link.id) next.set(link.name, known);
      else {
        const { id, name, key, offset, byteSize, fd } = link;
        next.set(name, { id, region: { name, key, offset, byteSize, file: SharedMemoryFile.borrow(key, fd) }, lent: new Int32Array(link.lent) });
      }
    }
    this.#regions = next;
  }

  /**
   * Holds every region in `names` (a name given twice is held twice) until release();
   * undefined, holding nothing, when one is not this worker's to use (the main thread
   * answers the request then).
   */
  acquire(names: readonly string[]): RegionHolds | undefined {
    const mine = this.#slot;
    if (mine === undefined) return undefined;
    const held = new Map<string, Lent>();
    const taken: Lent[] = [];
    for (const name of names) {
      const l = this.#regions.get(name);
      if (!l || !hold(l, mine)) {
        for (const t of taken) letGo(t.lent, mine);
        return undefined;
      }
      taken.push(l);
      held.set(name, l);
    }
    let released = false;
    const regionOf = (ref: ShmRef): SystemRegion => {
      const l = held.get(ref.region);
      if (!l || released) throw new ServerError("INTERNAL", `shared memory region '${ref.region}' is not held by this request`);
      return l.region;
    };
    return {
      read: (ref, what) => readSystem(regionOf(ref), ref, what),
      write: (ref, data, what) => writeSystem(regionOf(ref), ref, data, what),
      release: () => {
        if (released) return;
        released = true;
        for (const t of taken) letGo(t.lent, mine);
      },
    };
  }
}

/**
 * Takes a hold on `l`'s descriptor for the worker whose count is at `mine`: added first,
 * then the state read (SharedRegionLink); false when it is being dropped.
 */
function hold(l: Lent, mine: number): boolean {
  // The total first, then the slot (and letGo the other way round): a worker stopped between
  // the two can only leave a hold behind, never have the main thread give back one it did not count.
  Atomics.add(l.lent, WORKER_USERS, 1);
  Atomics.add(l.lent, mine, 1);
  if (Atomics.load(l.lent, STATE) === DROPPING) {
    letGo(l.lent, mine);
    return false;
  }
  return true;
}

/** Ends one hold; the last wakes the main thread, which may be waiting to drop the region. */
function letGo(lent: Int32Array, mine: number): void {
  Atomics.sub(lent, mine, 1);
  if (Atomics.sub(lent, WORKER_USERS, 1) === 1) Atomics.notify(lent, WORKER_USERS);
}
