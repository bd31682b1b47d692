/**
 * The shared scheduler suite: what every scheduler owes the model in front of it, run
 * against each one (default, dynamic batch, sequence batch, ensemble) over a scripted
 * backend. Each request settles exactly once with its own outputs; a failed execution
 * fails exactly the requests in it; a cancelled request that has not started leaves at
 * once (S-20); stop() drains; the execution statistics add up.
 *
 * A test file calls schedulerSuite() with a factory for a fresh scheduler. Requests carry
 * one row whose elements all hold a value unique to the request, so every execution's
 * rows say which requests it ran and every output says whose it is.
 *
 * Success and failure counts (ModelStats.success/fail) are recorded by the server around
 * the scheduler (src/server/server.ts), not by schedulers; the suite checks the outcome
 * tally the server records from, and the execution counts schedulers record themselves.
 */
import { describe, expect, it } from "vitest";
import { ServerError } from "../../src/core/errors.ts";
import { floats, settle, type Execution, type ManualBackend, type ManualClock } from "../helpers/scheduler-fakes.ts";
import type { ModelStats } from "../../src/core/stats.ts";
import type { PreparedRequest } from "../../src/core/request-validate.ts";
import type { Scheduler, ScheduledResult } from "../../src/scheduler/scheduler.ts";

export interface ScriptedScheduler {
  scheduler: Scheduler;
  /** Where the scheduler's executions land (for an ensemble: its composing model's). */
  backend: ManualBackend;
  /** The statistics those executions are recorded in. */
  stats: ModelStats;
  /** Advanced while driving, so queue delays expire. */
  clock?: ManualClock;
  /** A one-row request whose elements all hold `value`; a fresh sequence where one is needed. */
  request(value: number): PreparedRequest;
  /** Answers an execution with OUT = IN (and whatever else the model needs). */
  finish(e: Execution): void;
  /** The values of the rows an execution really ran (padding left out). */
  rows(e: Execution): number[];
  /** Backend executions each request takes (an ensemble: one per step). Default 1. */
  executionsPerRequest?: number;
}

/** The first element of each row of IN (rows of `IN`'s shape). */
export function inRows(e: Execution): number[] {
  const t = e.inputs.find((x) => x.name === "IN")!;
  const width = t.shape.slice(1).reduce((a, b) => a * b, 1);
  const v = floats(t);
  return Array.from({ length: v.length / width }, (_, i) => v[i * width]!);
}

interface Tracked {
  value: number;
  settlements: number;
  result?: ScheduledResult;
  error?: unknown;
}

function track(value: number, p: Promise<ScheduledResult>): { t: Tracked; p: Promise<unknown> } {
  const t: Tracked = { value, settlements: 0 };
  const done = p.then(
    (r) => {
      t.settlements++;
      t.result = r;
    },
    (e) => {
      t.settlements++;
      t.error = e;
    },
  );
  return { t, p: done };
}

interface Driven {
  /** Executions answered with outputs, and the rows each ran. */
  finished: number[][];
  /** Executions failed, and the rows each ran. */
  failed: number[][];
}

/**
 * Answers executions until every tracked request has settled: new executions are
 * answered newest first (so completions interleave), `fail(i)` picks which (by index
 * in start order) fail with `error` instead.
 */
async function drive(
  h: ScriptedScheduler,
  waits: Promise<unknown>[],
  out: Driven,
  fail: (index: number) => boolean = () => false,
  error?: Error,
): Promise<void> {
  let done = false;
  void Promise.all(waits).then(() => (done = true));
  let seen = out.finished.length + out.failed.length; // `out` holds every execution handled so far
  for (let guard = 0; !done && guard < 10_000; guard++) {
    await settle();
    const fresh = h.backend.executions.slice(seen);
    const base = seen;
    seen = h.backend.executions.length;
    fresh.reverse().forEach((e, k) => {
      const index = base + fresh.length - 1 - k;
      if (fail(index)) {
        out.failed.push(h.rows(e));
        e.fail(error!);
      } else {
        out.finished.push(h.rows(e));
        h.finish(e);
      }
    });
    h.clock?.advance(1_000_000);
  }
  expect(done, "every request settled").toBe(true);
}

function expectOwnOutput(t: Tracked): void {
  expect(t.error, `request ${t.value} succeeded`).toBeUndefined();
  const out = t.result!.outputs.find((o) => o.name === "OUT")!;
  expect(out.shape).toEqual([1, 2]);
  expect(floats(out)).toEqual([t.value, t.value]);
}

function expectStatsAddUp(h: ScriptedScheduler, driven: Driven, succeeded: number): void {
  const per = h.executionsPerRequest ?? 1;
  const stats = h.stats;
  expect(stats.executionCount).toBe(driven.finished.length);
  expect(stats.inferenceCount).toBe(succeeded * per);
  expect(stats.inferenceCount).toBe(driven.finished.reduce((a, r) => a + r.length, 0));
  const histogram = new Map<number, number>();
  for (const r of driven.finished) histogram.set(r.length, (histogram.get(r.length) ?? 0) + 1);
  const recorded = new Map([...stats.batch.values()].map((b) => [b.batch_size, b.compute_infer.count]));
  expect(recorded).toEqual(histogram);
  for (const b of stats.batch.values()) {
    expect(b.compute_input.count).toBe(b.compute_infer.count);
    expect(b.compute_output.count).toBe(b.compute_infer.count);
  }
}

/** Every request's rows ran exactly `per` times in all (each step once, no request run twice). */
function expectEachRanOnce(driven: Driven, values: number[], per: number): void {
  const runs = new Map<number, number>();
  for (const r of [...driven.finished, ...driven.failed]) for (const v of r) runs.set(v, (runs.get(v) ?? 0) + 1);
  for (const v of values) expect(runs.get(v) ?? 0, `executions of request ${v}`).toBeLessThanOrEqual(per);
  expect(
    [...runs.keys()].every((v) => values.includes(v)),
    "no rows from nowhere",
  ).toBe(true);
}

export function schedulerSuite(label: string, make: () => ScriptedScheduler): void {
  describe(`scheduler suite: ${label}`, () => {
    it("16 concurrent requests each settle exactly once, with their own outputs", async () => {
      const h = make();
      const values = Array.from({ length: 16 }, (_, i) => i + 1);
      const tracked = values.map((v) => track(v, h.scheduler.enqueue(h.request(v))));
      expect(h.scheduler.inflightCount()).toBe(16);
      const driven: Driven = { finished: [], failed: [] };
      await drive(
        h,
        tracked.map((x) => x.p),
        driven,
      );
      await settle();
      for (const { t } of tracked) {
        expect(t.settlements).toBe(1);
        expectOwnOutput(t);
      }
      const per = h.executionsPerRequest ?? 1;
      expectEachRanOnce(driven, values, per);
      for (const v of values) expect(driven.finished.flat().filter((x) => x === v).length).toBe(per);
      expect(h.scheduler.inflightCount()).toBe(0);
      expect(h.scheduler.pendingCount()).toBe(0);
      expectStatsAddUp(h, driven, 16);
    });

    it("a failed execution fails exactly the requests in it; the others and later ones succeed", async () => {
      const h = make();
      const boom = new ServerError("INTERNAL", "scripted backend failure");
      const values = Array.from({ length: 8 }, (_, i) => i + 1);
      const tracked = values.map((v) => track(v, h.scheduler.enqueue(h.request(v))));
      const driven: Driven = { finished: [], failed: [] };
      await drive(
        h,
        tracked.map((x) => x.p),
        driven,
        (i) => i === 0,
        boom,
      );
      expect(driven.failed.length).toBe(1);
      const failedValues = new Set(driven.failed[0]);
      expect(failedValues.size).toBeGreaterThan(0);
      let fails = 0;
      for (const { t } of tracked) {
        expect(t.settlements).toBe(1);
        if (failedValues.has(t.value)) {
          fails++;
          expect(t.error).toBeInstanceOf(ServerError);
          expect((t.error as ServerError).code).toBe("INTERNAL");
          expect((t.error as ServerError).message).toContain("scripted backend failure");
        } else {
          expectOwnOutput(t);
        }
      }
      expect(fails).toBe(failedValues.size);
      expectEachRanOnce(driven, values, h.executionsPerRequest ?? 1);

      const later = [101, 102].map((v) => track(v, h.scheduler.enqueue(h.request(v))));
      await drive(
        h,
        later.map((x) => x.p),
        driven,
      );
      for (const { t } of later) {
        expect(t.settlements).toBe(1);
        expectOwnOutput(t);
      }
      // Tally the server records from: one outcome per request.
      const all = [...tracked, ...later].map((x) => x.t);
      const succeeded = all.filter((t) => t.result).length;
      expect(succeeded + all.filter((t) => t.error).length).toBe(all.length);
      expect(succeeded).toBe(all.length - failedValues.size);
      expect(h.scheduler.inflightCount()).toBe(0);
      expectStatsAddUp(h, driven, succeeded);
    });

    it("stop() refuses new requests with UNAVAILABLE and resolves once every accepted request has an answer", async () => {
      const h = make();
      const values = Array.from({ length: 6 }, (_, i) => i + 1);
      const tracked = values.map((v) => track(v, h.scheduler.enqueue(h.request(v))));
      await settle();
      let stopped = false;
      const stopping = h.scheduler.stop().then(() => (stopped = true));
      const late = track(99, h.scheduler.enqueue(h.request(99)));
      await late.p;
      expect(late.t.error).toBeInstanceOf(ServerError);
      expect((late.t.error as ServerError).code).toBe("UNAVAILABLE");
      expect((late.t.error as ServerError).message).toContain("stopping");
      await settle();
      expect(stopped).toBe(false);
      expect(h.scheduler.inflightCount()).toBe(6);

      const driven: Driven = { finished: [], failed: [] };
      await drive(h, [...tracked.map((x) => x.p), stopping], driven);
      expect(stopped).toBe(true);
      for (const { t } of tracked) {
        expect(t.settlements).toBe(1);
        if (t.error) expect((t.error as ServerError).code).toBe("UNAVAILABLE");
        else expectOwnOutput(t);
      }
      expect(driven.finished.flat()).not.toContain(99);
      expect(h.scheduler.inflightCount()).toBe(0);
      expect(h.scheduler.pendingCount()).toBe(0);
      expectStatsAddUp(h, driven, tracked.filter((x) => x.t.result).length);
    });

    it("S-20: a cancelled request that has not started leaves at once with CANCELLED, never runs, and the others succeed", async () => {
      const h = make();
      const values = Array.from({ length: 12 }, (_, i) => i + 1);
      const controllers = new Map<number, AbortController>();
      const tracked = values.map((v) => {
        const prepared = h.request(v);
        const c = new AbortController();
        prepared.request.signal = c.signal;
        controllers.set(v, c);
        return track(v, h.scheduler.enqueue(prepared));
      });
      await settle();
      const started = new Set(h.backend.executions.flatMap((e) => h.rows(e)));
      const waiting = values.filter((v) => !started.has(v));
      expect(waiting.length, "some requests wait behind busy instances").toBeGreaterThan(0);
      const victim = waiting[waiting.length - 1]!;
      const pendingBefore = h.scheduler.pendingCount();
      const inflightBefore = h.scheduler.inflightCount();
      controllers.get(victim)!.abort();
      await settle();
      const cancelledOne = tracked.find((x) => x.t.value === victim)!.t;
      expect(cancelledOne.settlements, "answered before anything else finished").toBe(1);
      expect(cancelledOne.error).toBeInstanceOf(ServerError);
      expect((cancelledOne.error as ServerError).code).toBe("CANCELLED");
      expect((cancelledOne.error as ServerError).reason).toBe("CANCELED");
      expect(h.scheduler.inflightCount()).toBe(inflightBefore - 1);
      // A scheduler that counts pending requests (the ensemble counts none of its own) has one fewer.
      expect(h.scheduler.pendingCount()).toBe(Math.max(0, pendingBefore - 1));

      // A request already running finishes its execution (the backend decides what to make
      // of the abort); only an ensemble has more to skip: the steps it has not started.
      const running = values.find((v) => started.has(v))!;
      controllers.get(running)!.abort();

      const driven: Driven = { finished: [], failed: [] };
      await drive(
        h,
        tracked.map((x) => x.p),
        driven,
      );
      await settle();
      expect(driven.finished.flat()).not.toContain(victim);
      const per = h.executionsPerRequest ?? 1;
      for (const { t } of tracked) {
        expect(t.settlements).toBe(1);
        if (t.value === victim) continue;
        if (t.value === running && per > 1) {
          expect((t.error as ServerError).code).toBe("CANCELLED");
          expect(driven.finished.flat().filter((v) => v === running).length, "its later steps did not start").toBeLessThan(per);
        } else {
          expectOwnOutput(t);
        }
      }
      expect(h.scheduler.inflightCount()).toBe(0);
      expect(h.scheduler.pendingCount()).toBe(0);
      const succeeded = tracked.filter((x) => x.t.result).length;
      expect(succeeded).toBe(values.length - (per > 1 ? 2 : 1));
      // Executions the cancelled ensemble request did run still count; the inference count is per execution row.
      expect(h.stats.executionCount).toBe(driven.finished.length);
      expect(h.stats.inferenceCount).toBe(driven.finished.reduce((a, r) => a + r.length, 0));
    });

    it("S-20: a request whose signal is already aborted is answered CANCELLED and never runs", async () => {
      const h = make();
      const prepared = h.request(7);
      const c = new AbortController();
      c.abort();
      prepared.request.signal = c.signal;
      const x = track(7, h.scheduler.enqueue(prepared));
      await x.p;
      await settle();
      expect((x.t.error as ServerError).code).toBe("CANCELLED");
      expect(h.backend.count).toBe(0);
      expect(h.scheduler.inflightCount()).toBe(0);
      expect(h.scheduler.pendingCount()).toBe(0);
    });

    it("stop() on an idle scheduler resolves at once, and a second stop() too", async () => {
      const h = make();
      await h.scheduler.stop();
      await h.scheduler.stop();
      const late = track(1, h.scheduler.enqueue(h.request(1)));
      await late.p;
      expect((late.t.error as ServerError).code).toBe("UNAVAILABLE");
      expect(h.backend.count).toBe(0);
      expect(h.stats.executionCount).toBe(0);
    });
  });
}
