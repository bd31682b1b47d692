/**
 * @module Custom metrics a Python model makes (pb_utils.MetricFamily / Metric): not yet
 * exported; the stub's metric messages are refused here so the model's call fails
 * instead of counting into nothing.
 */
import type { Message } from "./stub-process.ts";

export class CustomMetrics {
  /** Handles a metric message from a stub; false for a message that is not one. */
  handle(m: Message, _reply: (m: Message) => void): boolean {
    return m.t === "mfam" || m.t === "mnew" || m.t === "mop" || m.t === "mget";
  }
}
