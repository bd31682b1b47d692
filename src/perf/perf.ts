/**
 * @module `nereid perf`: the perf_analyzer equivalent in the same binary. Reads the
 * model's metadata and config, makes the inputs (in system shared memory with
 * --shared-memory system), measures each concurrency (or request rate) of the range
 * until stable, driving sequences for sequence models, and prints perf_analyzer's
 * report (and its CSV with -f). A failed request ends the run with exit code 1 and the
 * errors the server answered on stderr.
 */
import { writeFileSync } from "node:fs";
import { grpcClient, httpClient, type SendTensor } from "./client.ts";
import { FailureLog } from "./errors.ts";
import { makeRequestData } from "./inputs.ts";
import { concurrencyLoad, measure, rateLoad, type Finisher, type Measurement, type Sender } from "./measure.ts";
import { MetricsCollector } from "./metrics.ts";
import { parsePerfArgs, PerfUsageError, PERF_USAGE, rangeValues, type PerfOptions } from "./options.ts";
import { csvText, measurementText, metricsText, settingText, settingsText, summaryText } from "./report.ts";
import { Sequencer } from "./sequence.ts";
import { placeInSharedMemory } from "./shm.ts";

export async function runPerf(argv: readonly string[], out: (s: string) => void = (s) => process.stdout.write(s)): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    out(PERF_USAGE + "\n");
    return 0;
  }
  let o: PerfOptions;
  try {
    o = parsePerfArgs(argv);
  } catch (err) {
    if (err instanceof PerfUsageError) {
      process.stderr.write(`error: ${err.message}\n\n${PERF_USAGE}\n`);
      return 1;
    }
    throw err;
  }
  const copts = { headers: o.headers, streaming: o.streaming };
  const client = o.protocol === "http" ? httpClient(o.url, o.model, o.version, copts) : grpcClient(o.url, o.model, o.version, copts);
  const cleanup: (() => Promise<void>)[] = [];
  try {
    const info = await client.model();
    if (info.decoupled && !o.streaming) throw new Error(`model '${o.model}' is decoupled: measure it with -i grpc --streaming`);
    const data = makeRequestData(info.inputs, info.maxBatchSize, o.batchSize, o.inputData, o.shapes);
    let sendData: SendTensor[][] = data;
    if (o.sharedMemory === "system") {
      const placed = await placeInSharedMemory(client, data);
      cleanup.push(placed.release);
      sendData = placed.data;
    }
    const outputs = info.outputs.map((x) => x.name);
    const prepared = sendData.map((tensors) => client.prepare(tensors, outputs));
    const seq = info.sequence
      ? new Sequencer({ length: o.sequenceLength, variation: o.sequenceLengthVariation, idStart: o.sequenceIdStart, idRange: o.sequenceIdRange })
      : undefined;
    let next = 0;
    const send: Sender = (slot) => {
      const fire = prepared[next++ % prepared.length]!;
      const flags = seq?.next(slot);
      return () => fire(flags);
    };
    const finish: Finisher | undefined = seq
      ? (slot) => {
          const flags = seq.finish(slot);
          const fire = prepared[next++ % prepared.length]!;
          return flags && (() => fire(flags));
        }
      : undefined;
    out(settingsText(o) + "\n");
    const results: Measurement[] = [];
    const failures = new FailureLog();
    let sentInAll = 0;
    const settings = o.requestRate ? rangeValues(o.requestRate) : rangeValues(o.concurrency);
    for (const setting of settings) {
      out(settingText(setting, o) + "\n");
      const slots = o.requestRate ? o.numOfSequences : setting;
      seq?.reset(slots);
      const metrics = o.collectMetrics ? new MetricsCollector(o.metricsUrl, o.metricsIntervalMs, o.headers) : undefined;
      const { result, sent, failed } = await measure(
        client,
        setting,
        o.requestRate ? "request rate" : "concurrency",
        (sink) => (o.requestRate ? rateLoad(send, setting, sink, slots, seq !== undefined, finish) : concurrencyLoad(send, setting, sink, finish)),
        {
          batchSize: o.batchSize,
          windowMs: o.measurementIntervalMs,
          stabilityPercentage: o.stabilityPercentage,
          maxTrials: o.maxTrials,
          percentile: o.percentile,
          onWindow: o.verbose
            ? (w, pass) =>
                out(
                  `  Pass [${pass}] throughput: ${Number(w.throughput.toPrecision(6))} infer/sec. ${o.percentile ? `p${o.percentile}` : "Avg"} latency: ${Math.round(w.latencyUs)} usec\n`,
                )
            : undefined,
        },
        failures,
      ).finally(() => metrics?.stop());
      sentInAll += sent;
      results.push(result);
      out(measurementText(result, o) + "\n");
      if (metrics) out(metricsText(await metrics.summary()));
      if (failed || failures.total > 0) {
        if (o.verbose) out(`Requests sent in all: ${sentInAll}\n`);
        process.stderr.write(failures.text(sentInAll));
        return 1;
      }
    }
    out(summaryText(results, o));
    if (o.verbose) out(`Requests sent in all: ${sentInAll}\n`);
    if (o.csvFile) writeFileSync(o.csvFile, csvText(results, o));
    return 0;
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    return 1;
  } finally {
    for (const c of cleanup) await c().catch((err: Error) => process.stderr.write(`${err.message}\n`));
    client.close();
  }
}
