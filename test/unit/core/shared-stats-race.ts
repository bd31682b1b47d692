/**
 * Run by shared-stats.test.ts under Bun: two worker threads each count RECORDS requests in
 * their own slot of one version's shared counters while this thread folds them into a
 * ModelStats over and over. Prints, as JSON, how many folds saw one update's counts in
 * part (any is a defect), and the statistics once both workers are done.
 */
import { isMainThread, parentPort, workerData, Worker } from "node:worker_threads";
import { ModelStats } from "../../../src/core/stats.ts";
import { SharedStatsReader, SharedStatsWriter, sharedStatsBuffer } from "../../../src/core/shared-stats.ts";

const RECORDS = 200_000;
const MAX_BATCH = 4;

if (isMainThread) {
  const buffer = sharedStatsBuffer(2, MAX_BATCH);
  const reader = new SharedStatsReader(buffer);
  const stats = new ModelStats();
  const workers = [0, 1].map((slot) => new Worker(new URL(import.meta.url), { workerData: { buffer, slot } }));
  let running = workers.length;
  for (const w of workers) w.once("message", () => running--);
  let folds = 0;
  let torn = 0;
  while (running > 0) {
    for (let k = 0; k < 50; k++) {
      reader.fold(stats);
      folds++;
      // Each success is 1,500 ns (1 µs in the metrics) with 1 ns queued; each execution of batch size 1 or 2 has 5 ns of compute.
      const s = stats.success;
      const sizes = [...stats.batch.values()];
      const executions = sizes.reduce((n, b) => n + b.compute_infer.count, 0);
      const inferences = sizes.reduce((n, b) => n + b.batch_size * b.compute_infer.count, 0);
      const inferNs = sizes.reduce((n, b) => n + b.compute_infer.ns, 0);
      const success = s.ns === 1500 * s.count && stats.queue.count === s.count && stats.queue.ns === s.count && stats.metricUs.request === s.count;
      const execution = executions === stats.executionCount && inferences === stats.inferenceCount && inferNs === 5 * executions;
      if (!success || !execution) torn++;
    }
    await new Promise((r) => setImmediate(r));
  }
  reader.fold(stats);
  await Promise.all(workers.map((w) => w.terminate()));
  const json = stats.toJSON("m", "1");
  console.log(
    JSON.stringify({
      folds,
      torn,
      inference_count: json.inference_count,
      execution_count: json.execution_count,
      success: json.inference_stats.success,
      queue: json.inference_stats.queue,
      batch_stats: json.batch_stats,
      metricUs: stats.metricUs.request,
    }),
  );
} else {
  const { buffer, slot } = workerData as { buffer: SharedArrayBuffer; slot: number };
  const writer = new SharedStatsWriter(buffer, slot);
  for (let i = 0; i < RECORDS; i++) {
    writer.recordExecution(1 + (i % 2), 0, 5, 0);
    writer.recordSuccess(1500, 1, 0, 5, 0);
  }
  parentPort!.postMessage("done");
}
