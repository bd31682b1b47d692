/**
 * @module Load-time checks of a normalized model config (Triton's ValidateModelConfig
 * subset that this server relies on), written as valibot schemas. Failures throw
 * INVALID_ARG naming the model and the field.
 */
import * as v from "valibot";
import { invalidArg } from "../core/errors.ts";
import type { ModelConfig } from "./types.ts";

const dimsSchema = v.array(v.pipe(v.number(), v.integer(), v.check((d) => d === -1 || d > 0, "dims must be -1 or positive")));

const tensorSchema = (what: "input" | "output") =>
  v.pipe(
    v.looseObject({
      name: v.pipe(v.string(`${what} must have a name`), v.nonEmpty(`${what} must have a name`)),
      data_type: v.pipe(v.string(`${what} must specify 'data_type'`), v.check((t) => t !== "TYPE_INVALID", `${what} must specify 'data_type'`)),
      dims: v.optional(dimsSchema),
      reshape: v.optional(v.looseObject({ shape: v.optional(dimsSchema) })),
      is_shape_tensor: v.optional(v.boolean()),
    }),
    v.check((t) => (t.dims?.length ?? 0) > 0 || t.reshape !== undefined, `${what} must specify 'dims'`),
  );

const queuePolicy = v.looseObject({ max_queue_size: v.optional(v.number()), default_timeout_microseconds: v.optional(v.number()) });

const configSchema = v.pipe(
  v.looseObject({
    name: v.string(),
    max_batch_size: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0, "'max_batch_size' must be non-negative"))),
    input: v.optional(v.array(tensorSchema("input"))),
    output: v.optional(v.array(tensorSchema("output"))),
    instance_group: v.optional(
      v.array(v.looseObject({ count: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1, "instance group count must be >= 1"))) })),
    ),
    dynamic_batching: v.optional(
      v.looseObject({
        preferred_batch_size: v.optional(v.array(v.number())),
        priority_levels: v.optional(v.number()),
        default_priority_level: v.optional(v.number()),
        default_queue_policy: v.optional(queuePolicy),
      }),
    ),
  }),
  v.check((c) => (c.input ?? []).length + (c.output ?? []).length > 0 || c.backend === "python", "model must specify inputs and outputs"),
  v.check((c) => !c.dynamic_batching || (c.max_batch_size ?? 0) > 0, "dynamic batching requires 'max_batch_size' >= 1"),
  v.check(
    (c) => (c.dynamic_batching?.preferred_batch_size ?? []).every((p) => Number.isInteger(p) && p >= 1 && p <= (c.max_batch_size ?? 0)),
    "dynamic batching preferred size must be in 1..max_batch_size",
  ),
  v.check((c) => {
    const levels = c.dynamic_batching?.priority_levels ?? 0;
    const def = c.dynamic_batching?.default_priority_level ?? 0;
    return levels === 0 || (def >= 1 && def <= levels);
  }, "default_priority_level must be in 1..priority_levels"),
  v.check((c) => uniqueNames(c.input), "input names must be unique"),
  v.check((c) => uniqueNames(c.output), "output names must be unique"),
);

function uniqueNames(list: { name: string }[] | undefined): boolean {
  const names = (list ?? []).map((t) => t.name);
  return new Set(names).size === names.length;
}

/** Returns the config when it is valid; throws INVALID_ARG otherwise. */
export function validateModelConfig(config: ModelConfig, modelName: string): ModelConfig {
  if (config.name && config.name !== modelName) {
    throw invalidArg(`model '${modelName}': config name '${config.name}' does not match the model directory name`);
  }
  const result = v.safeParse(configSchema, { ...config, name: config.name ?? modelName });
  if (!result.success) {
    const issue = result.issues[0];
    const path = issue.path?.map((p) => String(p.key)).join(".") ?? "";
    throw invalidArg(`model '${modelName}'${path ? ` field '${path}'` : ""}: ${issue.message}`);
  }
  return config;
}
