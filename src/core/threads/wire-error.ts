/**
 * @module A ServerError as it crosses threads (the worker-thread kit, ./thread.ts): a
 * plain object, which structured clone keeps whole (an Error loses its code).
 */
import { ServerError, type ErrorCode } from "../errors.ts";

/** A ServerError as it crosses threads. */
export interface WireError {
  code: ErrorCode;
  message: string;
}

export const wireError = (err: unknown): WireError => {
  const e = ServerError.from(err);
  return { code: e.code, message: e.message };
};

/** The ServerError a WireError stands for. */
export const fromWireError = (e: WireError): ServerError => new ServerError(e.code, e.message);
