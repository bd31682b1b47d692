/**
 * @module Load-time checks of sequence_batching (a valibot schema used by validate.ts):
 * control tensors as Triton's Get{Boolean,Typed}SequenceControlProperties check them,
 * oldest-strategy preferred batch sizes and direct-strategy slot utilization.
 */
import * as v from "valibot";
import { rule } from "./validate-rule.ts";

const controlSchema = v.looseObject({
  kind: v.optional(v.string()),
  int32_false_true: v.optional(v.array(v.number())),
  fp32_false_true: v.optional(v.array(v.number())),
  bool_false_true: v.optional(v.array(v.boolean())),
  data_type: v.optional(v.string()),
});

const sequenceObject = v.looseObject({
  control_input: v.optional(v.array(v.looseObject({ name: v.optional(v.string()), control: v.optional(v.array(controlSchema)) }))),
  oldest: v.optional(v.looseObject({ preferred_batch_size: v.optional(v.array(v.number())) })),
  direct: v.optional(v.looseObject({ minimum_slot_utilization: v.optional(v.number()) })),
});

type Control = v.InferOutput<typeof controlSchema>;
type SequenceBatching = v.InferOutput<typeof sequenceObject>;

const BOOLEAN_KINDS = ["CONTROL_SEQUENCE_START", "CONTROL_SEQUENCE_END", "CONTROL_SEQUENCE_READY"] as const;
const CORRID = "CONTROL_SEQUENCE_CORRID";
const CORRID_TYPES = new Set(["TYPE_UINT64", "TYPE_INT64", "TYPE_UINT32", "TYPE_INT32", "TYPE_STRING"]);
const LISTS = ["int32_false_true", "fp32_false_true", "bool_false_true"] as const;
const EITHER = "'int32_false_true', 'fp32_false_true' or 'bool_false_true'";

/** The problem with the control of one kind, checked as Triton does it. */
function controlOf(kind: string, c: Control): string | undefined {
  const given = LISTS.filter((l) => (c[l]?.length ?? 0) > 0);
  if (kind === CORRID) {
    if (given.length > 0) return `sequence batching must not specify either ${EITHER} for ${kind}`;
    if (!CORRID_TYPES.has(c.data_type ?? "TYPE_INVALID")) {
      return `unexpected data type for control ${kind}. Allowed data types are TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and TYPE_STRING`;
    }
    return undefined;
  }
  if (given.length === 0) return `sequence batching must specify either ${EITHER} for ${kind}`;
  if (given.length > 1) return `sequence batching specifies more than one from 'int32_false_true', 'fp32_false_true' and 'bool_false_true' for ${kind}`;
  if (c[given[0]!]!.length !== 2) return `sequence batching control '${given[0]}' must have exactly 2 entries for ${kind}`;
  return undefined;
}

/** The first problem among the control inputs, or undefined. */
export function controlProblem(seq: SequenceBatching): string | undefined {
  for (const kind of [...BOOLEAN_KINDS, CORRID]) {
    const tensors = new Set<string>();
    let seen = false;
    for (const input of seq.control_input ?? []) {
      if (!input.name) return "sequence batching control tensor must have a name";
      if (tensors.has(input.name)) return `sequence batching control tensor '${input.name}' is specified for multiple control kinds`;
      tensors.add(input.name);
      for (const c of input.control ?? []) {
        if ((c.kind ?? "CONTROL_SEQUENCE_START") !== kind) continue;
        if (seen) return `sequence batching specifies multiple ${kind} tensors`;
        seen = true;
        const problem = controlOf(kind, c);
        if (problem) return problem;
      }
    }
  }
  return undefined;
}

/** The sequence_batching schema for a model whose max_batch_size is `maxBatch`. */
export function sequenceBatchingSchema(maxBatch: number) {
  const preferred = (s: SequenceBatching) => s.oldest?.preferred_batch_size ?? [];
  const utilization = (s: SequenceBatching) => s.direct?.minimum_slot_utilization ?? 0;
  return v.pipe(
    sequenceObject,
    rule<SequenceBatching>(
      "control_input",
      (s) => controlProblem(s) === undefined,
      (s) => controlProblem(s)!,
    ),
    rule<SequenceBatching>(
      "oldest",
      (s) => preferred(s).every((b) => b > 0),
      (s) => `sequence batching preferred batch size must be positive, got ${preferred(s).find((b) => b <= 0)}`,
    ),
    rule<SequenceBatching>(
      "oldest",
      (s) => preferred(s).every((b) => b <= maxBatch),
      (s) => `sequence batching preferred batch size must be <= max batch size ${maxBatch}, got ${preferred(s).find((b) => b > maxBatch)}`,
    ),
    rule<SequenceBatching>(
      "direct",
      (s) => utilization(s) >= 0 && utilization(s) <= 1,
      (s) => `sequence batching minimum slot utilization must be in range (0.0, 1.0], got ${utilization(s)}`,
    ),
  );
}
