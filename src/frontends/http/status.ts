/**
 * @module ServerError code → HTTP status, in one place (Triton's mapping).
 */
import type { ErrorCode } from "../../core/errors.ts";

export function httpStatus(code: ErrorCode): number {
  switch (code) {
    case "INTERNAL":
      return 500;
    case "NOT_FOUND":
      return 404;
    case "UNAVAILABLE":
      return 503;
    case "UNSUPPORTED":
      return 501;
    case "UNKNOWN":
    case "INVALID_ARG":
    case "ALREADY_EXISTS":
    case "CANCELLED":
      return 400;
  }
}
