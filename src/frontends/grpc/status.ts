/**
 * @module ServerError code → gRPC status, in one place (reference G-09).
 */
import { Metadata, status } from "@grpc/grpc-js";
import { ServerError, type ErrorCode } from "../../core/errors.ts";
import { getLogger } from "../../core/logger.ts";

const log = getLogger("src/frontends/grpc/status.ts");

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

/** A ServerError (or anything thrown) as the status grpc-js sends; INTERNAL ones are logged. */
export function toGrpcError(err: unknown) {
  const e = ServerError.from(err);
  if (e.code === "INTERNAL") log.error(e.message);
  return grpcError(grpcStatus(e.code), e.message);
}

/** The status grpc-js sends for a code and message (a worker thread's, logged where it arose). */
export function grpcError(code: status, message: string) {
  return { code, details: statusDetails(message), metadata: new Metadata() };
}

/** Percent-encoded bytes the status message may take in its trailer (grpc-js clients accept 8 KiB of metadata). */
const MAX_DETAILS = 4096;

/**
 * The status message as it can travel: one that echoes a long client string (a model name
 * of 40,000 characters) would overflow the trailer, and the call would end in RST_STREAM
 * with no status at all. Percent-encoding takes at most 3 characters a UTF-8 byte.
 */
export function statusDetails(message: string): string {
  if (Buffer.byteLength(message) * 3 <= MAX_DETAILS) return message;
  const suffix = `... (${message.length} characters)`;
  let cut = Math.floor((MAX_DETAILS - suffix.length * 3) / 3);
  while (Buffer.byteLength(message.slice(0, cut)) * 3 > MAX_DETAILS - suffix.length * 3) cut = Math.floor(cut * 0.75);
  return message.slice(0, cut) + suffix;
}
