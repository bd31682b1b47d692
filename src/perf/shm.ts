/**
 * @module --shared-memory system: every distinct request's input tensors are written
 * once into one POSIX shared-memory object of their own, registered with the server's
 * system shared-memory extension (the server must run with --allow-client-shm=true);
 * requests then name region, offset and size instead of carrying the bytes. At the end
 * the regions are unregistered and the objects unlinked.
 */
import { createSharedMemory, SharedMemoryMapping, unlinkSharedMemory } from "../../ffi/libc/shm.ts";
import type { PerfClient, SendTensor } from "./client.ts";
import type { PerfRequestData } from "./inputs.ts";

export async function placeInSharedMemory(client: PerfClient, data: PerfRequestData): Promise<{ data: SendTensor[][]; release: () => Promise<void> }> {
  const placed: { name: string; key: string; registered: boolean }[] = [];
  const release = async () => {
    for (const p of placed.splice(0)) {
      try {
        if (p.registered) await client.unregisterSystemShm(p.name);
      } finally {
        unlinkSharedMemory(p.key);
      }
    }
  };
  try {
    const out = [];
    for (const [k, tensors] of data.entries()) {
      const name = `nereid_perf_${process.pid}_${k}`;
      const key = `/${name}`;
      // A region may not be empty: an all-empty request still gets one byte.
      const size = Math.max(
        1,
        tensors.reduce((n, t) => n + t.bytes.byteLength, 0),
      );
      createSharedMemory(key, size);
      const entry = { name, key, registered: false };
      placed.push(entry);
      const map = SharedMemoryMapping.open(key, size);
      let offset = 0;
      const sendTensors: SendTensor[] = tensors.map((t) => {
        map.bytes.set(t.bytes, offset);
        const shm = { region: name, offset, byteSize: t.bytes.byteLength };
        offset += t.bytes.byteLength;
        return { ...t, shm };
      });
      map.unmap();
      await client.registerSystemShm(name, key, size);
      entry.registered = true;
      out.push(sendTensors);
    }
    return { data: out, release };
  } catch (err) {
    await release();
    throw err;
  }
}
