/**
 * @module Triton's trace extension in its `triton` mode: sampled requests get their
 * timestamps (REQUEST_START, QUEUE_START, COMPUTE_START, COMPUTE_INPUT_END,
 * COMPUTE_OUTPUT_START, COMPUTE_END, REQUEST_END, in monotonic ns) written to
 * `trace_file` as Triton's JSON array (a `{id, model_name, model_version}` entry, then
 * a `{id, timestamps}` entry per trace), which Triton's trace_summary.py reads. Settings
 * are global with per-model overrides, as strings on the wire (trace_level an array):
 * trace_level OFF|TIMESTAMPS (TENSORS is refused), trace_rate (every Nth request, as Triton's
 * `++sample % rate == 0`), trace_count (-1 unlimited; counting down does not restart the rate),
 * log_frequency (0: one file, completed at shutdown; N: a new file `<trace_file>.<i>` every N
 * traces). The trace file is the operator's (`--trace-config file=`): the network can change
 * every other setting but never the path (Triton's rule). With log_frequency 0 the entries
 * are appended to the file every FLUSH_TRACES traces so memory stays bounded; a file that
 * cannot be written costs those traces and one logged error, never a request.
 */
import { appendFileSync, writeFileSync } from "node:fs";
import { invalidArg, ServerError } from "../core/errors.ts";
import { getLogger } from "../core/logger.ts";
import { chooseSample, newCounter, tracesLeft, type TraceSampling } from "./trace-sampler.ts";

const log = getLogger("src/server/trace.ts");

/** Traces held in memory per file before they are appended to it (log_frequency 0). */
export const FLUSH_TRACES = 1000;

export interface TraceSettings {
  trace_file: string;
  trace_level: string[];
  trace_rate: string;
  trace_count: string;
  log_frequency: string;
  trace_mode: string;
}

export interface TraceTimes {
  requestStart: number;
  queueStart: number;
  computeStart: number;
  computeInputEnd: number;
  computeOutputStart: number;
  computeEnd: number;
  requestEnd: number;
}

const KEYS = ["trace_level", "trace_rate", "trace_count", "log_frequency"] as const;
type Key = (typeof KEYS)[number];

export const DEFAULT_TRACE_SETTINGS: TraceSettings = {
  trace_file: "",
  trace_level: ["OFF"],
  trace_rate: "1000",
  trace_count: "-1",
  log_frequency: "0",
  trace_mode: "triton",
};

export class TraceManager {
  readonly #global: TraceSettings;
  readonly #models = new Map<string, Partial<TraceSettings>>();
  /**
   * The sampling counter of each owner of settings ("" for the global ones, or a model with
   * settings of its own), made with the settings (#renew); a frontend worker counts the
   * requests it runs for a traced model in the same counter (trace-sampler.ts). Its count
   * of traces left is the live trace_count.
   */
  readonly #counters = new Map<string, Int32Array>();
  /** The trace_count given at start: a global update that does not set trace_count goes back to it, until one does (Triton's). */
  readonly #startCount: string;
  #globalCountSet = false;
  #nextId = 1;
  /** Trace entries waiting to be written, by trace file. */
  readonly #pending = new Map<string, object[]>();
  readonly #fileIndex = new Map<string, number>();
  /** Files of log_frequency 0 whose JSON array has been opened (appended to, closed at flush). */
  readonly #opened = new Set<string>();
  /** Files whose last write failed (logged once until a write succeeds again). */
  readonly #failing = new Set<string>();

  constructor(initial: Partial<TraceSettings> = {}) {
    this.#global = { ...DEFAULT_TRACE_SETTINGS, ...initial };
    check(this.#global);
    this.#startCount = this.#global.trace_count;
    this.#renew("");
  }

  /** The settings in force for `model` (or the global ones), trace_count as it has counted down. */
  settings(model?: string): TraceSettings {
    const s = { ...this.#global, ...(model ? this.#models.get(model) : {}) };
    s.trace_count = String(tracesLeft(this.#counter(model)));
    return s;
  }

  /**
   * Applies an update from a client; a null value clears a per-model override, and a model
   * left with none follows the global settings again. The trace file is not a client's to
   * choose. Returns the result. As in Triton's TraceManager, the settings updated count
   * from zero again, and so do the models' own settings after a global update, each taking
   * what it does not set from the global ones as they are then; a trace_count that was ever
   * set keeps what is left of it, a global one never set goes back to the one given at start.
   */
  update(update: Record<string, unknown>, model?: string): TraceSettings {
    if (Object.hasOwn(update, "trace_file")) throw new ServerError("UNSUPPORTED", "trace file location can not be updated through network protocol");
    this.#keepCounts();
    const next: Partial<TraceSettings> = model ? { ...this.#models.get(model) } : { ...this.#global };
    for (const [key, value] of Object.entries(update)) {
      if (!(KEYS as readonly string[]).includes(key)) throw invalidArg(`unknown trace setting '${key}'`);
      const k = key as Key;
      if (value === null) {
        if (!model) throw invalidArg(`trace setting '${key}' can only be cleared for a model`);
        delete next[k];
        continue;
      }
      if (k === "trace_level") {
        const levels = Array.isArray(value) ? value : [value];
        if (!levels.every((l) => typeof l === "string")) throw invalidArg("'trace_level' must be an array of strings");
        next.trace_level = levels as string[];
      } else {
        if (typeof value !== "string") throw invalidArg(`'${key}' must be a string`);
        next[k] = value;
      }
    }
    check({ ...this.#global, ...next });
    if (model) {
      this.#counters.delete(model);
      if (Object.keys(next).length === 0) this.#models.delete(model);
      else {
        this.#models.set(model, next);
        this.#renew(model);
      }
    } else {
      if (Object.hasOwn(update, "trace_count")) this.#globalCountSet = true;
      else if (!this.#globalCountSet) next.trace_count = this.#startCount;
      Object.assign(this.#global, next);
      this.#renew("");
      for (const owner of this.#models.keys()) this.#renew(owner);
    }
    for (const listener of this.#listeners) listener();
    return this.settings(model);
  }

  /** Writes what is left of each trace_count that was set into the settings that set it (before new counters replace them). */
  #keepCounts(): void {
    for (const [owner, counter] of this.#counters) {
      const target = owner ? this.#models.get(owner) : this.#global;
      if (target && (owner ? target.trace_count !== undefined : this.#globalCountSet)) target.trace_count = String(tracesLeft(counter));
    }
  }

  /** A new counter for `owner`'s settings: nothing counted, its trace_count (a model's unset one: the global one's left now). */
  #renew(owner: string): void {
    const own = owner ? this.#models.get(owner)?.trace_count : this.#global.trace_count;
    const count = own ?? String(tracesLeft(this.#counters.get("")!));
    this.#counters.set(owner, newCounter(Number(count)));
  }

  readonly #listeners = new Set<() => void>();

  /**
   * Calls `listener` after every settings update (what other threads serve depends on
   * whether a model may be traced); returns what stops it.
   */
  onUpdate(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Whether requests of `model` may be traced at all under the settings now (counts nothing). */
  mayTrace(model: string): boolean {
    const override = this.#models.get(model);
    const level = override?.trace_level ?? this.#global.trace_level;
    return level.includes("TIMESTAMPS") && !!(override?.trace_file ?? this.#global.trace_file);
  }

  /**
   * Where a frontend worker counts `model`'s requests and which of them it leaves to the
   * main thread to trace (undefined: not traced now).
   */
  sampling(model: string): TraceSampling | undefined {
    if (!this.mayTrace(model)) return undefined;
    return { counter: this.#counter(model).buffer as SharedArrayBuffer, rate: Number(this.settings(model).trace_rate) };
  }

  /** Whether the next request of `model` is traced: counts it for the sampling rate (Triton's TraceSetting::SampleTrace). */
  sample(model: string): boolean {
    if (!this.mayTrace(model)) return false;
    const rate = Number(this.#models.get(model)?.trace_rate ?? this.#global.trace_rate);
    return chooseSample(this.#counter(model), rate);
  }

  /** Whose counter `model`'s requests go to: the model's, once it has settings of its own, else the global one. */
  #owner(model: string | undefined): string {
    return model && this.#models.has(model) ? model : "";
  }

  /** The counter `model`'s requests count in (every owner has one: #renew). */
  #counter(model: string | undefined): Int32Array {
    return this.#counters.get(this.#owner(model))!;
  }

  record(model: string, version: string, requestId: string | undefined, t: TraceTimes): void {
    const s = this.settings(model);
    const id = this.#nextId++;
    const head: Record<string, unknown> = { id, model_name: model, model_version: Number(version) };
    if (requestId) head.request_id = requestId;
    const ts = (name: string, ns: number) => ({ name, ns: Math.round(ns) });
    const entries = this.#pending.get(s.trace_file) ?? [];
    entries.push(head, {
      id,
      timestamps: [
        ts("REQUEST_START", t.requestStart),
        ts("QUEUE_START", t.queueStart),
        ts("COMPUTE_START", t.computeStart),
        ts("COMPUTE_INPUT_END", t.computeInputEnd),
        ts("COMPUTE_OUTPUT_START", t.computeOutputStart),
        ts("COMPUTE_END", t.computeEnd),
        ts("REQUEST_END", t.requestEnd),
      ],
    });
    this.#pending.set(s.trace_file, entries);
    const every = Number(s.log_frequency);
    if (every > 0 && entries.length / 2 >= every) this.#write(s.trace_file, true);
    else if (every === 0 && entries.length / 2 >= FLUSH_TRACES) this.#append(s.trace_file);
  }

  /** Writes what is pending and closes the files' JSON arrays (at shutdown). */
  flush(): void {
    for (const file of new Set([...this.#pending.keys(), ...this.#opened])) {
      if (this.#opened.has(file)) {
        this.#append(file);
        this.#guard(file, () => appendFileSync(file, "]"));
        this.#opened.delete(file);
      } else this.#write(file, this.#fileIndex.has(file));
    }
  }

  /** Writes the pending entries of `file` as a whole JSON array (to `<file>.<i>` when rotating). */
  #write(file: string, rotate: boolean): void {
    const entries = this.#take(file);
    if (!entries) return;
    let path = file;
    if (rotate) {
      const i = this.#fileIndex.get(file) ?? 0;
      this.#fileIndex.set(file, i + 1);
      path = `${file}.${i}`;
    }
    this.#guard(file, () => writeFileSync(path, JSON.stringify(entries)));
  }

  /** Appends the pending entries of `file` to its open JSON array (opening it on the first call). */
  #append(file: string): void {
    const entries = this.#take(file);
    if (!entries) return;
    const body = JSON.stringify(entries).slice(1, -1);
    if (this.#opened.has(file)) this.#guard(file, () => appendFileSync(file, `,${body}`));
    else if (this.#guard(file, () => writeFileSync(file, `[${body}`))) this.#opened.add(file);
  }

  #take(file: string): object[] | undefined {
    const entries = this.#pending.get(file);
    this.#pending.delete(file);
    return entries && entries.length > 0 ? entries : undefined;
  }

  /** Runs a write; a failure drops those traces and is logged once per file until a write succeeds. */
  #guard(file: string, write: () => void): boolean {
    try {
      write();
      this.#failing.delete(file);
      return true;
    } catch (err) {
      if (!this.#failing.has(file)) log.error(`cannot write trace file '${file}' (its traces are dropped): ${(err as Error).message}`);
      this.#failing.add(file);
      return false;
    }
  }
}

function check(s: TraceSettings): void {
  for (const l of s.trace_level) {
    if (l === "TENSORS") throw new ServerError("UNSUPPORTED", "trace level TENSORS is not supported by this server (OFF and TIMESTAMPS are)");
    if (l !== "OFF" && l !== "TIMESTAMPS") throw invalidArg(`invalid trace level '${l}': expected OFF or TIMESTAMPS`);
  }
  // The bounds of Triton's types: a uint32 rate, an int32 count, a uint32 log frequency.
  const int = (key: Key, min: number, max: number) => {
    const n = Number(s[key]);
    if (!/^-?\d+$/.test(String(s[key])) || n < min || n > max)
      throw invalidArg(`invalid '${key}' value '${s[key]}': expected an integer from ${min} to ${max}`);
  };
  int("trace_rate", 1, 0xffffffff);
  int("trace_count", -1, 0x7fffffff);
  int("log_frequency", 0, 0xffffffff);
}
