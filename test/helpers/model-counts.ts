/**
 * The counts of a model version's statistics and Prometheus metrics that two runs of the
 * same requests must agree on (no durations): what the frontend-thread tests compare.
 */
import type { ServerProcess } from "./server-process.ts";

/** Version 1 of `model`'s statistics counts and the Prometheus samples beside them. */
export async function modelCounts(server: ServerProcess, model: string) {
  const s = ((await (await fetch(`${server.url}/v2/models/${model}/stats`)).json()) as any).model_stats[0];
  const metrics = await (await fetch(`${server.metricsUrl}/metrics`)).text();
  const sample = (name: string, extra = "") => Number(new RegExp(`^${name}\\{model="${model}",version="1"${extra}\\} (\\S+)$`, "m").exec(metrics)?.[1] ?? 0);
  return {
    success: s.inference_stats.success.count,
    fail: s.inference_stats.fail.count,
    queue: s.inference_stats.queue.count,
    computeInfer: s.inference_stats.compute_infer.count,
    inferenceCount: s.inference_count,
    executionCount: s.execution_count,
    batches: s.batch_stats.map((b: any) => [b.batch_size, b.compute_infer.count]) as [number, number][],
    metricSuccess: sample("nv_inference_request_success"),
    metricOther: sample("nv_inference_request_failure", ',reason="OTHER"'),
    metricRejected: sample("nv_inference_request_failure", ',reason="REJECTED"'),
    metricCount: sample("nv_inference_count"),
    metricExec: sample("nv_inference_exec_count"),
    metricPending: sample("nv_inference_pending_request_count"),
  };
}
