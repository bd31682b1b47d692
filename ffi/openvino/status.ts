/**
 * @module check(): every ov_status_e goes through here. OK is success; otherwise a
 * NativeError (a ServerError, ffi/errors.ts) is thrown whose message reads `openvino: <call>: <STATUS>: <text>`, where
 * the text is the library's last error message when the status came from an OpenVINO
 * exception and the library has ov_get_last_err_msg, else ov_get_error_info's phrase.
 *
 * ov_get_last_err_msg keeps one process-wide message (a mutex-guarded std::string in
 * the library), set only by the exception handlers of the C wrappers (CATCH_OV_EXCEPTIONS
 * in src/bindings/c/src/common.h): GENERAL_ERROR, NOT_IMPLEMENTED, REQUEST_BUSY,
 * INFER_CANCELLED and UNKNOW_EXCEPTION. Other statuses (INVALID_C_PARAM...) leave an
 * older message in place, so it is read only for those five. Current libraries return a
 * fresh `new[]` copy per call; the string is copied here and deliberately not given to
 * ov_free, because the first implementation's ownership could not be confirmed and a
 * wrong free would crash the server, where a missed one leaks one short string per error.
 */
import { getKoffi, type Pointer } from "../load.ts";
import type { ErrorCode } from "../../src/core/errors.ts";
import { NativeError } from "../errors.ts";
import { OV_STATUS, statusName } from "./types.ts";
import type { OvApi } from "./symbols.ts";

const SETS_LAST_ERROR: ReadonlySet<number> = new Set([
  OV_STATUS.GENERAL_ERROR,
  OV_STATUS.NOT_IMPLEMENTED,
  OV_STATUS.REQUEST_BUSY,
  OV_STATUS.INFER_CANCELLED,
  OV_STATUS.UNKNOW_EXCEPTION,
]);

function code(status: number): ErrorCode {
  switch (status) {
    case OV_STATUS.NOT_IMPLEMENTED:
    case OV_STATUS.NOT_IMPLEMENT_C_METHOD:
      return "UNSUPPORTED";
    case OV_STATUS.PARAMETER_MISMATCH:
    case OV_STATUS.OUT_OF_BOUNDS:
    case OV_STATUS.INVALID_C_PARAM:
      return "INVALID_ARG";
    case OV_STATUS.INFER_CANCELLED:
      return "CANCELLED";
    default:
      return "INTERNAL";
  }
}

/** The library's text for a failed call: its last error message where that applies, else the status phrase. */
export function errorText(api: OvApi, status: number): string {
  if (SETS_LAST_ERROR.has(status) && api.ov_get_last_err_msg) {
    const p: Pointer = api.ov_get_last_err_msg();
    // Real libraries end the text with blank lines (one per exception frame).
    if (p) return (getKoffi().decode(p, "char", -1) as string).trimEnd();
  }
  return api.ov_get_error_info(status);
}

export function statusError(api: OvApi, status: number, what: string): NativeError {
  return new NativeError(code(status), "openvino", `openvino: ${what}: ${statusName(status)}: ${errorText(api, status)}`, { call: what });
}

/** Throws if `status` is not OK; `what` names the call for the message. */
export function check(api: OvApi, status: number, what: string): void {
  if (status !== OV_STATUS.OK) throw statusError(api, status, what);
}
