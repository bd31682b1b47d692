/**
 * @module The native bindings' error type. Every failure under ffi/ is a NativeError, and
 * a NativeError is a ServerError (src/core/errors.ts): it carries one of Triton's eight
 * codes, so the frontends map it to HTTP and gRPC like any other error, and its message
 * names the library and the call. The per-library classes (LibraryLoadError here,
 * CudaError, TensorRtError, SharedMemoryError) add what their library reports.
 *
 * Codes follow what Triton reports for the same failure: a library that cannot be loaded
 * or used makes its backend UNAVAILABLE; a refused argument that came from the client is
 * INVALID_ARG; a feature the library lacks is UNSUPPORTED; anything else is INTERNAL (as
 * Triton's RETURN_IF_CUDA_ERR and its backends' status checks report).
 */
import { ServerError, type ErrorCode } from "../src/core/errors.ts";

export class NativeError extends ServerError {
  /** The library, as the message names it ("CUDA driver", "onnxruntime", "TensorRT", ...). */
  readonly library: string;
  /** The native call that failed, when one did (not for a guard such as "already closed"). */
  readonly call: string | undefined;

  constructor(code: ErrorCode, library: string, message: string, options: { call?: string; cause?: unknown } = {}) {
    super(code, message, { cause: options.cause });
    this.name = "NativeError";
    this.library = library;
    this.call = options.call;
  }

  /**
   * What koffi itself threw or reported around a call (an async call that could not be
   * made, arguments it could not convert): INTERNAL, "<library>: <call>: <koffi's message>".
   */
  static fromKoffi(library: string, call: string, err: unknown): NativeError {
    if (err instanceof NativeError) return err;
    return new NativeError("INTERNAL", library, `${library}: ${call}: ${err instanceof Error ? err.message : String(err)}`, { call, cause: err });
  }
}

/**
 * A shared library that could not be loaded or is not the library asked for (a missing
 * symbol, an unsupported version): UNAVAILABLE, as the backend that needs it cannot serve.
 */
export class LibraryLoadError extends NativeError {
  constructor(message: string, options: { library?: string; call?: string; cause?: unknown } = {}) {
    super("UNAVAILABLE", options.library ?? "", message, { call: options.call ?? "dlopen", cause: options.cause });
    this.name = "LibraryLoadError";
  }
}
