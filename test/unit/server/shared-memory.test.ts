/**
 * SharedMemoryManager in process, over a real POSIX shared-memory object (#14): regions
 * are held per request, unregister of a region in use is deferred until its last user
 * releases it (Triton's rule), the descriptor is closed exactly once, and reads and
 * writes past the end of a shrunk object fail with INVALID_ARG instead of faulting.
 */
import { describe, it, expect, beforeEach, afterEach } from "vitest";
import { descriptorsOn } from "../../helpers/shm-descriptors.ts";
import { SharedMemoryManager } from "../../../src/server/shared-memory.ts";
import type { ServerError } from "../../../src/core/errors.ts";
import { createSharedMemory, truncateSharedMemory, unlinkSharedMemory } from "../../../ffi/libc/shm.ts";

const KEY = `/nereid-unit-${process.pid}`;
const ref = (offset: number, byteSize = 8) => ({ region: "r", offset, byteSize });

/** How many descriptors this process holds on the object. */
const openCount = () => descriptorsOn(KEY);

const failure = (fn: () => unknown): ServerError => {
  try {
    fn();
  } catch (err) {
    return err as ServerError;
  }
  throw new Error("expected a failure");
};

let shm: SharedMemoryManager;

beforeEach(() => {
  createSharedMemory(KEY, 64);
  shm = new SharedMemoryManager(true);
  shm.register("r", KEY, 16, 48);
});

afterEach(() => {
  shm.close();
  unlinkSharedMemory(KEY);
});

describe("SharedMemoryManager", () => {
  it("copies bytes in and out at the region's offset", () => {
    shm.write(ref(0), Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8), "output 'Y'");
    const got = shm.read(ref(0), "input 'X'");
    expect(Array.from(got)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    got[0] = 9; // a copy: the object keeps its bytes
    expect(Array.from(shm.read(ref(0, 1), "input 'X'"))).toEqual([1]);
  });

  it("unregisters (one and all) and closes the descriptor once; later use fails cleanly", () => {
    expect(openCount()).toBe(1);
    shm.unregister("r");
    shm.unregister();
    expect(shm.status()).toEqual([]);
    expect(openCount()).toBe(0);
    expect(failure(() => shm.read(ref(0), "input 'X'")).message).toBe("Unable to find shared memory region: 'r'");
    shm.close();
  });

  it("defers unregister (one and all) while a request holds the region, and closes it once when the last one releases", () => {
    expect(openCount()).toBe(1);
    const first = shm.acquire(["r"]);
    const second = shm.acquire(["r", "r"]);
    shm.unregister("r");
    shm.unregister();
    expect(shm.status().map((s) => s.name)).toEqual(["r"]);
    expect(failure(() => shm.register("r", KEY, 0, 8)).message).toBe("shared memory region 'r' already in manager");
    expect(shm.read(ref(0, 1), "input 'X'")).toHaveLength(1);
    first();
    first(); // a second release changes nothing
    expect(shm.status().map((s) => s.name)).toEqual(["r"]);
    second();
    expect(shm.status()).toEqual([]);
    expect(openCount()).toBe(0);
    expect(failure(() => shm.acquire(["r"])).message).toBe("Unable to find shared memory region: 'r'");
  });

  it("unregisters at once when nothing holds the region; an unknown name in acquire holds nothing", () => {
    expect(failure(() => shm.acquire(["r", "nope"])).message).toBe("Unable to find shared memory region: 'nope'");
    shm.unregister("r");
    expect(shm.status()).toEqual([]);
    expect(openCount()).toBe(0);
  });

  it("closes regions in use at shutdown; their later release and use fail cleanly", () => {
    const release = shm.acquire(["r"]);
    shm.close();
    expect(openCount()).toBe(0);
    release();
    expect(failure(() => shm.read(ref(0), "input 'X'")).message).toBe("Unable to find shared memory region: 'r'");
  });

  it("refuses reads and writes beyond a shrunk object with INVALID_ARG naming the region, and does not grow it back", () => {
    truncateSharedMemory(KEY, 20);
    const read = failure(() => shm.read(ref(0), "input 'X'"));
    expect(read.code).toBe("INVALID_ARG");
    expect(read.message).toBe(
      `shared memory region 'r' holds fewer bytes than input 'X' needs: object '${KEY}' ends at byte 20, the tensor spans bytes 16 to 24 (the object was truncated?)`,
    );
    const write = failure(() => shm.write(ref(8), new Uint8Array(8), "output 'Y'"));
    expect(write.code).toBe("INVALID_ARG");
    expect(write.message).toBe(
      `shared memory region 'r' holds fewer bytes than output 'Y' needs: object '${KEY}' ends at byte 20, the tensor spans bytes 24 to 32 (the object was truncated?)`,
    );
    expect(shm.read(ref(0, 4), "input 'X'")).toHaveLength(4);
    truncateSharedMemory(KEY, 0);
    expect(failure(() => shm.read(ref(0, 4), "input 'X'")).message).toContain("ends at byte 0, the tensor spans bytes 16 to 20");
  });
});
