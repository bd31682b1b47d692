/**
 * @module Triton's `redis` response cache: entries live in a Redis server that several
 * Nereid processes can share, through node-redis (`@redis/client`). Settings are Triton's
 * redis_cache keys (host, port, user, password, db, connect_timeout, socket_timeout,
 * tls_enabled, cert, key, cacert, cacert_dir, sni; pool_size and wait_timeout are
 * accepted and unused: one pipelined connection per thread, the main thread's (connect())
 * and each frontend worker's (background(), #30).
 *
 * As in Triton, the server does not start when Redis cannot be reached. Once running,
 * the cache never holds a request up or fails it: while Redis is gone, commands are
 * refused at once (no offline queue) and a lookup is a miss, so the model runs; a lookup
 * that Redis does not answer within `socket_timeout` ms (1000 when unset) is a miss too.
 * Losing Redis logs one warning, its return one info line; the client reconnects by itself.
 * Each entry is one Redis string (entry-codec.ts) with no expiry: bound the memory with
 * Redis's own `maxmemory` and an `allkeys-lru` policy.
 *
 * Whatever is in Redis is checked before it is served (issue #29 item 6): a lookup reads at
 * most MAX_ENTRY_BYTES + 1 bytes of a value (GETRANGE, so a larger value never comes over
 * whole), and a value that is larger or that entry-codec.ts does not accept is a miss: the
 * model runs, the value is deleted (the insert that follows writes a good one), and the
 * first one is logged as a warning, later ones at verbose level 1. Responses larger than
 * MAX_ENTRY_BYTES are not stored.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createClient, RESP_TYPES } from "@redis/client";
import type { Tensor } from "../core/tensor.ts";
import { getLogger } from "../core/logger.ts";
import type { RemoteCacheLink, ResponseCache } from "./cache.ts";
import { decodeEntry, encodeEntry, MAX_HEADER_BYTES } from "./entry-codec.ts";

const log = getLogger("src/cache/redis-cache.ts");

/** How long a lookup waits for Redis when `socket_timeout` is not set (Triton waits forever). */
export const DEFAULT_LOOKUP_TIMEOUT_MS = 1000;
/** How often an idle connection pings Redis. */
const PING_INTERVAL_MS = 30_000;
/** How long a worker's client may take to connect before it warns. */
const READY_WARN_MS = 10_000;
/** The longest pause between reconnection attempts. */
const MAX_RECONNECT_DELAY_MS = 1000;

/** The largest value a lookup reads or an insert writes (64 MiB). */
export const MAX_ENTRY_BYTES = 64 * 1024 * 1024;

const AS_BUFFER = { [RESP_TYPES.BLOB_STRING]: Buffer } as const;

type Client = ReturnType<typeof createClient>;

function tlsOptions(c: Readonly<Record<string, string>>): Record<string, unknown> {
  if (c.tls_enabled !== "true") return {};
  const ca: Buffer[] = [];
  if (c.cacert) ca.push(readFileSync(c.cacert));
  if (c.cacert_dir) for (const f of readdirSync(c.cacert_dir).sort()) if (/\.(pem|crt)$/.test(f)) ca.push(readFileSync(join(c.cacert_dir, f)));
  return {
    tls: true,
    ...(c.cert ? { cert: readFileSync(c.cert) } : {}),
    ...(c.key ? { key: readFileSync(c.key) } : {}),
    ...(ca.length > 0 ? { ca } : {}),
    ...(c.sni ? { servername: c.sni } : {}),
  };
}

export class RedisResponseCache implements ResponseCache {
  readonly address: string;
  readonly link: RemoteCacheLink;
  /** The link's flag: whether some thread has warned of an invalid entry. */
  readonly #warned: Int32Array;
  /** Another thread's client of the cache (background()): what it would warn of is logged at verbose level 1, the main thread's client warns. */
  readonly #quiet: boolean;
  readonly #client: Client;
  readonly #lookupTimeoutMs: number;
  /** Whether Redis answered last time we heard from it (the warning is logged on the change). */
  #up = false;
  #connectedOnce = false;
  #closed = false;
  /** Whether this client was ready before (the first time is not news). */
  #wasUp = false;
  #invalidEntries = 0;

  private constructor(config: Readonly<Record<string, string>>, quiet = false, warned = new SharedArrayBuffer(4)) {
    this.address = `${config.host}:${config.port}`;
    this.link = { settings: config, warned };
    this.#warned = new Int32Array(warned);
    this.#quiet = quiet;
    // Another thread's client connects after the main thread's did: it keeps trying from the first attempt.
    if (quiet) this.#connectedOnce = true;
    const socketTimeout = Number(config.socket_timeout ?? 0);
    this.#lookupTimeoutMs = socketTimeout > 0 ? socketTimeout : DEFAULT_LOOKUP_TIMEOUT_MS;
    const connectTimeout = Number(config.connect_timeout ?? 0);
    this.#client = createClient({
      socket: {
        host: config.host,
        port: Number(config.port),
        ...(connectTimeout > 0 ? { connectTimeout } : {}),
        ...tlsOptions(config),
        // The first connection is tried once (start-up fails as in Triton); later ones forever.
        reconnectStrategy: (retries: number, cause: Error) =>
          this.#connectedOnce && !this.#closed ? Math.min(50 * 2 ** retries, MAX_RECONNECT_DELAY_MS) : cause,
      } as never,
      ...(config.user !== undefined ? { username: config.user } : {}),
      ...(config.password !== undefined ? { password: config.password } : {}),
      ...(config.db !== undefined ? { database: Number(config.db) } : {}),
      // A connection a Redis `timeout` would close while its thread has no lookups to make.
      pingInterval: PING_INTERVAL_MS,
      disableOfflineQueue: true,
    }) as Client;
    this.#client.on("error", (err: Error) => this.#down(err));
    const name = quiet ? `nereid-${process.pid}-worker` : `nereid-${process.pid}`;
    this.#client.on("ready", () => {
      if (this.#closed) return;
      // Named for Redis's CLIENT LIST (the process, and whether the connection is a frontend
      // worker's); a Redis or an ACL user that refuses CLIENT SETNAME leaves it unnamed.
      this.#client.sendCommand(["CLIENT", "SETNAME", name]).catch(() => undefined);
      if (this.#up) return;
      const again = this.#wasUp;
      this.#up = true;
      this.#wasUp = true;
      if (again) this.#log(`Redis response cache at ${this.address} is reachable again; lookups use it again`, "info");
      this.#connectedOnce = true;
    });
  }

  /**
   * A client of the cache the main thread connected (its `link`), for a frontend worker:
   * it connects in the background, trying until it is connected, and is handed to
   * `ready` then (until then the worker hands its cached models' requests to the main
   * thread). Not connected after READY_WARN_MS, it warns once. Afterwards, what it would
   * log of Redis going away and back is verbose: the main thread's client says it.
   */
  static background(link: RemoteCacheLink, ready: (cache: RedisResponseCache) => void): void {
    const cache = new RedisResponseCache(link.settings, true, link.warned);
    const late = setTimeout(
      () =>
        log.warn(
          `a frontend worker cannot reach the Redis response cache at ${cache.address}: it keeps trying, and its requests for cached models go to the main thread meanwhile`,
        ),
      READY_WARN_MS,
    );
    late.unref?.();
    cache.#client.once("ready", () => {
      clearTimeout(late);
      ready(cache);
    });
    cache.#client.connect().catch(() => undefined);
  }

  #log(message: string, level: "info" | "warn"): void {
    if (this.#quiet) log.verbose(1, message);
    else if (level === "info") log.info(message);
    else log.warn(message);
  }

  /** Connects and pings, as Triton's RedisCache::Create does; rejects with Triton's message when it cannot. */
  static async connect(config: Readonly<Record<string, string>>): Promise<RedisResponseCache> {
    let cache: RedisResponseCache;
    try {
      cache = new RedisResponseCache(config);
    } catch (err) {
      throw new Error(`Failed to initialize RedisCache: ${(err as Error).message}`, { cause: err });
    }
    try {
      await cache.#client.connect();
      await cache.#client.ping();
    } catch (err) {
      cache.#closed = true;
      cache.#client.destroy();
      throw new Error(`Failed to initialize RedisCache: cannot reach Redis at ${cache.address}: ${(err as Error).message}`, { cause: err });
    }
    log.info(`Redis response cache at ${cache.address}`);
    return cache;
  }

  #down(err: Error): void {
    if (!this.#up || this.#closed) return;
    this.#up = false;
    this.#log(`Redis response cache at ${this.address} is unreachable (${err.message}): requests run their models until it returns`, "warn");
  }

  /** How many values read from Redis were refused (too large, or not a valid entry). */
  get invalidEntries(): number {
    return this.#invalidEntries;
  }

  async lookup(key: string, outputNames: readonly string[] = []): Promise<Tensor[] | undefined> {
    if (!this.#client.isReady) return undefined;
    // node-redis's own command timeout does not cover a command already written to a Redis
    // that stopped answering, so the wait is bounded here.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), this.#lookupTimeoutMs)));
    // GETRANGE's end is inclusive: one byte more than the largest entry tells a value too large.
    // A missing key reads as "" (a miss); a key of another type as an error (a miss).
    const get = this.#client.sendCommand<Buffer | null>(["GETRANGE", key, "0", String(MAX_ENTRY_BYTES)], { typeMapping: AS_BUFFER }).then(
      (value) => (value && value.byteLength > 0 ? this.#decode(key, value, outputNames) : undefined),
      () => undefined,
    );
    try {
      return await Promise.race([get, timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The entry's outputs, or undefined (deleting the value and counting it) when it is not one to serve. */
  #decode(key: string, value: Buffer, outputNames: readonly string[]): Tensor[] | undefined {
    const decoded = value.byteLength > MAX_ENTRY_BYTES ? { invalid: `larger than ${MAX_ENTRY_BYTES} bytes` } : decodeEntry(value, outputNames);
    if (decoded.outputs) return decoded.outputs;
    this.#invalidEntries++;
    const msg = `Redis response cache at ${this.address}: a value is not a valid entry (${decoded.invalid}); it is deleted and the model runs`;
    // The first in the process, whichever thread's client read it, is a warning.
    if (Atomics.compareExchange(this.#warned, 0, 0, 1) === 0) log.warn(`${msg} (later ones are logged at verbose level 1)`);
    else log.verbose(1, msg);
    this.#client.sendCommand(["DEL", key]).catch(() => undefined);
    return undefined;
  }

  insert(key: string, outputs: readonly Tensor[]): void {
    if (!this.#client.isReady) return;
    const value = encodeEntry(outputs);
    if (value.byteLength > MAX_ENTRY_BYTES || value.readUInt32LE(0) > MAX_HEADER_BYTES) {
      log.verbose(1, `Redis response cache: a response of ${value.byteLength} bytes is not stored (more than ${MAX_ENTRY_BYTES})`);
      return;
    }
    this.#client.sendCommand(["SET", key, value]).catch((err: Error) => log.verbose(1, `Redis response cache: insert failed: ${err.message}`));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      if (this.#client.isReady) await this.#client.close();
      else this.#client.destroy();
    } catch {
      this.#client.destroy();
    }
  }
}
