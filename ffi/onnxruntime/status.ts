/**
 * @module check(): every OrtStatus* goes through here. Null is success; otherwise the
 * message and code are copied, the status is released, and a NativeError (a ServerError,
 * ffi/errors.ts) is thrown whose message reads `onnxruntime: <call>: <OrtErrorCode name>:
 * <ORT's message>`. ORT_INVALID_ARGUMENT is INVALID_ARG, ORT_NOT_IMPLEMENTED is
 * UNSUPPORTED, every other code INTERNAL.
 */
import { NativeError } from "../errors.ts";
import { ORT_ERROR_CODES, type OrtApi } from "./symbols.ts";
import type { Pointer } from "../load.ts";

export function statusError(api: OrtApi, status: Pointer, what: string): NativeError {
  const code = api.GetErrorCode(status);
  const message = api.GetErrorMessage(status);
  api.ReleaseStatus(status);
  const name = ORT_ERROR_CODES[code] ?? `ORT_ERROR_${code}`;
  const kind = name === "ORT_INVALID_ARGUMENT" ? "INVALID_ARG" : name === "ORT_NOT_IMPLEMENTED" ? "UNSUPPORTED" : "INTERNAL";
  return new NativeError(kind, "onnxruntime", `onnxruntime: ${what}: ${name}: ${message}`, { call: what });
}

/** Throws if `status` is an error; `what` names the call for the message. */
export function check(api: OrtApi, status: Pointer, what: string): void {
  if (status) throw statusError(api, status, what);
}
