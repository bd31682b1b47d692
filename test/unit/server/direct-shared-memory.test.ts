/**
 * A frontend worker's system shared memory (#30): the worker borrows the main thread's
 * descriptor of a region the table lists (direct-shared-memory.ts), reads inputs and
 * writes outputs as the main thread does, and leaves to the main thread a region it does
 * not list or one being dropped. The lending protocol with SharedMemoryManager: a region
 * unregistered while a worker holds it stays listed and usable (Triton's deferred
 * unregister) and goes, its descriptor closed, once the worker lets go, or once the
 * worker has ended (its holds, counted under its slot, go back); a worker without a slot
 * borrows nothing.
 */
import { afterEach, describe, expect, it } from "vitest";
import { descriptorsOn } from "../../helpers/shm-descriptors.ts";
import { SharedMemoryMapping, createSharedMemory, unlinkSharedMemory } from "../../../ffi/libc/shm.ts";
import { DirectSharedMemory } from "../../../src/server/direct-shared-memory.ts";
import { DROPPING, SharedMemoryManager, STATE, WORKER_SLOTS } from "../../../src/server/shared-memory.ts";
import { DirectRunner } from "../../../src/server/direct-runner.ts";
import { routeKey, type DirectEntry } from "../../../src/server/direct-table.ts";
import { echoStep } from "../../helpers/scheduler-fakes.ts";
import type { ModelConfig } from "../../../src/core/model-config-types.ts";
import type { InferenceRequest } from "../../../src/core/request.ts";

const KEY = `/nereid-unit-${process.pid}-direct-shm`;
const i32 = (...v: number[]) => new Uint8Array(Int32Array.from(v).buffer);
const ints = (b: Uint8Array) => [...new Int32Array(b.slice().buffer)];
/** Whether this process has a descriptor open on KEY's object. */
const holdsObject = () => descriptorsOn(KEY) > 0;

let manager: SharedMemoryManager | undefined;
let mapping: SharedMemoryMapping | undefined;
afterEach(() => {
  manager?.close();
  mapping?.unmap();
  unlinkSharedMemory(KEY);
});

function setup() {
  createSharedMemory(KEY, 64);
  mapping = SharedMemoryMapping.open(KEY, 64);
  manager = new SharedMemoryManager(true);
  manager.register("r", KEY, 0, 64);
  const shm = new DirectSharedMemory();
  shm.update(manager.systemRegions(), 0);
  return { manager, mapping, shm };
}

describe("a frontend worker's system shared memory", () => {
  it("reads and writes a listed region through the main thread's descriptor, as the main thread does", () => {
    const { mapping, shm } = setup();
    mapping.bytes.set(i32(1, 2, 3, 4));
    const holds = shm.acquire(["r", "r"])!;
    expect(ints(holds.read({ region: "r", offset: 4, byteSize: 8 }, "input 'X'"))).toEqual([2, 3]);
    holds.write({ region: "r", offset: 32, byteSize: 8 }, i32(7, 8), "output 'Y'");
    expect(ints(mapping.bytes.subarray(32, 40))).toEqual([7, 8]);
    expect(() => holds.read({ region: "r", offset: 60, byteSize: 8 }, "input 'X'")).toThrow(
      "Invalid offset + byte size for shared memory region: 'r' (input 'X': offset 60 + byte size 8 > region byte size 64)",
    );
    holds.release();
    expect(() => holds.read({ region: "r", offset: 0, byteSize: 4 }, "input 'X'")).toThrow("is not held by this request");
    expect(shm.acquire(["nope"])).toBeUndefined();
  });

  it("keeps what a request holds through tables that come meanwhile, as a worker receives them (cloned)", () => {
    const { manager, mapping, shm } = setup();
    mapping.bytes.set(i32(9, 10));
    const holds = shm.acquire(["r"])!;
    shm.update(structuredClone(manager.systemRegions()), 0);
    expect(ints(holds.read({ region: "r", offset: 0, byteSize: 8 }, "input 'X'"))).toEqual([9, 10]);
    // A table without the region (the server stopping): the request still writes its output.
    shm.update([], 0);
    holds.write({ region: "r", offset: 8, byteSize: 4 }, i32(11), "output 'Y'");
    expect(ints(mapping.bytes.subarray(8, 12))).toEqual([11]);
    holds.release();
  });

  it("keeps a region unregistered while the worker holds it listed and usable, and drops it once the worker lets go", async () => {
    const { manager, shm } = setup();
    const holds = shm.acquire(["r"])!;
    manager.unregister("r");
    expect(manager.status().map((r) => r.name)).toEqual(["r"]);
    expect(holdsObject()).toBe(true);
    // Still usable by another request, on either thread.
    shm.acquire(["r"])!.release();
    holds.release();
    // The main thread wakes on the worker's notify (read without status(), which would drop it itself).
    for (let i = 0; i < 50 && manager.systemRegions().length > 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(manager.systemRegions()).toEqual([]);
    expect(holdsObject()).toBe(false);
  });

  it("gives back the holds of a worker that ended: a region awaiting unregister goes once no live worker holds it", () => {
    const { manager, shm } = setup();
    const other = new DirectSharedMemory();
    other.update(manager.systemRegions(), 1);
    // Worker 0 holds the region twice and ends without letting go; worker 1 holds it once.
    shm.acquire(["r", "r"]);
    const kept = other.acquire(["r"])!;
    manager.unregister("r");
    manager.workerEnded(0);
    expect(manager.status().map((r) => r.name)).toEqual(["r"]);
    expect(holdsObject()).toBe(true);
    kept.release();
    expect(manager.status()).toEqual([]);
    expect(holdsObject()).toBe(false);
  });

  it("drops at once a region whose only holder ended before it was unregistered; an ended worker's slot is forgotten once", () => {
    const { manager, shm } = setup();
    shm.acquire(["r"]);
    manager.workerEnded(0);
    manager.workerEnded(0);
    manager.workerEnded(WORKER_SLOTS);
    const [link] = manager.systemRegions();
    expect(new Int32Array(link!.lent).slice(0, 3)).toEqual(Int32Array.from([0, 0, 0]));
    manager.unregister("r");
    expect(manager.status()).toEqual([]);
  });

  it("borrows nothing without a slot, or with one past WORKER_SLOTS: the main thread answers such a worker's requests", () => {
    const { manager } = setup();
    const none = new DirectSharedMemory();
    none.update(manager.systemRegions(), undefined);
    expect(none.acquire(["r"])).toBeUndefined();
    const past = new DirectSharedMemory();
    past.update(manager.systemRegions(), WORKER_SLOTS);
    expect(past.acquire(["r"])).toBeUndefined();
    // Nothing was left held.
    manager.unregister("r");
    expect(manager.status()).toEqual([]);
  });

  it("leaves a region being dropped to the main thread", () => {
    const { manager, shm } = setup();
    const [link] = manager.systemRegions();
    Atomics.store(new Int32Array(link!.lent), STATE, DROPPING);
    expect(shm.acquire(["r"])).toBeUndefined();
    // The attempt left no hold behind: the main thread drops the region at once.
    manager.unregister("r");
    expect(manager.status()).toEqual([]);
  });

  it("answers a request whose input and output are in a listed region, and leaves one naming another region to the main thread", async () => {
    const { manager, mapping } = setup();
    mapping.bytes.set(i32(5, 6));
    const config = {
      name: "e",
      platform: "ensemble",
      max_batch_size: 0,
      input: [{ name: "IN", data_type: "TYPE_INT32", dims: [2] }],
      output: [{ name: "OUT", data_type: "TYPE_INT32", dims: [2] }],
      ensemble_scheduling: { step: [{ model_name: "m", model_version: -1, input_map: { X: "IN" }, output_map: { Y: "OUT" } }] },
    } as unknown as ModelConfig;
    const entry: DirectEntry = { id: 1, name: "e", version: "1", config, instances: [] };
    const runner = new DirectRunner(
      () => {},
      () => {},
      () => {},
      echoStep,
    );
    runner.update({ entries: [entry], routes: [[routeKey("e", undefined), 1]], regions: manager.systemRegions() }, 0);
    const request = (region: string): InferenceRequest => ({
      modelName: "e",
      parameters: {},
      inputs: [
        { name: "IN", datatype: "INT32", shape: [2], data: new Uint8Array(0), parameters: { shared_memory_region: region, shared_memory_byte_size: 8 } },
      ],
      outputs: [{ name: "OUT", parameters: { shared_memory_region: region, shared_memory_byte_size: 8, shared_memory_offset: 16 } }],
    });
    const answer = await runner.run("e", undefined, request("r"));
    expect(answer?.outputs.map((o) => ({ name: o.name, shape: o.shape, sharedMemory: o.sharedMemory, bytes: o.data.byteLength }))).toEqual([
      { name: "OUT", shape: [2], sharedMemory: { region: "r", offset: 16, byteSize: 8 }, bytes: 0 },
    ]);
    expect(ints(mapping.bytes.subarray(16, 24))).toEqual([5, 6]);
    expect(runner.run("e", undefined, request("other"))).toBeUndefined();
    // The request's hold ended with it: the region goes at once.
    manager.unregister("r");
    expect(manager.status()).toEqual([]);
  });
});
