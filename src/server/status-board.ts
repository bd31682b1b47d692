/**
 * @module The data behind the status page (/nereid/status.json): every model version's
 * state, queue depth and counters, and per version a short history (one point a
 * second, the last five minutes) of request rate and mean latencies, taken from the
 * same statistics the statistics extension and /metrics report. Sampling runs only
 * while the page is enabled.
 */
import type { InferenceServer } from "./server.ts";
import type { ModelVersion } from "../repository/model-version.ts";
import type { Duration } from "../core/stats.ts";

/** One interval of one model version: requests per second and mean durations per request, in µs. */
export interface StatusPoint {
  /** End of the interval, ms since the epoch. */
  t: number;
  rate: number;
  failure_rate: number;
  request_us: number;
  queue_us: number;
  compute_input_us: number;
  compute_infer_us: number;
  compute_output_us: number;
}

export interface ModelStatus {
  name: string;
  version: string;
  state: string;
  reason: string;
  /** Requests waiting for an instance (nv_inference_pending_request_count). */
  pending: number;
  success: number;
  failure: Record<string, number>;
  inference_count: number;
  execution_count: number;
  cache_enabled: boolean;
  cache_hits: number;
  cache_misses: number;
  history: StatusPoint[];
}

export interface StatusSnapshot {
  server: { id: string; version: string; state: string; live: boolean; ready: boolean; uptime_secs: number };
  interval_ms: number;
  models: ModelStatus[];
  /** Versions (or models) that failed to load, with the reason. */
  load_errors: { name: string; version: string; reason: string }[];
}

interface Sample {
  t: number;
  success: Duration;
  fail: number;
  queueNs: number;
  inNs: number;
  inferNs: number;
  outNs: number;
  /** Successes that ran the model (not cache hits), for the compute means. */
  computed: number;
}

interface Track {
  mv: ModelVersion;
  last: Sample;
  points: StatusPoint[];
}

const key = (mv: ModelVersion) => `${mv.name}\u0000${mv.version}`;

function sample(mv: ModelVersion, t: number): Sample {
  const s = mv.stats;
  return {
    t,
    success: { ...s.success },
    fail: s.fail.count,
    queueNs: s.queue.ns,
    inNs: s.computeInput.ns,
    inferNs: s.computeInfer.ns,
    outNs: s.computeOutput.ns,
    computed: s.success.count - s.cacheHit.count,
  };
}

/** The interval between two samples of the same version as a point. */
function point(a: Sample, b: Sample): StatusPoint {
  const secs = Math.max(1e-3, (b.t - a.t) / 1000);
  const n = b.success.count - a.success.count;
  const computed = b.computed - a.computed;
  const us = (ns: number, count: number) => (count > 0 ? ns / count / 1000 : 0);
  return {
    t: b.t,
    rate: n / secs,
    failure_rate: (b.fail - a.fail) / secs,
    request_us: us(b.success.ns - a.success.ns, n),
    queue_us: us(b.queueNs - a.queueNs, n),
    compute_input_us: us(b.inNs - a.inNs, computed),
    compute_infer_us: us(b.inferNs - a.inferNs, computed),
    compute_output_us: us(b.outNs - a.outNs, computed),
  };
}

export class StatusBoard {
  readonly #server: InferenceServer;
  readonly #intervalMs: number;
  readonly #keep: number;
  readonly #tracks = new Map<string, Track>();
  readonly #started = Date.now();
  #timer: ReturnType<typeof setInterval> | undefined;

  /** Samples every `intervalMs` and keeps `historySecs` of points per version. */
  constructor(server: InferenceServer, intervalMs = 1000, historySecs = 300) {
    this.#server = server;
    this.#intervalMs = intervalMs;
    this.#keep = Math.max(1, Math.round((historySecs * 1000) / intervalMs));
  }

  start(): void {
    if (this.#timer) return;
    this.sample();
    this.#timer = setInterval(() => this.sample(), this.#intervalMs);
    (this.#timer as { unref?: () => void }).unref?.();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Takes one sample of every version (the timer's tick; tests call it directly). */
  sample(now = Date.now()): void {
    this.#server.foldStatistics();
    const seen = new Set<string>();
    for (const mv of this.#server.repository.allVersions()) {
      const k = key(mv);
      seen.add(k);
      const s = sample(mv, now);
      const track = this.#tracks.get(k);
      // A reload makes a new ModelVersion with fresh counters: its history starts over.
      if (!track || track.mv !== mv) {
        this.#tracks.set(k, { mv, last: s, points: [] });
        continue;
      }
      track.points.push(point(track.last, s));
      if (track.points.length > this.#keep) track.points.splice(0, track.points.length - this.#keep);
      track.last = s;
    }
    for (const k of [...this.#tracks.keys()]) if (!seen.has(k)) this.#tracks.delete(k);
  }

  snapshot(): StatusSnapshot {
    const server = this.#server;
    server.foldStatistics();
    const models: ModelStatus[] = [];
    const versions = [...server.repository.allVersions()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.version - b.version));
    for (const mv of versions) {
      const s = mv.stats;
      const track = this.#tracks.get(key(mv));
      models.push({
        name: mv.name,
        version: String(mv.version),
        state: mv.state,
        reason: mv.reason,
        pending: mv.ready ? mv.scheduler.pendingCount() : 0,
        success: s.success.count,
        failure: { ...s.failures },
        inference_count: s.inferenceCount,
        execution_count: s.executionCount,
        cache_enabled: server.cacheEnabled(mv),
        cache_hits: s.cacheHit.count,
        cache_misses: s.cacheMiss.count,
        history: track?.mv === mv ? track.points : [],
      });
    }
    const load_errors = server
      .repositoryIndex()
      .filter((e) => e.state === "UNAVAILABLE" && e.reason && e.reason !== "unloaded")
      .map((e) => ({ name: e.name, version: e.version ?? "-", reason: e.reason! }));
    return {
      server: {
        id: server.info.id,
        version: server.info.version,
        state: server.state,
        live: server.isLive(),
        ready: server.isReady(),
        uptime_secs: Math.floor((Date.now() - this.#started) / 1000),
      },
      interval_ms: this.#intervalMs,
      models,
      load_errors,
    };
  }
}
