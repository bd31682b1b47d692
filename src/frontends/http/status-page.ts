/**
 * @module The live status page (/nereid/status) and its data (/nereid/status.json), on
 * the HTTP port behind --allow-status-page. The page is one self-contained HTML
 * document (inline style and script, no external assets) that polls status.json every
 * second. Both answer like the APIs whose data they show: with --http-restricted-api,
 * the headers of the `statistics` and `model-repository` groups are required.
 */
import type { Restrictions } from "../restricted.ts";
import type { StatusBoard } from "../../server/status-board.ts";
import type { HttpRequest, HttpResponse } from "./types.ts";
import { STATUS_PAGE_HTML } from "./status-page-html.ts";

/** The page's paths: outside /v2 and /metrics, so they cannot clash with Triton's routes. */
export const STATUS_PAGE_PATH = "/nereid/status";
export const STATUS_JSON_PATH = "/nereid/status.json";

const error = (status: number, message: string): HttpResponse => ({
  status,
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ error: message }),
});

/** The answer for a /nereid/... path, or undefined when the path is not the page's. */
export function statusRoute(req: HttpRequest, board: StatusBoard, restricted: Restrictions | undefined): HttpResponse | undefined {
  const path = req.path;
  if (path !== STATUS_PAGE_PATH && path !== STATUS_JSON_PATH) return undefined;
  for (const category of ["statistics", "model-repository"] as const) {
    const need = restricted?.get(category);
    if (need && req.header(need.key.toLowerCase()) !== need.value) return error(403, `This API is restricted, expecting header '${need.key}'`);
  }
  if (req.method !== "GET") return error(405, "Method Not Allowed");
  const noStore = { "cache-control": "no-store" };
  if (path === STATUS_JSON_PATH) return { status: 200, headers: { "content-type": "application/json", ...noStore }, body: JSON.stringify(board.snapshot()) };
  return {
    status: 200,
    headers: {
      "content-type": "text/html; charset=utf-8",
      // The page loads nothing from anywhere, and fetches only from its own origin.
      "content-security-policy": "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:",
      ...noStore,
    },
    body: STATUS_PAGE_HTML,
  };
}
