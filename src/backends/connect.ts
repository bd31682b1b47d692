/**
 * @module Channels from a frontend worker thread to a shared instance that runs in a
 * thread of its own (#30: a `typescript` model's worker-thread instance), main thread's
 * side: an owner registers under the key its SharedInstance carries; a frontend worker
 * that borrows the instance asks (through the main thread, once) for a MessagePort to it,
 * and is told (sharedEnded) when the instance's thread ends and why.
 */
import type { WireError } from "../core/threads/wire-error.ts";

/** A frontend worker's end of a fresh channel to the instance, and the value of the instance's ENDED slot it was made under (a port whose slot has moved on reaches a worker that ended). */
export interface SharedChannel {
  port: MessagePort;
  live: number;
}

const owners = new Map<string, () => SharedChannel | undefined>();

/** `connect` makes a fresh channel to the instance and returns the frontend worker's end (undefined when it cannot serve now). Returns the unregister. */
export function registerConnectable(key: string, connect: () => SharedChannel | undefined): () => void {
  owners.set(key, connect);
  return () => {
    if (owners.get(key) === connect) owners.delete(key);
  };
}

/** A channel to the instance registered under `key`, or undefined (gone, or not serving now). */
export function connectShared(key: string): SharedChannel | undefined {
  return owners.get(key)?.();
}

const endListeners = new Set<(key: string, error: WireError | undefined) => void>();

/** Calls `listener` with each sharedEnded (a frontend worker's link to the main thread); returns the unsubscribe. */
export function onSharedEnded(listener: (key: string, error: WireError | undefined) => void): () => void {
  endListeners.add(listener);
  return () => endListeners.delete(listener);
}

/** The thread of the instance registered under `key` ended: `error` is what its requests fail with, none when its owner stopped it (finalize). */
export function sharedEnded(key: string, error: WireError | undefined): void {
  for (const listener of endListeners) listener(key, error);
}
