/**
 * @module `nereid perf`'s output in perf_analyzer's shape: the per-setting client and
 * server blocks, the closing throughput-vs-latency lines, and the -f CSV (rows in
 * increasing throughput, latencies in µs).
 */
import type { Measurement } from "./measure.ts";
import type { MetricsSummary } from "./metrics.ts";
import type { PerfOptions } from "./options.ts";

const us = (x: number) => String(Math.round(x));

/** The server's average split per request, in µs (perf_analyzer's "Server:" numbers). */
export function serverSplit(m: Measurement) {
  const n = Math.max(1, m.server.success.count);
  const queue = m.server.queue.ns / n / 1000;
  const input = m.server.compute_input.ns / n / 1000;
  const infer = m.server.compute_infer.ns / n / 1000;
  const output = m.server.compute_output.ns / n / 1000;
  const request = m.server.success.ns / n / 1000;
  return { request, queue, input, infer, output, overhead: Math.max(0, request - queue - input - infer - output) };
}

export function settingsText(o: PerfOptions): string {
  return [
    "*** Measurement Settings ***",
    `  Batch size: ${o.batchSize}`,
    "  Service Kind: TRITON",
    '  Using "time_windows" mode for stabilization',
    `  Stabilizing using ${o.percentile ? `p${o.percentile} latency` : "average latency"} and throughput`,
    `  Measurement window: ${o.measurementIntervalMs} msec`,
    o.requestRate
      ? "  Using uniform distribution on request generation"
      : `  Using ${o.async || o.streaming ? "asynchronous" : "synchronous"} calls for inference`,
    "",
  ].join("\n");
}

/** The line that opens each setting's block (the passes of -v follow it). */
export function settingText(setting: number, o: PerfOptions): string {
  return o.requestRate ? `Request Rate: ${setting} inference requests per seconds` : `Request concurrency: ${setting}`;
}

/** A setting's Client and Server blocks. */
export function measurementText(m: Measurement, o: PerfOptions): string {
  const s = serverSplit(m);
  const proto = o.protocol === "http" ? "HTTP" : "gRPC";
  return [
    "  Client: ",
    `    Request count: ${m.requests}`,
    ...(m.failures ? [`    Failed request count: ${m.failures}`] : []),
    `    Throughput: ${round(m.throughput)} infer/sec`,
    `    Avg latency: ${us(m.avgLatencyUs)} usec (standard deviation ${us(m.stdLatencyUs)} usec)`,
    ...Object.entries(m.percentilesUs).map(([p, v]) => `    p${p} latency: ${us(v)} usec`),
    `    Avg ${proto} time: ${us(m.avgSendUs + m.avgWaitUs + m.avgRecvUs)} usec (send/recv ${us(m.avgSendUs + m.avgRecvUs)} usec + response wait ${us(m.avgWaitUs)} usec)`,
    "  Server: ",
    `    Inference count: ${m.server.inference_count}`,
    `    Execution count: ${m.server.execution_count}`,
    `    Successful request count: ${m.server.success.count}`,
    `    Avg request latency: ${us(s.request)} usec (overhead ${us(s.overhead)} usec + queue ${us(s.queue)} usec + compute input ${us(s.input)} usec + compute infer ${us(s.infer)} usec + compute output ${us(s.output)} usec)`,
    "",
  ].join("\n");
}

const round = (x: number) => String(Number(x.toPrecision(6)));

const latencyOf = (m: Measurement, o: PerfOptions) => (o.percentile ? (m.percentilesUs[o.percentile] ?? percentileFallback(m, o.percentile)) : m.avgLatencyUs);
const percentileFallback = (m: Measurement, p: number) => m.percentilesUs[p] ?? m.avgLatencyUs;

export function summaryText(ms: readonly Measurement[], o: PerfOptions): string {
  const lines = [`Inferences/Second vs. Client ${o.percentile ? `p${o.percentile}` : "Average"} Batch Latency`];
  for (const m of ms)
    lines.push(
      `${o.requestRate ? "Request Rate" : "Concurrency"}: ${m.setting}, throughput: ${round(m.throughput)} infer/sec, latency ${us(latencyOf(m, o))} usec`,
    );
  return lines.join("\n") + "\n";
}

/** perf_analyzer's CSV columns (with --verbose-csv: Avg latency, request/response, response wait). */
export function csvHeader(o: PerfOptions): string {
  const cols = [
    o.requestRate ? "Request Rate" : "Concurrency",
    "Inferences/Second",
    "Client Send",
    "Network+Server Send/Recv",
    "Server Queue",
    "Server Compute Input",
    "Server Compute Infer",
    "Server Compute Output",
    "Client Recv",
    "p50 latency",
    "p90 latency",
    "p95 latency",
    "p99 latency",
  ];
  if (o.verboseCsv) cols.push("Avg latency", "request/response", "response wait");
  return cols.join(",");
}

export function csvText(ms: readonly Measurement[], o: PerfOptions): string {
  const rows = [...ms]
    .sort((a, b) => a.throughput - b.throughput)
    .map((m) => {
      const s = serverSplit(m);
      const network = Math.max(0, m.avgLatencyUs - m.avgSendUs - m.avgRecvUs - s.queue - s.input - s.infer - s.output);
      const cells = [
        String(m.setting),
        round(m.throughput),
        us(m.avgSendUs),
        us(network),
        us(s.queue),
        us(s.input),
        us(s.infer),
        us(s.output),
        us(m.avgRecvUs),
        ...[50, 90, 95, 99].map((p) => us(m.percentilesUs[p] ?? 0)),
      ];
      if (o.verboseCsv) cells.push(us(m.avgLatencyUs), us(m.avgSendUs + m.avgRecvUs), us(m.avgWaitUs));
      return cells.join(",");
    });
  return [csvHeader(o), ...rows].join("\n") + "\n";
}

/** --collect-metrics: perf_analyzer's "Server Prometheus Metrics" block for a setting. */
export function metricsText(m: MetricsSummary): string {
  const lines = ["  Server Prometheus Metrics: "];
  const block = (title: string, values: Map<string, number>, unit: (v: number) => string) => {
    lines.push(`    ${title}:`);
    for (const [gpu, v] of values) lines.push(`      ${gpu} : ${unit(v)}`);
  };
  block("Avg GPU Utilization", m.utilization, (v) => `${round(v * 100)}%`);
  block("Avg GPU Power Usage", m.power, (v) => `${round(v)} watts`);
  block("Max GPU Memory Usage", m.memoryUsed, (v) => `${Math.round(v)} bytes`);
  block("Total GPU Memory", m.memoryTotal, (v) => `${Math.round(v)} bytes`);
  lines.push(`    Scrapes: ${m.scrapes}${m.error ? ` (failed: ${m.error})` : ""}`);
  return lines.join("\n") + "\n\n";
}
