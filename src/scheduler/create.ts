/**
 * @module Picks a model version's scheduler from its config, the one place that does, as
 * Triton's TritonModel::SetConfiguredScheduler does: the ensemble scheduler for an
 * ensemble, the sequence batcher for `sequence_batching`, the dynamic batcher for
 * `dynamic_batching` (either batcher on the scheduling thread when a host takes it), otherwise the default scheduler
 * (there too for a version whose rate limiter runs there).
 */
import { isEnsemble } from "../model-config/normalize.ts";
import { DefaultScheduler } from "./default-scheduler.ts";
import { DynamicBatchScheduler } from "./dynamic-batch-scheduler.ts";
import { EnsembleScheduler } from "./ensemble-scheduler.ts";
import { SequenceBatchScheduler } from "./sequence-batch-scheduler.ts";
import { sequenceSettings } from "./sequence/config.ts";
import type { BackendInstance } from "../backends/backend.ts";
import type { ModelConfig } from "../core/model-config-types.ts";
import type { ModelRunner } from "../core/runner.ts";
import type { ModelSignature } from "../core/signature.ts";
import type { ModelStats } from "../core/stats.ts";
import type { Scheduler } from "./scheduler.ts";

/** The model version a scheduler serves (the repository's ModelVersion is one). */
export interface ScheduledModel {
  readonly name: string;
  /** Its namespace under --model-namespacing ("" otherwise): an ensemble's steps prefer it. */
  readonly namespace?: string;
  /** `<repo>/<model>`, for files the config names. */
  readonly modelDir: string;
  readonly config: ModelConfig;
  readonly signature: ModelSignature;
  readonly stats: ModelStats;
}

/** Another thread that runs some versions' schedulers (server/batch-thread.ts): its scheduler for `model`, or undefined. */
export interface SchedulerHost {
  scheduler(model: ScheduledModel, instances: readonly BackendInstance[]): Scheduler | undefined;
  /** Its scheduler for sequence-batched `model`, or undefined. */
  sequenceScheduler?(model: ScheduledModel, instances: readonly BackendInstance[]): Scheduler | undefined;
  /** Its default scheduler for `model` (a version whose rate limiter runs there), or undefined. */
  plainScheduler?(model: ScheduledModel, instances: readonly BackendInstance[]): Scheduler | undefined;
}

/**
 * The scheduler over `instances` (none for an ensemble, whose steps call other models
 * through `runner`, the server's inference path).
 */
export function createScheduler(model: ScheduledModel, instances: readonly BackendInstance[], runner: ModelRunner, host?: SchedulerHost): Scheduler {
  if (isEnsemble(model.config)) return new EnsembleScheduler(model.config, runner, model.namespace, model.stats);
  if (model.config.sequence_batching) {
    const elsewhere = host?.sequenceScheduler?.(model, instances);
    if (elsewhere) return elsewhere;
    return new SequenceBatchScheduler({
      modelName: model.name,
      modelDir: model.modelDir,
      instances,
      signature: model.signature,
      settings: sequenceSettings(model.config),
      stats: model.stats,
    });
  }
  const dynamic = model.config.dynamic_batching;
  if (dynamic) {
    const elsewhere = host?.scheduler(model, instances);
    if (elsewhere) return elsewhere;
    return new DynamicBatchScheduler({ modelName: model.name, instances, signature: model.signature, config: dynamic, stats: model.stats });
  }
  return host?.plainScheduler?.(model, instances) ?? new DefaultScheduler(model.name, instances, model.stats);
}
