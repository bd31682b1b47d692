/**
 * @module A backend's outputs as the client asked for them: in the order requested, each
 * in the shape the config declares (an output with a reshape gets its config dims back).
 */
import { ServerError } from "./errors.ts";
import type { ModelSignature } from "./signature.ts";
import type { Tensor } from "./tensor.ts";

/** The outputs `names` of `raw` (a backend's answer), in that order, reshaped as the config says. */
export function orderedOutputs(sig: ModelSignature, raw: Tensor[], names: readonly string[]): Tensor[] {
  const batched = sig.maxBatchSize > 0;
  // Backends answer in the order asked; look outputs up by name only when they did not.
  let inOrder = raw.length === names.length;
  for (let i = 0; inOrder && i < raw.length; i++) inOrder = raw[i]!.name === names[i];
  // The common answer: every output in order and none reshaped is the backend's list (copied:
  // a cache hit's list is the cache's own).
  if (inOrder && !names.some((name) => sig.outputs.get(name)?.reshape)) return raw.slice();
  const byName = inOrder ? undefined : new Map(raw.map((t) => [t.name, t]));
  return names.map((name, i) => {
    const t = byName ? byName.get(name) : raw[i];
    if (!t) throw new ServerError("INTERNAL", `model '${sig.name}' did not produce output '${name}'`);
    const config = sig.outputs.get(name)!;
    return config.reshape ? { ...t, shape: apiShape(t.shape, config.dims ?? [], config.reshape.shape ?? [], batched) } : t;
  });
}

/** Output shape as the config declares it, for outputs with a reshape. */
function apiShape(modelShape: readonly number[], dims: readonly number[], reshape: readonly number[], batched: boolean): number[] {
  const rest = batched ? modelShape.slice(1) : modelShape;
  const variable = reshape.map((d, i) => (d === -1 ? rest[i]! : undefined)).filter((d): d is number => d !== undefined);
  const shape = dims.map((d) => (d === -1 ? (variable.shift() ?? 1) : d));
  return batched ? [modelShape[0]!, ...shape] : shape;
}
