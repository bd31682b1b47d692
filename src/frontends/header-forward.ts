/**
 * @module Header forwarding (P-30): `--http-header-forward-pattern` and
 * `--grpc-header-forward-pattern`. Request headers (HTTP) or metadata (gRPC) whose name
 * the pattern matches anywhere (RE2's PartialMatch) become string request parameters,
 * as Triton's frontends add them. Triton puts "(?i)" before the pattern, so matching is
 * case-insensitive unless the pattern starts with "(?-i)". A matching name that is a
 * reserved parameter or starts with "triton_" fails the request.
 */
import { invalidArg } from "../core/errors.ts";
import type { Parameters } from "../core/request.ts";

/** Triton's kReservedParameterKeys (server src/common.h). */
const RESERVED = new Set(["sequence_id", "sequence_start", "sequence_end", "priority", "timeout", "headers", "binary_data_output"]);

/** The pattern as a RegExp (undefined for ""); throws with the flag's name when it does not compile. */
export function compileHeaderForwardPattern(flag: string, pattern: string): RegExp | undefined {
  if (!pattern) return undefined;
  let source = pattern;
  let flags = "i";
  if (source.startsWith("(?-i)")) {
    source = source.slice(5);
    flags = "";
  } else if (source.startsWith("(?i)")) {
    source = source.slice(4);
  }
  try {
    return new RegExp(source, flags);
  } catch (err) {
    throw new Error(`--${flag}: invalid regular expression '${pattern}': ${(err as Error).message}`);
  }
}

/** Adds every header whose name `pattern` matches to `parameters` as a string parameter. */
export function forwardHeaders(pattern: RegExp, headers: Iterable<readonly [string, string]>, parameters: Parameters): void {
  for (const [name, value] of headers) {
    if (!pattern.test(name)) continue;
    if (RESERVED.has(name) || name.startsWith("triton_")) throw invalidArg(`Header '${name}' is reserved for Triton usage and cannot be forwarded.`);
    parameters[name] = value;
  }
}

/** What a call's or request's headers add to each of its inference requests' parameters, when forwarding is on. */
export type HeaderForwarder = ((parameters: Parameters) => void) | undefined;
