/**
 * @module Triton's Prometheus families (reference §6) in a prom-client registry. Values
 * are read from each ready model version's statistics at scrape time, so the request
 * path pays nothing for metrics.
 */
import { Counter, Gauge, Registry, Summary } from "prom-client";
import { FAILURE_REASONS, wholeUs } from "../core/stats.ts";
import { CpuSampler } from "./cpu.ts";
import { GpuSampler } from "./gpu.ts";
import { getLogger } from "../core/logger.ts";
import type { GpuSample } from "../../ffi/nvml/nvml.ts";

import type { ModelVersion } from "../repository/model-version.ts";
import type { RequestDurations } from "../server/server.ts";

const log = getLogger("src/metrics/model-metrics.ts");

export interface MetricsSource {
  /** Every loaded (ready) model version. */
  versions(): ModelVersion[];
}

/** A version's identifying labels; `namespace` only under --model-namespacing, as Triton adds it. */
function labels(v: ModelVersion): Record<string, string> {
  return v.namespace ? { model: v.name, version: String(v.version), namespace: v.namespace } : { model: v.name, version: String(v.version) };
}

/** Prometheus label names; a metric_tags key that would make another name is left out. */
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const warned = new Set<string>();

/** The metric_tags keys of the loaded models, sorted, each usable as "_<key>". */
function tagKeysOf(versions: ModelVersion[]): string[] {
  const keys = new Set<string>();
  for (const v of versions) {
    for (const k of Object.keys(v.config.metric_tags ?? {})) {
      if (LABEL.test(`_${k}`) && !k.startsWith("_")) keys.add(k);
      else if (!warned.has(k)) {
        warned.add(k);
        log.warn(`metric_tags key '${k}' of model '${v.name}' does not make a Prometheus label name ('_${k}'); it is left out of the metrics`);
      }
    }
  }
  return [...keys].sort();
}

function tagsOf(v: ModelVersion, tagLabels: string[]): Record<string, string> {
  const tags = v.config.metric_tags;
  if (!tags || tagLabels.length === 0) return {};
  const out: Record<string, string> = {};
  for (const l of tagLabels) {
    const value = tags[l.slice(1)];
    if (value !== undefined) out[l] = value;
  }
  return out;
}

export interface MetricsOptions {
  cpu: boolean;
  /** --allow-gpu-metrics: NVML-backed nv_gpu_* families when a GPU driver is present. */
  gpu?: boolean;
  intervalMs: number;
  /** Whether a version uses the response cache; its nv_cache_* series exist only then. */
  cacheEnabled?: (v: ModelVersion) => boolean;
  /** `--metrics-config counter_latencies=false` drops the *_duration_us counters. */
  counterLatencies?: boolean;
  /** `--metrics-config summary_latencies=true`: the *_summary_us families, with these quantiles. */
  summaryQuantiles?: number[];
  /** `--metrics-config histogram_latencies=true`: nv_inference_first_response_histogram_ms. */
  histogramLatencies?: boolean;
  /** `--model-namespacing`: every per-model family carries a `namespace` label. */
  namespacing?: boolean;
}

/** Triton's default buckets of nv_inference_first_response_histogram_ms (MetricReporterConfig), in ms. */
export const FIRST_RESPONSE_BUCKETS_MS = [100, 500, 2000, 5000];

export type LatencyObserver = (v: ModelVersion, d: RequestDurations) => void;

/** A decoupled request's first response, `ns` after the request started (nv_inference_first_response_histogram_ms). */
export type FirstResponseObserver = (v: ModelVersion, ns: number) => void;

/** Triton's default summary quantiles (`summary_quantiles=0.5:0.05,0.9:0.01,0.95:0.001,0.99:0.001,0.999:0.0001`). */
export const DEFAULT_SUMMARY_QUANTILES = [0.5, 0.9, 0.95, 0.99, 0.999];

/** Parses `--metrics-config summary_quantiles=<q>:<error>,...`; prom-client takes the quantiles only. */
export function parseSummaryQuantiles(v: string | undefined): number[] {
  if (!v) return DEFAULT_SUMMARY_QUANTILES;
  return v.split(",").map((pair) => {
    const q = Number(pair.split(":")[0]);
    if (!(q >= 0 && q <= 1)) throw new Error(`invalid summary quantile '${pair}' in --metrics-config summary_quantiles`);
    return q;
  });
}

export function createMetricsRegistry(
  source: MetricsSource,
  opts: MetricsOptions,
): { registry: Registry; metrics(): Promise<string>; observe?: LatencyObserver; firstResponse?: FirstResponseObserver; close(): void } {
  const registry = new Registry();
  // The per-model families read at scrape time carry the config's metric_tags as
  // "_<key>" labels, as Triton's MetricModelReporter adds them. prom-client fixes a family's
  // label names when it is made, so these families are made again whenever the set of tag
  // keys among the loaded models changes (their values come from the statistics, so
  // nothing is lost). The families observed per request keep model and version only.
  // The summaries, observed per request, are made again too; they start afresh then, as
  // Triton's do whenever a model (re)loads.
  let tagKeys: string[] = [];
  let perModel: string[] = [];
  const base = opts.namespacing ? ["model", "version", "namespace"] : ["model", "version"];
  const histogram = opts.histogramLatencies ? new FirstResponseHistogram(source) : undefined;
  if (histogram) registry.registerMetric(histogram as unknown as Parameters<Registry["registerMetric"]>[0]);
  let observeSummaries: LatencyObserver | undefined;
  const build = (tagLabels: string[]) => {
    const before = new Set(registry.getMetricsAsArray().map((m) => m.name));
    const tagged = (v: ModelVersion) => ({ ...labels(v), ...tagsOf(v, tagLabels) });
    if (histogram) histogram.tagLabels = tagLabels;
    const counter = (name: string, help: string, value: (v: ModelVersion) => number, only?: (v: ModelVersion) => boolean) =>
      new Counter({
        name,
        help,
        labelNames: [...base, ...tagLabels],
        registers: [registry],
        collect() {
          this.reset();
          for (const v of source.versions()) if (!only || only(v)) this.inc(tagged(v), value(v));
        },
      });
    counter("nv_inference_request_success", "Number of successful inference requests, all batch sizes", (v) => v.stats.success.count);
    new Counter({
      name: "nv_inference_request_failure",
      help: "Number of failed inference requests, all batch sizes",
      labelNames: [...base, "reason", ...tagLabels],
      registers: [registry],
      collect() {
        this.reset();
        for (const v of source.versions()) for (const reason of FAILURE_REASONS) this.inc({ ...tagged(v), reason }, v.stats.failures[reason]);
      },
    });
    counter("nv_inference_count", "Number of inferences performed (does not include cached requests)", (v) => v.stats.inferenceCount);
    counter("nv_inference_exec_count", "Number of model executions performed (does not include cached requests)", (v) => v.stats.executionCount);
    if (opts.counterLatencies !== false) {
      counter(
        "nv_inference_request_duration_us",
        "Cumulative inference request duration in microseconds (includes cached requests)",
        (v) => v.stats.metricUs.request,
      );
      counter(
        "nv_inference_queue_duration_us",
        "Cumulative inference queuing duration in microseconds (includes cached requests)",
        (v) => v.stats.metricUs.queue,
      );
      counter(
        "nv_inference_compute_input_duration_us",
        "Cumulative compute input duration in microseconds (does not include cached requests)",
        (v) => v.stats.metricUs.computeInput,
      );
      counter(
        "nv_inference_compute_infer_duration_us",
        "Cumulative compute inference duration in microseconds (does not include cached requests)",
        (v) => v.stats.metricUs.computeInfer,
      );
      counter(
        "nv_inference_compute_output_duration_us",
        "Cumulative inference compute output duration in microseconds (does not include cached requests)",
        (v) => v.stats.metricUs.computeOutput,
      );
    }
    const cached = opts.cacheEnabled ?? (() => false);
    counter("nv_cache_num_hits_per_model", "Number of cache hits per model", (v) => v.stats.cacheHit.count, cached);
    counter("nv_cache_num_misses_per_model", "Number of cache misses per model", (v) => v.stats.cacheMiss.count, cached);
    counter("nv_cache_hit_duration_per_model", "Total cache hit duration per model, in microseconds", (v) => v.stats.metricUs.cacheHit, cached);
    counter(
      "nv_cache_miss_duration_per_model",
      "Total cache miss (insert+lookup) duration per model, in microseconds",
      (v) => v.stats.metricUs.cacheMiss,
      cached,
    );
    new Gauge({
      name: "nv_model_load_duration_secs",
      help: "Model load time in seconds",
      labelNames: [...base, ...tagLabels],
      registers: [registry],
      collect() {
        this.reset();
        for (const v of source.versions()) this.set(tagged(v), v.loadDurationSecs);
      },
    });
    new Gauge({
      name: "nv_inference_pending_request_count",
      help: "Instantaneous number of pending requests awaiting execution per-model.",
      labelNames: [...base, ...tagLabels],
      registers: [registry],
      collect() {
        this.reset();
        for (const v of source.versions()) this.set(tagged(v), v.ready ? v.scheduler.pendingCount() : 0);
      },
    });
    if (opts.summaryQuantiles)
      observeSummaries = summaries(registry, opts.summaryQuantiles, opts.cacheEnabled ?? (() => false), [...base, ...tagLabels], tagged);
    perModel = registry
      .getMetricsAsArray()
      .map((m) => m.name)
      .filter((n) => !before.has(n));
  };
  const refresh = () => {
    const keys = tagKeysOf(source.versions());
    if (keys.join("\0") === tagKeys.join("\0")) return;
    tagKeys = keys;
    for (const name of perModel) registry.removeSingleMetric(name);
    build(keys.map((k) => `_${k}`));
  };
  build([]);

  // Triton reports its CUDA pinned host-memory pool; Nereid allocates none (tensors go to
  // ONNX Runtime, TensorRT and OpenVINO, which pin what they need themselves), so both are 0,
  // as on a Triton host without CUDA.
  new Gauge({
    name: "nv_pinned_memory_pool_total_bytes",
    help: "Pinned memory pool total memory size, in bytes",
    registers: [registry],
    collect() {
      this.set(0);
    },
  });
  new Gauge({
    name: "nv_pinned_memory_pool_used_bytes",
    help: "Pinned memory pool used memory size, in bytes",
    registers: [registry],
    collect() {
      this.set(0);
    },
  });

  let sampler: CpuSampler | undefined;
  if (opts.cpu) {
    sampler = new CpuSampler(opts.intervalMs);
    new Gauge({
      name: "nv_cpu_utilization",
      help: "CPU utilization rate [0.0 - 1.0]",
      registers: [registry],
      collect() {
        this.set(sampler!.utilization);
      },
    });
    new Gauge({
      name: "nv_cpu_memory_total_bytes",
      help: "CPU total memory (RAM), in bytes",
      registers: [registry],
      collect() {
        this.set(sampler!.memory().total);
      },
    });
    new Gauge({
      name: "nv_cpu_memory_used_bytes",
      help: "CPU used memory (RAM), in bytes",
      registers: [registry],
      collect() {
        this.set(sampler!.memory().used);
      },
    });
  }
  let gpu: GpuSampler | undefined;
  if (opts.gpu) {
    gpu = new GpuSampler(opts.intervalMs);
    if (gpu.unavailable) log.info(`GPU metrics unavailable: ${gpu.unavailable.split("\n")[0]}`);
    const gauge = (name: string, help: string, value: (s: GpuSample) => number | undefined) =>
      new Gauge({
        name,
        help,
        labelNames: ["gpu_uuid"],
        registers: [registry],
        collect() {
          this.reset();
          for (const s of gpu!.samples) {
            const v = value(s);
            if (v !== undefined) this.set({ gpu_uuid: s.uuid }, v);
          }
        },
      });
    gauge("nv_gpu_utilization", "GPU utilization rate [0.0 - 1.0)", (s) => s.utilization);
    gauge("nv_gpu_memory_total_bytes", "GPU total memory, in bytes", (s) => s.memoryTotalBytes);
    gauge("nv_gpu_memory_used_bytes", "GPU used memory, in bytes", (s) => s.memoryUsedBytes);
    gauge("nv_gpu_power_usage", "GPU power usage in watts", (s) => s.powerUsageW);
    gauge("nv_gpu_power_limit", "GPU power management limit in watts", (s) => s.powerLimitW);
    new Counter({
      name: "nv_energy_consumption",
      help: "GPU energy consumption in joules since the Triton Server started",
      labelNames: ["gpu_uuid"],
      registers: [registry],
      collect() {
        this.reset();
        for (const s of gpu!.samples) {
          const joules = gpu!.energySinceStartJ(s);
          if (joules !== undefined) this.inc({ gpu_uuid: s.uuid }, joules);
        }
      },
    });
  }
  let observe: LatencyObserver | undefined;
  if (opts.summaryQuantiles || histogram) {
    // A version's first observation makes sure its tag keys have their labels before it is observed.
    const seen = new WeakSet<ModelVersion>();
    observe = (v, d) => {
      if (!seen.has(v)) {
        seen.add(v);
        refresh();
      }
      observeSummaries?.(v, d);
      histogram?.observe(v, d.requestNs);
    };
  }
  const firstResponse = histogram ? (v: ModelVersion, ns: number) => histogram.observe(v, ns) : undefined;
  return {
    registry,
    metrics: () => (refresh(), registry.metrics()),
    observe,
    firstResponse,
    close: () => {
      sampler?.close();
      gpu?.close();
    },
  };
}

/** The family whose buckets a model config's model_metrics may set (Triton's MetricReporterConfig::metric_map_). */
const FIRST_RESPONSE = "nv_inference_first_response_histogram_ms";

/** A model's buckets of the first-response histogram: its config's model_metrics, else Triton's defaults. */
export function firstResponseBuckets(v: ModelVersion): number[] {
  for (const control of v.config.model_metrics?.metric_control ?? []) {
    if (control.metric_identifier?.family !== FIRST_RESPONSE) continue;
    const buckets = (control.histogram_options?.buckets ?? []).map(Number);
    return [...new Set(buckets)].sort((a, b) => a - b);
  }
  return FIRST_RESPONSE_BUCKETS_MS;
}

interface HistogramSeries {
  buckets: number[];
  counts: number[];
  sum: number;
  count: number;
}

/**
 * nv_inference_first_response_histogram_ms: from a request's start to its first response
 * (a decoupled model's first, any other model's only one), in whole milliseconds as
 * Triton's integer division gives them. Each model version has its own buckets, from its
 * config's model_metrics or Triton's defaults, which prom-client's Histogram (one set of
 * buckets per family) cannot hold; so this family is registered as a collector of its own.
 * A series lives as long as its version is loaded, as Triton's model reporter does.
 */
class FirstResponseHistogram {
  readonly name = FIRST_RESPONSE;
  readonly help = "Duration from request to first response in milliseconds";
  readonly type = "histogram";
  readonly aggregator = "sum";
  /** The metric_tags labels of the moment, set when the per-model families are made. */
  tagLabels: string[] = [];
  readonly #series = new Map<ModelVersion, HistogramSeries>();
  readonly #source: MetricsSource;

  constructor(source: MetricsSource) {
    this.#source = source;
  }

  observe(v: ModelVersion, ns: number): void {
    let s = this.#series.get(v);
    if (!s) {
      const buckets = firstResponseBuckets(v);
      s = { buckets, counts: buckets.map(() => 0), sum: 0, count: 0 };
      this.#series.set(v, s);
    }
    const ms = Math.floor(ns / 1e6);
    for (let i = 0; i < s.buckets.length; i++) if (ms <= s.buckets[i]!) s.counts[i]!++;
    s.sum += ms;
    s.count++;
  }

  get() {
    const values: { metricName: string; labels: Record<string, string | number>; value: number }[] = [];
    const loaded = new Set(this.#source.versions());
    for (const [v, s] of this.#series) {
      if (!loaded.has(v)) {
        this.#series.delete(v);
        continue;
      }
      const l = { ...labels(v), ...tagsOf(v, this.tagLabels) };
      s.buckets.forEach((le, i) => values.push({ metricName: `${this.name}_bucket`, labels: { le, ...l }, value: s.counts[i]! }));
      values.push({ metricName: `${this.name}_bucket`, labels: { le: "+Inf", ...l }, value: s.count });
      values.push({ metricName: `${this.name}_sum`, labels: l, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels: l, value: s.count });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    this.#series.clear();
  }
}

/** The *_summary_us families, observed per request (Triton: request summary off for cache-enabled models). */
function summaries(
  registry: Registry,
  percentiles: number[],
  cached: (v: ModelVersion) => boolean,
  labelNames: string[],
  tagged: (v: ModelVersion) => Record<string, string>,
): LatencyObserver {
  const summary = (name: string, help: string) => new Summary({ name, help, labelNames, percentiles, registers: [registry] });
  const request = summary("nv_inference_request_summary_us", "Summary of inference request duration in microseconds (includes cached requests)");
  const queue = summary("nv_inference_queue_summary_us", "Summary of inference queuing duration in microseconds (includes cached requests)");
  const input = summary("nv_inference_compute_input_summary_us", "Summary of compute input duration in microseconds (does not include cached requests)");
  const infer = summary("nv_inference_compute_infer_summary_us", "Summary of compute inference duration in microseconds (does not include cached requests)");
  const output = summary("nv_inference_compute_output_summary_us", "Summary of compute output duration in microseconds (does not include cached requests)");
  const cacheHit = summary("nv_cache_hit_summary_per_model", "Summary of cache hit counts/durations per model, in microseconds.");
  const cacheMiss = summary("nv_cache_miss_summary_per_model", "Summary of cache miss counts/durations per model, in microseconds.");
  return (v, d) => {
    const l = tagged(v);
    if (!cached(v)) request.observe(l, wholeUs(d.requestNs));
    queue.observe(l, wholeUs(d.queueNs));
    if (d.computeInferNs !== undefined) {
      input.observe(l, wholeUs(d.computeInputNs ?? 0));
      infer.observe(l, wholeUs(d.computeInferNs));
      output.observe(l, wholeUs(d.computeOutputNs ?? 0));
    }
    if (d.cacheHitNs !== undefined) cacheHit.observe(l, wholeUs(d.cacheHitNs));
    if (d.cacheMissNs !== undefined) cacheMiss.observe(l, wholeUs(d.cacheMissNs));
  };
}
