/**
 * @module One stub process (`python3 stub.py ...`) and its control channel: the stub's
 * stdin carries the server's messages and its stdout the stub's (the stub moves the
 * model's own prints to stderr first), each a 4-byte little-endian length and a JSON
 * object. Only control data crosses here; tensor bytes go through StubMemory.
 *
 * Health: while the server waits on the stub (initialize, execute, finalize, or an execute
 * a frontend worker thread sent it directly), it sends a ping every `timeoutMs`; a stub
 * that has sent nothing since the previous ping (a stopped or wedged process; a model busy
 * in Python still answers, from the stub's reader thread) is killed. Its exit is reported
 * once through `onExit`.
 */
import { spawn } from "node:child_process";
import { internal } from "../../core/errors.ts";
import type { Interpreter } from "./interpreter.ts";
import type { StubMemory } from "./arena.ts";
import { stubFiles } from "./python-files.ts";

/** A control message; `t` names its kind. */
export type Message = { t: string; [key: string]: any };

/** Messages larger than this from a stub end it (a length this big is a broken channel). */
const MAX_MESSAGE = 64 << 20;

export interface StubOptions {
  /** "model 'x' instance 'x_0'": how errors and logs name the stub. */
  label: string;
  interpreter: Interpreter;
  modelPath: string;
  memory: StubMemory;
  timeoutMs: number;
  /** The Unix socket the stub listens on for the frontend worker threads (direct.ts); none: it listens nowhere. */
  socket?: string;
  /** Whether others wait on the stub too (the frontend workers' executes): health checks run then as well. */
  busy?: () => boolean;
  onMessage(m: Message): void;
  /** The stub ended (or was killed); `reason` says how. Called once. */
  onExit(reason: string): void;
}

/** A started child: its stdin, kill, and callbacks for its stdout bytes and its end. */
interface Child {
  write(frame: Uint8Array): void;
  endInput(): void;
  kill(): void;
}

interface ChildEvents {
  data(chunk: Buffer): void;
  /** `error` when it could not be started; `how` otherwise ("exited with code 3"). */
  end(how: string, error?: Error): void;
}

declare const Bun:
  | {
      spawn(o: {
        cmd: string[];
        env: Record<string, string | undefined>;
        stdin: "pipe";
        stdout: "pipe";
        stderr: "inherit";
        onExit(p: unknown, exitCode: number | null, signalCode: string | null): void;
      }): { stdin: { write(b: Uint8Array): number; flush(): void; end(): void }; stdout: ReadableStream<Uint8Array>; kill(sig?: number): void };
    }
  | undefined;

/** Under Bun, Bun.spawn: its pipes cost far less per message than node:child_process streams. */
function spawnBun(cmd: string[], env: Record<string, string | undefined>, on: ChildEvents): Child {
  let proc: ReturnType<NonNullable<typeof Bun>["spawn"]>;
  try {
    proc = Bun!.spawn({
      cmd,
      env,
      stdin: "pipe",
      stdout: "pipe",
      stderr: "inherit",
      onExit: (_p, code, signal) => on.end(signal ? `was ended by signal ${signal}` : `exited with code ${code}`),
    });
  } catch (err) {
    queueMicrotask(() => on.end("", err as Error));
    return { write: () => {}, endInput: () => {}, kill: () => {} };
  }
  void (async () => {
    try {
      for await (const chunk of proc.stdout) on.data(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    } catch {
      // the stub is gone; onExit reports it
    }
  })();
  const guard = (f: () => void) => {
    try {
      f();
    } catch {
      // a dead stub's pipe: its exit is reported instead
    }
  };
  return {
    write: (frame) =>
      guard(() => {
        proc.stdin.write(frame);
        proc.stdin.flush();
      }),
    endInput: () => guard(() => proc.stdin.end()),
    kill: () => proc.kill(9),
  };
}

function spawnNode(cmd: string[], env: Record<string, string | undefined>, on: ChildEvents): Child {
  const child = spawn(cmd[0]!, cmd.slice(1), { stdio: ["pipe", "pipe", "inherit"], env });
  child.stdout!.on("data", (chunk: Buffer) => on.data(chunk));
  child.stdin!.on("error", () => {}); // a dead stub's pipe: its exit is reported instead
  child.on("error", (err) => on.end("", err));
  child.on("exit", (code, signal) => on.end(signal ? `was ended by signal ${signal}` : `exited with code ${code}`));
  return { write: (frame) => child.stdin!.write(frame), endInput: () => child.stdin!.end(), kill: () => child.kill("SIGKILL") };
}

export class StubProcess {
  readonly #child: Child;
  readonly #opts: StubOptions;
  #buffer: Buffer = Buffer.alloc(0);
  #exited: string | undefined;
  #killReason: string | undefined;
  #waiting = 0;
  #pingOutstanding = false;
  #pings = 0;
  #heard = false;
  readonly #timer: ReturnType<typeof setInterval>;

  constructor(opts: StubOptions) {
    this.#opts = opts;
    const files = stubFiles();
    const m = opts.memory;
    const cmd = [opts.interpreter.command, files.stub, files.dir, opts.modelPath, m.toStub, m.fromStub, String(m.size), ...(opts.socket ? [opts.socket] : [])];
    const events: ChildEvents = {
      data: (chunk) => this.#onData(chunk),
      end: (how, error) => this.#ended(error ? `could not be started with '${opts.interpreter.command}': ${error.message}` : (this.#killReason ?? how)),
    };
    const env = { ...process.env, ...opts.interpreter.env };
    this.#child = typeof Bun !== "undefined" && typeof Bun.spawn === "function" ? spawnBun(cmd, env, events) : spawnNode(cmd, env, events);
    this.#timer = setInterval(() => this.#tick(), opts.timeoutMs);
    (this.#timer as { unref?: () => void }).unref?.();
  }

  get alive(): boolean {
    return this.#exited === undefined;
  }

  send(m: Message): void {
    if (this.#exited !== undefined) return;
    const json = JSON.stringify(m);
    const frame = Buffer.allocUnsafe(4 + Buffer.byteLength(json));
    frame.writeUInt32LE(frame.byteLength - 4, 0);
    frame.write(json, 4);
    this.#child.write(frame);
  }

  /** Counts a wait on the stub (pings run while any is open); the returned function ends it. */
  wait(): () => void {
    this.#waiting++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.#waiting--;
    };
  }

  /** Ends the stub with SIGKILL; `reason` becomes its exit reason. */
  kill(reason: string): void {
    if (this.#exited !== undefined) return;
    this.#killReason ??= reason;
    this.#child.kill();
  }

  /** Closes the stub's stdin (it finishes its loop and exits). */
  endInput(): void {
    this.#child.endInput();
  }

  #tick(): void {
    if ((this.#waiting === 0 && !this.#opts.busy?.()) || this.#exited !== undefined) {
      this.#pingOutstanding = false;
      return;
    }
    if (this.#pingOutstanding && !this.#heard) {
      this.kill(`did not answer a health check within ${this.#opts.timeoutMs / 1000} s and was killed`);
      return;
    }
    this.#heard = false;
    this.#pingOutstanding = true;
    this.send({ t: "ping", n: ++this.#pings });
  }

  #onData(chunk: Buffer): void {
    this.#heard = true;
    this.#buffer = this.#buffer.byteLength === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
    while (this.#buffer.byteLength >= 4) {
      const n = this.#buffer.readUInt32LE(0);
      if (n > MAX_MESSAGE) {
        this.kill(`sent a control message of ${n} bytes (the limit is ${MAX_MESSAGE}) and was killed`);
        return;
      }
      if (this.#buffer.byteLength < 4 + n) break;
      const body = this.#buffer.subarray(4, 4 + n);
      this.#buffer = this.#buffer.subarray(4 + n);
      let m: Message;
      try {
        m = JSON.parse(body.toString("utf8")) as Message;
      } catch {
        this.kill("sent a malformed control message and was killed");
        return;
      }
      if (m.t === "pong") this.#pingOutstanding = false;
      else this.#opts.onMessage(m);
    }
  }

  #ended(reason: string): void {
    if (this.#exited !== undefined) return;
    this.#exited = reason;
    clearInterval(this.#timer);
    this.#opts.onExit(reason);
  }
}

/** The error a stub's failure gives the requests it had (Triton: "Stub process ... is not healthy"). */
export function stubFailed(label: string, reason: string) {
  return internal(`Failed to process the request(s) for ${label}: the Python stub process ${reason}; the instance is being restarted`);
}
