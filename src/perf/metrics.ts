/**
 * @module --collect-metrics: the server's Prometheus metrics (--metrics-url, default
 * localhost:8002/metrics) scraped every --metrics-interval ms while a setting is
 * measured, summarized as perf_analyzer does: per GPU, the average utilization and
 * power and the largest memory use, with the total memory. A server without GPUs has
 * none of these metrics; the summary then says how many scrapes found none.
 */

export interface MetricsSummary {
  scrapes: number;
  /** The first scrape error, if any. */
  error: string | undefined;
  utilization: Map<string, number>;
  power: Map<string, number>;
  memoryUsed: Map<string, number>;
  memoryTotal: Map<string, number>;
}

/** `name{gpu_uuid="..."} value` samples of `text`, by GPU. */
export function gpuSamples(text: string, name: string): Map<string, number> {
  const out = new Map<string, number>();
  const re = new RegExp(`^${name}\\{([^}]*)\\}\\s+(\\S+)`, "gm");
  for (const m of text.matchAll(re)) {
    const gpu = /gpu_uuid="([^"]*)"/.exec(m[1]!)?.[1] ?? "";
    out.set(gpu, Number(m[2]));
  }
  return out;
}

export class MetricsCollector {
  readonly #url: string;
  readonly #headers: Record<string, string>;
  readonly #timer: ReturnType<typeof setInterval>;
  readonly #scrapes: Promise<void>[] = [];
  readonly #texts: string[] = [];
  #error: string | undefined;

  constructor(url: string, intervalMs: number, headers: [string, string][]) {
    this.#url = /^https?:\/\//.test(url) ? url : `http://${url}`;
    this.#headers = Object.fromEntries(headers);
    this.#scrape();
    this.#timer = setInterval(() => this.#scrape(), intervalMs);
  }

  #scrape(): void {
    this.#scrapes.push(
      fetch(this.#url, { headers: this.#headers })
        .then(async (res) => {
          if (!res.ok) throw new Error(`HTTP ${res.status}`);
          this.#texts.push(await res.text());
        })
        .catch((err: Error) => {
          this.#error ??= `${this.#url}: ${err.message}`;
        }),
    );
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  async summary(): Promise<MetricsSummary> {
    this.stop();
    await Promise.all(this.#scrapes);
    const series = (name: string) => this.#texts.map((t) => gpuSamples(t, name));
    const fold = (maps: Map<string, number>[], how: "avg" | "max") => {
      const all = new Map<string, number[]>();
      for (const m of maps) for (const [g, v] of m) all.set(g, [...(all.get(g) ?? []), v]);
      return new Map([...all].map(([g, vs]) => [g, how === "avg" ? vs.reduce((s, v) => s + v, 0) / vs.length : Math.max(...vs)]));
    };
    return {
      scrapes: this.#texts.length,
      error: this.#error,
      utilization: fold(series("nv_gpu_utilization"), "avg"),
      power: fold(series("nv_gpu_power_usage"), "avg"),
      memoryUsed: fold(series("nv_gpu_memory_used_bytes"), "max"),
      memoryTotal: fold(series("nv_gpu_memory_total_bytes"), "max"),
    };
  }
}
