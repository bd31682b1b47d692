/**
 * @module `model_warmup`: before a version is marked READY, each warmup sample runs
 * `count` times (at least once) on every instance, as Triton does. Inputs are zeros,
 * random bytes, or the raw contents of `<model>/warmup/<input_data_file>`. Samples are
 * validated like requests and bypass the scheduler, so they do not count in statistics.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { randomFillSync } from "node:crypto";
import { invalidArg, ServerError } from "../core/errors.ts";
import { prepareForInference } from "../core/request-validate.ts";
import { elementCount, ELEMENT_SIZE, fromConfigType, joinBytes } from "../core/tensor.ts";
import type { BackendInstance } from "../backends/backend.ts";
import type { ModelSignature } from "../core/signature.ts";
import type { InputTensor } from "../core/request.ts";

interface WarmupInput {
  data_type?: string;
  dims?: (number | string)[];
  zero_data?: boolean;
  random_data?: boolean;
  input_data_file?: string;
}

interface WarmupSample {
  name?: string;
  batch_size?: number;
  inputs?: Record<string, WarmupInput>;
  count?: number;
}

export async function warmUp(
  samples: readonly Record<string, unknown>[],
  sig: ModelSignature,
  modelDir: string,
  instances: readonly BackendInstance[],
): Promise<void> {
  for (const raw of samples) {
    const sample = raw as WarmupSample;
    const label = `warmup sample '${sample.name ?? ""}' of model '${sig.name}'`;
    try {
      const batch = sig.maxBatchSize > 0 ? Math.max(1, Number(sample.batch_size ?? 1)) : 0;
      const inputs = Object.entries(sample.inputs ?? {}).map(([name, input]) => warmupTensor(name, input, batch, modelDir));
      const prepared = prepareForInference({ modelName: sig.name, parameters: {}, inputs }, sig);
      for (const instance of instances) {
        for (let i = 0; i < Math.max(1, Number(sample.count ?? 1)); i++) await instance.execute(prepared.inputs, prepared.outputNames);
      }
    } catch (err) {
      throw new ServerError("INVALID_ARG", `${label} failed: ${ServerError.from(err).message}`, { cause: err });
    }
  }
}

function warmupTensor(name: string, input: WarmupInput, batch: number, modelDir: string): InputTensor {
  const datatype = fromConfigType(input.data_type ?? "");
  if (!datatype) throw invalidArg(`input '${name}' has no valid data_type`);
  const dims = (input.dims ?? []).map(Number);
  const shape = batch > 0 ? [batch, ...dims] : dims;
  const count = elementCount(shape);
  let data: Uint8Array;
  if (input.input_data_file) {
    // The file holds one batch item; it is repeated for each item, as Triton does.
    const bytes = new Uint8Array(readFileSync(join(modelDir, "warmup", input.input_data_file)));
    data = batch > 1 ? repeat(bytes, batch) : bytes;
  } else if (datatype === "BYTES") {
    const element = input.random_data ? randomFillSync(new Uint8Array(8)) : new Uint8Array(0);
    data = joinBytes(Array.from({ length: count }, () => element));
  } else {
    data = new Uint8Array(count * ELEMENT_SIZE[datatype]);
    if (input.random_data) randomFillSync(data);
  }
  return { name, datatype, shape, data };
}

function repeat(bytes: Uint8Array, times: number): Uint8Array {
  const out = new Uint8Array(bytes.byteLength * times);
  for (let i = 0; i < times; i++) out.set(bytes, i * bytes.byteLength);
  return out;
}
