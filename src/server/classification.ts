/**
 * @module The classification extension: replaces an output with a BYTES tensor of the
 * top-k "value:index[:label]" strings per batch item, values printed as C++'s
 * std::to_string does (six decimals for floating point).
 */
import { readAsNumbers } from "../core/tensor-values.ts";
import { joinBytes, type Tensor } from "../core/tensor.ts";

const encoder = new TextEncoder();

function formatValue(v: number, datatype: string): string {
  if (datatype === "FP16" || datatype === "FP32" || datatype === "FP64" || datatype === "BF16") {
    if (Number.isNaN(v)) return "nan";
    if (!Number.isFinite(v)) return v > 0 ? "inf" : "-inf";
    return v.toFixed(6);
  }
  return String(v);
}

/**
 * @param batched true when the first dim of `tensor` is the batch dimension.
 * @param labels  lines of the output's label_filename, if any.
 */
export function classify(tensor: Tensor, k: number, batched: boolean, labels: readonly string[] | undefined): Tensor {
  const values = readAsNumbers(tensor);
  const batch = batched ? (tensor.shape[0] ?? 1) : 1;
  const per = batch > 0 ? values.length / batch : 0;
  const take = Math.min(k, per);
  const elements: Uint8Array[] = [];
  for (let b = 0; b < batch; b++) {
    const idx = Array.from({ length: per }, (_, i) => i);
    idx.sort((x, y) => values[b * per + y]! - values[b * per + x]! || x - y);
    for (const i of idx.slice(0, take)) {
      const label = labels?.[i];
      const text = `${formatValue(values[b * per + i]!, tensor.datatype)}:${i}${label ? `:${label}` : ""}`;
      elements.push(encoder.encode(text));
    }
  }
  return { name: tensor.name, datatype: "BYTES", shape: batched ? [batch, take] : [take], data: joinBytes(elements) };
}

/**
 * `outputs` (in the order asked for) with those named in `classification` replaced by their
 * top k classes: what the main thread's core and a frontend worker both answer.
 * @param batched true when the model batches (the first dim is the batch dimension).
 * @param labels  each output's label_filename lines, by output name.
 */
export function classifyOutputs(
  outputs: Tensor[],
  classification: ReadonlyMap<string, number>,
  batched: boolean,
  labels: ReadonlyMap<string, readonly string[]> | undefined,
): Tensor[] {
  if (classification.size === 0) return outputs;
  return outputs.map((t) => {
    const k = classification.get(t.name);
    return k === undefined ? t : classify(t, k, batched, labels?.get(t.name));
  });
}
