/** Shared-memory descriptors for tests: how many this process holds open on a POSIX object. */
import { readdirSync, readlinkSync } from "node:fs";

/** How many descriptors this process has open on the shared-memory object `key` (/dev/shm<key>). */
export function descriptorsOn(key: string): number {
  return readdirSync("/proc/self/fd").filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === `/dev/shm${key}`;
    } catch {
      return false;
    }
  }).length;
}
