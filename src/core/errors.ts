/**
 * @module The one error type of the server. Every failure that reaches a client is a
 * ServerError carrying one of Triton's eight status codes; frontends map the code to
 * HTTP or gRPC in one place each (frontends/http/status.ts, frontends/grpc/status.ts).
 */
import type { FailureReason } from "./stats.ts";

export const ERROR_CODES = ["UNKNOWN", "INTERNAL", "NOT_FOUND", "INVALID_ARG", "UNAVAILABLE", "UNSUPPORTED", "ALREADY_EXISTS", "CANCELLED"] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export class ServerError extends Error {
  readonly code: ErrorCode;
  /** The nv_inference_request_failure reason, where the thrower knows it (a scheduler's rejection). */
  readonly reason: FailureReason | undefined;
  /**
   * Set by the server when the error came after the request was queued (a scheduler's
   * refusal, a model's failure, a cancel), where Triton delivers it in the inference
   * response instead of refusing the request; SageMaker answers those 400.
   */
  inResponse = false;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown; reason?: FailureReason }) {
    super(message, options);
    this.name = "ServerError";
    this.code = code;
    this.reason = options?.reason;
  }

  /** Wraps anything thrown into a ServerError; ServerErrors pass through unchanged. */
  static from(err: unknown, code: ErrorCode = "INTERNAL"): ServerError {
    if (err instanceof ServerError) return err;
    const message = err instanceof Error ? err.message : String(err);
    return new ServerError(code, message, { cause: err });
  }
}

export const invalidArg = (message: string, cause?: unknown) => new ServerError("INVALID_ARG", message, { cause });
export const notFound = (message: string) => new ServerError("NOT_FOUND", message);
export const unavailable = (message: string, cause?: unknown) => new ServerError("UNAVAILABLE", message, { cause });
export const unsupported = (message: string) => new ServerError("UNSUPPORTED", message);
export const internal = (message: string, cause?: unknown) => new ServerError("INTERNAL", message, { cause });
/** A cancelled request's answer: CANCELLED, counted as nv_inference_request_failure{reason="CANCELED"} (S-20). */
export const cancelled = (requestId?: string) =>
  new ServerError("CANCELLED", `${requestId ? `[request id: ${requestId}] ` : ""}Request was cancelled`, { reason: "CANCELED" });
