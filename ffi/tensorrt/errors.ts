/**
 * @module The binding's one error type, a NativeError (so a ServerError with Triton's
 * code, ffi/errors.ts). TensorRT's C++ methods report failure by returning false or null
 * and logging the reason through the ILogger; a TensorRtError from failed() carries the
 * call and the error messages TensorRT logged while it ran, and is INTERNAL unless the
 * caller knows better (a shape outside the optimization profile is the client's
 * INVALID_ARG). A library that cannot be used (wrong major version, a missing entry
 * point) is a TensorRtError too, UNAVAILABLE.
 */
import type { ErrorCode } from "../../src/core/errors.ts";
import { NativeError } from "../errors.ts";

export class TensorRtError extends NativeError {
  /** ERROR / INTERNAL_ERROR messages TensorRT logged during the call. */
  readonly messages: readonly string[];

  constructor(message: string, options: { call?: string; messages?: readonly string[]; code?: ErrorCode } = {}) {
    super(options.code ?? "INTERNAL", "TensorRT", message, { call: options.call });
    this.name = "TensorRtError";
    this.messages = options.messages ?? [];
  }

  /** `call` returned false or null; `messages` are what TensorRT logged meanwhile. */
  static failed(call: string, messages: readonly string[], options: { detail?: string; code?: ErrorCode } = {}): TensorRtError {
    const why = messages.length > 0 ? messages.join("; ") : (options.detail ?? "TensorRT logged no error message");
    return new TensorRtError(`TensorRT ${call} failed: ${why}`, { call, messages, code: options.code });
  }
}
