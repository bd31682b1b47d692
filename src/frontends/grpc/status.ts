/**
 * @module ServerError code → gRPC status, in one place (reference G-09).
 */
import { status } from "@grpc/grpc-js";
import type { ErrorCode } from "../../core/errors.ts";

export function grpcStatus(code: ErrorCode): status {
  switch (code) {
    case "UNKNOWN":
      return status.UNKNOWN;
    case "INTERNAL":
      return status.INTERNAL;
    case "NOT_FOUND":
      return status.NOT_FOUND;
    case "INVALID_ARG":
      return status.INVALID_ARGUMENT;
    case "UNAVAILABLE":
      return status.UNAVAILABLE;
    case "UNSUPPORTED":
      return status.UNIMPLEMENTED;
    case "ALREADY_EXISTS":
      return status.ALREADY_EXISTS;
    case "CANCELLED":
      return status.CANCELLED;
  }
}
