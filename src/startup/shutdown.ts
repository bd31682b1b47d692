/**
 * @module Triton's graceful shutdown (#31): new inference is refused and live/ready answer
 * 503 while the listeners stay up; in-flight requests drain for up to --exit-timeout-secs;
 * then models are unloaded and the listeners close.
 */
import { getLogger } from "../core/logger.ts";
import { removeAllOverrideFiles } from "../repository/override-files.ts";
import type { RepositoryPoller } from "../repository/poller.ts";
import type { StatusBoard } from "../server/status-board.ts";
import type { Core } from "./core.ts";
import type { Listeners } from "./listeners.ts";

const log = getLogger("src/startup/shutdown.ts");

/** What a running server holds, as shutdown releases it. */
export interface ShutdownParts {
  core: Core;
  listeners: Listeners;
  poller: RepositoryPoller | undefined;
  statusBoard: StatusBoard | undefined;
  /** Listeners still starting: shutdown waits for them, so that it closes them too. */
  starting: Promise<unknown>;
  exitTimeoutSecs: number;
}

/** Shuts the server down in Triton's order; 0 when everything drained in time, 1 otherwise. */
export async function gracefulShutdown(parts: ShutdownParts): Promise<number> {
  const { core, listeners } = parts;
  const server = core.server;
  server.markExiting();
  listeners.stopDirect();
  log.info("Waiting for in-flight requests to complete.");
  await parts.starting.catch(() => undefined);
  await parts.poller?.close();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), parts.exitTimeoutSecs * 1000)));
  const drained = await Promise.race([server.repository.unloadAll().then(() => true as const), timedOut]);
  clearTimeout(timer);
  if (!drained) {
    log.error("Exit timeout expired. Exiting immediately.");
    removeAllOverrideFiles(); // the models still loaded keep theirs otherwise
  } else log.info("All models are stopped, unloading models");
  await listeners.close();
  parts.statusBoard?.stop();
  server.closeSharedMemory();
  await core.close();
  try {
    server.trace?.flush();
  } catch (err) {
    log.error(`cannot write the trace file: ${(err as Error).message}`);
  }
  return drained ? 0 : 1;
}
