/**
 * @module Merging requests into one batch and splitting the outputs back (what Triton's
 * backends do with a payload of several requests): inputs are concatenated along the
 * batch dimension, outputs are cut by each request's batch size. Also decides which
 * requests may share a batch (RequiredEqualInputs in Triton's scheduler_utils.cc).
 */
import { internal } from "../core/errors.ts";
import { elementCount, ELEMENT_SIZE, type Tensor } from "../core/tensor.ts";
import type { ModelSignature } from "../core/signature.ts";

/**
 * Which inputs must match between requests of one batch: inputs with a variable dim
 * (unless allow_ragged_batch) by shape, shape tensors by shape and value. With optional
 * inputs, the set of inputs given must match too.
 */
export interface BatchRules {
  readonly equalShape: ReadonlySet<string>;
  readonly equalValue: ReadonlySet<string>;
  readonly ragged: ReadonlySet<string>;
  readonly checkInputSet: boolean;
}

export function batchRules(sig: ModelSignature): BatchRules {
  const equalShape = new Set<string>();
  const equalValue = new Set<string>();
  const ragged = new Set<string>();
  let optional = false;
  for (const input of sig.inputs.values()) {
    const name = input.name!;
    if (input.optional) optional = true;
    if (input.allow_ragged_batch) {
      ragged.add(name);
      continue;
    }
    if (input.is_shape_tensor) {
      equalShape.add(name);
      equalValue.add(name);
    } else if ((input.dims ?? []).some((d) => d === -1)) {
      equalShape.add(name);
    }
  }
  return { equalShape, equalValue, ragged, checkInputSet: optional };
}

/**
 * A string that is equal for two requests exactly when they may share a batch; "" when
 * every request may (fixed dims only, no optional inputs).
 */
export function batchKey(inputs: readonly Tensor[], rules: BatchRules): string {
  if (rules.equalShape.size === 0 && !rules.checkInputSet) return "";
  const parts: string[] = [];
  for (const t of inputs) {
    if (rules.equalShape.has(t.name)) {
      let part = `${t.name}:${t.shape.slice(1).join(",")}`;
      if (rules.equalValue.has(t.name)) part += `=${Array.from(t.data).join(",")}`;
      parts.push(part);
    } else if (rules.checkInputSet) {
      parts.push(t.name);
    }
  }
  return parts.sort().join(";");
}

/**
 * Concatenates each input along dim 0, in the order of the first request's inputs.
 * Ragged inputs become one flat 1-D tensor of all elements, as Triton's onnxruntime
 * backend passes them.
 */
export function concatInputs(batch: readonly (readonly Tensor[])[], ragged: ReadonlySet<string>): Tensor[] {
  const first = batch[0]!;
  return first.map((t, i) => {
    const parts = batch.map((inputs) => (inputs[i]!.name === t.name ? inputs[i]! : inputs.find((x) => x.name === t.name)!));
    let bytes = 0;
    let rows = 0;
    let elements = 0;
    for (const p of parts) {
      bytes += p.data.byteLength;
      rows += p.shape[0] ?? 1;
      elements += elementCount(p.shape);
    }
    const data = new Uint8Array(bytes);
    let off = 0;
    for (const p of parts) {
      data.set(p.data, off);
      off += p.data.byteLength;
    }
    const shape = ragged.has(t.name) ? [elements] : [rows, ...t.shape.slice(1)];
    return { name: t.name, datatype: t.datatype, shape, data };
  });
}

/** Cuts each output back into one piece per request, by the requests' batch sizes. */
export function splitOutputs(outputs: readonly Tensor[], sizes: readonly number[], modelName: string): Tensor[][] {
  const total = sizes.reduce((a, b) => a + b, 0);
  const perRequest: Tensor[][] = sizes.map(() => []);
  for (const t of outputs) {
    if (t.shape.length === 0 || t.shape[0] !== total) {
      throw internal(
        `model '${modelName}' returned output '${t.name}' with shape [${t.shape.join(",")}] for a batch of ${total}; ` +
          `the first dimension must be the batch size`,
      );
    }
    const rowElements = elementCount(t.shape) / total;
    const rowOffsets = t.datatype === "BYTES" ? bytesRowOffsets(t.data, rowElements, total) : undefined;
    const rowBytes = rowElements * ELEMENT_SIZE[t.datatype];
    let row = 0;
    sizes.forEach((n, r) => {
      const start = rowOffsets ? rowOffsets[row]! : row * rowBytes;
      const end = rowOffsets ? rowOffsets[row + n]! : (row + n) * rowBytes;
      perRequest[r]!.push({ name: t.name, datatype: t.datatype, shape: [n, ...t.shape.slice(1)], data: t.data.subarray(start, end) });
      row += n;
    });
  }
  return perRequest;
}

/** Byte offset where each row of a serialized BYTES tensor starts, plus the end. */
function bytesRowOffsets(data: Uint8Array, rowElements: number, rows: number): number[] {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const offsets = [0];
  let off = 0;
  for (let r = 0; r < rows; r++) {
    for (let e = 0; e < rowElements; e++) {
      if (off + 4 > data.byteLength) throw internal("BYTES output is shorter than its shape");
      off += 4 + view.getUint32(off, true);
    }
    offsets.push(off);
  }
  return offsets;
}
