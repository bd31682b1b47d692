/**
 * @module The binding's one error type. TensorRT's C++ methods report failure by
 * returning false or null and logging the reason through the ILogger; a TensorRtError
 * from failed() carries the call and the error messages TensorRT logged while it ran.
 * A library that cannot be used (wrong major version) is a TensorRtError too.
 */
export class TensorRtError extends Error {
  /** The TensorRT method that failed, when a call failed. */
  readonly call: string | undefined;
  /** ERROR / INTERNAL_ERROR messages TensorRT logged during the call. */
  readonly messages: readonly string[];

  constructor(message: string, options: { call?: string; messages?: readonly string[] } = {}) {
    super(message);
    this.name = "TensorRtError";
    this.call = options.call;
    this.messages = options.messages ?? [];
  }

  /** `call` returned false or null; `messages` are what TensorRT logged meanwhile. */
  static failed(call: string, messages: readonly string[], detail = "TensorRT logged no error message"): TensorRtError {
    const why = messages.length > 0 ? messages.join("; ") : detail;
    return new TensorRtError(`TensorRT ${call} failed: ${why}`, { call, messages });
  }
}
