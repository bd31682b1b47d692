/**
 * @module The response-cache key of a request. Triton hashes the model name, version
 * and each input's name and bytes (reference S-17); Nereid also hashes each input's
 * datatype and shape and the requested output names, so that two requests whose bytes
 * agree but whose shapes, types or outputs differ never share an answer. SHA-256 keeps
 * accidental collisions out of the picture (Triton's 64-bit hash_combine does not).
 */
import { createHash } from "node:crypto";
import type { Tensor } from "../core/tensor.ts";

export function cacheKey(model: string, version: number, inputs: readonly Tensor[], outputNames: readonly string[]): string {
  const h = createHash("sha256");
  h.update(`${model}\0${version}\0`);
  const sorted = [...inputs].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const t of sorted) {
    h.update(`${t.name}\0${t.datatype}\0${t.shape.join(",")}\0${t.data.byteLength}\0`);
    h.update(t.data);
  }
  h.update([...outputNames].sort().join("\0"));
  return h.digest("base64");
}
