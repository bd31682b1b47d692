/**
 * @module Poll mode's watcher: chokidar in polling mode (so it works on NFS and other
 * network filesystems) over the model repositories. A change is applied only once the
 * changed files have stopped changing and no other change has followed for a moment;
 * then the manager rescans, reloading what changed and leaving the rest untouched.
 * Object-storage repositories are not watched: `check` syncs their local copies every
 * interval and a copy that changed is applied the same way. chokidar is imported when a
 * poller starts: outside poll mode it is never evaluated (#30, start-up).
 */
import type { FSWatcher } from "chokidar";
import { getLogger } from "../core/logger.ts";

const log = getLogger("src/repository/poller.ts");

export interface PollerOptions {
  repositories: readonly string[];
  /** `--repository-poll-secs`: how often files are checked. */
  intervalSecs: number;
  /** Called once the repositories have been quiet for `settleMs`. */
  onChange: () => Promise<void>;
  settleMs?: number;
  /** Called every interval; true means something changed (the object-storage copies' sync). */
  check?: () => Promise<boolean>;
}

export class RepositoryPoller {
  readonly #opts: PollerOptions;
  #watcher: FSWatcher | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #checkTimer: ReturnType<typeof setTimeout> | undefined;
  #checking: Promise<void> | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #closed = false;

  constructor(opts: PollerOptions) {
    this.#opts = opts;
  }

  /** Resolves once the initial scan of the watched files is done. */
  async start(): Promise<void> {
    const intervalMs = Math.max(1, this.#opts.intervalSecs) * 1000;
    if (this.#opts.check) this.#checkLater(intervalMs);
    if (this.#opts.repositories.length === 0) return;
    const { watch } = await import("chokidar");
    if (this.#closed) return;
    this.#watcher = watch([...this.#opts.repositories], {
      usePolling: true,
      interval: intervalMs,
      binaryInterval: intervalMs,
      ignoreInitial: true,
      awaitWriteFinish: { stabilityThreshold: Math.min(intervalMs, 2000), pollInterval: Math.min(intervalMs, 500) },
    });
    this.#watcher.on("all", (event, path) => {
      log.verbose(1, `repository change: ${event} ${path}`);
      this.#schedule();
    });
    this.#watcher.on("error", (err) => log.error(`repository watcher: ${(err as Error).message}`));
    await new Promise<void>((resolve) => this.#watcher!.once("ready", () => resolve()));
  }

  /** The next check `intervalMs` after this one ends, so that a slow store never has two at once. */
  #checkLater(intervalMs: number): void {
    if (this.#closed) return;
    this.#checkTimer = setTimeout(() => {
      this.#checking = this.#opts.check!()
        .then((changed) => {
          if (changed) this.#schedule();
        })
        .catch((err: unknown) => {
          log.error(`repository check failed: ${(err as Error).message}`);
        })
        .finally(() => {
          this.#checking = undefined;
          this.#checkLater(intervalMs);
        });
    }, intervalMs);
  }

  #schedule(): void {
    if (this.#closed) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#apply(), this.#opts.settleMs ?? 500);
  }

  #apply(): void {
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#opts
      .onChange()
      .catch((err: unknown) => {
        log.error(`repository poll failed: ${(err as Error).message}`);
      })
      .finally(() => {
        this.#running = undefined;
        if (this.#again && !this.#closed) {
          this.#again = false;
          this.#apply();
        }
      });
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    clearTimeout(this.#checkTimer);
    await this.#watcher?.close();
    await this.#checking;
    await this.#running;
  }
}
