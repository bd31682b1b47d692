/**
 * The HTTP frontend called with no socket, for fast tests: the in-process API's
 * `Nereid.fetch` (the handler the HTTP listener serves, in its web fetch form) wrapped so
 * that a test writes `await call("POST", "/v2/models/simple/infer", body)`; urlCaller
 * sends the same calls to a listener.
 */
import { expect } from "vitest";
import type { Nereid } from "../../src/index.ts";
import { startInProcess, type InProcessServer } from "./inprocess.ts";

/** A body: an object or array is sent as JSON, a string or bytes as they are. */
export type Body = string | Uint8Array | object;

export type HttpCall = (method: string, path: string, body?: Body, headers?: Record<string, string>) => Promise<Response>;

const init = (method: string, body: Body | undefined, headers: Record<string, string> | undefined): RequestInit => ({
  method,
  headers,
  body: body === undefined ? undefined : typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body),
});

/** Requests to `nereid`'s HTTP handler, no socket. */
export function httpCaller(nereid: Nereid): HttpCall {
  return (method, path, body, headers) => nereid.fetch(path, init(method, body, headers));
}

/** Requests to an HTTP listener at `url` (what httpCaller sends, over a socket). */
export function urlCaller(url: string): HttpCall {
  return (method, path, body, headers) => fetch(`${url}${path}`, init(method, body, headers));
}

/** The status and the JSON body of a response (undefined for an empty one). */
export async function statusAndJson(res: Response): Promise<{ status: number; json: any }> {
  const text = await res.text();
  return { status: res.status, json: text === "" ? undefined : JSON.parse(text) };
}

/** Splits a binary-extension response into its JSON header and binary tail. */
export async function splitBinary(res: Response): Promise<{ header: any; tail: Uint8Array }> {
  const length = Number(res.headers.get("inference-header-content-length"));
  const bytes = new Uint8Array(await res.arrayBuffer());
  return { header: JSON.parse(new TextDecoder().decode(bytes.subarray(0, length))), tail: bytes.subarray(length) };
}

/** Asserts a Triton error answer: the status, a body of `error` alone, and its text (exact, or matching). */
export async function expectError(res: Response, status: number, message: string | RegExp): Promise<void> {
  const { status: got, json } = await statusAndJson(res);
  expect(got).toBe(status);
  expect(Object.keys(json)).toEqual(["error"]);
  if (typeof message === "string") expect(json.error).toBe(message);
  else expect(json.error).toMatch(message);
}

/** An in-process server on a fresh repository of `models`, no listener, and `call` to its HTTP handler. */
export async function startHandler(models: string[], options: Parameters<typeof startInProcess>[1] = {}): Promise<InProcessServer & { call: HttpCall }> {
  const s = await startInProcess(models, { ...options, listen: false });
  return { ...s, call: httpCaller(s.nereid) };
}
