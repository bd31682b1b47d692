/**
 * Starts Nereid as a separate process for end-to-end tests: the compiled binary
 * (dist/nereid) when it exists, else `bun src/main.ts`; NEREID_TEST_RUNTIME=deno runs
 * `deno run ... src/main.ts` instead (NEREID_TEST_USE_BUN=1 forces Bun). The HTTP port is
 * chosen by the OS (--http-port=0) and read back from the startup log.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { denoRun } from "./deno.ts";

export const ROOT = resolve(import.meta.dirname, "../..");
export const BINARY = join(ROOT, "dist", "nereid");
const BUN = join(ROOT, "node_modules", ".bin", "bun");

export interface ServerProcess {
  url: string;
  /** The server's process id (for reading its memory from /proc). */
  pid: number | undefined;
  port: number;
  /** host:port of the gRPC listener, when the server started one. */
  grpcTarget: string | undefined;
  /** Base URL of the metrics listener, when the server started one. */
  metricsUrl: string | undefined;
  log: () => string;
  exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export function serverCommand(): { cmd: string; args: string[]; kind: "binary" | "bun" | "deno" } {
  if (process.env.NEREID_TEST_RUNTIME === "deno") {
    const [cmd, ...args] = denoRun("src/main.ts");
    return { cmd: cmd!, args, kind: "deno" };
  }
  if (process.env.NEREID_TEST_USE_BUN !== "1" && existsSync(BINARY)) return { cmd: BINARY, args: [], kind: "binary" };
  return { cmd: BUN, args: [join(ROOT, "src", "main.ts")], kind: "bun" };
}

/** Runs the server with `args`, waiting for it to listen (or to exit). */
export async function startServerProcess(
  args: string[],
  opts: {
    cwd?: string;
    env?: Record<string, string>;
    timeoutMs?: number;
    command?: string | readonly string[];
    cleanEnv?: boolean;
    /** The log line that says the server listens, its port in group 1 (default: the HTTP service's line); `url` and `port` are that listener's. */
    started?: RegExp;
  } = {},
): Promise<ServerProcess> {
  const { cmd, args: pre } =
    typeof opts.command === "string"
      ? { cmd: opts.command, args: [] }
      : opts.command
        ? { cmd: opts.command[0]!, args: opts.command.slice(1) }
        : serverCommand();
  const child: ChildProcess = spawn(
    cmd,
    [
      ...pre,
      "--http-port=0",
      "--http-address=127.0.0.1",
      "--grpc-port=0",
      "--grpc-address=127.0.0.1",
      "--metrics-port=0",
      "--metrics-address=127.0.0.1",
      ...args,
    ],
    {
      cwd: opts.cwd ?? ROOT,
      env: opts.cleanEnv ? opts.env : { ...process.env, ...opts.env },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  const exited = new Promise<number | null>((res) => child.once("exit", (code) => res(code)));
  const port = await new Promise<number>((resolvePort, reject) => {
    // A server that never says it listens is killed, not left running after the test.
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`server did not start in time:\n${output}`));
    }, opts.timeoutMs ?? 30_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const m = (opts.started ?? /Started HTTPService at [^\s:]+:(\d+)/).exec(output);
      if (m) {
        clearTimeout(timer);
        resolvePort(Number(m[1]));
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening:\n${output}`));
    });
  });
  const grpcPort = /Started GRPCInferenceService at [^\s:]+:(\d+)/.exec(output)?.[1];
  const metricsPort = /Started Metrics Service at [^\s:]+:(\d+)/.exec(output)?.[1];
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid,
    port,
    grpcTarget: grpcPort ? `127.0.0.1:${grpcPort}` : undefined,
    metricsUrl: metricsPort ? `http://127.0.0.1:${metricsPort}` : undefined,
    log: () => output,
    exited,
    async stop(signal: NodeJS.Signals = "SIGTERM") {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** Runs the server to completion (for CLI error cases). */
export function runServerToExit(args: string[], opts: { cwd?: string; timeoutMs?: number } = {}): Promise<{ code: number | null; output: string }> {
  const { cmd, args: pre } = serverCommand();
  const child = spawn(cmd, [...pre, ...args], { cwd: opts.cwd ?? ROOT, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (c: Buffer) => (output += c.toString()));
  child.stderr.on("data", (c: Buffer) => (output += c.toString()));
  return new Promise((res) => {
    const t = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 30_000);
    child.once("exit", (code) => {
      clearTimeout(t);
      res({ code, output });
    });
  });
}

/** POSTs a JSON infer request to `model` and returns the status and parsed body. */
export async function inferJson(server: ServerProcess, model: string, body: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${server.url}/v2/models/${model}/infer`, { method: "POST", body: JSON.stringify(body) });
  return { status: res.status, json: await res.json() };
}

/** A `simple` request whose OUTPUT0 is sixteen 5s (2 + 3). */
export const SIMPLE_TWOS_AND_THREES = {
  inputs: [
    { name: "INPUT0", shape: [1, 16], datatype: "INT32", data: Array(16).fill(2) },
    { name: "INPUT1", shape: [1, 16], datatype: "INT32", data: Array(16).fill(3) },
  ],
};
