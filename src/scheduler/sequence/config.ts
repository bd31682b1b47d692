/**
 * @module The parts of `sequence_batching` the SequenceBatchScheduler uses, read once
 * from the validated config: strategy, capacity, idle timeout, control inputs and
 * implicit state.
 */
import { fromConfigType, type DataType } from "../../core/tensor.ts";
import type { ModelConfig } from "../../core/model-config-types.ts";

export type ControlKind = "CONTROL_SEQUENCE_START" | "CONTROL_SEQUENCE_END" | "CONTROL_SEQUENCE_READY" | "CONTROL_SEQUENCE_CORRID";

export interface ControlInput {
  /** Model input the batcher fills. */
  name: string;
  kind: ControlKind;
  datatype: DataType;
  /** [false, true] values for the boolean kinds. */
  falseTrue: [number | boolean, number | boolean];
}

export interface StateSpec {
  inputName: string;
  outputName: string;
  datatype: DataType;
  /** Dims without the batch dimension; a -1 becomes 1 in the initial state, as in Triton. */
  dims: number[];
  /** Raw initial value (one batch item) from initial_state.data_file; zeros otherwise. */
  initialFile?: string;
}

export interface SequenceSettings {
  strategy: "direct" | "oldest";
  /** direct: slots per instance; oldest: max_candidate_sequences per instance. */
  capacityPerInstance: number;
  maxBatchSize: number;
  preferred: number[];
  maxQueueDelayNs: number;
  idleNs: number;
  controls: ControlInput[];
  states: StateSpec[];
}

interface RawControl {
  kind?: string;
  int32_false_true?: number[];
  fp32_false_true?: number[];
  bool_false_true?: boolean[];
  data_type?: string;
}

interface RawSequence {
  max_sequence_idle_microseconds?: number | string;
  control_input?: { name?: string; control?: RawControl[] }[];
  state?: { input_name?: string; output_name?: string; data_type?: string; dims?: (number | string)[]; initial_state?: { data_file?: string }[] }[];
  direct?: { max_queue_delay_microseconds?: number | string };
  oldest?: { max_candidate_sequences?: number; preferred_batch_size?: number[]; max_queue_delay_microseconds?: number | string };
}

export function sequenceSettings(config: ModelConfig): SequenceSettings {
  const seq = (config.sequence_batching ?? {}) as RawSequence;
  const maxBatch = config.max_batch_size ?? 0;
  const oldest = seq.oldest !== undefined;
  const controls: ControlInput[] = [];
  for (const ci of seq.control_input ?? []) {
    for (const c of ci.control ?? []) {
      const kind = (c.kind ?? "CONTROL_SEQUENCE_START") as ControlKind;
      if (kind === "CONTROL_SEQUENCE_CORRID") {
        controls.push({ name: ci.name!, kind, datatype: fromConfigType(c.data_type ?? "TYPE_UINT64")!, falseTrue: [0, 1] });
      } else if (c.int32_false_true?.length) {
        controls.push({ name: ci.name!, kind, datatype: "INT32", falseTrue: [c.int32_false_true[0]!, c.int32_false_true[1]!] });
      } else if (c.fp32_false_true?.length) {
        controls.push({ name: ci.name!, kind, datatype: "FP32", falseTrue: [c.fp32_false_true[0]!, c.fp32_false_true[1]!] });
      } else {
        const b = c.bool_false_true ?? [false, true];
        controls.push({ name: ci.name!, kind, datatype: "BOOL", falseTrue: [b[0]!, b[1]!] });
      }
    }
  }
  const states: StateSpec[] = (seq.state ?? []).map((s) => {
    const spec: StateSpec = {
      inputName: s.input_name!,
      outputName: s.output_name!,
      datatype: fromConfigType(s.data_type ?? "")!,
      dims: (s.dims ?? []).map((d) => (Number(d) === -1 ? 1 : Number(d))),
    };
    const file = s.initial_state?.[0]?.data_file;
    if (file) spec.initialFile = file;
    return spec;
  });
  const idleUs = Number(seq.max_sequence_idle_microseconds ?? 0) || 1_000_000;
  return {
    strategy: oldest ? "oldest" : "direct",
    capacityPerInstance: oldest ? Math.max(1, seq.oldest!.max_candidate_sequences || Math.max(1, maxBatch)) : Math.max(1, maxBatch),
    maxBatchSize: Math.max(1, maxBatch),
    preferred: oldest ? (seq.oldest!.preferred_batch_size ?? []) : [],
    maxQueueDelayNs: Number((oldest ? seq.oldest!.max_queue_delay_microseconds : seq.direct?.max_queue_delay_microseconds) ?? 0) * 1000,
    idleNs: idleUs * 1000,
    controls,
    states,
  };
}
