/**
 * @module Picks a model version's scheduler from its config, as Triton's
 * TritonModel::SetConfiguredScheduler does: the dynamic batcher when `dynamic_batching`
 * is present, otherwise the default scheduler.
 */
import { DefaultScheduler } from "./default-scheduler.ts";
import { DynamicBatchScheduler } from "./dynamic-batch-scheduler.ts";
import type { BackendInstance } from "../backends/backend.ts";
import type { ModelVersion } from "../core/model.ts";
import type { Scheduler } from "./scheduler.ts";

export function createScheduler(mv: ModelVersion, instances: readonly BackendInstance[]): Scheduler {
  const dynamic = mv.config.dynamic_batching;
  if (dynamic) {
    return new DynamicBatchScheduler({ modelName: mv.name, instances, signature: mv.signature, config: dynamic, stats: mv.stats });
  }
  return new DefaultScheduler(mv.name, instances, mv.stats);
}
