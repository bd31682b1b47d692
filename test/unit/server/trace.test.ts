// P-22: TraceManager sampling, counts, per-model overrides and file rotation.
import { describe, it, expect, afterAll } from "vitest";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TraceManager, FLUSH_TRACES } from "../../../src/server/trace.ts";
import { chooseSample } from "../../../src/server/trace-sampler.ts";

const dir = mkdtempSync(join(tmpdir(), "nereid-trace-unit-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const times = { requestStart: 1, queueStart: 2, computeStart: 3, computeInputEnd: 4, computeOutputStart: 5, computeEnd: 6, requestEnd: 7 };

describe("TraceManager", () => {
  it("is off by default", () => {
    const t = new TraceManager();
    expect(t.settings()).toEqual({ trace_file: "", trace_level: ["OFF"], trace_rate: "1000", trace_count: "-1", log_frequency: "0", trace_mode: "triton" });
    expect(t.sample("m")).toBe(false);
  });

  it("stops after trace_count traces and counts down", () => {
    const t = new TraceManager({ trace_file: join(dir, "c.json"), trace_level: ["TIMESTAMPS"], trace_rate: "1", trace_count: "2" });
    expect([t.sample("m"), t.sample("m"), t.sample("m")]).toEqual([true, true, false]);
    expect(t.settings().trace_count).toBe("0");
  });

  it("counts down trace_count as Triton's TraceSetting::SampleTrace does: the count goes on, an exhausted setting counts nothing", () => {
    const t = new TraceManager({ trace_file: join(dir, "d.json"), trace_level: ["TIMESTAMPS"], trace_rate: "2", trace_count: "2" });
    expect(Array.from({ length: 6 }, () => t.sample("m"))).toEqual([false, true, false, true, false, false]);
    expect(t.settings().trace_count).toBe("0");
    // New settings count from zero again; a global trace_count never updated goes back to the one given at start.
    t.update({ trace_rate: "1" });
    expect([t.sample("m"), t.sample("m"), t.sample("m")]).toEqual([true, true, false]);
    t.update({ trace_rate: "3", trace_count: "1" });
    expect(Array.from({ length: 6 }, () => t.sample("m"))).toEqual([false, false, true, false, false, false]);
    // One that was set keeps what is left of it (none).
    t.update({ trace_rate: "1" });
    expect([t.sample("m"), t.sample("m")]).toEqual([false, false]);
    expect(t.settings().trace_count).toBe("0");
  });

  it("a model's settings that leave trace_count unset take what the global one has left when they are made", () => {
    const t = new TraceManager({ trace_file: join(dir, "i.json"), trace_level: ["TIMESTAMPS"], trace_rate: "1", trace_count: "10" });
    expect([t.sample("b"), t.sample("b"), t.sample("b")]).toEqual([true, true, true]);
    t.update({ trace_rate: "1" }, "a");
    expect(t.settings("a").trace_count).toBe("7");
    expect([t.sample("b"), t.sample("b")]).toEqual([true, true]);
    expect([t.settings("a").trace_count, t.settings("b").trace_count]).toEqual(["7", "5"]);
    expect(t.sample("a")).toBe(true);
    expect([t.settings("a").trace_count, t.settings().trace_count]).toEqual(["6", "5"]);
  });

  it("a model left with no settings of its own follows the global ones again, their counter included", () => {
    const t = new TraceManager({ trace_file: join(dir, "e.json"), trace_level: ["TIMESTAMPS"], trace_rate: "1", trace_count: "2" });
    t.update({}, "c");
    expect([t.sample("c"), t.sample("c"), t.sample("d"), t.sample("d")]).toEqual([true, true, false, false]);
    t.update({ trace_count: "2" });
    t.update({ trace_rate: "2" }, "e");
    t.update({ trace_rate: null }, "e");
    expect([t.sample("e"), t.sample("d"), t.sample("e")]).toEqual([true, true, false]);
  });

  it("refuses values past Triton's types: a uint32 rate and log frequency, an int32 count", () => {
    const t = new TraceManager({ trace_file: join(dir, "r.json"), trace_level: ["TIMESTAMPS"] });
    expect(() => t.update({ trace_count: "2147483648" })).toThrow("invalid 'trace_count' value '2147483648': expected an integer from -1 to 2147483647");
    expect(() => t.update({ trace_rate: "4294967296" })).toThrow("expected an integer from 1 to 4294967295");
    expect(() => t.update({ log_frequency: "4294967296" })).toThrow("expected an integer from 0 to 4294967295");
    expect(t.update({ trace_rate: "4294967295" }).trace_rate).toBe("4294967295");
    // The count toward such a rate goes on past 2^31 (unsigned in its Int32).
    const worker = new Int32Array(t.sampling("m")!.counter);
    Atomics.store(worker, 0, -3); // 4294967293 counted
    expect([t.sample("m"), t.sample("m"), t.sample("m")]).toEqual([false, true, false]);
  });

  it("a frontend worker counts in the same shared counter, and what it chooses takes a trace", () => {
    const t = new TraceManager({ trace_file: join(dir, "w.json"), trace_level: ["TIMESTAMPS"], trace_rate: "2", trace_count: "3" });
    const worker = t.sampling("m")!;
    expect(worker.rate).toBe(2);
    // Another thread's view of the same memory.
    const c = new Int32Array(worker.counter);
    expect([chooseSample(c, 2), t.sample("m"), chooseSample(c, 2), t.sample("m"), t.sample("m"), chooseSample(c, 2)]).toEqual([
      false,
      true,
      false,
      true,
      false,
      true,
    ]);
    expect(t.settings().trace_count).toBe("0");
    expect(t.settings("m").trace_count).toBe("0");
    expect([chooseSample(c, 2), t.sample("m"), chooseSample(c, 2)]).toEqual([false, false, false]);
    // New settings, a new counter: a worker still on the old one counts there, not in the new one.
    t.update({ trace_count: "-1" });
    expect(t.sampling("m")!.counter).not.toBe(worker.counter);
    expect([chooseSample(c, 2), chooseSample(c, 2)]).toEqual([false, false]);
    expect([t.sample("m"), t.sample("m"), t.sample("m"), t.sample("m")]).toEqual([false, true, false, true]);
    expect(t.settings().trace_count).toBe("-1");
    // Not traced: nothing for a worker to count.
    t.update({ trace_level: ["OFF"] }, "off");
    expect(t.sampling("off")).toBeUndefined();
  });

  it("a global update restarts the models' own settings: an unset trace_count is taken from the global one again, a set one keeps what is left", () => {
    const t = new TraceManager({ trace_file: join(dir, "g.json"), trace_level: ["TIMESTAMPS"], trace_rate: "3", trace_count: "5" });
    t.update({ trace_rate: "2" }, "m");
    t.update({ trace_rate: "1", trace_count: "3" }, "k");
    expect(t.settings("m").trace_count).toBe("5");
    expect([t.sample("m"), t.sample("m"), t.sample("m"), t.sample("k")]).toEqual([false, true, false, true]);
    expect([t.settings("m").trace_count, t.settings("k").trace_count, t.settings().trace_count]).toEqual(["4", "2", "5"]);
    t.update({ trace_count: "2" });
    expect([t.settings("m").trace_count, t.settings("k").trace_count, t.settings().trace_count]).toEqual(["2", "2", "2"]);
    // m counts from zero again (one request was counted before).
    expect([t.sample("m"), t.sample("m")]).toEqual([false, true]);
  });

  it("a model override has its own rate; null clears it", () => {
    const t = new TraceManager({ trace_file: join(dir, "o.json"), trace_level: ["TIMESTAMPS"], trace_rate: "3" });
    t.update({ trace_rate: "1" }, "fast");
    expect([t.sample("fast"), t.sample("fast")]).toEqual([true, true]);
    // Triton's `++sample % rate == 0`: the 3rd, the 6th, ...
    expect([t.sample("slow"), t.sample("slow"), t.sample("slow"), t.sample("slow")]).toEqual([false, false, true, false]);
    expect(t.update({ trace_rate: null }, "fast").trace_rate).toBe("3");
    expect(() => t.update({ trace_rate: null })).toThrow("can only be cleared for a model");
    expect(() => t.update({ bogus: "1" })).toThrow("unknown trace setting 'bogus'");
  });

  it("log_frequency N writes <file>.<i> every N traces; the rest at flush", () => {
    const file = join(dir, "r.json");
    const t = new TraceManager({ trace_file: file, trace_level: ["TIMESTAMPS"], trace_rate: "1", log_frequency: "2" });
    for (let i = 0; i < 5; i++) t.record("m", "1", `q${i}`, times);
    t.flush();
    expect(
      readdirSync(dir)
        .filter((f) => f.startsWith("r.json"))
        .sort(),
    ).toEqual(["r.json.0", "r.json.1", "r.json.2"]);
    const last = JSON.parse(readFileSync(`${file}.2`, "utf8"));
    expect(last[0]).toEqual({ id: 5, model_name: "m", model_version: 1, request_id: "q4" });
    expect(last[1].timestamps[6]).toEqual({ name: "REQUEST_END", ns: 7 });
  });
});

describe("TraceManager: the trace file is the operator's (#14)", () => {
  it("refuses a trace_file update, globally and for a model, and changes nothing", () => {
    const file = join(dir, "fixed.json");
    const t = new TraceManager({ trace_file: file, trace_level: ["TIMESTAMPS"], trace_rate: "1" });
    for (const model of [undefined, "m"]) {
      expect(() => t.update({ trace_file: "/tmp/elsewhere.json", trace_rate: "5" }, model)).toThrow(
        "trace file location can not be updated through network protocol",
      );
      expect(() => t.update({ trace_file: null }, model)).toThrow("trace file location can not be updated through network protocol");
    }
    expect(t.settings("m")).toMatchObject({ trace_file: file, trace_rate: "1" });
  });

  it("a file that cannot be written drops its traces without throwing", () => {
    const t = new TraceManager({ trace_file: join(dir, "no-such-dir", "t.json"), trace_level: ["TIMESTAMPS"], trace_rate: "1", log_frequency: "1" });
    expect(() => t.record("m", "1", undefined, times)).not.toThrow();
    expect(() => t.flush()).not.toThrow();
  });

  it(`log_frequency 0 appends every ${FLUSH_TRACES} traces to one file and closes its JSON array at flush`, () => {
    const file = join(dir, "big.json");
    const t = new TraceManager({ trace_file: file, trace_level: ["TIMESTAMPS"], trace_rate: "1" });
    const n = FLUSH_TRACES * 2 + 3;
    for (let i = 0; i < n; i++) t.record("m", "1", `q${i}`, times);
    // Two batches are on disk already (an open array); the last 3 wait in memory.
    expect(readFileSync(file, "utf8").startsWith("[{")).toBe(true);
    expect(readFileSync(file, "utf8").endsWith("]")).toBe(false);
    t.flush();
    const entries = JSON.parse(readFileSync(file, "utf8")) as { id: number; request_id?: string }[];
    expect(entries.length).toBe(2 * n);
    expect(entries.filter((e) => e.request_id).map((e) => e.request_id)).toEqual(Array.from({ length: n }, (_, i) => `q${i}`));
    expect(readdirSync(dir).filter((f) => f.startsWith("big.json"))).toEqual(["big.json"]);
  });
});
