/**
 * @module GET /v2/health/live and /v2/health/ready: Triton's answers from the server's
 * health. The main thread's handler (routes.ts) and a frontend worker thread, which
 * answers these probes itself from SharedHealth (#30), both answer through here.
 */
import type { Health } from "../../server/shared-health.ts";
import type { HttpResponse } from "./types.ts";

const OK: HttpResponse = { status: 200, headers: {} };
const NOT_OK: HttpResponse = { status: 400, headers: {} };
const EXITING: HttpResponse = { status: 503, headers: { "content-type": "application/json" }, body: JSON.stringify({ error: "Server exiting" }) };

/** The answer to GET /v2/health/`probe`; undefined for a probe that is neither live nor ready (while not exiting). */
export function healthAnswer(probe: string, h: Health): HttpResponse | undefined {
  if (h.exiting) return EXITING;
  if (probe === "live") return h.live ? OK : NOT_OK;
  if (probe === "ready") return h.ready ? OK : NOT_OK;
  return undefined;
}

/**
 * The probe a request is, when a worker may answer it without the main thread: a GET of
 * /v2/health/live or /v2/health/ready, with the handler's reading of the path (empty
 * segments skipped) and no %-escape (the handler checks those first).
 */
export function healthProbe(method: string, path: string): "live" | "ready" | undefined {
  if (method !== "GET" || !path.includes("/health/") || path.includes("%")) return undefined;
  const parts = path.split("/").filter((p) => p.length > 0);
  if (parts.length !== 3 || parts[0] !== "v2" || parts[1] !== "health") return undefined;
  return parts[2] === "live" || parts[2] === "ready" ? parts[2] : undefined;
}
