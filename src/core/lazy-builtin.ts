/**
 * @module A Node built-in module evaluated at its first use rather than at start (#30).
 * Under Bun, node:http, node:zlib and node:crypto bring node:stream with them, for what
 * most servers never use (node:http's server under Bun, a compressed body, a cached
 * model's long input). In the compiled binary the first model's load now begins 3 ms
 * sooner on one thread and 7 ms sooner with two HTTP workers (scripts/results/startup.md).
 */
import { createRequire } from "node:module";

/** A getter for the built-in `name` (e.g. "node:zlib"): it is loaded at the first call. */
export function lazyBuiltin<T>(name: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= createRequire(import.meta.url)(name) as T);
}
