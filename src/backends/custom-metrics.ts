/**
 * @module Custom metrics a model makes (Python: pb_utils.MetricFamily / Metric;
 * TypeScript: `args.metrics`), exported on /metrics with the server's own families, as
 * Triton exports them. Both backends speak the same small message protocol to a scope
 * (`mfam` makes or joins a family, `mnew` a metric, `mop` changes one, `mget` reads one;
 * replies are `mval`): a Python stub over its pipe, a TypeScript worker by postMessage, a
 * main-thread TypeScript model directly. A family is known
 * by its name (instances making the same family share it; the same name with another
 * kind or description is refused), a metric by its family and labels. Each stub (or TypeScript
 * instance / worker) gets a scope that remembers what it made; when it ends, metrics no
 * other scope uses go.
 */
import type { Registry } from "prom-client";

/** One message of the protocol (field names as the Python stub sends them). */
export type Message = { t: string; [key: string]: any };

const KINDS = ["counter", "gauge", "histogram"] as const;
const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

interface Series {
  labels: Record<string, string>;
  value: number;
  buckets?: number[];
  counts?: number[];
  count: number;
  owners: Set<object>;
}

/** One family as prom-client's registry reads it (get() at scrape time). */
class Family {
  readonly aggregator = "sum";
  readonly series = new Map<string, Series>();
  readonly owners = new Set<object>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: (typeof KINDS)[number],
  ) {}

  get() {
    const values: { metricName?: string; labels: Record<string, string | number>; value: number }[] = [];
    for (const s of this.series.values()) {
      if (this.type !== "histogram") {
        values.push({ labels: s.labels, value: s.value });
        continue;
      }
      s.buckets!.forEach((le, i) => values.push({ metricName: `${this.name}_bucket`, labels: { ...s.labels, le }, value: s.counts![i]! }));
      values.push({ metricName: `${this.name}_bucket`, labels: { ...s.labels, le: "+Inf" }, value: s.count });
      values.push({ metricName: `${this.name}_sum`, labels: s.labels, value: s.value });
      values.push({ metricName: `${this.name}_count`, labels: s.labels, value: s.count });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {}
}

export interface MetricsScope {
  /** Handles `m` when it is a metrics message (false otherwise); `reply` answers `mfam`, `mnew` and `mget`. */
  handle(m: Message, reply: (m: Message) => void): boolean;
  release(): void;
}

export class CustomMetrics {
  readonly #families = new Map<string, Family>();
  #registry: Registry | undefined;

  /** Exports the families on `registry` (the metrics listener's), now and as they are made. */
  attach(registry: Registry): void {
    this.#registry = registry;
    for (const f of this.#families.values()) this.#register(f);
  }

  #register(f: Family): void {
    if (this.#registry && !this.#registry.getSingleMetric(f.name)) this.#registry.registerMetric(f as unknown as Parameters<Registry["registerMetric"]>[0]);
  }

  /** What one stub (or TypeScript instance) made: its message handler, and release() when it ends. */
  scope(): MetricsScope {
    const owner = {};
    const families = new Map<number, Family>();
    const metrics = new Map<number, { family: Family; series: Series }>();
    const fail = (reply: (m: Message) => void, c: number, e: string) => reply({ t: "mval", c, e });
    return {
      handle: (m, reply) => {
        switch (m.t) {
          case "mfam": {
            const kind = KINDS[m.k as number];
            const name = String(m.n);
            if (!kind || !NAME.test(name)) return (fail(reply, m.c, `invalid metric family name '${name}' or kind`), true);
            let f = this.#families.get(name);
            if (f && (f.type !== kind || f.help !== String(m.d)))
              return (fail(reply, m.c, `metric family '${name}' already exists with another kind or description`), true);
            if (!f) {
              f = new Family(name, String(m.d), kind);
              this.#families.set(name, f);
              this.#register(f);
            }
            f.owners.add(owner);
            families.set(m.f as number, f);
            reply({ t: "mval", c: m.c, v: 0 });
            return true;
          }
          case "mnew": {
            const f = families.get(m.f as number);
            const labels = Object.fromEntries(Object.entries((m.l ?? {}) as Record<string, string>).map(([k, v]) => [String(k), String(v)]));
            if (!f) return (fail(reply, m.c, "unknown metric family"), true);
            const bad = Object.keys(labels).find((k) => !LABEL.test(k) || k === "le");
            if (bad !== undefined) return (fail(reply, m.c, `invalid label name '${bad}'`), true);
            const buckets = Array.isArray(m.b) ? (m.b as unknown[]).map(Number) : undefined;
            if (f.type === "histogram" && (!buckets || buckets.some((b, i) => !Number.isFinite(b) || (i > 0 && b <= buckets[i - 1]!)))) {
              return (fail(reply, m.c, "a histogram metric needs increasing, finite buckets"), true);
            }
            const key = JSON.stringify(Object.entries(labels).sort());
            let s = f.series.get(key);
            if (!s) {
              s = { labels, value: 0, count: 0, owners: new Set(), ...(f.type === "histogram" ? { buckets, counts: buckets!.map(() => 0) } : {}) };
              f.series.set(key, s);
            }
            s.owners.add(owner);
            metrics.set(m.id as number, { family: f, series: s });
            reply({ t: "mval", c: m.c, v: 0 });
            return true;
          }
          case "mop": {
            const e = metrics.get(m.id as number);
            const v = Number(m.v);
            if (!e || !Number.isFinite(v)) return true;
            const s = e.series;
            if (m.op === "inc") s.value += v;
            else if (m.op === "set") s.value = v;
            else if (m.op === "observe" && s.buckets) {
              s.buckets.forEach((le, i) => v <= le && s.counts![i]!++);
              s.value += v;
              s.count++;
            }
            return true;
          }
          case "mget": {
            const e = metrics.get(m.id as number);
            reply({ t: "mval", c: m.c, v: e ? e.series.value : 0 });
            return true;
          }
          default:
            return false;
        }
      },
      release: () => {
        for (const { family, series } of metrics.values()) {
          series.owners.delete(owner);
          if (series.owners.size === 0) for (const [k, s] of family.series) if (s === series) family.series.delete(k);
        }
        for (const f of families.values()) {
          f.owners.delete(owner);
          if (f.owners.size > 0) continue;
          this.#families.delete(f.name);
          this.#registry?.removeSingleMetric(f.name);
        }
      },
    };
  }
}

/** The custom metrics of every backend of the process (main.ts attaches them to the metrics listener's registry). */
export const CUSTOM_METRICS = new CustomMetrics();
