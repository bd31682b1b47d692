/**
 * @module Refuses requests that change the server's state when a browser marks them as
 * sent from another site's page (cross-site request forgery): Triton's HTTP API has no
 * authentication and a web page can POST to any address its visitor reaches.
 *
 * A browser adds `Origin` to every cross-origin POST and `Sec-Fetch-Site` to every request;
 * curl, tritonclient (Python and C++) and perf_analyzer send neither, so they are not
 * affected. The body's Content-Type is not checked: Triton's C++ client posts with
 * libcurl's default `application/x-www-form-urlencoded`, a type a page may send too.
 */

/** What a cross-origin check needs of a request. */
interface Headers {
  header(name: string): string | undefined;
}

/** Inference changes no server state: a page may send it (it cannot read the answer without CORS, which Triton does not send). */
const INFERENCE_ACTIONS = new Set(["infer", "generate", "generate_stream"]);

/** Whether `method` on the /v2 path `parts` changes server state: every method but GET and HEAD, inference aside. */
export function changesState(method: string, parts: readonly string[]): boolean {
  if (method === "GET" || method === "HEAD") return false;
  return !(parts[1] === "models" && INFERENCE_ACTIONS.has(parts[parts.length - 1]!));
}

/**
 * Why a browser's request is cross-origin, or undefined when it is not: `Sec-Fetch-Site`
 * `cross-site` or `same-site`, or an `Origin` whose host:port is not the request's `Host`
 * (`Origin: null`, from sandboxed frames and file pages, never matches).
 */
export function crossOrigin(req: Headers): string | undefined {
  const site = req.header("sec-fetch-site")?.trim().toLowerCase();
  if (site === "cross-site" || site === "same-site") return `Sec-Fetch-Site: ${site}`;
  const origin = req.header("origin");
  if (origin === undefined) return undefined;
  const host = req.header("host")?.trim().toLowerCase();
  let originHost: string | undefined;
  try {
    originHost = new URL(origin.trim()).host.toLowerCase();
  } catch {
    originHost = undefined;
  }
  return originHost !== undefined && originHost !== "" && originHost === host ? undefined : "Origin does not match Host";
}
