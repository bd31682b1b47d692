/**
 * @module perf_analyzer's measurement: keep a load running (a fixed number of requests
 * in flight, or requests sent at a fixed rate), cut time into windows of -p ms, and
 * stop once the last three windows agree within the stability percentage on
 * throughput and latency (the average, or --percentile's). The result merges those
 * three windows: the client's latencies and the server's statistics over the same span.
 * A failed request ends the setting after its window, as perf_analyzer stops at the
 * first: the result then merges every window so far and says it failed.
 */
import type { PerfClient, ServerStats, Timing } from "./client.ts";
import type { FailureLog } from "./errors.ts";

export interface Completed {
  endMs: number;
  latencyNs: number;
  timing: Timing;
}

export interface Measurement {
  /** Concurrency or request rate. */
  setting: number;
  requests: number;
  failures: number;
  durationMs: number;
  /** Inferences per second: requests × batch size per second. */
  throughput: number;
  avgLatencyUs: number;
  stdLatencyUs: number;
  percentilesUs: Record<number, number>;
  avgSendUs: number;
  avgWaitUs: number;
  avgRecvUs: number;
  server: ServerStats;
}

export interface WindowReport {
  throughput: number;
  latencyUs: number;
  requests: number;
}

export interface MeasureOptions {
  batchSize: number;
  windowMs: number;
  stabilityPercentage: number;
  maxTrials: number;
  percentile: number | undefined;
  onWindow?: (w: WindowReport, pass: number) => void;
}

export const PERCENTILES = [50, 90, 95, 99] as const;

/** The p-th percentile of sorted values (nearest rank, as perf_analyzer). */
function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const idx = Math.max(0, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.min(idx, sorted.length - 1)]!;
}

const diff = (a: ServerStats, b: ServerStats): ServerStats => {
  const d = (x: { count: number; ns: number }, y: { count: number; ns: number }) => ({ count: y.count - x.count, ns: y.ns - x.ns });
  return {
    success: d(a.success, b.success),
    queue: d(a.queue, b.queue),
    compute_input: d(a.compute_input, b.compute_input),
    compute_infer: d(a.compute_infer, b.compute_infer),
    compute_output: d(a.compute_output, b.compute_output),
    inference_count: b.inference_count - a.inference_count,
    execution_count: b.execution_count - a.execution_count,
  };
};

function summarize(setting: number, done: readonly Completed[], durationMs: number, batch: number, server: ServerStats): Measurement {
  const ok = done.filter((c) => c.timing.ok);
  const lat = ok.map((c) => c.latencyNs / 1000).sort((a, b) => a - b);
  const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((s, x) => s + x, 0) / xs.length : 0);
  const avg = mean(lat);
  const std = Math.sqrt(mean(lat.map((x) => (x - avg) ** 2)));
  return {
    setting,
    requests: ok.length,
    failures: done.length - ok.length,
    durationMs,
    throughput: (ok.length * batch) / (durationMs / 1000),
    avgLatencyUs: avg,
    stdLatencyUs: std,
    percentilesUs: Object.fromEntries(PERCENTILES.map((p) => [p, percentile(lat, p)])),
    avgSendUs: mean(ok.map((c) => c.timing.sendNs / 1000)),
    avgWaitUs: mean(ok.map((c) => c.timing.waitNs / 1000)),
    avgRecvUs: mean(ok.map((c) => c.timing.recvNs / 1000)),
    server,
  };
}

/** A running load: completions go to `sink`; stop() resolves once every request it sent has settled. */
interface Load {
  stop(): Promise<void>;
  sent(): number;
}

/** A request ready to go out, for slot (worker or sequence) `slot`. */
export type Sender = (slot: number) => () => Promise<Timing>;
/** The request that closes slot `slot`'s open sequence when the load stops, if it has one. */
export type Finisher = (slot: number) => (() => Promise<Timing>) | undefined;

/** Sends `fire`, timing it, and gives its completion to `sink`. */
async function timed(fire: () => Promise<Timing>, sink: (c: Completed) => void): Promise<void> {
  const t0 = performance.now();
  const timing = await fire();
  const end = performance.now();
  sink({ endMs: end, latencyNs: (end - t0) * 1e6, timing });
}

/** `concurrency` requests always in flight, each sent as the previous one returns; worker i is slot i. */
export function concurrencyLoad(send: Sender, concurrency: number, sink: (c: Completed) => void, finish?: Finisher): Load {
  let running = true;
  let sent = 0;
  const worker = async (_: unknown, slot: number) => {
    while (running) {
      const fire = send(slot);
      sent++;
      await timed(fire, sink);
    }
    const last = finish?.(slot);
    if (last) {
      sent++;
      await timed(last, sink);
    }
  };
  const workers = Array.from({ length: concurrency }, worker);
  return {
    async stop() {
      running = false;
      await Promise.all(workers);
    },
    sent: () => sent,
  };
}

/**
 * Requests sent at `rate` per second, evenly spaced, whether or not earlier ones
 * returned, over `slots` slots in turn. With sequences, a slot's request waits for its
 * previous one (a sequence's requests reach the server in order), and its latency is
 * timed from when it goes out.
 */
export function rateLoad(send: Sender, rate: number, sink: (c: Completed) => void, slots = 1, ordered = false, finish?: Finisher): Load {
  let running = true;
  let sent = 0;
  const inflight = new Set<Promise<void>>();
  const tails: Promise<void>[] = Array.from({ length: slots }, () => Promise.resolve());
  const go = (slot: number, fire: () => Promise<Timing>) => {
    sent++;
    const p = ordered ? tails[slot]!.then(() => timed(fire, sink)) : timed(fire, sink);
    tails[slot] = p;
    inflight.add(p);
    void p.finally(() => inflight.delete(p));
  };
  const start = performance.now();
  const gapMs = 1000 / rate;
  const loop = (async () => {
    while (running) {
      const due = start + sent * gapMs;
      const wait = due - performance.now();
      // Behind schedule, still yield to I/O between sends, so that answers are read.
      await new Promise((r) => (wait > 0 ? setTimeout(r, wait) : setImmediate(r)));
      if (!running) break;
      const slot = sent % slots;
      go(slot, send(slot));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      for (let slot = 0; slot < slots; slot++) {
        const last = finish?.(slot);
        if (last) go(slot, last);
      }
      await Promise.all(inflight);
    },
    sent: () => sent,
  };
}

/**
 * Measures one setting: runs `start`'s load window after window until three in a row
 * are stable; returns the merged measurement and how many requests the load sent in
 * all (every window, the unstable ones included). Every failed request goes to
 * `failures`; a window with one ends the setting (`failed`). Throws when -max-trials
 * windows pass without stability, with perf_analyzer's message.
 */
export async function measure(
  client: PerfClient,
  setting: number,
  kind: "concurrency" | "request rate",
  start: (sink: (c: Completed) => void) => Load,
  o: MeasureOptions,
  failures: FailureLog,
): Promise<{ result: Measurement; sent: number; failed: boolean }> {
  let current: Completed[] = [];
  const load = start((c) => {
    current.push(c);
    if (!c.timing.ok) failures.add(c.timing.error ?? "the request failed without an error message");
  });
  const windows: { done: Completed[]; ms: number; stats: [ServerStats, ServerStats] }[] = [];
  try {
    let before = await client.stats();
    let t0 = performance.now();
    current = [];
    for (let pass = 1; pass <= o.maxTrials; pass++) {
      await new Promise((r) => setTimeout(r, o.windowMs));
      const done = current;
      current = [];
      const t1 = performance.now();
      const after = await client.stats();
      windows.push({ done, ms: t1 - t0, stats: [before, after] });
      const w = summarize(setting, done, t1 - t0, o.batchSize, diff(before, after));
      const latencyUs = o.percentile ? percentileOf(done, o.percentile) : w.avgLatencyUs;
      o.onWindow?.({ throughput: w.throughput, latencyUs, requests: w.requests }, pass);
      before = after;
      t0 = performance.now();
      const failed = done.some((c) => !c.timing.ok);
      if (failed || (windows.length >= 3 && stable(windows.slice(-3), o))) {
        const last = failed ? windows : windows.slice(-3);
        const merged = summarize(
          setting,
          last.flatMap((x) => x.done),
          last.reduce((s, x) => s + x.ms, 0),
          o.batchSize,
          diff(last[0]!.stats[0], last.at(-1)!.stats[1]),
        );
        return { result: merged, sent: await stopLoad(), failed };
      }
    }
  } catch (err) {
    await load.stop();
    throw err;
  }
  await load.stop();
  throw new Error(
    `Failed to obtain stable measurement within ${o.maxTrials} measurement windows for ${kind} ${setting}. Please try to increase the --measurement-interval.`,
  );

  async function stopLoad(): Promise<number> {
    await load.stop();
    return load.sent();
  }
}

function percentileOf(done: readonly Completed[], p: number): number {
  return percentile(
    done
      .filter((c) => c.timing.ok)
      .map((c) => c.latencyNs / 1000)
      .sort((a, b) => a - b),
    p,
  );
}

/** perf_analyzer's rule: each window's throughput and latency within ±s% of the three windows' mean. */
function stable(ws: readonly { done: Completed[]; ms: number }[], o: MeasureOptions): boolean {
  const tps = ws.map((w) => (w.done.filter((c) => c.timing.ok).length * o.batchSize) / (w.ms / 1000));
  const lats = ws.map((w) => {
    const ok = w.done.filter((c) => c.timing.ok);
    return o.percentile ? percentileOf(w.done, o.percentile) : ok.reduce((s, c) => s + c.latencyNs / 1000, 0) / Math.max(1, ok.length);
  });
  const within = (xs: number[]) => {
    const m = xs.reduce((s, x) => s + x, 0) / xs.length;
    return m > 0 && xs.every((x) => Math.abs(x - m) <= (m * o.stabilityPercentage) / 100);
  };
  return within(tps) && within(lats);
}
