/**
 * @module Model repositories in object storage (issue #21 item 4), as Triton reads them:
 * the repository is copied into a local folder, which the repository manager scans like
 * any other. The copy is made in a private temporary folder (under
 * TRITON_AWS_MOUNT_DIRECTORY, TRITON_AZURE_MOUNT_DIRECTORY or TRITON_GCS_MOUNT_DIRECTORY
 * when set, as Triton makes its own there) and removed at exit. Each sync copies only the
 * objects whose ETag or size changed and removes the files whose objects are gone, so
 * unchanged model versions keep their files (and so keep serving across a poll). When the
 * store cannot be read, one warning is logged, the copy is kept as it is, and the next
 * sync that works says so. Object keys that would land outside the folder are refused.
 */
import { createWriteStream, mkdirSync, mkdtempSync, renameSync, rmSync, rmdirSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { getLogger } from "../core/logger.ts";
import { isObjectStoreUrl, parseObjectStoreUrl, safeCachePath } from "./object-store-url.ts";
import type { ObjectStore, StoredObject } from "./object-store/store.ts";
import type { Env } from "./object-store/credentials.ts";

const log = getLogger("src/repository/remote-repository.ts");

/** Objects downloaded at once by one sync. */
const DOWNLOADS_AT_ONCE = 4;

/** Errors of the local folder (a key that collides with a folder, say): that object is skipped, the sync goes on. */
const LOCAL_ERRORS = new Set(["ENOTDIR", "EISDIR", "EEXIST", "ENOTEMPTY", "ENAMETOOLONG"]);
const isLocalError = (err: unknown) => LOCAL_ERRORS.has((err as NodeJS.ErrnoException)?.code ?? "");

const message = (err: unknown) => (err instanceof Error ? err.message || err.name : String(err));

export interface RemoteRepositoryOptions {
  /** The repository URL as given (for messages). */
  url: string;
  store: ObjectStore;
  /** The key prefix of the repository, without slashes at either end ("" for a whole bucket). */
  prefix: string;
  /** The local folder the repository is copied to (created if missing). */
  dir: string;
  /** A folder on the same filesystem for downloads in progress (created if missing). */
  work: string;
}

/** One object-storage repository and its local copy. */
export class RemoteRepository {
  readonly url: string;
  readonly dir: string;
  readonly #store: ObjectStore;
  readonly #prefix: string;
  readonly #work: string;
  /** What each local file (path relative to `dir`) was copied from. */
  readonly #copied = new Map<string, { etag: string; size: number }>();
  /** Keys already warned about, so that a refused key is reported once. */
  readonly #refused = new Set<string>();
  #queue: Promise<unknown> = Promise.resolve();
  #failing = false;
  /** A sync that failed after changing files: the next one that works reports a change. */
  #dirty = false;
  #downloads = 0;

  constructor(opts: RemoteRepositoryOptions) {
    this.url = opts.url;
    this.dir = opts.dir;
    this.#store = opts.store;
    this.#prefix = opts.prefix.replace(/^\/+|\/+$/g, "");
    this.#work = opts.work;
    mkdirSync(this.dir, { recursive: true });
    mkdirSync(this.#work, { recursive: true });
  }

  /** True while the store cannot be read (the copy is then what the last sync left). */
  get failing(): boolean {
    return this.#failing;
  }

  /**
   * Brings the copy up to date; true when a file was added, replaced or removed. Throws
   * when the store cannot be read. Syncs of one repository run one after another.
   */
  sync(): Promise<boolean> {
    const run = this.#queue.then(() => this.#sync());
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /**
   * sync() for polls and loads: never throws. The first failure logs a warning and the
   * copy stays as it is (the served models keep serving); the first success after it
   * logs that the store is back.
   */
  async refresh(): Promise<boolean> {
    try {
      const changed = await this.sync();
      if (this.#failing) log.info(`model repository '${this.url}' is reachable again`);
      this.#failing = false;
      return changed;
    } catch (err) {
      if (!this.#failing) {
        log.warn(
          `cannot read model repository '${this.url}': ${message(err)}; models are served from the local copy in '${this.dir}' until it can be read again`,
        );
      }
      this.#failing = true;
      return false;
    }
  }

  /** The local path of each wanted object, and the folders that directory markers ("x/") name. */
  #plan(objects: readonly StoredObject[]): { files: Map<string, StoredObject>; dirs: Set<string> } {
    const base = this.#prefix ? `${this.#prefix}/` : "";
    const files = new Map<string, StoredObject>();
    const dirs = new Set<string>();
    for (const o of objects) {
      if (!o.key.startsWith(base)) continue;
      const rel = o.key.slice(base.length);
      const marker = rel.endsWith("/");
      const trimmed = rel.replace(/\/+$/, "");
      if (trimmed === "") continue;
      let path: string;
      try {
        path = safeCachePath(trimmed);
      } catch (err) {
        if (!this.#refused.has(o.key)) log.warn(`model repository '${this.url}': object '${o.key}' is not copied: ${message(err)}`);
        this.#refused.add(o.key);
        continue;
      }
      if (path === ".") continue;
      if (marker) dirs.add(path);
      else files.set(path, o);
    }
    return { files, dirs };
  }

  async #sync(): Promise<boolean> {
    const listed = await this.#store.list(this.#prefix ? `${this.#prefix}/` : "");
    const { files, dirs } = this.#plan(listed);
    let changed = false;
    try {
      // Removals first, so that a file replaced by a folder of the same name (or back) fits.
      for (const path of [...this.#copied.keys()]) {
        if (files.has(path)) continue;
        rmSync(join(this.dir, path), { force: true, recursive: true });
        this.#copied.delete(path);
        this.#prune(dirname(path));
        changed = true;
      }
      const stale = [...files].filter(([path, o]) => {
        const had = this.#copied.get(path);
        return !had || had.etag !== o.etag || had.size !== o.size || localSize(join(this.dir, path)) !== o.size;
      });
      let next = 0;
      let failure: { err: unknown } | undefined;
      const worker = async () => {
        while (next < stale.length && !failure) {
          const [path, o] = stale[next++]!;
          try {
            await this.#download(o.key, join(this.dir, path));
          } catch (err) {
            if (!isLocalError(err)) {
              failure ??= { err }; // the other downloads stop after their current object
              return;
            }
            if (!this.#refused.has(o.key)) log.warn(`model repository '${this.url}': cannot copy '${o.key}' to '${path}': ${message(err)}`);
            this.#refused.add(o.key);
            continue;
          }
          this.#copied.set(path, { etag: o.etag, size: o.size });
          changed = true;
        }
      };
      await Promise.all(Array.from({ length: Math.min(DOWNLOADS_AT_ONCE, stale.length) }, worker));
      if (failure) throw failure.err;
      for (const d of dirs) {
        try {
          mkdirSync(join(this.dir, d), { recursive: true });
        } catch (err) {
          if (!isLocalError(err)) throw err;
        }
      }
    } catch (err) {
      if (changed) this.#dirty = true;
      throw err;
    }
    const result = changed || this.#dirty;
    this.#dirty = false;
    return result;
  }

  /** Downloads beside the copy, then renames into place: a load never reads half a file. */
  async #download(key: string, dest: string): Promise<void> {
    const part = join(this.#work, `${++this.#downloads}.part`);
    try {
      const body = await this.#store.read(key);
      await pipeline(Readable.from(body), createWriteStream(part));
      mkdirSync(dirname(dest), { recursive: true });
      renameSync(part, dest);
    } finally {
      rmSync(part, { force: true });
    }
  }

  /** Removes `rel` and its parents while they are empty, up to (not including) the copy's root. */
  #prune(rel: string): void {
    for (let d = rel; d !== "." && d !== "" && d !== "/"; d = dirname(d)) {
      try {
        rmdirSync(join(this.dir, d));
      } catch {
        return;
      }
    }
  }
}

function localSize(path: string): number | undefined {
  const st = statSync(path, { throwIfNoEntry: false });
  return st?.isFile() ? st.size : undefined;
}

/** The mount-directory variable Triton reads for each scheme. */
const MOUNT_VARIABLE = { s3: "TRITON_AWS_MOUNT_DIRECTORY", as: "TRITON_AZURE_MOUNT_DIRECTORY", gs: "TRITON_GCS_MOUNT_DIRECTORY" } as const;

export type OpenStore = (url: ReturnType<typeof parseObjectStoreUrl>, raw: string, env: Env) => Promise<ObjectStore>;

/**
 * The repositories of --model-repository: local folders as they are, object-storage URLs
 * copied into private folders. `local` lists, in the order given, the folder the manager
 * scans for each; `refresh()` re-syncs every object-storage one.
 */
export class RepositorySources {
  readonly local: readonly string[];
  readonly remote: readonly RemoteRepository[];
  /** The given repositories that are local folders (the poller watches these). */
  readonly folders: readonly string[];
  readonly #temp: string[];
  readonly #onExit = () => this.close();

  private constructor(local: string[], remote: RemoteRepository[], folders: string[], temp: string[]) {
    this.local = local;
    this.remote = remote;
    this.folders = folders;
    this.#temp = temp;
    if (temp.length > 0) process.once("exit", this.#onExit);
  }

  /**
   * Copies every object-storage repository of `paths`; throws (after removing what it made)
   * when one cannot be read, as a missing local folder stops the start.
   */
  static async open(paths: readonly string[], env: Env = process.env, openStore?: OpenStore): Promise<RepositorySources> {
    const local: string[] = [];
    const remote: RemoteRepository[] = [];
    const folders: string[] = [];
    const temp: string[] = [];
    try {
      for (const raw of paths) {
        if (!isObjectStoreUrl(raw)) {
          local.push(raw);
          folders.push(raw);
          continue;
        }
        const url = parseObjectStoreUrl(raw);
        const open = openStore ?? (await import("./object-store/open.ts")).openObjectStore;
        const store = await open(url, raw, env);
        const mount = env[MOUNT_VARIABLE[url.scheme]];
        if (mount) mkdirSync(mount, { recursive: true });
        const root = mkdtempSync(join(mount || tmpdir(), `nereid-${url.scheme}-`));
        temp.push(root);
        const repo = new RemoteRepository({ url: raw, store, prefix: url.prefix, dir: join(root, "repository"), work: join(root, "download") });
        try {
          await repo.sync();
        } catch (err) {
          throw new Error(`failed to read model repository '${raw}': ${message(err)}`);
        }
        log.info(`model repository '${raw}' copied to '${repo.dir}'`);
        local.push(repo.dir);
        remote.push(repo);
      }
    } catch (err) {
      for (const t of temp) rmSync(t, { recursive: true, force: true });
      throw err;
    }
    return new RepositorySources(local, remote, folders, temp);
  }

  /** Re-syncs every object-storage repository (never throws); true when any copy changed. */
  async refresh(): Promise<boolean> {
    const changed = await Promise.all(this.remote.map((r) => r.refresh()));
    return changed.some(Boolean);
  }

  /** Removes the copies (at shutdown; also on process exit as a backstop). */
  close(): void {
    process.off("exit", this.#onExit);
    for (const t of this.#temp.splice(0)) rmSync(t, { recursive: true, force: true });
  }
}
