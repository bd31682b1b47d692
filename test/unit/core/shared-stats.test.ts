/**
 * A version's statistics counters in shared memory (#30, core/shared-stats.ts): what the
 * frontend workers count in their slots, folded on the main thread, equals what
 * ModelStats' own record methods count for the same requests, durations, batch sizes,
 * failure reasons, response-cache hits and misses and the metrics' whole microseconds included; a batch size the table
 * has no room for is refused whole; and, across real threads, a fold never takes half of
 * an update.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { execFile } from "node:child_process";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { FAILURE_REASONS, ModelStats } from "../../../src/core/stats.ts";
import { MAX_BATCH_ROWS, SharedStatsReader, SharedStatsWriter, sharedStatsBuffer, sharedStatsSlots } from "../../../src/core/shared-stats.ts";

const ROOT = resolve(import.meta.dirname, "../../..");

/** A BatchStat as the statistics extension shows it. */
const batchStat = (size: number, count: number, [input, infer, output]: [number, number, number]) => ({
  batch_size: size,
  compute_input: { count, ns: input },
  compute_infer: { count, ns: infer },
  compute_output: { count, ns: output },
});

/** A small deterministic generator, so that a failure can be replayed. */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
}

describe("shared statistics counters", () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["Date"] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("folded from three slots, equal ModelStats' own counts of the same records", () => {
    const maxBatch = 8;
    const buffer = sharedStatsBuffer(3, maxBatch);
    expect(sharedStatsSlots(buffer)).toBe(3);
    const writers = [0, 1, 2].map((slot) => new SharedStatsWriter(buffer, slot));
    const reader = new SharedStatsReader(buffer);
    const folded = new ModelStats();
    const direct = new ModelStats();
    // The main thread counts some requests itself, as it does those it answers.
    vi.setSystemTime(1_699_999_999_000);
    direct.recordSuccess(2_500.4, 10, 20, 30, 40);
    folded.recordSuccess(2_500.4, 10, 20, 30, 40);
    const next = random(7);
    const ns = () => Math.floor(next() * 5_000_000) + (next() < 0.3 ? 0.5 : 0);
    for (let i = 0; i < 2_000; i++) {
      vi.setSystemTime(1_700_000_000_000 + i);
      const w = writers[Math.floor(next() * 3)]!;
      const kind = next();
      if (kind < 0.5) {
        const size = 1 + Math.floor(next() * maxBatch);
        const [a, b, c] = [ns(), ns(), ns()];
        expect(w.recordExecution(size, a, b, c)).toBe(true);
        direct.recordExecution(size, a, b, c);
      } else if (kind < 0.7) {
        const [r, q, a, b, c] = [ns(), ns(), ns(), ns(), ns()];
        w.recordSuccess(r, q, a, b, c);
        direct.recordSuccess(r, q, a, b, c);
      } else if (kind < 0.78) {
        // The response cache: a hit (no execution), and a miss's lookup and insert.
        const [r, q, l] = [ns(), ns(), ns()];
        w.recordCacheHit(r, q, l);
        direct.recordCacheHit(r, q, l);
      } else if (kind < 0.85) {
        const m = ns();
        w.recordCacheMiss(m);
        direct.recordCacheMiss(m);
      } else {
        const r = ns();
        const reason = FAILURE_REASONS[Math.floor(next() * FAILURE_REASONS.length)]!;
        w.recordFailure(r, reason);
        direct.recordFailure(r, reason);
      }
      // Read now and then, as statistics reads come: each fold adds only what is new.
      if (next() < 0.05) reader.fold(folded);
    }
    reader.fold(folded);
    reader.fold(folded);
    expect(folded.toJSON("m", "1")).toEqual(direct.toJSON("m", "1"));
    expect(folded.cacheHit.count).toBeGreaterThan(100);
    expect(folded.cacheMiss.count).toBeGreaterThan(100);
    expect(folded.metricUs).toEqual(direct.metricUs);
    expect(folded.failures).toEqual(direct.failures);
    expect(folded.lastInference).toBeGreaterThan(1_700_000_001_900);
    // Nothing new: a fold changes nothing.
    const before = JSON.stringify(folded.toJSON("m", "1"));
    reader.fold(folded);
    expect(JSON.stringify(folded.toJSON("m", "1"))).toBe(before);
  });

  it("a version without batching counts its executions at batch size 1", () => {
    const buffer = sharedStatsBuffer(1, 0);
    const w = new SharedStatsWriter(buffer, 0);
    expect(w.recordExecution(1, 100, 200, 300)).toBe(true);
    expect(w.recordExecution(1, 1, 2, 3)).toBe(true);
    const s = new ModelStats();
    new SharedStatsReader(buffer).fold(s);
    expect(s.toJSON("m", "1").batch_stats).toEqual([batchStat(1, 2, [101, 202, 303])]);
    expect([s.inferenceCount, s.executionCount]).toEqual([2, 2]);
  });

  it(`holds ${MAX_BATCH_ROWS} distinct batch sizes per slot by default and refuses the next whole`, () => {
    const maxBatch = 1024;
    const buffer = sharedStatsBuffer(2, maxBatch);
    const w = new SharedStatsWriter(buffer, 1);
    const sizes = Array.from({ length: MAX_BATCH_ROWS }, (_, i) => 1 + i * 37);
    for (const size of sizes) expect(w.recordExecution(size, 1, 1, 1)).toBe(true);
    expect(w.recordExecution(1000, 1, 1, 1)).toBe(false);
    // Sizes it holds still count.
    expect(w.recordExecution(sizes[3]!, 1, 1, 1)).toBe(true);
    const s = new ModelStats();
    new SharedStatsReader(buffer).fold(s);
    expect(s.executionCount).toBe(MAX_BATCH_ROWS + 1);
    expect(s.inferenceCount).toBe(sizes.reduce((a, b) => a + b, 0) + sizes[3]!);
    expect([...s.batch.keys()].sort((a, b) => a - b)).toEqual(sizes);
    expect(s.batch.get(sizes[3]!)!.compute_infer.count).toBe(2);
    // The scheduling thread's counters hold more rows (its batcher forms any size).
    const wide = sharedStatsBuffer(1, 300, 256);
    const ww = new SharedStatsWriter(wide, 0);
    for (let size = 1; size <= 256; size++) expect(ww.recordExecution(size, 0, 0, 0)).toBe(true);
    expect(ww.recordExecution(257, 0, 0, 0)).toBe(false);
  });

  it("reads a writer that stopped in the middle of an update once the wait is over, and adds the rest if it goes on", () => {
    const buffer = sharedStatsBuffer(1, 0);
    const w = new SharedStatsWriter(buffer, 0);
    w.recordSuccess(2_000, 0, 0, 0, 0);
    // Slot 0's sequence number (the first Int32 after the 64-byte head) left odd, as a writer stopped mid-update leaves it.
    const sequences = new Int32Array(buffer);
    Atomics.add(sequences, 16, 1);
    const s = new ModelStats();
    const reader = new SharedStatsReader(buffer);
    reader.fold(s);
    expect(s.success).toEqual({ count: 1, ns: 2_000 });
    // It goes on after all: its update ends, another follows; nothing is counted twice.
    Atomics.add(sequences, 16, 1);
    w.recordSuccess(3_000, 0, 0, 0, 0);
    reader.fold(s);
    expect(s.success).toEqual({ count: 2, ns: 5_000 });
  });

  // A batch slot's layout, for the two tests below that write an update in part as a stalled writer leaves it:
  // slot 0's sequence number is Int32 16 (after the 64-byte head); its counters start at Float64 9, its
  // inference and execution counts at 21 and 22, and its batch rows ([size, executions, ns × 3]) at 39 + 5 × row (after 30 counters),
  // where a size's row (when free) is size modulo the rows.
  it("adds the rest of an execution whose update was read in part once its writer finishes it", () => {
    const buffer = sharedStatsBuffer(1, 4);
    const w = new SharedStatsWriter(buffer, 0);
    expect(w.recordExecution(1, 10, 20, 30)).toBe(true);
    const [ints, floats] = [new Int32Array(buffer), new Float64Array(buffer)];
    const row = 39 + 5 * 1;
    // A second execution at size 1, its count written and its durations not yet.
    Atomics.add(ints, 16, 1);
    floats[row + 1]! += 1;
    const s = new ModelStats();
    const reader = new SharedStatsReader(buffer);
    reader.fold(s);
    expect(s.batch.get(1)).toEqual(batchStat(1, 2, [10, 20, 30]));
    floats[row + 2]! += 5;
    floats[row + 3]! += 6;
    floats[row + 4]! += 7;
    Atomics.add(ints, 16, 1);
    reader.fold(s);
    expect(s.batch.get(1)).toEqual(batchStat(1, 2, [15, 26, 37]));
  });

  it("keeps a batch row read before its size for the fold after its writer finishes", () => {
    const buffer = sharedStatsBuffer(1, 4);
    const [ints, floats] = [new Int32Array(buffer), new Float64Array(buffer)];
    const row = 39 + 5 * 2;
    // An execution at size 2 in a new row, written but for the row's size.
    Atomics.add(ints, 16, 1);
    floats[21] = 2;
    floats[22] = 1;
    floats.set([0, 1, 100, 200, 300], row);
    const s = new ModelStats();
    const reader = new SharedStatsReader(buffer);
    reader.fold(s);
    expect([s.inferenceCount, s.executionCount, s.batch.size]).toEqual([2, 1, 0]);
    floats[row] = 2;
    Atomics.add(ints, 16, 1);
    reader.fold(s);
    expect([...s.batch.values()]).toEqual([batchStat(2, 1, [100, 200, 300])]);
    // The writer's own next execution at that size finds its row.
    expect(new SharedStatsWriter(buffer, 0).recordExecution(2, 1, 1, 1)).toBe(true);
    reader.fold(s);
    expect(s.batch.get(2)!.compute_infer).toEqual({ count: 2, ns: 201 });
  });

  it("refuses a slot the buffer does not have", () => {
    const buffer = sharedStatsBuffer(2, 4);
    expect(() => new SharedStatsWriter(buffer, 2)).toThrow(RangeError);
    expect(() => new SharedStatsWriter(buffer, -1)).toThrow(RangeError);
    expect(() => new SharedStatsWriter(buffer, 0.5)).toThrow(RangeError);
  });
});

describe("shared statistics counters across threads", () => {
  it("a fold never takes half of an update while two worker threads write (Bun)", async () => {
    const { stdout } = await promisify(execFile)(join(ROOT, "node_modules", ".bin", "bun"), [join(ROOT, "test/unit/core/shared-stats-race.ts")], {
      timeout: 60_000,
    });
    const r = JSON.parse(stdout.trim().split("\n").at(-1)!);
    expect(r.folds).toBeGreaterThan(100);
    expect(r.torn).toBe(0);
    expect(r).toMatchObject({
      inference_count: 600_000,
      execution_count: 400_000,
      success: { count: 400_000, ns: 600_000_000 },
      queue: { count: 400_000, ns: 400_000 },
      metricUs: 400_000,
    });
    expect(r.batch_stats.map((b: any) => [b.batch_size, b.compute_infer.count, b.compute_infer.ns])).toEqual([
      [1, 200_000, 1_000_000],
      [2, 200_000, 1_000_000],
    ]);
  });
});
