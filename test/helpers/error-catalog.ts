/**
 * The error catalog (issue #20): each of Triton's eight codes with the HTTP status and
 * the gRPC status a client gets for it. Triton's mapping, reference/triton-features.md
 * §1.3 (P-08) and §3.6 (G-09): HttpCodeFromError in server src/http_server.cc and
 * GrpcStatusCodeFromError in src/grpc/grpc_utils.cc.
 */
import { status } from "@grpc/grpc-js";
import type { ErrorCode } from "../../src/core/errors.ts";

export const ERROR_CATALOG: Readonly<Record<ErrorCode, { http: number; grpc: status }>> = {
  UNKNOWN: { http: 400, grpc: status.UNKNOWN },
  INTERNAL: { http: 500, grpc: status.INTERNAL },
  NOT_FOUND: { http: 404, grpc: status.NOT_FOUND },
  INVALID_ARG: { http: 400, grpc: status.INVALID_ARGUMENT },
  UNAVAILABLE: { http: 503, grpc: status.UNAVAILABLE },
  UNSUPPORTED: { http: 501, grpc: status.UNIMPLEMENTED },
  ALREADY_EXISTS: { http: 400, grpc: status.ALREADY_EXISTS },
  CANCELLED: { http: 400, grpc: status.CANCELLED },
};
