/**
 * @module `nereid perf`: the perf_analyzer equivalent in the same binary. Reads the
 * model's metadata, makes the inputs, measures each concurrency (or request rate) of the
 * range until stable, and prints perf_analyzer's report (and its CSV with -f).
 */
import { writeFileSync } from "node:fs";
import { grpcClient, httpClient } from "./client.ts";
import { makeRequestData } from "./inputs.ts";
import { concurrencyLoad, measure, rateLoad, type Measurement } from "./measure.ts";
import { parsePerfArgs, PerfUsageError, PERF_USAGE, rangeValues } from "./options.ts";
import { csvText, measurementText, settingText, settingsText, summaryText } from "./report.ts";

export async function runPerf(argv: readonly string[], out: (s: string) => void = (s) => process.stdout.write(s)): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    out(PERF_USAGE + "\n");
    return 0;
  }
  let o;
  try {
    o = parsePerfArgs(argv);
  } catch (err) {
    if (err instanceof PerfUsageError) {
      process.stderr.write(`error: ${err.message}\n\n${PERF_USAGE}\n`);
      return 1;
    }
    throw err;
  }
  const client = o.protocol === "http" ? httpClient(o.url, o.model, o.version) : grpcClient(o.url, o.model, o.version);
  try {
    const [meta, maxBatchSize] = await Promise.all([client.metadata(), client.maxBatchSize()]);
    const data = makeRequestData(meta.inputs, maxBatchSize, o.batchSize, o.inputData, o.shapes);
    const outputs = meta.outputs.map((x) => x.name);
    const prepared = data.map((tensors) => client.prepare(tensors, outputs));
    let next = 0;
    const send = () => prepared[next++ % prepared.length]!;
    out(settingsText(o) + "\n");
    const results: Measurement[] = [];
    let sentInAll = 0;
    const settings = o.requestRate ? rangeValues(o.requestRate) : rangeValues(o.concurrency);
    for (const setting of settings) {
      out(settingText(setting, o) + "\n");
      const { result, sent } = await measure(
        client,
        setting,
        o.requestRate ? "request rate" : "concurrency",
        (sink) => (o.requestRate ? rateLoad(send, setting, sink) : concurrencyLoad(send, setting, sink)),
        {
          batchSize: o.batchSize,
          windowMs: o.measurementIntervalMs,
          stabilityPercentage: o.stabilityPercentage,
          maxTrials: o.maxTrials,
          percentile: o.percentile,
          onWindow: o.verbose ? (w, pass) => out(`  Pass [${pass}] throughput: ${Number(w.throughput.toPrecision(6))} infer/sec. ${o.percentile ? `p${o.percentile}` : "Avg"} latency: ${Math.round(w.latencyUs)} usec\n`) : undefined,
        },
      );
      sentInAll += sent;
      results.push(result);
      out(measurementText(result, o) + "\n");
    }
    out(summaryText(results, o));
    if (o.verbose) out(`Requests sent in all: ${sentInAll}\n`);
    if (o.csvFile) writeFileSync(o.csvFile, csvText(results, o));
    return 0;
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    return 1;
  } finally {
    client.close();
  }
}
