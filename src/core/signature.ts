/**
 * @module A model's request-facing signature, derived once from its normalized config:
 * inputs and outputs by name with protocol datatypes, and the metadata shapes.
 */
import { fromConfigType, type DataType } from "./tensor.ts";
import { internal } from "./errors.ts";
import type { ModelConfig, ModelInput, ModelOutput } from "./model-config-types.ts";

export interface ModelSignature {
  name: string;
  maxBatchSize: number;
  inputs: Map<string, ModelInput>;
  outputs: Map<string, ModelOutput>;
  inputTypes: Map<string, DataType>;
  outputTypes: Map<string, DataType>;
}

function protocolType(t: string | undefined, where: string): DataType {
  const dt = fromConfigType(t ?? "");
  if (!dt) throw internal(`${where} has unsupported data type '${t}'`);
  return dt;
}

export function signatureOf(config: ModelConfig): ModelSignature {
  const name = config.name ?? "";
  const sig: ModelSignature = {
    name,
    maxBatchSize: config.max_batch_size ?? 0,
    inputs: new Map(),
    outputs: new Map(),
    inputTypes: new Map(),
    outputTypes: new Map(),
  };
  for (const i of config.input ?? []) {
    sig.inputs.set(i.name!, i);
    sig.inputTypes.set(i.name!, protocolType(i.data_type, `input '${i.name}' of model '${name}'`));
  }
  for (const o of config.output ?? []) {
    sig.outputs.set(o.name!, o);
    sig.outputTypes.set(o.name!, protocolType(o.data_type, `output '${o.name}' of model '${name}'`));
  }
  return sig;
}

/** Shapes as model metadata reports them: [-1] + dims for batching models. */
export function metadataShape(dims: readonly number[] | undefined, maxBatchSize: number): number[] {
  return maxBatchSize > 0 ? [-1, ...(dims ?? [])] : [...(dims ?? [])];
}
