/**
 * @module Picks a model version's scheduler from its config, as Triton's
 * TritonModel::SetConfiguredScheduler does: the sequence batcher for
 * `sequence_batching`, the dynamic batcher for `dynamic_batching`, otherwise the default
 * scheduler.
 */
import { DefaultScheduler } from "./default-scheduler.ts";
import { DynamicBatchScheduler } from "./dynamic-batch-scheduler.ts";
import { SequenceBatchScheduler } from "./sequence-batch-scheduler.ts";
import { sequenceSettings } from "./sequence/config.ts";
import type { BackendInstance } from "../backends/backend.ts";
import type { ModelVersion } from "../core/model.ts";
import type { Scheduler } from "./scheduler.ts";

export function createScheduler(mv: ModelVersion, instances: readonly BackendInstance[]): Scheduler {
  if (mv.config.sequence_batching) {
    return new SequenceBatchScheduler({
      modelName: mv.name,
      modelDir: mv.modelDir,
      instances,
      signature: mv.signature,
      settings: sequenceSettings(mv.config),
      stats: mv.stats,
    });
  }
  const dynamic = mv.config.dynamic_batching;
  if (dynamic) {
    return new DynamicBatchScheduler({ modelName: mv.name, instances, signature: mv.signature, config: dynamic, stats: mv.stats });
  }
  return new DefaultScheduler(mv.name, instances, mv.stats);
}
