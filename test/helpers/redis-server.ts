/**
 * A real `redis-server` (Debian's package, installed if missing) for the Redis cache
 * tests: started on a free port in a temporary folder, with nothing persisted, and
 * killable and restartable on the same port.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureDebianPackages } from "./apt.ts";
import { freePort } from "./ports.ts";

export interface RedisProcess {
  port: number;
  /** Starts it (again) on the same port; resolves once it accepts connections. */
  start(): Promise<void>;
  /** SIGKILL: Redis vanishes without a goodbye. */
  kill(): Promise<void>;
  /** SIGSTOP / SIGCONT: Redis keeps its connections but answers nothing. */
  pause(): void;
  resume(): void;
  /** redis-cli against it; returns stdout, trimmed. */
  cli(...args: string[]): string;
  remove(): Promise<void>;
}

export async function startRedis(): Promise<RedisProcess> {
  ensureDebianPackages(["redis-server", "redis-cli"], ["redis-server", "redis-tools"], "The Redis cache tests run a real redis-server");
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "nereid-redis-"));
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const redis: RedisProcess = {
    port,
    async start() {
      const c = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no"], {
        stdio: ["ignore", "pipe", "pipe"],
      });
      child = c;
      exited = new Promise((r) => c.once("exit", () => r()));
      let out = "";
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`redis-server did not start:\n${out}`)), 20_000);
        const on = (b: Buffer) => {
          out += b.toString();
          if (out.includes("Ready to accept connections")) {
            clearTimeout(timer);
            resolve();
          }
        };
        c.stdout!.on("data", on);
        c.stderr!.on("data", on);
        c.once("exit", (code) => {
          clearTimeout(timer);
          reject(new Error(`redis-server exited with ${code}:\n${out}`));
        });
      });
    },
    async kill() {
      if (child && child.exitCode === null) child.kill("SIGKILL");
      await exited;
    },
    pause() {
      child?.kill("SIGSTOP");
    },
    resume() {
      child?.kill("SIGCONT");
    },
    cli(...args) {
      const r = spawnSync("redis-cli", ["-p", String(port), ...args], { encoding: "utf8" });
      if (r.status !== 0) throw new Error(`redis-cli ${args.join(" ")}: ${r.stderr}`);
      return r.stdout.trim();
    },
    async remove() {
      await redis.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await redis.start();
  return redis;
}
