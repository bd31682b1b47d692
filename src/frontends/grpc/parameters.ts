/**
 * @module InferParameter maps ↔ the core's Parameters, with the checks Triton's gRPC
 * frontend makes of reserved keys (src/grpc/infer_handler.cc SetInferenceRequestMetadata,
 * grpc_utils ParseSharedMemoryParams and ParseClassificationParams), in its words. 64-bit
 * values stay exact: a number where that is safe, else a bigint, as HTTP delivers them.
 */
import { invalidArg } from "../../core/errors.ts";
import type { Parameters, ParameterValue } from "../../core/request.ts";

/** An InferParameter: 64-bit values are bigint as decoded (protos.ts REQUEST_DECODE), number or bigint when encoded. */
export interface WireParameter {
  parameter_choice?: string;
  bool_param?: boolean;
  int64_param?: bigint | number;
  string_param?: string;
  double_param?: number;
  uint64_param?: bigint | number;
}

export type WireParameters = Record<string, WireParameter>;

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

/**
 * A 64-bit integer as the core takes integers: a number where that is exact, else the
 * bigint. (Number() of a bigint beyond ±(2^53 − 1) lands on or beyond ±2^53, never safe.)
 */
export function exactInteger(v: bigint | number): number | bigint {
  if (typeof v === "number") return v;
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : v;
}

/** The value of whichever oneof member is set; undefined when none is. */
function value(p: WireParameter): ParameterValue | undefined {
  switch (p.parameter_choice) {
    case "bool_param":
      return p.bool_param ?? false;
    case "int64_param":
      return exactInteger(p.int64_param ?? 0);
    case "string_param":
      return p.string_param ?? "";
    case "double_param":
      return p.double_param ?? 0;
    case "uint64_param":
      return exactInteger(p.uint64_param ?? 0);
    default:
      return undefined;
  }
}

function set(out: Parameters, key: string, v: ParameterValue): void {
  if (key === "__proto__") Object.defineProperty(out, key, { value: v, writable: true, enumerable: true, configurable: true });
  else out[key] = v;
}

const ALLOWED_TRITON_KEYS = ["triton_enable_empty_final_response"];

/**
 * Request-level parameters, checked as Triton's gRPC frontend checks them. Departures:
 * a uint64_param `sequence_id` is taken too (Triton only takes int64_param or
 * string_param), and a negative `timeout` is refused (Triton reads it as a uint64, a
 * timeout of 584,942 years) as HTTP refuses it.
 */
export function requestParameters(map: WireParameters | undefined): Parameters {
  const out: Parameters = {};
  if (!map) return out;
  for (const key of Object.keys(map)) {
    const p = map[key]!;
    const choice = p.parameter_choice;
    switch (key) {
      case "sequence_id":
        // Triton reads the int64 as the uint64 correlation id of the same bits.
        if (choice === "int64_param") set(out, key, exactInteger(BigInt.asUintN(64, BigInt(p.int64_param ?? 0))));
        else if (choice === "uint64_param" || choice === "string_param") set(out, key, value(p)!);
        else throw invalidArg("invalid value type for 'sequence_id' parameter, expected int64_param or string_param.");
        break;
      case "sequence_start":
      case "sequence_end":
        if (choice !== "bool_param") throw invalidArg(`invalid value type for '${key}' parameter, expected bool_param.`);
        set(out, key, p.bool_param ?? false);
        break;
      case "priority":
        if (choice === "int64_param" && (p.int64_param ?? 0) < 0) throw invalidArg("invalid value for 'priority', expected value >= 0.");
        if (choice !== "int64_param" && choice !== "uint64_param") {
          throw invalidArg("invalid value type for 'priority' parameter, expected int64_param or uint64_param.");
        }
        set(out, key, value(p)!);
        break;
      case "timeout":
        if (choice !== "int64_param") throw invalidArg("invalid value type for 'timeout' parameter, expected int64_param.");
        if ((p.int64_param ?? 0) < 0) throw invalidArg("invalid value for 'timeout', expected value >= 0.");
        set(out, key, value(p)!);
        break;
      default:
        if (key.startsWith("triton_")) {
          if (!ALLOWED_TRITON_KEYS.includes(key)) {
            throw invalidArg(
              `parameter keys starting with 'triton_' are reserved for Triton usage. Only the following keys starting with 'triton_' are allowed: ${ALLOWED_TRITON_KEYS.join(" ")}`,
            );
          }
          if (choice !== "bool_param") throw invalidArg(`invalid value type for '${key}' parameter, expected bool_param.`);
          break; // a frontend setting, not passed to the model, as in Triton
        }
        if (choice === "uint64_param" || value(p) === undefined) {
          throw invalidArg(`invalid value type for '${key}' parameter, expected int64_param, bool_param, or string_param.`);
        }
        set(out, key, value(p)!);
    }
  }
  return out;
}

/**
 * An input's or requested output's parameters, with Triton's checks of the shared-memory
 * keys (and, for outputs, of `classification`); undefined when there are none.
 */
export function tensorParameters(map: WireParameters | undefined, tensor: string, output: boolean): Parameters | undefined {
  if (!map) return undefined;
  const keys = Object.keys(map);
  if (keys.length === 0) return undefined;
  const region = map.shared_memory_region;
  if (region && region.parameter_choice !== "string_param") {
    throw invalidArg(`invalid value type for 'shared_memory_region' parameter for tensor '${tensor}', expected string_param.`);
  }
  for (const key of ["shared_memory_offset", "shared_memory_byte_size"]) {
    const p = map[key];
    if (!p) continue;
    if (!region) throw invalidArg(`'${key}' can not be specified without 'shared_memory_region' parameter for tensor '${tensor}'`);
    if (p.parameter_choice !== "int64_param") throw invalidArg(`invalid value type for '${key}' parameter for tensor '${tensor}', expected int64_param.`);
  }
  if (region && !map.shared_memory_byte_size) {
    throw invalidArg(`'shared_memory_byte_size' must be specified along with 'shared_memory_region' parameter for tensor '${tensor}'`);
  }
  const cls = output ? map.classification : undefined;
  if (cls) {
    if (cls.parameter_choice !== "int64_param") throw invalidArg("invalid value type for 'classification' parameter, expected int64_param");
    if ((cls.int64_param ?? 0) <= 0) throw invalidArg("invalid value for 'classification' parameter, expected >= 0");
    if (region) throw invalidArg("output can't set both 'shared_memory_region' and 'classification'");
  }
  const out: Parameters = {};
  for (const key of keys) {
    const v = value(map[key]!);
    if (v !== undefined) set(out, key, v);
  }
  return out;
}

/** A core parameter value as an InferParameter, 64-bit integers exact. */
export function wireParameter(v: ParameterValue): WireParameter {
  if (typeof v === "boolean") return { bool_param: v };
  if (typeof v === "string") return { string_param: v };
  if (typeof v === "bigint") {
    if (v >= INT64_MIN && v <= INT64_MAX) return { int64_param: v };
    return v > 0n && v <= UINT64_MAX ? { uint64_param: v } : { double_param: Number(v) };
  }
  // An integral double below 2^63 is an exact int64; anything else stays a double.
  return Number.isInteger(v) && Math.abs(v) < 2 ** 63 ? { int64_param: v } : { double_param: v };
}

export function wireParameters(params: Parameters): WireParameters {
  const out: WireParameters = {};
  for (const key of Object.keys(params)) out[key] = wireParameter(params[key]!);
  return out;
}
