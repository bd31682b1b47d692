/**
 * @module A model's response parameters as the server takes them from the TypeScript and
 * Python backends: an object of strings, booleans and finite numbers, as Triton's
 * TRITONBACKEND_ResponseSet*Parameter calls allow; anything else fails the request.
 */
import { internal } from "../core/errors.ts";
import type { Parameters } from "../core/request.ts";

/** `v` checked as a response's `parameters` of `model`; undefined when absent or empty. */
export function responseParameters(model: string, v: unknown): Parameters | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "object" || Array.isArray(v)) throw internal(`model '${model}' returned response 'parameters' that are not an object`);
  const out: Parameters = {};
  for (const [k, x] of Object.entries(v)) {
    if (typeof x !== "string" && typeof x !== "boolean" && !(typeof x === "number" && Number.isFinite(x))) {
      throw internal(`model '${model}' returned response parameter '${k}' that is not a string, boolean or finite number`);
    }
    Object.defineProperty(out, k, { value: x, writable: true, enumerable: true, configurable: true });
  }
  return Object.keys(out).length > 0 ? out : undefined;
}
