/**
 * The HTTP frontend called with no socket, for fast tests: the in-process API's
 * `Nereid.fetch` (the handler the HTTP listener serves, in its web fetch form) wrapped so
 * that a test writes `await call("POST", "/v2/models/simple/infer", body)`.
 */
import type { Nereid } from "../../src/index.ts";
import { startInProcess, type InProcessServer } from "./inprocess.ts";

/** A body: an object or array is sent as JSON, a string or bytes as they are. */
export type Body = string | Uint8Array | object;

export type HttpCall = (method: string, path: string, body?: Body, headers?: Record<string, string>) => Promise<Response>;

/** Requests to `nereid`'s HTTP handler, no socket. */
export function httpCaller(nereid: Nereid): HttpCall {
  return (method, path, body, headers) =>
    nereid.fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body),
    });
}

/** The status and the JSON body of a response (undefined for an empty one). */
export async function statusAndJson(res: Response): Promise<{ status: number; json: any }> {
  const text = await res.text();
  return { status: res.status, json: text === "" ? undefined : JSON.parse(text) };
}

/** An in-process server on a fresh repository of `models`, no listener, and `call` to its HTTP handler. */
export async function startHandler(models: string[], options: Parameters<typeof startInProcess>[1] = {}): Promise<InProcessServer & { call: HttpCall }> {
  const s = await startInProcess(models, { ...options, listen: false });
  return { ...s, call: httpCaller(s.nereid) };
}
