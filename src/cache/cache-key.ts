/**
 * @module The response-cache key of a request. Triton hashes the model name, version
 * and each input's name and bytes (reference S-17); Nereid also keys on each input's
 * datatype and shape and the requested output names, so that two requests whose bytes
 * agree but whose shapes, types or outputs differ never share an answer. Requests with
 * up to EXACT_KEY_MAX bytes of input data are keyed by those bytes themselves (as a
 * latin1 string: no hashing, no collisions); larger ones by a SHA-256 digest, which keeps
 * accidental collisions out of the picture (Triton's 64-bit hash_combine does not).
 */
import type { Tensor } from "../core/tensor.ts";
import { lazyBuiltin } from "../core/lazy-builtin.ts";

/** node:crypto, loaded at the first digest (see lazyBuiltin). */
const crypto = lazyBuiltin<typeof import("node:crypto")>("node:crypto");

/** Input bytes up to which the key holds the bytes rather than their digest. */
export const EXACT_KEY_MAX = 1024;

const byName = (a: Tensor, b: Tensor) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** The name a model's entries are keyed by: under --model-namespacing two models may share a name, and the namespace keys them apart. */
export function cacheModelName(name: string, namespace: string | undefined): string {
  return namespace ? `${namespace}\0${name}` : name;
}

export function cacheKey(model: string, version: number, inputs: readonly Tensor[], outputNames: readonly string[]): string {
  const sorted = inputs.length > 1 ? [...inputs].sort(byName) : inputs;
  // Each input's byte length is in the head, so the data that follows splits one way only.
  let head = `${model}\0${version}\0`;
  let bytes = 0;
  for (const t of sorted) {
    head += `${t.name}\0${t.datatype}\0${t.shape.join(",")}\0${t.data.byteLength}\0`;
    bytes += t.data.byteLength;
  }
  head += outputNames.length > 1 ? [...outputNames].sort().join("\0") : (outputNames[0] ?? "");
  if (bytes <= EXACT_KEY_MAX) {
    let key = `=${head}\0`;
    for (const t of sorted) key += Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength).toString("latin1");
    return key;
  }
  const h = crypto().createHash("sha256").update(head);
  for (const t of sorted) h.update(t.data);
  return `#${h.digest("base64")}`;
}
