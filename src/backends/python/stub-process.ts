/**
 * @module One stub process (`python3 stub.py ...`) and its control channel: the stub's
 * stdin carries the server's messages and its stdout the stub's (the stub moves the
 * model's own prints to stderr first), each a 4-byte little-endian length and a JSON
 * object. Only control data crosses here; tensor bytes go through StubMemory.
 *
 * Health: while the server waits on the stub (initialize, execute, finalize), it sends
 * a ping every `timeoutMs`; a stub that has sent nothing since the previous ping (a
 * stopped or wedged process; a model busy in Python still answers, from the stub's
 * reader thread) is killed. Its exit is reported once through `onExit`.
 */
import { spawn, type ChildProcess } from "node:child_process";
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
  onMessage(m: Message): void;
  /** The stub ended (or was killed); `reason` says how. Called once. */
  onExit(reason: string): void;
}

export class StubProcess {
  readonly #child: ChildProcess;
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
    this.#child = spawn(opts.interpreter.command, [files.stub, files.dir, opts.modelPath, m.toStub, m.fromStub, String(m.size)], {
      stdio: ["pipe", "pipe", "inherit"],
      env: { ...process.env, ...opts.interpreter.env },
    });
    this.#child.stdout!.on("data", (chunk: Buffer) => this.#onData(chunk));
    this.#child.stdin!.on("error", () => {}); // a dead stub's pipe: its exit is reported instead
    this.#child.on("error", (err) => this.#ended(`could not be started with '${opts.interpreter.command}': ${err.message}`));
    this.#child.on("exit", (code, signal) => this.#ended(this.#killReason ?? (signal ? `was ended by signal ${signal}` : `exited with code ${code}`)));
    this.#timer = setInterval(() => this.#tick(), opts.timeoutMs);
    (this.#timer as { unref?: () => void }).unref?.();
  }

  get alive(): boolean {
    return this.#exited === undefined;
  }

  send(m: Message): void {
    if (this.#exited !== undefined) return;
    const body = Buffer.from(JSON.stringify(m));
    const head = Buffer.alloc(4);
    head.writeUInt32LE(body.byteLength);
    this.#child.stdin!.write(Buffer.concat([head, body]));
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
    this.#child.kill("SIGKILL");
  }

  /** Closes the stub's stdin (it finishes its loop and exits). */
  endInput(): void {
    this.#child.stdin!.end();
  }

  #tick(): void {
    if (this.#waiting === 0 || this.#exited !== undefined) {
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
