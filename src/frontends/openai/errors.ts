/**
 * @module Errors on the OpenAI port: OpenAI's shape, `{"error": {"message", "type",
 * "param", "code"}}`, which the official clients read, with the same message under
 * `detail` as well, where Triton's frontend (FastAPI) puts it. The status comes from
 * the server's one code → HTTP mapping (frontends/http/status.ts).
 */
import { ServerError, type ErrorCode } from "../../core/errors.ts";
import { httpStatus } from "../http/status.ts";
import type { HttpResponse } from "../http/types.ts";

/** A refused request field: INVALID_ARG naming the field (`param` in OpenAI's shape). */
export class FieldError extends ServerError {
  readonly param: string | undefined;
  /** An HTTP status other than the code's (413 for a body over --http-max-input-size, as Triton's frontend answers). */
  readonly status: number | undefined;
  constructor(message: string, param?: string, opts: { code?: ErrorCode; status?: number } = {}) {
    super(opts.code ?? "INVALID_ARG", message);
    this.param = param;
    this.status = opts.status;
  }
}

/** INVALID_ARG about request field `param`. */
export const badField = (param: string | undefined, message: string) => new FieldError(message, param);

/** The HTTP status of `err`: its own (FieldError) or its code's. */
function statusOf(err: unknown): number {
  const e = ServerError.from(err);
  return (e instanceof FieldError ? e.status : undefined) ?? httpStatus(e.code);
}

/** OpenAI's error object for `err` (the body of an error answer and of a stream's error event). */
export function errorObject(
  err: unknown,
  status = statusOf(err),
): { error: { message: string; type: string; param: string | null; code: string | null }; detail: string } {
  const e = ServerError.from(err);
  const type = status < 500 ? "invalid_request_error" : "server_error";
  const code = e.code === "NOT_FOUND" && /unknown model/i.test(e.message) ? "model_not_found" : null;
  return { error: { message: e.message, type, param: e instanceof FieldError ? (e.param ?? null) : null, code }, detail: e.message };
}

/** An error answer in OpenAI's shape; `status` defaults to the mapping of the error's code. */
export function errorAnswer(err: unknown, status = statusOf(err)): HttpResponse {
  return { status, headers: { "content-type": "application/json" }, body: JSON.stringify(errorObject(err, status)) };
}
