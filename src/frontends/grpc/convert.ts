/**
 * @module ModelInferRequest / ModelInferResponse (as plain objects from protos.ts) ↔ the
 * core's InferenceRequest / InferenceResponse. Wire-format checks only.
 */
import { invalidArg } from "../../core/errors.ts";
import { countBytesElements, ELEMENT_SIZE, elementCount, isDataType, type DataType } from "../../core/tensor.ts";
import { checkBytesElements } from "../../core/tensor-limits.ts";
import { valuesToBytes } from "../../core/tensor-values.ts";
import type { InferenceRequest, InferenceResponse, InputTensor, Parameters, RequestedOutput } from "../../core/request.ts";
import { requestParameters, tensorParameters, wireParameters, type WireParameters } from "./parameters.ts";

/** Typed contents; 64-bit values are bigint as decoded (protos.ts REQUEST_DECODE). */
export interface WireContents {
  bool_contents?: boolean[];
  int_contents?: number[];
  int64_contents?: (bigint | number)[];
  uint_contents?: number[];
  uint64_contents?: (bigint | number)[];
  fp32_contents?: number[];
  fp64_contents?: number[];
  bytes_contents?: Uint8Array[];
}

export interface WireInferRequest {
  model_name?: string;
  model_version?: string;
  id?: string;
  parameters?: WireParameters;
  inputs?: { name?: string; datatype?: string; shape?: (bigint | number)[]; parameters?: WireParameters; contents?: WireContents }[];
  outputs?: { name?: string; parameters?: WireParameters }[];
  raw_input_contents?: Uint8Array[];
}

/** Typed `contents` → tensor bytes, by the datatype's repeated field. */
function contentsToBytes(datatype: DataType, c: WireContents, name: string): Uint8Array {
  const where = `input '${name}'`;
  switch (datatype) {
    case "BOOL":
      return valuesToBytes(datatype, c.bool_contents ?? [], where);
    case "INT8":
    case "INT16":
    case "INT32":
      return valuesToBytes(datatype, c.int_contents ?? [], where);
    case "INT64":
      return valuesToBytes(datatype, c.int64_contents ?? [], where);
    case "UINT8":
    case "UINT16":
    case "UINT32":
      return valuesToBytes(datatype, c.uint_contents ?? [], where);
    case "UINT64":
      return valuesToBytes(datatype, c.uint64_contents ?? [], where);
    case "FP32":
      return valuesToBytes(datatype, c.fp32_contents ?? [], where);
    case "FP64":
      return valuesToBytes(datatype, c.fp64_contents ?? [], where);
    case "BYTES":
      // serializeStrings: one buffer written in place (joinBytes costs a DataView call per element).
      return valuesToBytes(datatype, c.bytes_contents ?? [], where);
    case "FP16":
    case "BF16":
      throw invalidArg(`${where}: datatype ${datatype} has no typed contents field; send it in raw_input_contents`);
  }
}

const INT64_MAX = 2n ** 63n - 1n;
const INT64_MAX_TEXT = "9223372036854775807";

/**
 * A dims list with a dim beyond ±(2^53 − 1), which no request can carry data for: refused
 * with the error Triton's core gives that shape (its GetElementCount and GetByteSize,
 * then the byte size or string count check), the numbers exact. `got` is the data's size.
 */
function unsafeShapeError(dims: bigint[], name: string, datatype: DataType, modelName: string, got: () => number) {
  const strings = datatype === "BYTES";
  let count = 1n;
  for (const d of dims) {
    if (d < 0n) return invalidArg(`tensor '${name}' contains an invalid dimension${strings ? " in shape" : ""} [${dims.join(",")}]`);
    count *= d;
    if (count > INT64_MAX) {
      return invalidArg(`${strings ? "element count" : "byte size"} for tensor '${name}' exceeds maximum size of ${INT64_MAX_TEXT}`);
    }
  }
  const size = BigInt(strings ? 4 : ELEMENT_SIZE[datatype]);
  if (count > INT64_MAX / size) return invalidArg(`byte size for tensor '${name}' exceeds maximum size of ${INT64_MAX_TEXT}`);
  if (strings) return invalidArg(`expected ${count} string elements for inference input '${name}' for model '${modelName}', got ${got()}`);
  return invalidArg(`input byte size mismatch for input '${name}' for model '${modelName}'. Expected ${count * size}, got ${got()}`);
}

/** Wire dims (bigint as decoded) → numbers; see unsafeShapeError for dims that do not fit. */
function shapeOf(dims: readonly (bigint | number)[], fail: (dims: bigint[]) => Error): number[] {
  const shape = new Array<number>(dims.length);
  for (let i = 0; i < dims.length; i++) {
    const d = dims[i]!;
    const n = Number(d); // exact when safe; see exactInteger
    if (typeof d === "number" || Number.isSafeInteger(n)) shape[i] = n;
    else throw fail(dims.map((x) => BigInt(x)));
  }
  return shape;
}

export function toInferenceRequest(msg: WireInferRequest): InferenceRequest {
  const modelName = msg.model_name ?? "";
  // Request parameters first, as Triton checks them before the inputs.
  const parameters = requestParameters(msg.parameters);
  const raw = msg.raw_input_contents ?? [];
  const wireInputs = msg.inputs ?? [];
  // Inputs in shared memory take no raw_input_contents entry, as in Triton.
  const inShm = (w: (typeof wireInputs)[number]) => w.parameters?.shared_memory_region !== undefined;
  const rawCount = wireInputs.filter((w) => !inShm(w)).length;
  if (raw.length > 0 && raw.length !== rawCount) {
    throw invalidArg(`expected ${rawCount} raw_input_contents (one per input) but got ${raw.length} for model '${modelName}'`);
  }
  let rawIndex = 0;
  const inputs: InputTensor[] = wireInputs.map((w) => {
    const name = w.name ?? "";
    const datatype = w.datatype ?? "";
    if (!isDataType(datatype)) throw invalidArg(`input '${name}': unsupported datatype '${datatype}'`);
    const tensorParams = tensorParameters(w.parameters, name, false);
    let data: Uint8Array | undefined;
    if (inShm(w)) {
      data = new Uint8Array(0); // read from the region by the core
    } else if (raw.length > 0) {
      if (w.contents && Object.values(w.contents).some((v) => Array.isArray(v) && v.length > 0)) {
        throw invalidArg(`contents field must not be specified when using raw_input_contents for '${name}' for model '${modelName}'`);
      }
      data = raw[rawIndex++]!;
    }
    // Typed contents are converted once the shape has passed the element limits.
    const dataOf = () => (data ??= contentsToBytes(datatype, w.contents ?? {}, name));
    const shape = shapeOf(w.shape ?? [], (dims) =>
      unsafeShapeError(dims, name, datatype, modelName, () => {
        if (inShm(w)) return Number(tensorParams?.shared_memory_byte_size ?? 0);
        return datatype === "BYTES" ? countBytesElements(dataOf()) : dataOf().byteLength;
      }),
    );
    if (datatype === "BYTES") checkBytesElements(name, shape, elementCount(shape));
    data = dataOf();
    const input: InputTensor = { name, datatype, shape, data };
    if (tensorParams) input.parameters = tensorParams;
    return input;
  });
  const request: InferenceRequest = { modelName, modelVersion: msg.model_version || undefined, parameters, inputs };
  if (msg.id) request.id = msg.id;
  if (msg.outputs && msg.outputs.length > 0) {
    request.outputs = msg.outputs.map((o): RequestedOutput => {
      const name = o.name ?? "";
      const p = tensorParameters(o.parameters, name, true);
      return p ? { name, parameters: p } : { name };
    });
  }
  return request;
}

const EMPTY_CONTENTS = new Uint8Array(0);

/** The response with every output in raw_output_contents, as Triton always does. */
export function fromInferenceResponse(r: InferenceResponse, extra?: Parameters) {
  const params = { ...r.parameters, ...extra };
  return {
    model_name: r.modelName,
    model_version: r.modelVersion,
    id: r.id ?? "",
    parameters: wireParameters(params),
    outputs: r.outputs.map((t) =>
      t.sharedMemory
        ? {
            name: t.name,
            datatype: t.datatype,
            shape: t.shape,
            parameters: {
              shared_memory_region: { string_param: t.sharedMemory.region },
              shared_memory_byte_size: { int64_param: t.sharedMemory.byteSize },
              ...(t.sharedMemory.offset ? { shared_memory_offset: { int64_param: t.sharedMemory.offset } } : {}),
            },
          }
        : { name: t.name, datatype: t.datatype, shape: t.shape },
    ),
    // One entry per output, as Triton's allocator adds one for every output: an output
    // written to shared memory has an empty entry, so raw_output_contents[i] stays outputs[i].
    raw_output_contents: r.outputs.map((t) => (t.sharedMemory ? EMPTY_CONTENTS : t.data)),
  };
}
