/**
 * @module Semantic checks of an inference request against the model's config, done once
 * before queueing (Triton's InferenceRequest::Normalize). Schedulers and backends may
 * assume what leaves here is valid. Messages follow Triton's wording.
 */
import { invalidArg } from "./errors.ts";
import { countBytesElements, elementCount, ELEMENT_SIZE, shapeToString, type Tensor } from "./tensor.ts";
import { checkBytesElements } from "./tensor-limits.ts";
import { parseControl, type InferenceRequest, type RequestControl } from "./request.ts";
import type { ModelInput } from "./model-config-types.ts";
import type { ModelSignature } from "./signature.ts";

export interface PreparedRequest {
  request: InferenceRequest;
  /** The request's control fields (sequence, priority, timeout), parsed once. */
  control: RequestControl;
  /** 1 for models without batching. */
  batchSize: number;
  /** Inputs in the model's own shapes (batch dim kept, reshape applied). */
  inputs: Tensor[];
  /** Output names to return, in the order the client asked for them (config order by default). */
  outputNames: string[];
  /** output name → top-k count, for the classification extension. */
  classification: ReadonlyMap<string, number>;
}

const NO_DIMS: readonly number[] = [];

/** Whether `actual` from index `from` on (past the batch dimension) matches the config's `expected` dims (-1: any). */
function shapeMatches(expected: readonly number[], actual: readonly number[], from: number): boolean {
  if (expected.length !== actual.length - from) return false;
  for (let i = 0; i < expected.length; i++) {
    if (expected[i] !== -1 && expected[i] !== actual[i + from]) return false;
  }
  return true;
}

function hasNegative(shape: readonly number[]): boolean {
  for (let i = 0; i < shape.length; i++) if (shape[i]! < 0) return true;
  return false;
}

function applyReshape(config: ModelInput, shape: number[]): number[] {
  if (!config.reshape) return shape;
  const variable: number[] = [];
  (config.dims ?? []).forEach((d, i) => d === -1 && variable.push(shape[i]!));
  return (config.reshape.shape ?? []).map((d) => (d === -1 ? variable.shift()! : d));
}

function positiveInt(v: unknown): number | undefined {
  if (typeof v === "bigint") v = Number(v);
  return typeof v === "number" && Number.isInteger(v) && v > 0 ? v : undefined;
}

/** The classification of a request that asks for none: one empty map, never written. */
export const NO_CLASSIFICATION: ReadonlyMap<string, number> = new Map();

/**
 * Validates `request` for `sig` and returns what the scheduler needs; throws INVALID_ARG.
 * `control` is the request's parsed control fields when the caller has them already.
 */
export function prepareForInference(request: InferenceRequest, sig: ModelSignature, control?: RequestControl): PreparedRequest {
  control ??= parseControl(request.parameters);
  const model = sig.name;
  const maxBatch = sig.maxBatchSize;

  // Requested outputs.
  const outputNames: string[] = [];
  let classification: Map<string, number> | undefined;
  if (request.outputs && request.outputs.length > 0) {
    for (const out of request.outputs) {
      if (!sig.outputs.has(out.name)) throw invalidArg(`unexpected inference output '${out.name}' for model '${model}'`);
      if (outputNames.includes(out.name)) throw invalidArg(`output '${out.name}' already requested`);
      outputNames.push(out.name);
      const cls = out.parameters?.classification;
      if (cls !== undefined) {
        const k = positiveInt(cls);
        if (k === undefined) throw invalidArg(`classification count for output '${out.name}' must be a positive integer`);
        (classification ??= new Map()).set(out.name, k);
      }
    }
  } else {
    for (const name of sig.outputs.keys()) outputNames.push(name);
  }

  // Inputs present, none unknown, none twice.
  const given = request.inputs;
  for (let i = 0; i < given.length; i++) {
    const name = given[i]!.name;
    if (!sig.inputs.has(name)) throw invalidArg(`unexpected inference input '${name}' for model '${model}'`);
    for (let j = 0; j < i; j++) if (given[j]!.name === name) throw invalidArg(`input '${name}' already exists in request`);
  }
  // Every input given is known and none twice: with as many as the model has, none is missing.
  if (given.length !== sig.inputs.size) {
    const seen = new Set(given.map((x) => x.name));
    const missing = [...sig.inputs.values()].filter((c) => !c.optional && !seen.has(c.name!)).map((c) => c.name!);
    if (missing.length > 0) {
      const required = [...sig.inputs.values()].filter((c) => !c.optional).length;
      const got = given.map((i) => `'${i.name}'`).join(",");
      throw invalidArg(
        `expected ${required} inputs but got ${given.length} inputs for model '${model}'. ` +
          `Got input(s) [${got}], but missing required input(s) [${missing.map((m) => `'${m}'`).join(",")}]. ` +
          `Please provide all required input(s).`,
      );
    }
  }

  // Batch size.
  let batchSize = 1;
  if (maxBatch > 0) {
    // The first input sets it, even to 0 (which then mismatches a later 1), as in Triton.
    let first = true;
    for (const input of request.inputs) {
      if (input.shape.length === 0) {
        throw invalidArg(`input '${input.name}' has no shape but model requires batch dimension for '${model}'`);
      }
      if (first) {
        batchSize = input.shape[0]!;
        first = false;
      } else if (input.shape[0] !== batchSize) {
        throw invalidArg(`input '${input.name}' batch size does not match other inputs for '${model}'`);
      }
    }
    if (batchSize < 1) throw invalidArg(`inference request batch-size must be >= 1 for '${model}'`);
    if (batchSize > maxBatch) throw invalidArg(`inference request batch-size must be <= ${maxBatch} for '${model}'`);
  }

  // Per input: datatype, shape, byte size.
  const inputs: Tensor[] = [];
  for (const input of request.inputs) {
    const config = sig.inputs.get(input.name)!;
    const expectedType = sig.inputTypes.get(input.name)!;
    if (input.datatype !== expectedType) {
      throw invalidArg(`inference input '${input.name}' data-type is '${input.datatype}', but model '${model}' expects '${expectedType}'`);
    }
    const dims = config.dims ?? NO_DIMS;
    if (!shapeMatches(dims, input.shape, maxBatch > 0 ? 1 : 0) || hasNegative(input.shape)) {
      const expected = maxBatch > 0 ? [-1, ...dims] : dims;
      let msg = `unexpected shape for input '${input.name}' for model '${model}'. Expected ${shapeToString(expected)}, got ${shapeToString(input.shape)}`;
      if (maxBatch > 0) {
        msg +=
          ". NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to be prepended to each input shape. " +
          "If you want to specify the full shape including the batch dim in your input dims config, try setting max_batch_size to zero. " +
          "See the model configuration docs for more info on max_batch_size.";
      }
      throw invalidArg(msg);
    }
    const count = elementCount(input.shape);
    if (input.datatype === "BYTES") {
      checkBytesElements(input.name, input.shape, count);
      const elements = countBytesElements(input.data, `input '${input.name}' for model '${model}'`);
      if (elements !== count) {
        throw invalidArg(`expected ${count} string elements for inference input '${input.name}' for model '${model}', got ${elements}`);
      }
    } else {
      const expectedBytes = count * ELEMENT_SIZE[input.datatype];
      if (input.data.byteLength !== expectedBytes) {
        throw invalidArg(`input byte size mismatch for input '${input.name}' for model '${model}'. Expected ${expectedBytes}, got ${input.data.byteLength}`);
      }
    }
    let shape: number[];
    if (!config.reshape) {
      shape = input.shape.slice();
    } else {
      const reshaped = applyReshape(config, maxBatch > 0 ? input.shape.slice(1) : input.shape);
      shape = maxBatch > 0 ? [batchSize, ...reshaped] : reshaped;
    }
    inputs.push({ name: input.name, datatype: input.datatype, shape, data: input.data });
  }

  return { request, control, batchSize, inputs, outputNames, classification: classification ?? NO_CLASSIFICATION };
}
