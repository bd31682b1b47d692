/**
 * @module check(): every OrtStatus* goes through here. Null is success; otherwise the
 * message and code are copied, the status is released, and a ServerError is thrown
 * whose message reads `onnxruntime: <call>: <OrtErrorCode name>: <ORT's message>`.
 */
import { ServerError } from "../../src/core/errors.ts";
import { ORT_ERROR_CODES, type OrtApi } from "./symbols.ts";
import type { Pointer } from "../load.ts";

export function statusError(api: OrtApi, status: Pointer, what: string): ServerError {
  const code = api.GetErrorCode(status);
  const message = api.GetErrorMessage(status);
  api.ReleaseStatus(status);
  const name = ORT_ERROR_CODES[code] ?? `ORT_ERROR_${code}`;
  const kind = name === "ORT_INVALID_ARGUMENT" ? "INVALID_ARG" : name === "ORT_NOT_IMPLEMENTED" ? "UNSUPPORTED" : "INTERNAL";
  return new ServerError(kind, `onnxruntime: ${what}: ${name}: ${message}`);
}

/** Throws if `status` is an error; `what` names the call for the message. */
export function check(api: OrtApi, status: Pointer, what: string): void {
  if (status) throw statusError(api, status, what);
}
