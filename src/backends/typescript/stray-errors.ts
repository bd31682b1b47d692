/**
 * @module Errors nobody catches (a promise rejected with no handler, a throw from a timer
 * callback), which would otherwise end the server. Worker-thread models never leave them
 * here (their worker reports and ends); a main-thread model (`execution_thread: "main"`)
 * can. The CLI installs one handler pair at start (src/main.ts): an error whose stack runs
 * through a loaded main-thread model's files is logged against that model, any other one
 * is logged loudly as the server's own bug; either way the server keeps serving.
 */
import { getLogger } from "../../core/logger.ts";

const log = getLogger("src/backends/typescript/stray-errors.ts");

/** Loaded main-thread models' folders (`<repo>/<model>/`), with how many loads hold each. */
const owners = new Map<string, { model: string; holds: number }>();

/** Marks `modelDir`'s files as `model`'s code until the returned function is called (once). */
export function claimModelFiles(modelDir: string, model: string): () => void {
  const dir = modelDir.endsWith("/") ? modelDir : `${modelDir}/`;
  const owner = owners.get(dir) ?? { model, holds: 0 };
  owner.holds++;
  owners.set(dir, owner);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (--owner.holds === 0 && owners.get(dir) === owner) owners.delete(dir);
  };
}

const describe = (err: unknown): string =>
  err instanceof Error ? (err.stack ?? `${err.name}: ${err.message}`) : typeof err === "string" ? err : String((err as { stack?: unknown })?.stack ?? err);

/** The main-thread model whose files the error's stack runs through, if any. */
export function strayErrorOwner(err: unknown): string | undefined {
  const stack = describe(err);
  for (const [dir, owner] of owners) if (stack.includes(dir)) return owner.model;
  return undefined;
}

/** Logs an error nobody caught, against the model whose code left it when its stack says so. */
export function reportStrayError(kind: "unhandled rejection" | "uncaught exception", err: unknown): void {
  const model = strayErrorOwner(err);
  if (model !== undefined) log.error(`model '${model}': ${kind} (the server keeps serving): ${describe(err)}`);
  else log.error(`INTERNAL: ${kind} outside any model's code, a server bug (the server keeps serving): ${describe(err)}`);
}

let installed = false;

/** Installs the process-wide handlers (once): stray errors are logged, not fatal. */
export function installStrayErrorHandlers(): void {
  if (installed) return;
  installed = true;
  process.on("unhandledRejection", (reason) => reportStrayError("unhandled rejection", reason));
  process.on("uncaughtException", (err) => reportStrayError("uncaught exception", err));
}
