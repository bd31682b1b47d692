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

function shapeMatches(expected: readonly number[], actual: readonly number[]): boolean {
  if (expected.length !== actual.length) return false;
  for (let i = 0; i < expected.length; i++) {
    if (expected[i] !== -1 && expected[i] !== actual[i]) return false;
  }
  return true;
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

const NO_CLASSIFICATION: ReadonlyMap<string, number> = new Map();

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
    outputNames.push(...sig.outputs.keys());
  }

  // Inputs present, none unknown, none twice.
  const seen = new Set<string>();
  for (const input of request.inputs) {
    if (!sig.inputs.has(input.name)) throw invalidArg(`unexpected inference input '${input.name}' for model '${model}'`);
    if (seen.has(input.name)) throw invalidArg(`input '${input.name}' already exists in request`);
    seen.add(input.name);
  }
  const missing = seen.size === sig.inputs.size ? [] : [...sig.inputs.values()].filter((c) => !c.optional && !seen.has(c.name!)).map((c) => c.name!);
  if (missing.length > 0) {
    const required = [...sig.inputs.values()].filter((c) => !c.optional).length;
    const got = request.inputs.map((i) => `'${i.name}'`).join(",");
    throw invalidArg(
      `expected ${required} inputs but got ${request.inputs.length} inputs for model '${model}'. ` +
        `Got input(s) [${got}], but missing required input(s) [${missing.map((m) => `'${m}'`).join(",")}]. ` +
        `Please provide all required input(s).`,
    );
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
    const dims = config.dims ?? [];
    const itemShape = maxBatch > 0 ? input.shape.slice(1) : input.shape;
    if (!shapeMatches(dims, itemShape) || input.shape.some((d) => d < 0)) {
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
    const reshaped = applyReshape(config, itemShape);
    inputs.push({
      name: input.name,
      datatype: input.datatype,
      shape: maxBatch > 0 ? [batchSize, ...reshaped] : reshaped,
      data: input.data,
    });
  }

  return { request, control, batchSize, inputs, outputNames, classification: classification ?? NO_CLASSIFICATION };
}
